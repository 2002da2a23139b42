import { BusEvents } from '@polyphony/contracts';
import { consumeEvent, type Bus, type ConsumerHandle } from '@polyphony/platform';
import type { ServerStore } from '../domain/ports';

/** Stores the last known track count and matched-song count of each server (dashboard's Music Server Status). */
export function consumeServerCounts(bus: Bus, servers: Pick<ServerStore, 'setCounts'>, prefetch: number): Promise<ConsumerHandle> {
  return consumeEvent(bus, BusEvents.serverCounted, {
    queue: 'registry.server-counts',
    prefetch,
    handler: async (e) => {
      await servers.setCounts(e.serverId, e.trackCount, e.matchedCount);
    },
  });
}
