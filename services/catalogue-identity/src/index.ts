export { buildCatalogue, type CatalogueService, type CatalogueDeps } from './app';
export { loadCatalogueConfig, type CatalogueConfig } from './config';
export { CATALOGUE_SETTING_KEYS, parseCatalogueSettings, type CatalogueTunables } from './settings';
export { LARGE_JSON_CONTENT_TYPE } from './http/internal.routes';
export { catalogueMigrations } from './store/migrations';
