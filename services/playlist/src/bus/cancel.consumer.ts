import { RoutingKeys, TaskCancelRequestedEvent } from '@polyphony/contracts';
import type { Bus, ConsumerHandle } from '@polyphony/platform';
import type { ClusteringService } from '../domain/clustering.service';

/** Cancels clustering runs on `task.cancel.requested.v1` (the flag lives in the database, so one consumer suffices). */
export function consumeCancelRequests(bus: Bus, service: ClusteringService): Promise<ConsumerHandle> {
  return bus.consume({
    queue: 'playlist.task-cancel',
    bindings: [RoutingKeys.taskCancelRequested],
    schema: TaskCancelRequestedEvent,
    handler: async (e) => {
      if (e.type === 'clustering') await service.cancel(e.taskId);
    },
  });
}
