import { BusEvents } from '@polyphony/contracts';
import { consumeEvent, type Bus, type ConsumerHandle } from '@polyphony/platform';
import type { RebuildService } from './rebuild.service';
import type { RepointService } from './repoint.service';

/**
 * `catalogue.ids.relabelled.v1` (the catalogue relabelled canonical ids to a new scheme version): the
 * index's stored ids are repointed in place from `GET /internal/ids/relabel-map` (no vectors moved, no
 * re-clustering). When that is impossible (the relabel merged songs, or the rewrite failed) a rebuild
 * from the relabelled snapshot is requested instead. Competing consumers: one replica rewrites the stored
 * ids, then announces it so every other replica reloads.
 */
export function consumeRelabels(bus: Bus, rebuild: RebuildService, repoint: RepointService, announceRepointed?: () => Promise<void>): Promise<ConsumerHandle> {
  return consumeEvent(bus, BusEvents.idsRelabelled, {
    queue: 'index.ids-relabelled',
    prefetch: 1,
    handler: async (event) => {
      if (event.relabelled + event.merged + event.unsignable === 0) return;
      const result = await repoint.repoint(event.toVersion);
      // Other replicas reload the repointed generation (index.rebuild.completed.v1 with repointed: true).
      if (result.outcome === 'repointed' && result.renamed > 0) await announceRepointed?.();
      if (result.outcome === 'rebuild') await rebuild.request(`catalogue ids relabelled to scheme version ${event.toVersion} (${result.reason ?? 'not repointable'})`);
    },
  });
}
