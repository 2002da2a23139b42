export { buildCatalogue, type CatalogueService, type CatalogueDeps } from './app';
export { loadCatalogueConfig, type CatalogueConfig } from './config';
export { CATALOGUE_SETTING_KEYS, parseCatalogueSettings, type CatalogueTunables } from './settings';
export { LARGE_JSON_CONTENT_TYPE } from './http/internal.routes';
export { catalogueMigrations } from './store/migrations';
export type { RegistryPort, IndexPort, IndexRebuildResult, MediaClientFactory, ServerInfo } from './service/ports';
export type { SweepHooks, ServerSweepReport } from './service/sweep.service';
export type { ServerCleaningReport, CatalogueDeletionReport } from './service/cleaning.service';
export { orphanDeletionAllowed } from './service/cleaning.service';
