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
 */
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

/** Squared Euclidean distance between row `i` of `a` and row `j` of `b` (both d wide). */
function dist2(a: Float32Array, i: number, b: Float32Array, j: number, d: number): number {
  let s = 0;
  const ai = i * d;
  const bj = j * d;
  for (let t = 0; t < d; t++) {
    const x = a[ai + t]! - b[bj + t]!;
    s += x * x;
  }
  return s;
}

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

  let best: { centroids: Float32Array; inertia: number; iterations: number } | undefined;
  for (let r = 0; r < restarts; r++) {
    const rng = mulberry32((seed + Math.imul(r + 1, 0x9e3779b9)) >>> 0);
    const centroids = given ? Float32Array.from(given) : await seedPlusPlus(train, m, d, k, rng, yielder);
    await stop();
    const assign = new Int32Array(m).fill(-1);
    const dist = new Float64Array(m);
    let iterations = 0;
    for (let it = 1; it <= maxIterations; it++) {
      const changed = await assignStep(train, m, d, centroids, k, assign, dist, yielder);
      iterations = it;
      await options.onIteration?.({ restart: r, iteration: it, changed });
      await stop();
      if (changed === 0) break;
      updateStep(train, m, d, centroids, k, assign, dist);
    }
    // Inertia of the final centroids on the training points.
    await assignStep(train, m, d, centroids, k, assign, dist, yielder);
    let inertia = 0;
    for (let i = 0; i < m; i++) inertia += dist[i]!;
    if (!best || inertia < best.inertia) best = { centroids, inertia, iterations };
  }

  const assignments = new Int32Array(n).fill(-1);
  const distances = new Float64Array(n);
  await assignStep(points, n, d, best!.centroids, k, assignments, distances, yielder);
  const sizes = new Int32Array(k);
  let inertia = 0;
  for (let i = 0; i < n; i++) {
    sizes[assignments[i]!]!++;
    inertia += distances[i]!;
  }
  return { k, d, centroids: best!.centroids, assignments, distances, sizes, inertia, iterations: best!.iterations, trained: m };
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

/**
 * k-means++: the first centre uniformly at random, each further centre drawn with probability
 * proportional to its squared distance to the nearest centre chosen so far. When every remaining
 * point coincides with a centre (duplicates), the lowest unused index is taken.
 */
async function seedPlusPlus(x: Float32Array, m: number, d: number, k: number, rng: () => number, yielder: Yielder): Promise<Float32Array> {
  const centroids = new Float32Array(k * d);
  const chosen = new Uint8Array(m);
  const first = Math.min(m - 1, Math.floor(rng() * m));
  chosen[first] = 1;
  centroids.set(x.subarray(first * d, first * d + d), 0);
  const d2 = new Float64Array(m);
  for (let i = 0; i < m; i++) d2[i] = dist2(x, i, centroids, 0, d);
  if (yielder.due(m * d)) await tick();
  for (let c = 1; c < k; c++) {
    let total = 0;
    for (let i = 0; i < m; i++) total += d2[i]!;
    let pick = -1;
    if (total > 0) {
      let r = rng() * total;
      for (let i = 0; i < m; i++) {
        if (d2[i]! <= 0) continue;
        r -= d2[i]!;
        if (r < 0) {
          pick = i;
          break;
        }
      }
      // Rounding can leave r just above 0 after the last positive weight: take that last one.
      if (pick < 0) for (let i = m - 1; i >= 0; i--) if (d2[i]! > 0) { pick = i; break; }
    }
    if (pick < 0) pick = chosen.indexOf(0);
    chosen[pick] = 1;
    centroids.set(x.subarray(pick * d, pick * d + d), c * d);
    for (let i = 0; i < m; i++) {
      const v = dist2(x, i, centroids, c, d);
      if (v < d2[i]!) d2[i] = v;
    }
    if (yielder.due(m * d)) await tick();
  }
  return centroids;
}

/** Assigns every row to its nearest centroid (lowest index on ties); returns how many assignments changed. */
async function assignStep(x: Float32Array, m: number, d: number, centroids: Float32Array, k: number, assign: Int32Array, dist: Float64Array, yielder: Yielder): Promise<number> {
  let changed = 0;
  for (let i = 0; i < m; i++) {
    let bestC = 0;
    let bestD = Infinity;
    for (let c = 0; c < k; c++) {
      const v = dist2(x, i, centroids, c, d);
      if (v < bestD) {
        bestD = v;
        bestC = c;
      }
    }
    if (assign[i] !== bestC) changed++;
    assign[i] = bestC;
    dist[i] = bestD;
    if (yielder.due(k * d)) await tick();
  }
  return changed;
}

/**
 * Moves every centroid to the mean of its rows. An empty cluster takes the row farthest from its
 * own centroid (each such row used once), the usual repair that also lowers the inertia.
 */
function updateStep(x: Float32Array, m: number, d: number, centroids: Float32Array, k: number, assign: Int32Array, dist: Float64Array): void {
  const sums = new Float64Array(k * d);
  const counts = new Int32Array(k);
  for (let i = 0; i < m; i++) {
    const c = assign[i]!;
    counts[c]!++;
    const base = c * d;
    const row = i * d;
    for (let t = 0; t < d; t++) sums[base + t]! += x[row + t]!;
  }
  const used = new Uint8Array(m);
  for (let c = 0; c < k; c++) {
    if (counts[c]! > 0) {
      const inv = 1 / counts[c]!;
      for (let t = 0; t < d; t++) centroids[c * d + t] = sums[c * d + t]! * inv;
      continue;
    }
    let far = -1;
    for (let i = 0; i < m; i++) if (!used[i] && (far < 0 || dist[i]! > dist[far]!)) far = i;
    if (far < 0) continue;
    used[far] = 1;
    centroids.set(x.subarray(far * d, far * d + d), c * d);
  }
}
