import { routesOf } from '@polyphony/contracts';
import { createMediaServerClient } from '@polyphony/media-servers';
import { ServiceRuntime, TaskRunHost, TaskRunStore, leaseOwnerName, parseOrThrow, type RuntimeDeps, mountRoutes, type RouteHandlers } from '@polyphony/platform';
import { RepointService, type RelabelMapSource } from './generation/repoint.service';
import { ItemIdRenameStore } from './generation/item-id-rename.repository';
import type { IndexConfig } from './config';
import { AlchemyService } from './alchemy/alchemy.service';
import { ArtistService } from './artists/artist.service';
import { BrowseService } from './artists/browse.service';
import { MapFollower } from './maps/generation-maps';
import { attachReplicaLifecycle } from './lifecycle';
import { aiSettingsSource, cataloguePort, lyricsPort, playlistPort, radioPeers, registryPort, relabelMapSource } from './peers';
import { ServerInfoCache } from './core/server-info';
import { FingerprintService } from './similarity/fingerprint.service';
import { IndexState, emptyGeneration } from './core/generation';
import { MapService } from './maps/map.service';
import type { CataloguePort, MediaClientFactory, NamedSeedSource, PlaylistPort, RegistryPort } from './core/ports';
import { liveGenerationRoutes } from './generation/live.routes';
import { LiveGenerationService } from './generation/live-generation.service';
import { ReplicaReporter } from './generation/replica-reporter';
import { ReplicaRepository } from './generation/replica.repository';
import { RebuildService, tableStorageOf, type RebuildOptions } from './generation/rebuild.service';
import { SearchService } from './similarity/search.service';
import { STATIC_QUERY_DEFAULTS, SimilarityService } from './similarity/similarity.service';
import { SyncService } from './sync/sync.service';
import { MoodParam } from '@polyphony/contracts';
import { InstantPlaylistService } from './chat/instant-playlist.service';
import { chatRoutesRouter } from './chat/chat.routes';
import { featureRoutes } from './similarity/features.routes';
import { PgChatCatalog } from './chat/chat.repository';
import { semanticRoutes } from './semantic/semantic.routes';
import { hyperbolicRoutes } from './hyperbolic/hyperbolic.routes';
import { HyperbolicService } from './hyperbolic/hyperbolic.service';
import { savedAlchemyRoutes } from './alchemy/saved-alchemy.routes';
import { AnchorService, RadioService } from './alchemy/saved-alchemy.service';
import { SavedAlchemyRepository } from './alchemy/saved-alchemy.repository';
import { SemanticService, TagsUnavailableError, type LyricsPort } from './semantic/semantic.service';
import { SemanticRepository } from './semantic/semantic.repository';
import { GenerationRepository } from './generation/generation.repository';
import { PgBuildLock } from './generation/build-lock.repository';
import { indexMigrations } from './core/migrations';
import { TrackRepository } from './core/track.repository';

export interface IndexDeps extends RuntimeDeps {
  /** Media-server clients for the sonic fingerprint (default: @polyphony/media-servers). */
  clientFactory?: MediaClientFactory;
  /** Replaces the HTTP client of the catalogue's internal API (benchmarks). */
  catalogue?: CataloguePort;
  /** Replaces the HTTP client of the playlist service's internal API. */
  playlists?: PlaylistPort;
  /** Replaces the HTTP client of the registry's internal API. */
  registry?: RegistryPort;
  /** Safety poll of the catalogue's mapping log when no nudge arrives, ms (default 5000; 0 = off). */
  mapPollMs?: number;
  rebuild?: RebuildOptions;
  /** Relabel-map pages (tests); defaults to the catalogue's GET /internal/ids/relabel-map. */
  relabelMap?: RelabelMapSource;
  /** Lyrics similarity of SemGrove (default: the catalogue's POST /internal/lyrics/similar). */
  lyrics?: LyricsPort;
  /** Request a build at start when the database holds no live generation (default true). */
  rebuildOnStart?: boolean;
}

/**
 * Composition root of the index service: the shared similarity index (IVF generations persisted in the
 * `index` schema, one live in memory), the availability masks, the interactive features and their routes,
 * and the bus consumers (rebuild requests, mapping changes).
 */
