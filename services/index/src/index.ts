export { buildIndex, type IndexService, type IndexDeps } from './app';
export { loadIndexConfig, type IndexConfig } from './config';
export { indexMigrations } from './store/migrations';
