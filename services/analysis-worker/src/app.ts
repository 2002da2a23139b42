import { SERVICE_DEFAULTS, api, routesOf, type ResolveIdentityRequest } from '@polyphony/contracts';
import { LANDMARK_CODEC_VERSION } from '@polyphony/landmarks';
import { createMediaServerClient } from '@polyphony/media-servers';
import { ServiceRuntime, type ConsumerHandle, type RuntimeDeps, mountRoutes, type RouteHandlers } from '@polyphony/platform';
import { consumeCancelRequests } from './bus/cancel.consumer';
import { consumeTrackRequests } from './bus/track-requested.consumer';
import type { AnalysisConfig } from './config';
import { AnalysisRunService, type AnalysisRunOptions } from './domain/analysis-run.service';
import { ChangeWatchService, type ChangeWatchOptions, type WatchCataloguePort } from './domain/change-watch.service';
import { AnalysisThreadPool } from './domain/audio/cpu-pool';
import { ExclusionService } from './domain/exclusions.service';
import { ReferenceVectorService } from './domain/reference-vector.service';
import type { CataloguePort, IndexPort, MediaClientFactory, RegistryPort } from './domain/ports';
import { LyricsBackfillService } from './domain/lyrics-backfill.service';
import { LearnedModel } from './domain/musicnn/model-state';
import { TrackProcessor } from './domain/track-processor';
import { analysisRoutes } from './http/analysis.routes';
import { analysisMigrations } from './store/migrations';
import { ChangeWatchRepository } from './store/change-watch.repository';
import { RunRepository } from './store/run.repository';

export interface AnalysisDeps extends RuntimeDeps {
  clientFactory?: MediaClientFactory;
  runOptions?: AnalysisRunOptions;
  /** Replaces the index service's GET /internal/index/live (tests). */
  index?: IndexPort;
  /** Tracks processed at once by this process (default 2: one decodes in ffmpeg while one embeds). */
  concurrency?: number;
  /** Options of the change detection (tests and benchmarks). */
  watchOptions?: ChangeWatchOptions;
}

