import { RoutingKeys, api, type ServerCountedEvent, routesOf } from '@polyphony/contracts';
import { createMediaServerClient } from '@polyphony/media-servers';
import { ServiceRuntime, TaskRunStore, type ConsumerHandle, type RuntimeDeps, mountRoutes, type RouteHandlers } from '@polyphony/platform';
import { consumeSweepRequests, consumeTaskCancels } from './bus/batch.consumers';
import { consumeServerDeleted } from './bus/server-deleted.consumer';
import { consumeSettingsChanged } from './bus/settings.consumer';
import type { CatalogueConfig } from './config';
import { browseRoutes } from './http/browse.routes';
import { cleaningRoutes } from './http/cleaning.routes';
import { probeRoutes } from './http/probes.routes';
import { internalRoutes } from './http/internal.routes';
import { lyricsRoutes } from './http/lyrics.routes';
import { fingerprintRoutes } from './http/fingerprint.routes';
import { importRoutes } from './http/import.routes';
import { ReferenceImportService } from './domain/reference-import/import.service';
import { PgReferenceImportRepository } from './store/reference-import.repository';
import { openDumpReferenceSource, openPgReferenceSource } from './store/reference-source';
import { FingerprintRepository } from './store/fingerprint.repository';
import { FingerprintService } from './domain/fingerprint.service';
import { BatchRunner } from './domain/batch-runner';
import { BrowseService } from './domain/browse.service';
import { CoverageService } from './domain/coverage.service';
import { CleaningExecutor } from './domain/cleaning.service';
import { RemovalService } from './domain/removals.service';
import { type ActiveScheme, IdentityService } from './domain/identity.service';
import type { BandLayout } from './domain/identity/bands';
import { MappingChangedPublisher } from './domain/mapping-events';
import { MappingService } from './domain/mapping.service';
import { LyricsService } from './domain/lyrics.service';
import { HttpIndexPort, HttpRegistryPort, type IndexPort, type MediaClientFactory, type RegistryPort } from './domain/ports';
import { SchemeService, type SchemeStartReport } from './domain/scheme.service';
import { SweepExecutor, type SweepHooks } from './domain/sweep.service';
import { TrackService } from './domain/track.service';
import { CatalogueSettings } from './settings';
import { ArtistRepository } from './store/artist.repository';
import { BrowseRepository } from './store/browse.repository';
import { CoverageRepository } from './store/coverage.repository';
import { BatchTaskRepository } from './store/batch-task.repository';
import { PgIdentityRepository } from './store/identity.repository';
import { PgEmbeddingSwitchRepository } from './store/embedding-switch.repository';
import { MappingLogRepository } from './store/mapping-log.repository';
import { ChangeFeedRepository } from './store/change-feed.repository';
import { LyricsRepository } from './store/lyrics.repository';
import { MappingRepository } from './store/mapping.repository';
import { catalogueMigrations } from './store/migrations';
import { PgSchemeRepository } from './store/scheme.repository';
import { SweepRepository } from './store/sweep.repository';
import { TrackRepository } from './store/track.repository';

/** Dependencies of the catalogue; the optional ports replace the HTTP peers and media-server clients (tests, benchmarks). */
export interface CatalogueDeps extends RuntimeDeps {
  /** Media-server clients of the sweeps and the cleaning (default createMediaServerClient). */
  clientFactory?: MediaClientFactory;
  /** Server list (default: the registry's GET /internal/servers). */
  registryPort?: RegistryPort;
  /** Inline index rebuild of the cleaning (default: the index's HTTP API). */
  indexPort?: IndexPort;
  /** Instrumentation of the sweep (tests and benchmarks). */
  sweepHooks?: SweepHooks;
}

/**
 * Composition root of the catalogue-identity service: settings (seeded from the environment on first
 * start), the start-time id-scheme check / relabel, identity resolution, id translation, availability,
 * snapshot, the registry.server.deleted.v1 consumer, catalogue.mapping.changed.v1 /
 * catalogue.server.counted.v1 after mapping changes, and the batch lane: sweeps and alignments
 * (registry.sweep.requested.v1), cleaning (POST /api/cleaning/start and its schedule), their cancels
 * (task.cancel.requested.v1) and their task-board snapshots.
 *
 * Start order: database (and migrations when asked) -> settings seed -> scheme check (relabel if the
 * configured version is newer) -> resolver activated -> bus consumers -> batch lane. Stop ends the
 * consumers, stops the batch lane (a running task is re-queued) and flushes pending mapping.changed events.
 */
