import type { CooperativeScheduler } from './cooperative';

/** Tunables of one Lloyd run. */
export interface LloydOptions {
  /** PRNG seed of the k-means++ initialisation. */
  seed: number;
  /** Maximum Lloyd iterations (one iteration = assign every point, then move every centroid). */
  maxIterations: number;
  /** Stop early once at most this fraction of points changed centroid in an iteration. */
  tolerance: number;
  /** Points processed between two event-loop checks; the sample is streamed in batches of this size. */
  batchSize: number;
  scheduler: CooperativeScheduler;
  /** k-means++ candidates per seeding step (default greedy `2 + floor(ln k)`; 1 = plain k-means++). */
  seedingTrials?: number;
}
