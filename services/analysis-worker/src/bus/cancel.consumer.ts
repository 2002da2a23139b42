import { RoutingKeys, TaskCancelRequestedEvent } from '@polyphony/contracts';
import type { Bus, ConsumerHandle } from '@polyphony/platform';
import type { AnalysisRunService } from '../domain/analysis-run.service';

/** Cancels analysis runs on `task.cancel.requested.v1` (one queue per process would be a broadcast; the flag lives in the database, so one consumer suffices). */
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
