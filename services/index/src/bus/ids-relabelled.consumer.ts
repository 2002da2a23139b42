import { IdsRelabelledEvent, RoutingKeys } from '@polyphony/contracts';
import type { Bus, ConsumerHandle } from '@polyphony/platform';
import type { RebuildService } from '../domain/rebuild.service';

/**
 * `catalogue.ids.relabelled.v1` (the catalogue relabelled canonical ids to a new scheme version) -> a
 * rebuild from the relabelled snapshot. Until it is live, ids resolved to the new scheme are unknown to
 * the old generation (404 for a seed, nothing lost: the next generation has them). Repointing the live
 * generation in place from `GET /internal/ids/relabel-map` is not implemented.
 */
export function consumeRelabels(bus: Bus, rebuild: RebuildService): Promise<ConsumerHandle> {
  return bus.consume({
    queue: 'index.ids-relabelled',
    bindings: [RoutingKeys.idsRelabelled],
    schema: IdsRelabelledEvent,
    prefetch: 1,
    handler: async (event) => {
      if (event.relabelled + event.merged + event.unsignable > 0) rebuild.request(`catalogue ids relabelled to scheme version ${event.toVersion}`);
    },
  });
}
