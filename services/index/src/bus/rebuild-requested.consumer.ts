import { IndexRebuildRequested, RoutingKeys } from '@polyphony/contracts';
import type { Bus, ConsumerHandle } from '@polyphony/platform';
import type { RebuildService } from '../domain/rebuild.service';

/**
 * `index.rebuild.requested.v1` (end of analysis, end of cleaning, ...) -> one coalesced rebuild.
 * The message is acked once the request is registered; the build runs in the background and reports
 * through `index.rebuild.completed.v1` (with the requester's task id) and the task board.
 */
export function consumeRebuildRequests(bus: Bus, rebuild: RebuildService): Promise<ConsumerHandle> {
  return bus.consume({
    queue: 'index.rebuild-requests',
    bindings: [RoutingKeys.indexRebuildRequested],
    schema: IndexRebuildRequested,
    prefetch: 1,
    handler: async (event) => {
      rebuild.request(event.reason, event.taskId);
    },
  });
}
