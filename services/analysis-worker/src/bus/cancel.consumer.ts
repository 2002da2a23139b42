import { BusEvents } from '@polyphony/contracts';
import { consumeEvent, type Bus, type ConsumerHandle } from '@polyphony/platform';
import type { AnalysisRunService } from '../domain/analysis-run.service';

/**
 * Cancels analysis runs on `task.cancel.requested.v1`: the run row is ended (REVOKED) in the
 * database directly, so one consumer among the replicas suffices and a dead coordinator does not
 * matter (a live one notices at its next heartbeat or fenced write).
 */
export function consumeCancelRequests(bus: Bus, service: AnalysisRunService): Promise<ConsumerHandle> {
  return consumeEvent(bus, BusEvents.taskCancelRequested, {
    queue: 'analysis.task-cancel',
    handler: async (e) => {
      if (e.type === 'analysis') await service.cancel(e.taskId);
    },
  });
}
