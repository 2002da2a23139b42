import { MappingChangedEvent, RoutingKeys } from '@polyphony/contracts';
import type { Bus, ConsumerHandle } from '@polyphony/platform';
import type { AvailabilityCache } from '../domain/availability';

/** `catalogue.mapping.changed.v1` -> drop that server's availability mask (every server's when no serverId). */
export function consumeMappingChanges(bus: Bus, availability: AvailabilityCache, prefetch: number): Promise<ConsumerHandle> {
  return bus.consume({
    queue: 'index.mapping-changes',
    bindings: [RoutingKeys.mappingChanged],
    schema: MappingChangedEvent,
    prefetch,
    handler: async (event) => {
      availability.invalidate(event.serverId);
    },
  });
}
