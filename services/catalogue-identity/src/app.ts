import { RoutingKeys, type ServerCountedEvent } from '@polyphony/contracts';
import { ServiceRuntime, type ConsumerHandle, type RuntimeDeps } from '@polyphony/platform';
import { consumeServerDeleted } from './bus/server-deleted.consumer';
import type { CatalogueConfig } from './config';
import { internalRoutes } from './http/internal.routes';
import { IdentityService } from './service/identity.service';
import { MappingChangedPublisher } from './service/mapping-events';
import { SchemeService, type SchemeStartReport } from './service/scheme.service';
import { CatalogueSettings } from './settings';
import { ArtistRepository } from './store/artist.repository';
import { IdentityStore } from './store/identity.store';
import { MappingRepository } from './store/mapping.repository';
import { catalogueMigrations } from './store/migrations';
import { TrackRepository } from './store/track.repository';

export type CatalogueDeps = RuntimeDeps;

/**
 * Composition root of the catalogue-identity service: settings (seeded from the environment on first
 * start), the start-time id-scheme check / relabel, identity resolution, id translation, availability,
 * snapshot, the registry.server.deleted.v1 consumer, and catalogue.mapping.changed.v1 /
 * catalogue.server.counted.v1 after mapping changes.
 *
 * Start order: database (and migrations when asked) -> settings seed -> scheme check (relabel if the
 * configured version is newer) -> resolver activated -> bus consumers. Stop flushes pending
 * mapping.changed events.
 */
export function buildCatalogue(config: CatalogueConfig, deps: CatalogueDeps = {}) {
  const rt = new ServiceRuntime(config, catalogueMigrations, deps);
  const log = rt.logger;
  const settings = new CatalogueSettings(rt.ds, (problem) => log.warn('invalid catalogue setting ignored', { problem }));
  const mappings = new MappingRepository(rt.ds);
  // After each (debounced) mapping.changed of a server, report its matched-song count to the registry
  // (catalogue.server.counted.v1; trackCount null keeps the count of the last full fetch).
  const reportCounts = async (serverId: string): Promise<void> => {
    const event: ServerCountedEvent = { serverId, trackCount: null, matchedCount: await mappings.matchedCount(serverId) };
    await rt.bus.publish(RoutingKeys.serverCounted, event);
  };
  const events = new MappingChangedPublisher(rt.bus, config.mappingChangedDebounceMs, log.child({ component: 'MappingChangedPublisher' }), reportCounts);
  const identity = new IdentityService(new IdentityStore(rt.ds), settings, events);
  const tracks = new TrackRepository(rt.ds);
  const artists = new ArtistRepository(rt.ds);
  const scheme = new SchemeService(rt.ds, settings, rt.bus, events, log.child({ component: 'SchemeService' }), {
    chunkSize: config.relabelChunkSize,
    concurrency: config.relabelConcurrency,
    poolSize: config.dbPoolSize,
  });
  rt.app.use(internalRoutes({ identity, mappings, tracks, artists, settings, events, ds: rt.ds }));
  rt.finishRoutes();

  const consumers: ConsumerHandle[] = [];
  let schemeReport: SchemeStartReport | undefined;
  rt.onStart(async () => {
    await settings.seed(config.seedEnv);
    schemeReport = await scheme.ensureCurrent();
    identity.activate(schemeReport.active);
    log.info('catalogue id scheme', { version: schemeReport.active.version, action: schemeReport.action, elapsedMs: schemeReport.elapsedMs });
    consumers.push(await consumeServerDeleted(rt.bus, mappings, events, log.child({ component: 'server-deleted' }), config.busPrefetch));
  });
  rt.onStop(async () => {
    for (const c of consumers) await c.stop();
    await events.flush();
  });
  return {
    name: 'catalogue-identity',
    runtime: rt,
    http: rt.app,
    identity,
    mappings,
    tracks,
    settings,
    scheme,
    /** What the start-time scheme check did (undefined before start). */
    schemeReport: () => schemeReport,
    start: () => rt.start(),
    stop: () => rt.stop(),
    listen: (port?: number, host?: string) => rt.listen(port, host),
  };
}
export type CatalogueService = ReturnType<typeof buildCatalogue>;
