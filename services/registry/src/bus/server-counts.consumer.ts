import { RoutingKeys, ServerCountedEvent } from '@polyphony/contracts';
import type { Bus, ConsumerHandle } from '@polyphony/platform';
import type { ServerRepository } from '../store/server.repository';

/** Stores the last known track count and matched-song count of each server (dashboard's Music Server Status). */
export function consumeServerCounts(bus: Bus, servers: ServerRepository, prefetch: number): Promise<ConsumerHandle> {
  return bus.consume({
    queue: 'registry.server-counts',
    bindings: [RoutingKeys.serverCounted],
    schema: ServerCountedEvent,
    prefetch,
    handler: async (e) => {
      await servers.setCounts(e.serverId, e.trackCount, e.matchedCount);
    },
  });
}
