export { buildIndex, type IndexService, type IndexDeps } from './app';
export { loadIndexConfig, type IndexConfig } from './config';
export { indexMigrations } from './store/migrations';
export { EVAL_QUERIES, EVAL_K, evaluateTextSearch, formatEvalReport, type EvalSong, type EvalReport } from './domain/semantic/text-eval';
export { evaluateInstall } from './bench/text-search-eval';
export { generationMemory } from './domain/generation';
