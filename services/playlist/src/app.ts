import { createMediaServerClient } from '@polyphony/media-servers';
import { api, routesOf } from '@polyphony/contracts';
import { createLlmProvider } from '@polyphony/llm';
import { ServiceRuntime, type ConsumerHandle, type RuntimeDeps, mountRoutes, type RouteHandlers } from '@polyphony/platform';
import { consumeCancelRequests } from './bus/cancel.consumer';
import { consumeServerDeleted } from './bus/server-deleted.consumer';
import type { PlaylistConfig } from './config';
import { ClusteringService, type ClusteringOptions } from './domain/clustering.service';
import { STATIC_CLUSTERING_DEFAULTS } from './domain/clustering-params';
import { PlaylistService as InstantPlaylistService } from './domain/playlist.service';
import type { CataloguePort, MediaClientFactory, RegistryPort } from './domain/ports';
import { clusteringRoutes } from './http/clustering.routes';
import { playlistRoutes } from './http/playlist.routes';
import { portableRoutes } from './http/portable.routes';
import { PortablePlaylistService } from './domain/portable.service';
import { cataloguePort, registryPort } from './peers';
import { ClusteringRunRepository } from './store/clustering-run.repository';
import { playlistMigrations } from './store/migrations';
import { PlaylistRepository } from './store/playlist.repository';

export interface PlaylistDeps extends RuntimeDeps {
  /** Media-server clients (default: createMediaServerClient with its default timeouts and retries). */
  clientFactory?: MediaClientFactory;
  /** Replace the HTTP adapters of the peers (unit tests); default: the registry and catalogue internal APIs. */
  registry?: RegistryPort;
  catalogue?: CataloguePort;
  clustering?: ClusteringOptions;
}

/** Composition root of the playlist service: instant playlists, the list of our playlists, clustering. */
export function buildPlaylist(config: PlaylistConfig, deps: PlaylistDeps = {}) {
  const rt = new ServiceRuntime(config, playlistMigrations, deps);
  const repo = new PlaylistRepository(rt.ds);
  const runs = new ClusteringRunRepository(rt.ds);
  const registry = deps.registry ?? registryPort(rt.peer('registry', 30_000));
  const catalogue = deps.catalogue ?? cataloguePort(rt.peer('catalogue', 120_000));
  const clientFactory = deps.clientFactory ?? ((conn) => createMediaServerClient(conn));
  const playlists = new InstantPlaylistService(repo, registry, catalogue, clientFactory, rt.logger.child({ component: 'PlaylistService' }));
  const registryPeer = rt.peer('registry', 30_000);
  // Playlist names from the configured LLM when there is one (settings read per server of a run).
  const namer = async () => {
    try {
      return createLlmProvider(await registryPeer.call(api.internal.aiSettings));
    } catch (err) {
      rt.logger.warn('AI naming unavailable; descriptor names are used', { error: (err as Error).message });
      return null;
    }
  };
  const clustering = new ClusteringService(runs.tasks, repo, registry, catalogue, clientFactory, rt.bus, rt.logger.child({ component: 'ClusteringService' }), rt.metrics, deps.clustering, namer);
  // Admin-editable clustering defaults (PUT /api/config), read through a 5 s cache.
  const settings = rt.settings('playlist');
  const routeSets: RouteHandlers[] = [];
  routeSets.push(playlistRoutes(playlists));
  routeSets.push(portableRoutes(new PortablePlaylistService(registry, catalogue, playlists, clientFactory, rt.logger.child({ component: 'PortablePlaylists' }))));
  routeSets.push(
    clusteringRoutes(clustering, async () => ({
      minClusters: await settings.number('NUM_CLUSTERS_MIN', STATIC_CLUSTERING_DEFAULTS.minClusters),
      maxClusters: await settings.number('NUM_CLUSTERS_MAX', STATIC_CLUSTERING_DEFAULTS.maxClusters),
      maxSongsPerPlaylist: await settings.number('MAX_SONGS_PER_CLUSTER_PLAYLIST', STATIC_CLUSTERING_DEFAULTS.maxSongsPerPlaylist),
      topN: await settings.number('TOP_N_CLUSTERING_PLAYLIST', STATIC_CLUSTERING_DEFAULTS.topN),
    })),
  );
  // Every route this service owns in the contracts table, with its handler (throws when one is missing).
  mountRoutes(rt.app, routesOf('playlist'), routeSets);
  rt.finishRoutes();

  const consumers: ConsumerHandle[] = [];
  rt.onStart(async () => {
    consumers.push(await consumeCancelRequests(rt.bus, clustering));
    consumers.push(await consumeServerDeleted(rt.bus, playlists));
    // A run whose coordinator died (lease expired) or handed it back on SIGTERM is taken over here.
    clustering.startScanning();
  });
  rt.onStop(async () => {
    for (const c of consumers) await c.stop();
    // A live run stops at its next check and hands its lease back: another replica (or this one after
    // the restart) resumes it from its per-server reports. Playlists written so far stay recorded.
    await clustering.shutdown();
  });
  return { name: 'playlist', runtime: rt, http: rt.app, playlists, clustering, repo, runs, start: () => rt.start(), stop: () => rt.stop(), listen: (port?: number, host?: string) => rt.listen(port, host) };
}
export type PlaylistService = ReturnType<typeof buildPlaylist>;
