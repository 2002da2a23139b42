import { RoutingKeys, TaskCancelRequestedEvent } from '@polyphony/contracts';
import type { Bus, ConsumerHandle } from '@polyphony/platform';
import type { AnalysisRunService } from '../domain/analysis-run.service';

/**
 * Cancels analysis runs on `task.cancel.requested.v1`: the run row is ended (REVOKED) in the
 * database directly, so one consumer among the replicas suffices and a dead coordinator does not
 * matter (a live one notices at its next heartbeat or fenced write).
 */
export function consumeCancelRequests(bus: Bus, service: AnalysisRunService): Promise<ConsumerHandle> {
  return bus.consume({
    queue: 'analysis.task-cancel',
    bindings: [RoutingKeys.taskCancelRequested],
    schema: TaskCancelRequestedEvent,
    handler: async (e) => {
      if (e.type === 'analysis') await service.cancel(e.taskId);
    },
  });
}
