import { AnalysisTrackRequested, RoutingKeys } from '@polyphony/contracts';
import type { Bus, ConsumerHandle, Metrics } from '@polyphony/platform';
import type { TrackProcessor } from '../domain/track-processor';

/** Queue shared by every analysis-worker process (competing consumers). */
export const TRACK_QUEUE = 'analysis.tracks';
/** Delivery attempts before a track is recorded as failed (the last attempt never throws). */
export const TRACK_MAX_ATTEMPTS = 4;

/**
 * Consumes one track per message. A worker killed mid-track never acks, so the broker redelivers
 * the message; the processor is idempotent (an already-mapped provider id is skipped, outcomes are
 * recorded once).
 */
export function consumeTrackRequests(bus: Bus, processor: TrackProcessor, prefetch: number, metrics: Metrics): Promise<ConsumerHandle> {
  return bus.consume({
    queue: TRACK_QUEUE,
    bindings: [RoutingKeys.analysisTrackRequested],
    schema: AnalysisTrackRequested,
    prefetch,
    maxAttempts: TRACK_MAX_ATTEMPTS,
    handler: async (msg, ctx) => {
      const attempt = typeof ctx.headers.attempt === 'number' ? ctx.headers.attempt : 1;
      const result = await processor.process(msg, attempt >= TRACK_MAX_ATTEMPTS);
      metrics.tasks.inc({ task: 'analysis_track', outcome: result.outcome });
    },
  });
}
