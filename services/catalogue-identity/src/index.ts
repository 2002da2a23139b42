export { buildCatalogue, type CatalogueService, type CatalogueDeps } from './app';
export { loadCatalogueConfig, type CatalogueConfig } from './config';
export { catalogueMigrations } from './store/migrations';
