import { BusEvents } from '@polyphony/contracts';
import { consumeEvent, type Bus, type ConsumerHandle } from '@polyphony/platform';
import type { ClusteringService } from '../domain/clustering.service';

/** Cancels clustering runs on `task.cancel.requested.v1` (the flag lives in the database, so one consumer suffices). */
export function consumeCancelRequests(bus: Bus, service: ClusteringService): Promise<ConsumerHandle> {
  return consumeEvent(bus, BusEvents.taskCancelRequested, {
    queue: 'playlist.task-cancel',
    handler: async (e) => {
      if (e.type === 'clustering') await service.cancel(e.taskId);
    },
  });
}
