import { BusEvents } from '@polyphony/contracts';
import { consumeEvent, type Bus, type ConsumerHandle } from '@polyphony/platform';
import type { PlaylistService } from '../domain/playlist.service';

/** Forgets our playlist records of a server deleted from the registry (idempotent: a second delivery removes nothing). */
export function consumeServerDeleted(bus: Bus, service: PlaylistService): Promise<ConsumerHandle> {
  return consumeEvent(bus, BusEvents.serverDeleted, {
    queue: 'playlist.server-deleted',
    handler: async (e) => {
      await service.forgetServer(e.serverId);
    },
  });
}
