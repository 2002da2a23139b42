import { LyricsPendingPage, MappingLookupResponse, ResolveIdentityResponse, type ResolveIdentityRequest } from '@polyphony/contracts';
import { createMediaServerClient } from '@polyphony/media-servers';
import { ServiceRuntime, type ConsumerHandle, type RuntimeDeps } from '@polyphony/platform';
import { consumeCancelRequests } from './bus/cancel.consumer';
import { consumeTrackRequests } from './bus/track-requested.consumer';
import type { AnalysisConfig } from './config';
import { AnalysisRunService, type AnalysisRunOptions } from './domain/analysis-run.service';
import { DefaultEmbedder } from './domain/audio/embedder';
import type { CataloguePort, MediaClientFactory, RegistryPort, ServerInfo } from './domain/ports';
import { LyricsBackfillService } from './domain/lyrics-backfill.service';
import { TrackProcessor } from './domain/track-processor';
import { analysisRoutes } from './http/analysis.routes';
import { analysisMigrations } from './store/migrations';
import { RunRepository } from './store/run.repository';

export interface AnalysisDeps extends RuntimeDeps {
  clientFactory?: MediaClientFactory;
  runOptions?: AnalysisRunOptions;
  /** Tracks processed at once by this process (default 2: one decodes in ffmpeg while one embeds). */
  concurrency?: number;
}

/** Composition root of the analysis worker: the run coordinator, the track consumer and their ports. */
export function buildAnalysis(config: AnalysisConfig, deps: AnalysisDeps = {}) {
  const rt = new ServiceRuntime(config, analysisMigrations, deps);
  const runs = new RunRepository(rt.ds);
  const registryClient = rt.client('registry', 30_000);
  const catalogueClient = rt.client('catalogue', 120_000);
  const registry: RegistryPort = {
    async listServers() {
      return (await registryClient.get<{ servers: ServerInfo[] }>('/internal/servers')).servers;
    },
    getServer: (id) => registryClient.get<ServerInfo>(`/internal/servers/${encodeURIComponent(id)}`),
  };
  const catalogue: CataloguePort = {
    async mappedProviderIds(serverId, providerIds) {
      if (providerIds.length === 0) return new Set();
      const res = MappingLookupResponse.parse(await catalogueClient.post('/internal/mappings/lookup', { serverId, providerIds }));
      return new Set(res.mapped);
    },
    async resolve(request: ResolveIdentityRequest) {
      return ResolveIdentityResponse.parse(await catalogueClient.post('/internal/identity/resolve', request));
    },
    async storeLyrics(itemId, outcome) {
      await catalogueClient.request('PUT', `/internal/tracks/${encodeURIComponent(itemId)}/lyrics`, outcome);
    },
    async pendingLyrics(after, limit) {
      return LyricsPendingPage.parse(await catalogueClient.get('/internal/lyrics/pending', { after, limit }));
    },
  };
  const clientFactory = deps.clientFactory ?? ((conn) => createMediaServerClient(conn));
  const service = new AnalysisRunService(runs, registry, catalogue, clientFactory, rt.bus, rt.logger.child({ component: 'AnalysisRunService' }), rt.metrics, deps.runOptions);
  const processor = new TrackProcessor(registry, catalogue, runs, clientFactory, new DefaultEmbedder(), rt.logger.child({ component: 'TrackProcessor' }));
  const lyricsBackfill = new LyricsBackfillService(catalogue, registry, clientFactory, rt.bus, rt.logger.child({ component: 'LyricsBackfill' }));
  rt.app.use(analysisRoutes(service, runs, lyricsBackfill));
  rt.finishRoutes();

  const consumers: ConsumerHandle[] = [];
  rt.onStart(async () => {
    // A run left live by a process that died (no heartbeat for 10 minutes) is marked FAIL.
    await runs.failStale(600);
    consumers.push(await consumeTrackRequests(rt.bus, processor, deps.concurrency ?? 2, rt.metrics));
    consumers.push(await consumeCancelRequests(rt.bus, service));
  });
  rt.onStop(async () => {
    for (const c of consumers) await c.stop();
    await lyricsBackfill.stop();
  });
  return { name: 'analysis-worker', runtime: rt, http: rt.app, service, processor, runs, lyricsBackfill, start: () => rt.start(), stop: () => rt.stop(), listen: (port?: number, host?: string) => rt.listen(port, host) };
}
export type AnalysisService = ReturnType<typeof buildAnalysis>;