export function buildIndex(config: IndexConfig, deps: IndexDeps = {}) {
  // Queries need the database and the in-memory generation, not the broker: stay ready through a broker restart.
  const rt = new ServiceRuntime(config, indexMigrations, { readyWithoutBus: true, ...deps });
  // Typed peer calls from the contracts route table (answers parsed with each route's response schema).
  const cataloguePeer = rt.peer('catalogue', 120_000);
  const registryPeer = rt.peer('registry', 30_000);
  // Admin-editable defaults of this service (PUT /api/config), read through a 5 s cache.
  const settings = rt.settings('index');
  const playlistPeer = rt.peer('playlist', 30_000);
  const catalogue = deps.catalogue ?? cataloguePort(cataloguePeer);
  const playlists = deps.playlists ?? playlistPort(playlistPeer);
  const seeds: NamedSeedSource = {};
  // Server descriptions are cached until registry.server.saved/deleted (no registry call per /api/sync).
  const servers = new ServerInfoCache(deps.registry ?? registryPort(registryPeer));
  const registry: RegistryPort = servers;
  const tracks = new TrackRepository(rt.ds);
  const generations = new GenerationRepository(rt.ds, tracks);
  const maps = new MapFollower(catalogue, rt.logger.child({ component: 'MapFollower' }));
  // Empty until start() loads the stored generation (or a build publishes one).
  const state = new IndexState(emptyGeneration());
  const rebuild = new RebuildService(catalogue, tracks, generations, state, maps, rt.bus, rt.logger.child({ component: 'RebuildService' }), {
    vectors: config.vectors,
    lock: new PgBuildLock(rt.ds),
    ...deps.rebuild,
  });
  const repoint = new RepointService(
    new ItemIdRenameStore(rt.ds),
    rebuild,
    deps.relabelMap ?? relabelMapSource(cataloguePeer),
    rt.logger.child({ component: 'RepointService' }),
  );
  const similarity = new SimilarityService(tracks);
  const artists = new ArtistService(catalogue, rt.logger.child({ component: 'ArtistService' }));
  const scopeDeps = { tracks };
  const clientFactory: MediaClientFactory = deps.clientFactory ?? ((conn) => createMediaServerClient(conn));
  const lyrics = deps.lyrics ?? lyricsPort(cataloguePeer);
  const semantic = new SemanticService(state, new SemanticRepository(rt.ds), lyrics, rt.logger.child({ component: 'SemanticService' }), tableStorageOf(config.vectors));
  // Moods as seeds of find_path, alchemy and similar_tracks: a centroid of the generation's mood (503 without tags).
  // An alchemy mood item may name a centroid as the reference does: "<mood>:<centroid index>".
  seeds.mood = (gen, mood, centroidIndex) => {
    const m = /^\s*([^:]+):\s*(\d{1,4})\s*$/.exec(mood);
    return semantic.moodVector(gen, parseOrThrow(MoodParam, m ? m[1] : mood, 'mood'), m ? Number(m[2]) : centroidIndex);
  };
  // The Poincaré ball of every generation, built before it is served (onPrepare), for /api/hyperbolic/* and get_embedding.
  const hyperbolic = new HyperbolicService(state, rt.logger.child({ component: 'HyperbolicService' }));
  const alchemy = new AlchemyService(artists, playlists, seeds);
  const saved = new SavedAlchemyRepository(rt.ds);
  const anchors = new AnchorService(saved, alchemy);
  // Saved anchors as seeds of alchemy, find_path and similar_tracks.
  seeds.anchor = (idOrName, gen) => anchors.seed(idOrName, gen);
  const radioStore = new TaskRunStore(rt.ds, 'index', 'radio_runs', 'A radio run is already running');
  const radios = new RadioService(
    saved,
    anchors,
    alchemy,
    state,
    scopeDeps,
    radioPeers(registryPeer, playlistPeer),
    radioStore,
    rt.bus,
    rt.logger.child({ component: 'RadioService' }),
  );
  radios.host = new TaskRunHost(radioStore, leaseOwnerName('index-radios'), (run, keeper, stop) => radios.execute(run, keeper, stop), rt.logger.child({ component: 'RadioRuns' }));
  const features = {
    state,
    semantic,
    scopeDeps,
    similarity,
    alchemy,
    artists,
    fingerprint: new FingerprintService(registry, clientFactory, rt.logger.child({ component: 'FingerprintService' })),
    search: new SearchService(tracks),
    map: new MapService(),
    sync: new SyncService(tracks, similarity),
    seeds,
    browse: new BrowseService(artists, registry, clientFactory, rt.logger.child({ component: 'BrowseService' })),
    rebuild,
    registry,
    hyperbolic,
    queryDefaults: async () => ({
      maxSongsPerArtist: await settings.number('MAX_SONGS_PER_ARTIST', STATIC_QUERY_DEFAULTS.maxSongsPerArtist),
      pathSteps: await settings.number('PATH_DEFAULT_LENGTH', STATIC_QUERY_DEFAULTS.pathSteps),
      alchemyN: await settings.number('ALCHEMY_DEFAULT_N_RESULTS', STATIC_QUERY_DEFAULTS.alchemyN),
      alchemyTemperature: await settings.number('ALCHEMY_TEMPERATURE', STATIC_QUERY_DEFAULTS.alchemyTemperature),
      alchemySubtractDistance: await settings.number('ALCHEMY_SUBTRACT_DISTANCE_ANGULAR', STATIC_QUERY_DEFAULTS.alchemySubtractDistance),
    }),
  };
  const routeSets: RouteHandlers[] = [];
  routeSets.push(featureRoutes(features));
  const instant = new InstantPlaylistService(
    {
      similarity,
      search: features.search,
      alchemy: features.alchemy,
      artists,
      catalog: new PgChatCatalog(rt.ds),
      // The text/mood search tool; a library without learned tags answers it with no songs.
      text: {
        async search(scope, query, limit) {
          try {
            return (await semantic.textSearch(scope, query, limit)).results.map((r) => ({ item_id: r.item_id, title: r.title, author: r.author, album: r.album ?? null }));
          } catch (err) {
            if (err instanceof TagsUnavailableError) return [];
            throw err;
          }
        },
      },
    },
    aiSettingsSource(registryPeer),
    rt.logger.child({ component: 'InstantPlaylist' }),
  );
  routeSets.push(chatRoutesRouter(instant, state, scopeDeps, rt.logger.child({ component: 'chat' })));
  routeSets.push(semanticRoutes(state, scopeDeps, semantic));
  routeSets.push(hyperbolicRoutes(state, scopeDeps, hyperbolic));
  routeSets.push(savedAlchemyRoutes(state, scopeDeps, anchors, radios));
  // Every serving replica reports the generation it serves (a run ends SUCCESS once all live ones serve its songs).
  const replicaRows = new ReplicaRepository(rt.ds);
  const reporter = new ReplicaReporter(leaseOwnerName('index'), state, replicaRows, rt.logger.child({ component: 'ReplicaReporter' }), config.replicaHeartbeatMs);
  routeSets.push(liveGenerationRoutes(new LiveGenerationService(state, generations, replicaRows, ReplicaReporter.liveWindowMs(config.replicaHeartbeatMs))));
  // Every route this service owns in the contracts table, with its handler (throws when one is missing).
  // No ETag: express would hash every JSON answer (up to ~40 kB for 199 similar songs) for a validator no
  // client of these query endpoints sends back (issue 19 per-request cost).
  rt.app.set('etag', false);
  mountRoutes(rt.app, routesOf('index'), routeSets);
  rt.finishRoutes();

  const lifecycle = attachReplicaLifecycle({ rt, state, maps, rebuild, repoint, servers, radios, reporter, rebuildOnStart: deps.rebuildOnStart, mapPollMs: deps.mapPollMs });
  return {
    name: 'index',
    runtime: rt,
    /** Reports the generation this replica serves (index.replicas heartbeat rows). */
    replicaReporter: reporter,
    http: rt.app,
    /** The request listener `listen` serves: the lean GET path, then `http` (supertest it for the served behaviour). */
    get handler() {
      return rt.handler;
    },
    state,
    rebuild,
    repoint,
    /** Loads and follows the provider <-> canonical maps of each generation. */
    maps,
    /** Server descriptions cached until registry events. */
    servers,
    /** False until the generation and its maps are loaded; false again once stopping. */
    isReady: lifecycle.isReady,
    /** The domain services behind the routes (benchmarks call them in process). */
    features,
    /** Saved anchors and radios. */
    anchors,
    radios,
    start: () => rt.start(),
    stop: () => rt.stop(),
    listen: (port?: number, host?: string) => rt.listen(port, host),
  };
}
export type IndexService = ReturnType<typeof buildIndex>;
