export { buildIndex, type IndexService, type IndexDeps } from './app';
export { loadIndexConfig, type IndexConfig } from './config';
export { indexMigrations } from './core/migrations';
export { emptyGeneration, generationMemory } from './core/generation';
export { RequestScope } from './core/scope';
// What a build reports (the rebuild benchmark prints its phases).
export type { RebuildOutcome } from './generation/build-run';
// The map layout's two stages (the benchmark workspace times them on synthetic vectors).
export { fitPca, projectAll } from './maps/projection';
export { UMAP_FIT_ROWS, umapLayout } from './maps/umap-projection';
// The hyperbolic layout and its geometry (the benchmark workspace measures what the radius means on real music).
export { ballBytes, ballDistanceTo, ballNorm2, ballPoint, ballRadius, buildPoincareBall, type PoincareBall } from './hyperbolic/ball';
export { poincareDistance, poincareDistanceAt, radiusToDistance } from './hyperbolic/poincare';
// Text search's scoring (the benchmark workspace compares the postings with the full scan at 1M).
export { SemanticTable, type SemanticRowSource } from './semantic/semantic-table';
export { conceptChannel, scanTopK } from './semantic/semantic.service';
export { thresholdTopK, type Channel } from './semantic/postings';
export { parseQuery } from './semantic/vocabulary';
// Live library (incremental index): drift measures (the benchmark workspace measures recall after growth).
export { measureDrift, DEFAULT_DRIFT, type DriftSettings, type DriftReport } from './generation/live/drift';
// The build's heap guard (the benchmark workspace reads the same heap figures in a whole replica under a small heap).
export { HeapLimitError, oldGenerationStats } from './generation/heap-guard';
