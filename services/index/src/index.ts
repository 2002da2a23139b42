export { buildIndex, type IndexService, type IndexDeps } from './app';
export { loadIndexConfig, type IndexConfig } from './config';
export { indexMigrations } from './store/migrations';
export { emptyGeneration, generationMemory } from './domain/generation';
export { RequestScope } from './domain/scope';
// The map layout's two stages (the benchmark workspace times them on synthetic vectors).
export { fitPca, projectAll } from './domain/projection';
export { UMAP_FIT_ROWS, umapLayout } from './domain/umap-projection';
