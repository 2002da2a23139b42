import { BusEvents } from '@polyphony/contracts';
import { consumeEvent, type Bus, type ConsumerHandle } from '@polyphony/platform';
import type { RebuildService } from './rebuild.service';

/**
 * `index.rebuild.requested.v1` (end of analysis, end of cleaning, ...) -> one coalesced rebuild.
 * The message is acked once the request is registered; the build runs in the background and reports
 * through `index.rebuild.completed.v1` (with the requester's task id) and the task board.
 */
export function consumeRebuildRequests(bus: Bus, rebuild: RebuildService): Promise<ConsumerHandle> {
  return consumeEvent(bus, BusEvents.indexRebuildRequested, {
    queue: 'index.rebuild-requests',
    prefetch: 1,
    handler: async (event) => {
      await rebuild.request(event.reason, event.taskId);
    },
  });
}