export function buildCatalogue(config: CatalogueConfig, deps: CatalogueDeps = {}) {
  const rt = new ServiceRuntime(config, catalogueMigrations, deps);
  const log = rt.logger;
  const settings = new CatalogueSettings(rt.ds, (problem) => log.warn('invalid catalogue setting ignored', { problem }));
  const mappings = new MappingRepository(rt.ds);
  const mappingLog = new MappingLogRepository(rt.ds);
  // After each (debounced) mapping.changed of a server, report its matched-song count to the registry
  // (catalogue.server.counted.v1; trackCount null keeps the count of the last full fetch).
  const reportCounts = async (serverId: string): Promise<void> => {
    const event: ServerCountedEvent = { serverId, trackCount: null, matchedCount: await mappings.matchedCount(serverId) };
    await rt.bus.publish(RoutingKeys.serverCounted, event);
  };
  const events = new MappingChangedPublisher(rt.bus, config.mappingChangedDebounceMs, log.child({ component: 'MappingChangedPublisher' }), reportCounts);
  // Embedder versions: the band layout is the active scheme's (set at start, before any resolve or switch).
  const versions: PgEmbeddingSwitchRepository = new PgEmbeddingSwitchRepository(
    rt.ds,
    (): BandLayout => {
      const active: ActiveScheme | undefined = identity.activeScheme;
      if (!active) throw new Error('catalogue identity is still starting');
      return active.layout;
    },
    log.child({ component: 'EmbeddingSwitch' }),
  );
  const identity: IdentityService = new IdentityService(new PgIdentityRepository(rt.ds), settings, events, versions);
  const tracks = new TrackRepository(rt.ds);
  const artists = new ArtistRepository(rt.ds);
  const scheme = new SchemeService(new PgSchemeRepository(rt.ds), settings, rt.bus, events, log.child({ component: 'SchemeService' }), {
    chunkSize: config.relabelChunkSize,
    concurrency: config.relabelConcurrency,
    poolSize: config.dbPoolSize,
  });
  // Batch lane: sweeps, alignments and cleanings, one at a time (domain/batch-runner.ts).
  const registryPort = deps.registryPort ?? new HttpRegistryPort(rt.peer('registry', 30_000));
  const indexPort = deps.indexPort ?? new HttpIndexPort(rt.peer('index', 30_000), rt.peer('registry', 30_000));
  const clientFactory = deps.clientFactory ?? ((conn) => createMediaServerClient(conn));
  const sweepStore = new SweepRepository(rt.ds);
  const batchTasks = new BatchTaskRepository(rt.ds);
  const sweeps = new SweepExecutor(sweepStore, registryPort, clientFactory, settings, events, rt.bus, log.child({ component: 'SweepExecutor' }), {
    chunkSize: config.sweepChunkSize,
    refreshChunkSize: config.sweepRefreshChunkSize,
    hooks: deps.sweepHooks,
  });
  const cleanings = new CleaningExecutor(sweepStore, registryPort, clientFactory, indexPort, settings, events, rt.bus, log.child({ component: 'CleaningExecutor' }), {
    chunkSize: config.sweepRefreshChunkSize,
    indexTimeoutMs: config.indexRebuildTimeoutMs,
    indexPollMs: config.indexRebuildPollMs,
  });
  const batch = new BatchRunner(batchTasks, rt.bus, sweeps, cleanings, settings, log.child({ component: 'BatchRunner' }), {
    recheckMs: config.batchRecheckMs,
    progressIntervalMs: config.taskProgressIntervalMs,
  });

  // Import from the reference (issue 34): a task on the platform host over catalogue.import_runs.
  const referenceImports = new PgReferenceImportRepository(rt.ds, () => {
    const active = identity.activeScheme;
    if (!active) throw new Error('catalogue identity is still starting');
    return { version: active.version, layout: active.layout };
  });
  const analysisPeer = rt.peer('analysis', 10 * 60_000);
  const imports = new ReferenceImportService(
    new TaskRunStore(rt.ds, 'catalogue', 'import_runs', 'An import is already running'),
    { connection: openPgReferenceSource, dump: openDumpReferenceSource },
    referenceImports,
    {
      latest: () => referenceImports.latest(),
      requestIndexRebuild: async () => {
        await indexPort.rebuildAndWait({ timeoutMs: config.indexRebuildTimeoutMs, pollMs: config.indexRebuildPollMs });
      },
      mappingsChanged: (serverIds) => {
        for (const id of serverIds) events.changed(id, 'import');
      },
      // One file per call: download + decode + one MSD pass per 3 s of up to 600 s of audio.
      referenceVector: (serverId, providerId) => analysisPeer.call(api.internal.referenceVector, { body: { serverId, providerId } }),
    },
    rt.bus,
    log.child({ component: 'ReferenceImport' }),
  );

  const mappingService = new MappingService(mappings, mappingLog, artists, settings, events);
  const routeSets: RouteHandlers[] = [];
  const removals = new RemovalService(sweepStore, registryPort, clientFactory, events, log.child({ component: 'RemovalService' }), config.sweepRefreshChunkSize);
  routeSets.push(internalRoutes({ identity, mappings: mappingService, tracks: new TrackService(tracks, versions), settings, scheme, removals, changes: new ChangeFeedRepository(rt.ds), logger: log }));
  routeSets.push(cleaningRoutes(batch));
  routeSets.push(importRoutes(imports));
  routeSets.push(probeRoutes(new CoverageService(new CoverageRepository(rt.ds))));
  const lyrics = new LyricsRepository(rt.ds);
  routeSets.push(lyricsRoutes(new LyricsService(lyrics)));
  const fingerprints = new FingerprintRepository(rt.ds);
  routeSets.push(fingerprintRoutes(new FingerprintService(fingerprints)));
  routeSets.push(browseRoutes(new BrowseService(new BrowseRepository(rt.ds))));
  // Every route this service owns in the contracts table, with its handler (throws when one is missing).
  mountRoutes(rt.app, routesOf('catalogue'), routeSets);
  rt.finishRoutes();

  const consumers: ConsumerHandle[] = [];
  let pruneTimer: NodeJS.Timeout | undefined;
  let schemeReport: SchemeStartReport | undefined;
  rt.onStart(async () => {
    await settings.seed(config.seedEnv);
    schemeReport = await scheme.ensureCurrent();
    identity.activate(schemeReport.active);
    // A switch whose last re-analysed song arrived just before a restart completes now.
    void versions.promoteIfCovered().catch((err: unknown) => log.warn('embedder switch check failed', { err: (err as Error).message }));
    log.info('catalogue id scheme', { version: schemeReport.active.version, action: schemeReport.action, elapsedMs: schemeReport.elapsedMs });
    consumers.push(await consumeServerDeleted(rt.bus, mappingService, log.child({ component: 'server-deleted' }), config.busPrefetch));
    consumers.push(await consumeSweepRequests(rt.bus, batch, config.busPrefetch));
    consumers.push(await consumeTaskCancels(rt.bus, batch, config.busPrefetch, { cancel: (id) => imports.host.cancel(id) }));
    consumers.push(await consumeSettingsChanged(rt.bus, settings, log.child({ component: 'settings' }), config.busPrefetch));
    batch.start();
    imports.host.startScanning();
    // Mapping-log retention (index replicas further behind reload their maps in full): at start, then hourly.
    const prune = () =>
      mappingLog.prune().then(
        (n) => n > 0 && log.info('mapping log pruned', { entries: n }),
        (err: unknown) => log.warn('mapping log prune failed', { err: (err as Error).message }),
      );
    void prune();
    pruneTimer = setInterval(() => void prune(), 3600_000);
    pruneTimer.unref();
  });
  rt.onStop(async () => {
    if (pruneTimer) clearInterval(pruneTimer);
    versions.close();
    for (const c of consumers) await c.stop();
    await batch.stop();
    await imports.host.stop();
    await events.flush();
  });
  return {
    name: 'catalogue-identity',
    runtime: rt,
    http: rt.app,
    identity,
    mappings,
    /** The mapping change log (index replicas follow it). */
    mappingLog,
    tracks,
    lyrics,
    /** Recording fingerprints of songs (search by recording). */
    fingerprints,
    settings,
    scheme,
    /** The batch lane (sweeps, alignments, cleanings). */
    batch,
    batchTasks,
    /** The import from the reference (issue 34). */
    imports,
    /** What the start-time scheme check did (undefined before start). */
    schemeReport: () => schemeReport,
    start: () => rt.start(),
    stop: () => rt.stop(),
    listen: (port?: number, host?: string) => rt.listen(port, host),
  };
}
export type CatalogueService = ReturnType<typeof buildCatalogue>;
