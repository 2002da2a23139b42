import { RoutingKeys, ServerDeletedEvent } from '@polyphony/contracts';
import type { Bus, ConsumerHandle } from '@polyphony/platform';
import type { PlaylistService } from '../domain/playlist.service';

/** Forgets our playlist records of a server deleted from the registry (idempotent: a second delivery removes nothing). */
export function consumeServerDeleted(bus: Bus, service: PlaylistService): Promise<ConsumerHandle> {
  return bus.consume({
    queue: 'playlist.server-deleted',
    bindings: [RoutingKeys.serverDeleted],
    schema: ServerDeletedEvent,
    handler: async (e) => {
      await service.forgetServer(e.serverId);
    },
  });
}
