import { leaseOwnerName, type ServiceRuntime } from '@polyphony/platform';
import type { IndexConfig } from '../config';
import type { IndexState } from '../core/generation';
import type { CataloguePort } from '../core/ports';
import type { TrackRepository } from '../core/track.repository';
import type { MapFollower } from '../maps/generation-maps';
import { BuildQueueRepository } from './build-queue.repository';
import { GenerationRepository } from './generation.repository';
import { ItemIdRenameStore } from './item-id-rename.repository';
import { LiveGenerationService } from './live-generation.service';
import { liveGenerationRoutes } from './live.routes';
import { RebuildService, type RebuildOptions } from './rebuild.service';
import { ReplicaReporter } from './replica-reporter';
import { ReplicaRepository } from './replica.repository';
import { RepointService, type RelabelMapSource } from './repoint.service';

/** What the generation feature is built on. */
export interface GenerationWiringDeps {
  catalogue: CataloguePort;
  tracks: TrackRepository;
  state: IndexState;
  maps: MapFollower;
  /** Relabel-map pages (peers.ts `relabelMapSource`, or a test's). */
  relabelMap: RelabelMapSource;
  rebuild?: RebuildOptions;
}

/**
 * The generation feature: the build (one build at a time across replicas, on the platform task host over `index.build_runs`),
 * the repoint after an embedder switch's relabel, this replica's heartbeat report of the generation it serves
 * (`index.replicas`: an analysis run ends SUCCESS once every live replica serves its songs) and
 * GET /internal/index/live. lifecycle.ts starts and stops them.
 */
export function wireGeneration(rt: ServiceRuntime, config: IndexConfig, d: GenerationWiringDeps) {
  const generations = new GenerationRepository(rt.ds, d.tracks);
  const rebuild = new RebuildService(
    d.catalogue,
    d.tracks,
    generations,
    new BuildQueueRepository(rt.ds),
    d.state,
    d.maps,
    rt.bus,
    rt.logger.child({ component: 'RebuildService' }),
    { vectors: config.vectors, reuseMaxChanged: config.buildReuseMaxChanged, reuseMaxDrift: config.buildReuseMaxDrift, reuseMaxCellImbalance: config.live.drift.maxCellImbalance, ...d.rebuild },
    rt.metrics,
  );
  const repoint = new RepointService(new ItemIdRenameStore(rt.ds), rebuild, d.relabelMap, rt.logger.child({ component: 'RepointService' }));
  const replicaRows = new ReplicaRepository(rt.ds);
  const reporter = new ReplicaReporter(leaseOwnerName('index'), d.state, replicaRows, rt.logger.child({ component: 'ReplicaReporter' }), config.replicaHeartbeatMs);
  const live = new LiveGenerationService(d.state, generations, replicaRows, ReplicaReporter.liveWindowMs(config.replicaHeartbeatMs));
  return { rebuild, repoint, reporter, routes: liveGenerationRoutes(live) };
}
