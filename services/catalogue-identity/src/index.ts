export { buildCatalogue, type CatalogueService, type CatalogueDeps } from './app';
export { loadCatalogueConfig, type CatalogueConfig } from './config';
export { CATALOGUE_SETTING_KEYS, parseCatalogueSettings, type CatalogueTunables } from './settings';
export { LARGE_JSON_CONTENT_TYPE } from './http/internal.routes';
export { catalogueMigrations } from './store/migrations';
export type { RegistryPort, IndexPort, IndexRebuildResult, MediaClientFactory, ServerInfo } from './domain/ports';
export type { SweepHooks, ServerSweepReport } from './domain/sweep.service';
export type { ServerCleaningReport, CatalogueDeletionReport } from './domain/cleaning.service';
export { orphanDeletionAllowed } from './domain/cleaning.service';