/** Composition root of the analysis worker: the run coordinator, the track consumer and their ports. */
export function buildAnalysis(config: AnalysisConfig, deps: AnalysisDeps = {}) {
  const rt = new ServiceRuntime(config, analysisMigrations, deps);
  const runs = new RunRepository(rt.ds);
  // Typed peer calls from the contracts route table (answers parsed with each route's response schema).
  const registryPeer = rt.peer('registry', 30_000);
  const cataloguePeer = rt.peer('catalogue', 120_000);
  // The removal check reads a server's whole metadata listing: minutes on a large library.
  const removalPeer = rt.peer('catalogue', 15 * 60_000);
  const registry: RegistryPort = {
    async listServers() {
      return (await registryPeer.call(api.internal.serversList)).servers;
    },
    getServer: (id) => registryPeer.call(api.internal.serverGet, { params: { id } }),
  };
  const catalogue: CataloguePort & WatchCataloguePort = {
    async mappedProviderIds(serverId, providerIds) {
      if (providerIds.length === 0) return new Set();
      const res = await cataloguePeer.call(api.internal.mappingsLookup, { body: { serverId, providerIds } });
      return new Set(res.mapped);
    },
    async changedProviderIds(serverId, tracks) {
      if (tracks.length === 0) return new Set();
      const res = await cataloguePeer.call(api.internal.mappingsLookup, { body: { serverId, providerIds: tracks.map((t) => t.id), stamps: tracks.map((t) => t.fileStamp ?? null) } });
      return new Set(res.changed ?? []);
    },
    async resolve(request: ResolveIdentityRequest) {
      return cataloguePeer.call(api.internal.identityResolve, { body: request });
    },
    async songsNeedingTags(serverId, providerIds, want) {
      const out = new Map<string, string>();
      if (providerIds.length === 0) return out;
      const { ids } = await cataloguePeer.call(api.internal.idsResolveInput, { body: { serverId, ids: providerIds } });
      const byItem = new Map<string, string>();
      providerIds.forEach((p, i) => {
        const item = ids[i]!;
        if (item !== p && !byItem.has(item)) byItem.set(item, p);
      });
      const items = [...byItem.keys()];
      for (let off = 0; off < items.length; off += 5000) {
        const { tracks } = await cataloguePeer.call(api.internal.tracksLookup, { body: { itemIds: items.slice(off, off + 5000) } });
        for (const t of tracks) {
          const versions = t.embedderVersions ?? [t.embedderVersion];
          if ((t.learned?.tagsModel ?? null) !== want.model || !versions.includes(want.embedderVersion)) out.set(byItem.get(t.itemId)!, t.itemId);
        }
      }
      return out;
    },
    async storeLearned(itemId, learned) {
      await cataloguePeer.call(api.internal.trackLearned, { params: { itemId }, body: learned });
    },
    embeddingSwitch: () => cataloguePeer.call(api.internal.embeddingSwitch),
    async storeLyrics(itemId, outcome) {
      await cataloguePeer.call(api.internal.trackLyrics, { params: { itemId }, body: outcome });
    },
    async pendingLyrics(after, limit) {
      return cataloguePeer.call(api.internal.lyricsPending, { query: { after, limit } });
    },
    async storeFingerprint(itemId, print) {
      await cataloguePeer.call(api.recordingInternal.trackFingerprint, { params: { itemId }, body: print });
    },
    removalCheck: (serverId) => removalPeer.call(api.internal.removalCheck, { params: { serverId } }),
    async songsWithoutFingerprint(serverId, providerIds) {
      const out = new Map<string, string>();
      for (let off = 0; off < providerIds.length; off += 5000) {
        const { missing } = await cataloguePeer.call(api.recordingInternal.fingerprintsMissing, { body: { serverId, providerIds: providerIds.slice(off, off + 5000), codec: LANDMARK_CODEC_VERSION } });
        for (const m of missing) out.set(m.providerId, m.itemId);
      }
      return out;
    },
  };
  const indexPeer = rt.peer('index', 30_000);
  const index: IndexPort = deps.index ?? {
    live: () => indexPeer.call(api.internal.indexLive),
  };
  const clientFactory = deps.clientFactory ?? ((conn) => createMediaServerClient(conn));
  // NUM_RECENT_ALBUMS and TOP_N_MOODS (GET /internal/settings/analysis, cached a few seconds): an admin's change applies to the next run.
  const settings = rt.settings('analysis');
  const runSettings = async () => ({
    numRecentAlbums: await settings.number('NUM_RECENT_ALBUMS', SERVICE_DEFAULTS.numRecentAlbums),
    topNMoods: await settings.number('TOP_N_MOODS', SERVICE_DEFAULTS.topNMoods),
  });
  const learned = new LearnedModel(config.modelsDir, config.musicnnPatches, rt.logger.child({ component: 'LearnedModel' }), 'auto', config.musicnnMtt, config.musicnnPrecision);
  const service = new AnalysisRunService(runs, registry, catalogue, index, clientFactory, rt.bus, rt.logger.child({ component: 'AnalysisRunService' }), rt.metrics, {
    learnedModel: () => learned.target(),
    settings: runSettings,
    ...deps.runOptions,
  });
  const concurrency = deps.concurrency ?? 2;
  // The per-song DSP runs on these threads (started at the first track), one per track in flight by default.
  const cpu = new AnalysisThreadPool(config.analysisCpuThreads ?? concurrency, rt.logger.child({ component: 'AnalysisThreadPool' }));
  const processor = new TrackProcessor(registry, catalogue, runs, clientFactory, cpu, rt.logger.child({ component: 'TrackProcessor' }), undefined, learned, () => settings.number('TOP_N_MOODS', SERVICE_DEFAULTS.topNMoods));
  const lyricsBackfill = new LyricsBackfillService(catalogue, registry, clientFactory, rt.bus, rt.logger.child({ component: 'LyricsBackfill' }));
  const watch = new ChangeWatchService(new ChangeWatchRepository(rt.ds), runs, registry, catalogue, clientFactory, rt.bus, rt.logger.child({ component: 'ChangeWatch' }), {
    tickMs: config.changeWatchTickMs || undefined,
    topNMoods: () => settings.number('TOP_N_MOODS', SERVICE_DEFAULTS.topNMoods),
    ...deps.watchOptions,
  });
  const routeSets: RouteHandlers[] = [];
  routeSets.push(analysisRoutes(service, new ExclusionService(runs), lyricsBackfill, learned, watch, new ReferenceVectorService(registry, clientFactory, learned, cpu)));
  // Every route this service owns in the contracts table, with its handler (throws when one is missing).
  mountRoutes(rt.app, routesOf('analysis'), routeSets);
  rt.finishRoutes();

  const consumers: ConsumerHandle[] = [];
  rt.onStart(async () => {
    // Before consuming, so the first tracks already get tags when the model is installed.
    await learned.load();
    consumers.push(await consumeTrackRequests(rt.bus, processor, concurrency, rt.metrics, rt.logger.child({ component: 'TrackConsumer' })));
    consumers.push(await consumeCancelRequests(rt.bus, service));
    // Any replica resumes a run whose coordinator's lease expired (died, lost the database, stopped).
    service.host.startScanning();
    // Change detection: every replica ticks; a lease per server lets one of them check it.
    if ((config.changeWatchTickMs ?? 1000) > 0) watch.start();
  });
  rt.onStop(async () => {
    // Graceful shutdown: stop coordinating (the lease is handed back so another replica resumes at
    // once), stop taking tracks; in-flight tracks finish and are acked (or, past the grace period,
    // are redelivered by the broker when the connection closes). The CPU threads end once no track uses them.
    await service.host.stop();
    await watch.stop();
    for (const c of consumers) await c.stop();
    await cpu.close();
    await lyricsBackfill.stop();
    learned.dispose();
  });
  return { name: 'analysis-worker', runtime: rt, http: rt.app, service, watch, processor, cpu, runs, lyricsBackfill, learned, start: () => rt.start(), stop: () => rt.stop(), listen: (port?: number, host?: string) => rt.listen(port, host) };
}
export type AnalysisService = ReturnType<typeof buildAnalysis>;
