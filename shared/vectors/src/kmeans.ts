/**
 * Lloyd's k-means (S. P. Lloyd, "Least squares quantization in PCM", IEEE Trans. Inf. Theory 28(2),
 * 1982) with k-means++ seeding (D. Arthur and S. Vassilvitskii, "k-means++: the advantages of careful
 * seeding", SODA 2007), over points stored row-major in one Float32Array (n rows of d values).
 *
 * Deterministic: every random choice comes from a seeded mulberry32 generator, so the same points in
 * the same order with the same options give the same clusters. Cooperative: the work yields to the
 * event loop every few million multiply-adds, so the HTTP server of the process stays responsive, and
 * a `shouldStop` callback is checked once per iteration (cancellation).
 *
 * Large inputs are trained on a deterministic sample (default at most 10 000 points, the reference
 * implementation's CLUSTERING_SUBSET_SONGS) and every point is then assigned to its nearest centroid.
 *
 * Euclidean restarts over the one Lloyd engine of the project ({@link lloydKMeans} in `lloyd.ts`, plain k-means++),
 * the same engine the index's spherical coarse quantiser runs on.
 */
import { assignNearest, lloydKMeans, type PointSet, randomFromFloats } from './lloyd';
import { mulberry32 } from './random';

/** Thrown when `shouldStop` returned true; no result is produced. */
export class KMeansStoppedError extends Error {
  constructor() {
    super('k-means stopped on request');
    this.name = 'KMeansStoppedError';
  }
}

export interface KMeansOptions {
  /** Number of clusters, 1 <= k <= n. */
  k: number;
  /** Seed of the generator (default 0x5eed). */
  seed?: number;
  /** Lloyd iterations per restart (default 50); a restart also ends when no assignment changes. */
  maxIterations?: number;
  /** Independent seedings; the one with the lowest inertia wins (default 3). */
  restarts?: number;
  /** Points used for training (default 10 000); the rest are only assigned at the end. */
  trainingSample?: number;
  /** Multiply-adds between event-loop yields (default 4 000 000, a few ms). */
  yieldWork?: number;
  /** Checked once per iteration and after seeding; true stops with {@link KMeansStoppedError}. */
  shouldStop?: () => boolean | Promise<boolean>;
  /**
   * Starting centroids (k rows of d values) instead of k-means++ seeding, like scikit-learn's
   * `init=<array>`: one run (restarts ignored), trained on every point. For reproducing a reference run.
   */
  initialCentroids?: Float32Array;
  /** Called after every Lloyd iteration (progress reporting). */
  onIteration?: (info: { restart: number; iteration: number; changed: number }) => void | Promise<void>;
}

export interface KMeansResult {
  k: number;
  d: number;
  /** k rows of d values. */
  centroids: Float32Array;
  /** Cluster of every input point (0..k-1). */
  assignments: Int32Array;
  /** Squared Euclidean distance of every point to its centroid. */
  distances: Float64Array;
  /** Points per cluster. */
  sizes: Int32Array;
  /** Sum of squared distances over all points. */
  inertia: number;
  /** Lloyd iterations of the winning restart. */
  iterations: number;
  /** Points the centroids were trained on. */
  trained: number;
}

const DEFAULTS = { seed: 0x5eed, maxIterations: 50, restarts: 3, trainingSample: 10_000, yieldWork: 4_000_000 };

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Counts multiply-adds; `due` turns true once per `budget` of work, when the caller should yield. */
class Yielder {
  private spent = 0;
  constructor(private readonly budget: number) {}
  due(work: number): boolean {
    this.spent += work;
    if (this.spent < this.budget) return false;
    this.spent = 0;
    return true;
  }
}

/**
 * Clusters `n` points of dimension `d` (row-major in `points`) into `k` groups.
 * Time: O(restarts · iterations · m · k · d) for m training points, plus O(n · k · d) for the final assignment.
 * Memory: O(n + k · d) besides the input.
 * @throws RangeError when k is not an integer in 1..n, `points` is shorter than n · d, or `initialCentroids` is not k · d long.
 * @throws KMeansStoppedError when `shouldStop` returns true.
 */
