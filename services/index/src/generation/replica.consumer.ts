import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import { IndexRebuilt, RoutingKeys } from '@polyphony/contracts';
import type { Bus, ConsumerHandle, Logger } from '@polyphony/platform';

/** What a replica does with the events every replica must see. */
export interface ReplicaHandlers {
  /** The catalogue's mapping log advanced (catalogue.mappings.logged.v1 / catalogue.mapping.changed.v1). */
  mappingsChanged(): Promise<void>;
  /** A replica published a new generation (or repointed the live one) in the database. */
  generationPublished(event: IndexRebuilt): Promise<void>;
  /** A media server was saved or deleted in the registry. */
  serverChanged(serverId: string): void;
  /** The live library stored a batch of new songs for the live generation (index.delta.applied.v1). */
  deltaApplied?(): Promise<void>;
}

/** Unique per process: `index.replica.<host>.<pid>.<random>`. */
export function replicaQueueName(): string {
  const host = hostname().replace(/[^A-Za-z0-9-]/g, '-').slice(0, 60);
  return `index.replica.${host}.${process.pid}.${randomBytes(4).toString('hex')}`;
}

/** Unused replica queues (a replica that died) are deleted by the broker after this long (ms). */
export const REPLICA_QUEUE_EXPIRES_MS = 5 * 60_000;

const AnyEvent = z.record(z.unknown());

/**
 * The per-replica queue (fan-out: every index replica gets its own copy of these events; the work queues
 * such as `index.rebuild-requests` stay shared so one replica does the work):
 *  - catalogue.mappings.logged.v1, catalogue.mapping.changed.v1 -> catch up with the mapping log;
 *  - index.rebuild.completed.v1 -> load the new generation from the database when it is not the one
 *    this replica serves (the builder itself already serves it);
 *  - index.delta.applied.v1 -> apply the live library's stored batches after the one this replica serves;
 *  - registry.server.saved.v1 / deleted.v1 -> drop the cached server description.
 * The queue expires `REPLICA_QUEUE_EXPIRES_MS` after its consumer disappears (RabbitMQ `x-expires`).
 */
export function consumeReplicaEvents(bus: Bus, queue: string, handlers: ReplicaHandlers, logger: Logger): Promise<ConsumerHandle> {
  return bus.consume({
    queue,
    bindings: [RoutingKeys.mappingsLogged, RoutingKeys.mappingChanged, RoutingKeys.indexRebuilt, RoutingKeys.indexDeltaApplied, RoutingKeys.serverSaved, RoutingKeys.serverDeleted],
    schema: AnyEvent,
    prefetch: 4,
    expiresMs: REPLICA_QUEUE_EXPIRES_MS,
    handler: async (payload, ctx) => {
      switch (ctx.routingKey) {
        case RoutingKeys.mappingsLogged:
        case RoutingKeys.mappingChanged:
          await handlers.mappingsChanged();
          return;
        case RoutingKeys.indexRebuilt:
          await handlers.generationPublished(IndexRebuilt.parse(payload));
          return;
        case RoutingKeys.indexDeltaApplied:
          await handlers.deltaApplied?.();
          return;
        case RoutingKeys.serverSaved:
        case RoutingKeys.serverDeleted:
          if (typeof payload.serverId === 'string') handlers.serverChanged(payload.serverId);
          return;
        default:
          logger.warn('unexpected event on the replica queue', { routingKey: ctx.routingKey });
      }
    },
  });
}
