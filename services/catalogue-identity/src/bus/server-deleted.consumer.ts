import { BusEvents } from '@polyphony/contracts';
import { consumeEvent, type Bus, type ConsumerHandle, type Logger } from '@polyphony/platform';
import type { MappingService } from '../domain/mapping.service';

/**
 * registry.server.deleted.v1: removes the server's mapping, Chromaprint and artist rows (never score
 * rows; songs mapped nowhere else become orphans) and publishes catalogue.mapping.changed.v1 for it at
 * once. Idempotent, so a redelivered event is harmless.
 */
export function consumeServerDeleted(bus: Bus, mappings: Pick<MappingService, 'forgetServer'>, logger: Logger, prefetch: number): Promise<ConsumerHandle> {
  return consumeEvent(bus, BusEvents.serverDeleted, {
    queue: 'catalogue.server-deleted',
    prefetch,
    handler: async (e) => {
      const result = await mappings.forgetServer(e.serverId);
      logger.info('server mappings removed', { serverId: e.serverId, ...result });
    },
  });
}
