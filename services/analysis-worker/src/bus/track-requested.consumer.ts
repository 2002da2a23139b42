import { type AnalysisTrackCompleted, AnalysisTrackRequested, RoutingKeys } from '@polyphony/contracts';
import { isTransientFault, withTransientRetry, type Bus, type ConsumerHandle, type Logger, type Metrics } from '@polyphony/platform';
import { TrackBusyError, type TrackProcessor } from '../domain/track-processor';

/** Queue shared by every analysis-worker process (competing consumers). */
export const TRACK_QUEUE = 'analysis.tracks';
/** Delivery attempts for a failure that is not classified transient, before the track is recorded as failed. */
export const TRACK_MAX_ATTEMPTS = 4;
/**
 * Delivery attempts for transient failures (database or broker connection lost, media server or
 * catalogue unreachable/5xx) before the track is recorded as failed: the bus waits 1, 2, 4 ... 60 s
 * (jittered) between them, about 12 minutes in all, so outages of that length end in analyzed tracks and a
 * media server that stays away ends the run (its tracks are retried by the next run). The bus itself never
 * dead-letters a transient fault: while even the failure cannot be recorded (the analysis database is down)
 * the message keeps coming back every 60 s until it can.
 */
export const TRACK_TRANSIENT_MAX_ATTEMPTS = 18;

/**
 * Consumes one track per message. A worker killed mid-track never acks, so the broker redelivers
 * the message; the processor is idempotent (a track with a recorded outcome or an already-mapped
 * provider id does no work, outcomes are recorded once). Short blips are retried in place (cockatiel,
 * 3 retries with jittered backoff); longer outages go through the bus retry queue. On the last
 * attempt the track is recorded as failed so the run never waits for a dead letter.
 */
export function consumeTrackRequests(bus: Bus, processor: TrackProcessor, prefetch: number, metrics: Metrics, logger?: Logger): Promise<ConsumerHandle> {
  return bus.consume({
    queue: TRACK_QUEUE,
    bindings: [RoutingKeys.analysisTrackRequested],
    schema: AnalysisTrackRequested,
    prefetch,
    maxAttempts: TRACK_MAX_ATTEMPTS,
    handler: async (msg, ctx) => {
      const attempt = typeof ctx.headers.attempt === 'number' ? ctx.headers.attempt : 1;
      try {
        const result = await withTransientRetry(() => processor.process(msg, attempt >= TRACK_TRANSIENT_MAX_ATTEMPTS), { maxAttempts: 3, initialDelayMs: 250, maxDelayMs: 2000 });
        const outcome = result.duplicate ? 'duplicate' : result.outcome;
        metrics.tasks.inc({ task: 'analysis_track', outcome });
        logger?.info('track done', { taskId: msg.taskId, serverId: msg.serverId, providerId: msg.track.id, outcome, attempt });
        if (!result.duplicate) await publishCompleted(bus, msg, result.outcome, result.itemId, result.error, logger);
      } catch (err) {
        // Another attempt holds the track and is alive (its claim is renewed): never record a failure over it.
        // The bus retries (a transient fault, never dead-lettered) until the holder records the outcome or dies.
        if (err instanceof TrackBusyError) throw err;
        const last = attempt >= (isTransientFault(err) ? TRACK_TRANSIENT_MAX_ATTEMPTS : TRACK_MAX_ATTEMPTS);
        if (!last) throw err;
        // Recorded as the track's outcome and acked. If even that fails transiently (database down) the bus retries
        // the message (never dead-lettered); a non-transient failure here is a bug and dead-letters (replayable).
        const reason = `gave up after ${attempt} attempts: ${(err as Error).message}`;
        await processor.recordFailure(msg, reason);
        metrics.tasks.inc({ task: 'analysis_track', outcome: 'failed' });
        await publishCompleted(bus, msg, 'failed', undefined, reason, logger);
      }
    },
  });
}

/** The outcomes analysis.track.completed.v1 names (retagged / fingerprinted / cancelled tracks publish nothing). */
const COMPLETED_OUTCOMES = new Set<string>(['analyzed', 'mapped_existing', 'skipped_mapped', 'failed', 'excluded']);

/**
 * Publishes analysis.track.completed.v1 once the outcome is recorded (catalogue rows written for `analyzed` and
 * `mapped_existing`): the index applies a new song to its serving generation from it (issue 35). A publish failure
 * is logged, never retried through the track (the outcome is already recorded; the catalogue's mapping log still
 * carries the new mapping to the index).
 */
async function publishCompleted(bus: Bus, msg: AnalysisTrackRequested, outcome: string, itemId: string | undefined, error: string | undefined, logger?: Logger): Promise<void> {
  if (!COMPLETED_OUTCOMES.has(outcome)) return;
  const event: AnalysisTrackCompleted = { taskId: msg.taskId, serverId: msg.serverId, providerId: msg.track.id, outcome: outcome as AnalysisTrackCompleted['outcome'], itemId, error: error?.slice(0, 500) };
  try {
    await bus.publish(RoutingKeys.analysisTrackCompleted, event);
  } catch (err) {
    logger?.warn('analysis.track.completed publish failed', { taskId: msg.taskId, serverId: msg.serverId, providerId: msg.track.id, err: (err as Error).message });
  }
}
