import type { ServiceRuntime } from '@polyphony/platform';
import type { AlchemyService } from '../alchemy/alchemy.service';
import type { ArtistService } from '../artists/artist.service';
import { BrowseService } from '../artists/browse.service';
import type { IndexState } from '../core/generation';
import type { MediaClientFactory, NamedSeedSource, RegistryPort } from '../core/ports';
import type { ScopeDeps } from '../core/scope';
import type { TrackRepository } from '../core/track.repository';
import type { RebuildService } from '../generation/rebuild.service';
import type { HyperbolicService } from '../hyperbolic/hyperbolic.service';
import { MapService } from '../maps/map.service';
import type { SemanticService } from '../semantic/semantic.service';
import { SyncService } from '../sync/sync.service';
import { featureRoutes } from './features.routes';
import { FingerprintService } from './fingerprint.service';
import { SearchService } from './search.service';
import { STATIC_QUERY_DEFAULTS, SimilarityService } from './similarity.service';

/** What the public feature routes are built on (the other features' services, built first). */
export interface SimilarityWiringDeps {
  state: IndexState;
  scopeDeps: ScopeDeps;
  tracks: TrackRepository;
  semantic: SemanticService;
  alchemy: AlchemyService;
  artists: ArtistService;
  seeds: NamedSeedSource;
  rebuild: RebuildService;
  /** Server descriptions (cached until registry events). */
  registry: RegistryPort;
  /** Media-server clients of the sonic fingerprint and browsing. */
  clientFactory: MediaClientFactory;
  /** The Poincaré ball (get_embedding's poincare_embedding and hyperbolic_radius). */
  hyperbolic: HyperbolicService;
}

/**
 * The public GET/POST feature routes (features.routes.ts: similar songs, path, alchemy, artists, fingerprint,
 * search, map, sync, browse) and the domain services behind them (`features`, also called in process by
 * benchmarks). Parameters a request leaves out come from the admin settings of the index (PUT /api/config,
 * read through the runtime's 5 s cache), else the reference defaults (`STATIC_QUERY_DEFAULTS`).
 */
export function wireSimilarity(rt: ServiceRuntime, d: SimilarityWiringDeps) {
  const settings = rt.settings('index');
  const similarity = new SimilarityService(d.tracks);
  const features = {
    state: d.state,
    semantic: d.semantic,
    scopeDeps: d.scopeDeps,
    similarity,
    alchemy: d.alchemy,
    artists: d.artists,
    fingerprint: new FingerprintService(d.registry, d.clientFactory, rt.logger.child({ component: 'FingerprintService' })),
    search: new SearchService(d.tracks),
    map: new MapService(),
    sync: new SyncService(d.tracks, similarity),
    seeds: d.seeds,
    browse: new BrowseService(d.artists, d.registry, d.clientFactory, rt.logger.child({ component: 'BrowseService' })),
    rebuild: d.rebuild,
    registry: d.registry,
    hyperbolic: d.hyperbolic,
    queryDefaults: async () => ({
      maxSongsPerArtist: await settings.number('MAX_SONGS_PER_ARTIST', STATIC_QUERY_DEFAULTS.maxSongsPerArtist),
      pathSteps: await settings.number('PATH_DEFAULT_LENGTH', STATIC_QUERY_DEFAULTS.pathSteps),
      alchemyN: await settings.number('ALCHEMY_DEFAULT_N_RESULTS', STATIC_QUERY_DEFAULTS.alchemyN),
      alchemyTemperature: await settings.number('ALCHEMY_TEMPERATURE', STATIC_QUERY_DEFAULTS.alchemyTemperature),
      alchemySubtractDistance: await settings.number('ALCHEMY_SUBTRACT_DISTANCE_ANGULAR', STATIC_QUERY_DEFAULTS.alchemySubtractDistance),
    }),
  };
  return { features, routes: featureRoutes(features) };
}