export async function kmeans(points: Float32Array, n: number, d: number, options: KMeansOptions): Promise<KMeansResult> {
  const { k } = options;
  if (!Number.isInteger(n) || n < 1 || !Number.isInteger(d) || d < 1) throw new RangeError('n and d must be positive integers');
  if (!Number.isInteger(k) || k < 1 || k > n) throw new RangeError(`k must be an integer in 1..${n}, got ${k}`);
  if (points.length < n * d) throw new RangeError('points holds fewer than n·d values');
  const given = options.initialCentroids;
  if (given && given.length !== k * d) throw new RangeError(`initialCentroids must hold k·d = ${k * d} values, got ${given.length}`);
  const seed = options.seed ?? DEFAULTS.seed;
  const maxIterations = Math.max(1, options.maxIterations ?? DEFAULTS.maxIterations);
  const restarts = given ? 1 : Math.max(1, options.restarts ?? DEFAULTS.restarts);
  const yielder = new Yielder(options.yieldWork ?? DEFAULTS.yieldWork);
  const stop = async () => {
    if (options.shouldStop && (await options.shouldStop())) throw new KMeansStoppedError();
  };

  const sampleLimit = given ? n : Math.max(k, options.trainingSample ?? DEFAULTS.trainingSample);
  const sample = trainingIndices(n, sampleLimit, mulberry32(seed ^ 0xa5a5a5a5));
  const m = sample.length;
  // Training rows packed contiguously, so the inner loops read memory in order.
  const train = m === n ? points : packRows(points, sample, d);

  const trainSet: PointSet = { data: train, dim: d, rows: identityRows(m) };
  const pause = (work: number): Promise<void> | undefined => (yielder.due(work) ? tick() : undefined);
  let best: { centroids: Float32Array; inertia: number; iterations: number } | undefined;
  for (let r = 0; r < restarts; r++) {
    const run = await lloydKMeans(trainSet, k, {
      geometry: 'euclidean',
      random: randomFromFloats(mulberry32((seed + Math.imul(r + 1, 0x9e3779b9)) >>> 0)),
      maxIterations,
      seedingTrials: 1,
      initialCentroids: given,
      pause,
      onSeeded: stop,
      onIteration: async ({ iteration, changed }) => {
        await options.onIteration?.({ restart: r, iteration, changed });
        await stop();
      },
    });
    // Inertia of the final centroids on the training points.
    const dist = new Float64Array(m);
    await assignNearest(trainSet, run.centroids, k, new Int32Array(m), dist, { pause });
    let inertia = 0;
    for (let i = 0; i < m; i++) inertia += dist[i]!;
    if (!best || inertia < best.inertia) best = { centroids: run.centroids, inertia, iterations: run.iterations };
  }

  const assignments = new Int32Array(n).fill(-1);
  const distances = new Float64Array(n);
  await assignNearest({ data: points, dim: d, rows: identityRows(n) }, best!.centroids, k, assignments, distances, { pause });
  const sizes = new Int32Array(k);
  let inertia = 0;
  for (let i = 0; i < n; i++) {
    sizes[assignments[i]!]!++;
    inertia += distances[i]!;
  }
  return { k, d, centroids: best!.centroids, assignments, distances, sizes, inertia, iterations: best!.iterations, trained: m };
}

function identityRows(n: number): Int32Array {
  const rows = new Int32Array(n);
  for (let i = 0; i < n; i++) rows[i] = i;
  return rows;
}

/** All indices when n <= limit, else `limit` distinct indices chosen by a partial Fisher-Yates shuffle, ascending. */
function trainingIndices(n: number, limit: number, rng: () => number): Int32Array {
  const all = new Int32Array(n);
  for (let i = 0; i < n; i++) all[i] = i;
  if (n <= limit) return all;
  for (let i = 0; i < limit; i++) {
    const j = i + Math.floor(rng() * (n - i));
    const t = all[i]!;
    all[i] = all[j]!;
    all[j] = t;
  }
  return all.slice(0, limit).sort();
}

function packRows(points: Float32Array, rows: Int32Array, d: number): Float32Array {
  const out = new Float32Array(rows.length * d);
  for (let i = 0; i < rows.length; i++) out.set(points.subarray(rows[i]! * d, rows[i]! * d + d), i * d);
  return out;
}
