import { RoutingKeys, routesOf } from '@polyphony/contracts';
import { createMediaServerClient } from '@polyphony/media-servers';
import { ServiceRuntime, mountRoutes, type RuntimeDeps } from '@polyphony/platform';
import { albumRoutesRouter } from './album/album.routes';
import { AlbumService } from './album/album.service';
import { wireAlchemy } from './alchemy/alchemy.wiring';
import { ArtistService } from './artists/artist.service';
import { wireChat } from './chat/chat.wiring';
import { hyperbolicRoutes } from './hyperbolic/hyperbolic.routes';
import { HyperbolicService } from './hyperbolic/hyperbolic.service';
import type { IndexConfig } from './config';
import { IndexState, emptyGeneration } from './core/generation';
import { indexMigrations } from './core/migrations';
import type { CataloguePort, MediaClientFactory, NamedSeedSource, PlaylistPort, RegistryPort } from './core/ports';
import { ServerInfoCache } from './core/server-info';
import { TrackRepository } from './core/track.repository';
import { wireGeneration } from './generation/generation.wiring';
import type { RebuildOptions } from './generation/rebuild.service';
import type { RelabelMapSource } from './generation/repoint.service';
import { residentBytesOf, tableStorageOf } from './generation/vector-storage';
import { DeltaRepository } from './generation/live/delta.repository';
import { LiveLibraryService } from './generation/live/live-library.service';
import { attachReplicaLifecycle } from './lifecycle';
import { MapFollower } from './maps/generation-maps';
import { aiSettingsSource, albumPeers, analysisRunLive, cataloguePort, fingerprintSource, libraryScopeSource, lyricsPort, playlistPort, radioPeers, registryPort, relabelMapSource } from './peers';
import { LibraryScopes, type LibraryScopeSource } from './core/library-scope';
import { RecordingIndexService } from './recording/recording-index.service';
import { recordingRoutes } from './recording/recording.routes';
import type { LyricsPort } from './semantic/semantic.service';
import { wireSemantic } from './semantic/semantic.wiring';
import { wireSimilarity } from './similarity/similarity.wiring';

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
  /** Per-user library limits' answers (issue 34; default: the registry's and the catalogue's internal routes). */
  libraryScopes?: LibraryScopeSource;
  /** Whether a full analysis run is live (default: the analysis worker's GET /internal/analysis/run). */
  analysisRunLive?: () => Promise<boolean>;
}

/**
 * Composition root of the index service: the shared similarity index (IVF generations persisted in the
 * `index` schema, one live in memory), the peers (peers.ts), each feature built by its folder's wiring
 * (generation, semantic, alchemy, similarity, chat), their route sets mounted from the contracts table, and
 * the replica's start and stop (lifecycle.ts).
 */
export function buildIndex(config: IndexConfig, deps: IndexDeps = {}) {
  // Queries by id are answered from the in-memory generation: stay ready through a broker restart and a database
  // outage (the readiness check 'index' still requires a loaded generation; issue 36).
  const rt = new ServiceRuntime(config, indexMigrations, { readyWithoutBus: true, readyWithoutDatabase: true, ...deps });
  const cataloguePeer = rt.peer('catalogue', 120_000);
  const registryPeer = rt.peer('registry', 30_000);
  const playlistPeer = rt.peer('playlist', 30_000);
  const analysisPeer = rt.peer('analysis', 10_000);
  const catalogue = deps.catalogue ?? cataloguePort(cataloguePeer);
  // Server descriptions are cached until registry.server.saved/deleted (no registry call per /api/sync).
  const servers = new ServerInfoCache(deps.registry ?? registryPort(registryPeer));
  const clientFactory: MediaClientFactory = deps.clientFactory ?? ((conn) => createMediaServerClient(conn));

  const tracks = new TrackRepository(rt.ds);
  // Results limited to the libraries a signed-in user's own account sees, for users who asked for it (issue 34).
  const scopeDeps = { tracks, libraries: new LibraryScopes(deps.libraryScopes ?? libraryScopeSource(registryPeer, cataloguePeer)) };
  // Empty until start() loads the stored generation (or a build publishes one).
  const state = new IndexState(emptyGeneration());
  const maps = new MapFollower(catalogue, rt.logger.child({ component: 'MapFollower' }));
  // Mood and anchor seeds of similar_tracks, find_path and alchemy, filled in by the semantic and alchemy features.
  const seeds: NamedSeedSource = {};
  const generation = wireGeneration(rt, config, { catalogue, tracks, state, maps, relabelMap: deps.relabelMap ?? relabelMapSource(cataloguePeer), rebuild: deps.rebuild });
  const semantic = wireSemantic(rt, state, scopeDeps, seeds, deps.lyrics ?? lyricsPort(cataloguePeer), tableStorageOf(config.vectors));
  const artists = new ArtistService(catalogue, rt.logger.child({ component: 'ArtistService' }));
  // The Poincaré ball of every generation, built before it is served (onPrepare), for /api/hyperbolic/* and get_embedding.
  const hyperbolic = new HyperbolicService(state, rt.logger.child({ component: 'HyperbolicService' }));
  const playlists = deps.playlists ?? playlistPort(playlistPeer);
  const alchemy = wireAlchemy(rt, { state, scopeDeps, artists, playlists, seeds, radioPeers: radioPeers(registryPeer, playlistPeer) });
  const { features, routes: featureRoutes } = wireSimilarity(rt, {
    state, scopeDeps, tracks, semantic: semantic.semantic, alchemy: alchemy.alchemy, artists, seeds, rebuild: generation.rebuild, registry: servers, clientFactory, hyperbolic,
  });
  const chatRoutes = wireChat(rt, state, scopeDeps, features, aiSettingsSource(registryPeer));
  // Search by recording: the fingerprint index of each generation, loaded in the background after a swap.
  const recording = new RecordingIndexService(state, fingerprintSource(cataloguePeer), scopeDeps, config.recording, rt.logger.child({ component: 'RecordingIndex' }), undefined, config.recordingPostings);
  features.search.fingerprinted = (gen) => recording.printedRows(gen);
  // A stopped replica leaves no recording match thread behind (RECORDING_MATCH_THREAD=1).
  rt.onStop(() => recording.close());
  // Album creation and Album of the Week (issue 31): the index, the learned tags' table, the playlist service's fixed playlist.
  const albums = new AlbumService(state, scopeDeps, tracks, (g) => semantic.semantic.table(g), rt.logger.child({ component: 'AlbumService' }), albumPeers(registryPeer, playlistPeer));

  // No ETag: express would hash every JSON answer (up to ~40 kB for 199 similar songs) for a validator no
  // client of these query endpoints sends back (issue 19 per-request cost).
  rt.app.set('etag', false);
  // Every route this service owns in the contracts table, with its handler (throws when one is missing).
  mountRoutes(rt.app, routesOf('index'), [featureRoutes, chatRoutes, semantic.routes, alchemy.routes, generation.routes, recordingRoutes(state, scopeDeps, recording), albumRoutesRouter(state, scopeDeps, albums), hyperbolicRoutes(state, scopeDeps, hyperbolic)]);
  rt.finishRoutes();

  const { rebuild, repoint, reporter } = generation;
  const { anchors, radios } = alchemy;
  // Live library (issue 35): analysed songs added to the live generation in place, on every replica.
  const live = new LiveLibraryService({
    state,
    store: new DeltaRepository(rt.ds),
    catalogue,
    tracks,
    publish: (e) => rt.bus.publish(RoutingKeys.indexDeltaApplied, e),
    requestRebuild: (reason, since) => void rebuild.request(reason, undefined, since).catch((err: unknown) => rt.logger.warn('rebuild request failed', { reason, err: (err as Error).message })),
    rebuildBusy: () => rebuild.busy,
    rebuildBusyAnywhere: () => rebuild.busyAnywhere(),
    followMaps: (m) => maps.catchUp(m),
    analysisRunLive: deps.analysisRunLive ?? analysisRunLive(analysisPeer),
    logger: rt.logger.child({ component: 'LiveLibrary' }),
    settings: config.live,
    storage: { ...(config.vectors.dir ? { dir: config.vectors.dir } : {}), residentMaxBytes: residentBytesOf(config.vectors) },
  });
  const lifecycle = attachReplicaLifecycle({ rt, state, maps, rebuild, repoint, servers, radios, reporter, rebuildOnStart: deps.rebuildOnStart, mapPollMs: deps.mapPollMs, live });
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
    /** Search by recording: the fingerprint index per generation. */
    recording,
    /** The live library: new songs added to the live generation without a rebuild. */
    live,
    /** Album creation and Album of the Week. */
    albums,
    /** The Poincaré ball per generation and the /api/hyperbolic/* queries. */
    hyperbolic,
    /** Text search: the semantic table per generation. */
    semantic: semantic.semantic,
    /** Saved anchors and radios. */
    anchors,
    radios,
    start: () => rt.start(),
    stop: () => rt.stop(),
    listen: (port?: number, host?: string) => rt.listen(port, host),
  };
}
export type IndexService = ReturnType<typeof buildIndex>;
