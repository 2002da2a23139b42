/**
 * The one Lloyd k-means engine of the project (S. P. Lloyd, "Least squares quantization in PCM", IEEE Trans.
 * Inf. Theory 28(2), 1982), with k-means++ seeding (D. Arthur and S. Vassilvitskii, "k-means++: the advantages
 * of careful seeding", SODA 2007; optionally with the greedy local trials scikit-learn uses by default,
 * `2 + floor(ln k)` candidates per step). Two geometries:
 *
 * - `euclidean`: nearest = smallest squared Euclidean distance, centroid = mean of its points
 *   (the playlist's clustering, through {@link kmeans}).
 * - `spherical`: points are unit vectors, nearest = largest dot product (= smallest cosine distance), centroid =
 *   mean re-normalised to unit length (spherical k-means, Dhillon & Modha, "Concept decompositions for large
 *   sparse text data using clustering", Machine Learning 42, 2001; FAISS `Clustering` with `spherical=true`).
 *   The index's IVF coarse quantiser.
 *
 * The nearest-centroid search is a pluggable {@link AssignmentKernel}: the built-in JavaScript kernels, or one the
 * caller supplies (the index plugs in its WebAssembly SIMD kernels). Empty clusters are by default re-seeded on the
 * points worst served by their centroid, each such point used once (scikit-learn's relocation rule); a caller may
 * keep them in place or place them itself (`emptyClusters`). Starting centroids may be given instead of the
 * seeding (`initialCentroids`), and `lloydKMeansSync` runs the same steps without pauses. The point set is
 * streamed `batchSize` points at a time with a `pause` between pieces, so a caller sharing the event loop stays
 * responsive: memory is `k * dim * 8` bytes of sums plus `16 * n` bytes of per-point state besides the points.
 */
import { dot, nearestOfFour, normaliseSumInto } from './kernels';

/** A subset of rows of a row-major matrix. `rows[i]` is a row of `data` (offset `rows[i] * dim`). */
export interface PointSet {
  readonly data: Float32Array;
  readonly dim: number;
  readonly rows: Int32Array;
}

/** `euclidean`: squared distance and means; `spherical`: unit vectors, dot product and normalised means. */
export type KMeansGeometry = 'euclidean' | 'spherical';

/** The random draws k-means++ needs (`SeededRandom` has them; {@link randomFromFloats} adapts a float generator). */
export interface KMeansRandom {
  /** Uniform integer in [0, n). */
  nextInt(n: number): number;
  /** Uniform float in [0, 1). */
  nextFloat(): number;
}

/** Adapts a generator of floats in [0, 1) (e.g. `mulberry32`) to {@link KMeansRandom}: `nextInt(n) = floor(f() * n)`. */
export function randomFromFloats(next: () => number): KMeansRandom {
  return { nextFloat: next, nextInt: (n) => Math.min(n - 1, Math.floor(next() * n)) };
}

/**
 * Nearest-centroid search over the points of one run (point `p` is `points.rows[p]`).
 * The engine calls `load` once per iteration with the current centroids, then `nearest` over consecutive ranges.
 */
export interface AssignmentKernel {
  /** Points per `nearest` call; the engine pauses between calls (a multiple of 4 or Infinity). */
  readonly rowsPerCall: number;
  /** Takes the centroids (`k * dim` floats) used by the following `nearest` calls. */
  load(centroids: Float32Array, k: number): void;
  /**
   * For points `[start, end)` writes the nearest centroid into `outIdx[p]` (ties to the lower index) and its score
   * into `outScore[p]`: squared distance (euclidean) or dot product (spherical). `start` is a multiple of 4.
   */
  nearest(start: number, end: number, outIdx: Int32Array, outScore: Float64Array): void;
  /** Where point `p`'s values are read for the centroid sums: `values()` from `offset(p)` (same values as `points`). */
  values(): Float32Array;
  offset(p: number): number;
  /**
   * Spherical only, optional: dot products of every point with the vector at `data[po .. po+dim)`, returned as a view
   * and the index of point 0 in it (k-means++ seeding).
   */
  dotsWith?(po: number): { view: Float32Array; base: number };
  /** Frees what the kernel holds. */
  release(): void;
}

/** Makes the kernel of one run, or undefined to use the built-in JavaScript kernel. */
export type AssignmentKernelFactory = (points: PointSet, k: number, geometry: KMeansGeometry) => AssignmentKernel | undefined;

/** Tunables of one {@link lloydKMeans} run. */
export interface LloydKMeansOptions {
  /** Default `euclidean`. */
  geometry?: KMeansGeometry;
  /** Generator of the k-means++ draws (required unless `initialCentroids` are given). */
  random?: KMeansRandom;
  /** Maximum Lloyd iterations (one iteration = assign every point, then move every centroid). */
  maxIterations: number;
  /** Stop once at most this fraction of points changed centroid in an iteration (default 0: until none changes). */
  tolerance?: number;
  /** Points per batch, rounded up to a multiple of 4 (default 1024). */
  batchSize?: number;
  /** k-means++ candidates per seeding step (default greedy `2 + floor(ln k)`; 1 = plain k-means++). */
  seedingTrials?: number;
  /** Starting centroids (`k * dim` floats) instead of k-means++ seeding, like scikit-learn's `init=<array>`. */
  initialCentroids?: Float32Array;
  /**
   * What happens to a centroid no point chose (default `relocate`): `relocate` moves it onto the worst-served
   * point (scikit-learn's rule, see the module comment); `keep` leaves it where it was; a function is called
   * with the cluster and the `k * dim` centroids to write a new centroid itself (e.g. a random point).
   */
  emptyClusters?: 'relocate' | 'keep' | ((cluster: number, centroids: Float32Array) => void);
  /** Nearest-centroid kernel (default: the JavaScript kernels of this package). */
  kernel?: AssignmentKernelFactory;
  /** Called between pieces of work with the multiply-adds done since the last call; a returned promise is awaited. */
  pause?: (work: number) => Promise<void> | void;
  /** Called once after seeding (e.g. a cancellation check). */
  onSeeded?: () => Promise<void> | void;
  /** Called after every assignment step, before the convergence test. */
  onIteration?: (info: { iteration: number; changed: number }) => Promise<void> | void;
}

/** Outcome of one {@link lloydKMeans} run. */
export interface LloydKMeansResult {
  /** `k * dim` centroids (unit length when spherical). */
  centroids: Float32Array;
  k: number;
  /** Lloyd iterations executed (>= 1). */
  iterations: number;
  /** Fraction of points that changed centroid in the last iteration (1 on the first). */
  lastChangedFraction: number;
  /** Centroid of every point (index into `points.rows`) from the last assignment step. */
  assignment: Int32Array;
  /** Score of every point against its centroid in the last assignment step (squared distance or dot product). */
  scores: Float64Array;
  /** Empty centroids re-seeded (on a far point, or by the caller's `emptyClusters` function; 0 with `keep`). */
  reseeds: number;
  /** Point-centroid distances (or dot products) computed, counting greedy seeding as `trials + 1` passes per step. */
  distanceEvaluations: number;
}

/**
 * Lloyd's algorithm over `points` into `k` clusters. Stops when no point changed centroid (the centroids are
 * then the means of the final assignment), when at most `tolerance` of the points changed and no cluster was
 * empty (after moving the centroids), or after `maxIterations`.
 *
 * Complexity O((trials + 1 + iterations) * n * k * dim); memory as in the module comment.
 * @throws RangeError when k is not an integer in 1..n, `initialCentroids` is not `k * dim` long, or neither
 *   `random` nor `initialCentroids` is given.
 */
export async function lloydKMeans(points: PointSet, k: number, options: LloydKMeansOptions): Promise<LloydKMeansResult> {
  return drive(lloydSteps(points, k, options));
}

/** Options of the synchronous runs: no pause and no hooks (nothing is awaited). */
export type LloydKMeansSyncOptions = Omit<LloydKMeansOptions, 'pause' | 'onSeeded' | 'onIteration'>;

/**
 * {@link lloydKMeans} run to the end without giving the event loop a turn, for small point sets built inside
 * synchronous code (the index's centroid groups, a mood's clusters). Same results as the async run.
 * @throws RangeError as {@link lloydKMeans}.
 */
export function lloydKMeansSync(points: PointSet, k: number, options: LloydKMeansSyncOptions): LloydKMeansResult {
  return driveSync(lloydSteps(points, k, options));
}

/**
 * The Lloyd run as a generator: it yields what the pause and hooks returned (a promise to await, or nothing)
 * and returns the result; {@link drive} awaits the promises, {@link driveSync} runs it without them.
 */
function* lloydSteps(points: PointSet, k: number, options: LloydKMeansOptions): Generator<Promise<void> | void, LloydKMeansResult> {
  const { dim, rows } = points;
  const n = rows.length;
  if (!Number.isInteger(k) || k < 1 || k > n) throw new RangeError(`k-means needs 1 <= k <= ${n}, got k=${k}`);
  const given = options.initialCentroids;
  if (given && given.length !== k * dim) throw new RangeError(`initialCentroids must hold k·d = ${k * dim} values, got ${given.length}`);
  if (!given && !options.random) throw new RangeError('k-means needs a random generator or initialCentroids');
  const geometry = options.geometry ?? 'euclidean';
  const spherical = geometry === 'spherical';
  const tolerance = options.tolerance ?? 0;
  const empty = options.emptyClusters ?? 'relocate';
  const step = Math.max(4, ((options.batchSize ?? 1024) + 3) & ~3);
  const pause = options.pause ?? (() => undefined);
  const kernel = options.kernel?.(points, k, geometry) ?? javascriptKernel(points, geometry);
  const piece = Math.min(step, kernel.rowsPerCall);

  try {
    const trials = options.seedingTrials ?? 2 + Math.floor(Math.log(k));
    const centroids = given ? Float32Array.from(given) : yield* seedPlusPlus(points, k, spherical, options.random!, trials, kernel, pause);
    let distanceEvaluations = given ? 0 : n * k * (trials === 1 ? 1 : trials + 1);
    yield options.onSeeded?.();
    yield pause(0);

    const assignment = new Int32Array(n).fill(-1);
    const nearest = new Int32Array(n);
    const scores = new Float64Array(n);
    const sums = new Float64Array(k * dim);
    const counts = new Int32Array(k);
    let iterations = 0;
    let lastChangedFraction = 1;
    let reseeds = 0;
    while (iterations < Math.max(1, options.maxIterations)) {
      iterations++;
      sums.fill(0);
      counts.fill(0);
      let changed = 0;
      kernel.load(centroids, k);
      for (let start = 0; start < n; start += piece) {
        const end = Math.min(n, start + piece);
        kernel.nearest(start, end, nearest, scores);
        const values = kernel.values();
        for (let p = start; p < end; p++) {
          const c = nearest[p]!;
          if (assignment[p] !== c) changed++;
          assignment[p] = c;
          counts[c]!++;
          const so = c * dim;
          const xo = kernel.offset(p);
          for (let d = 0; d < dim; d++) sums[so + d]! += values[xo + d]!;
        }
        yield pause((end - start) * k * dim);
      }
      distanceEvaluations += n * k;
      yield options.onIteration?.({ iteration: iterations, changed });
      lastChangedFraction = changed / n;
      // Nothing moved: the centroids already are the means of this assignment.
      if (changed === 0) break;
      let empties = 0;
      for (let c = 0; c < k; c++) {
        if (counts[c]! === 0) {
          empties++;
          if (typeof empty === 'function') empty(c, centroids);
        } else if (spherical) normaliseSumInto(sums, c * dim, centroids, c * dim, dim);
        else {
          const inv = 1 / counts[c]!;
          for (let d = 0; d < dim; d++) centroids[c * dim + d] = sums[c * dim + d]! * inv;
        }
      }
      if (empties > 0 && empty === 'relocate') reseeds += relocateEmpty(points, centroids, k, counts, scores, spherical);
      if (empties > 0 && typeof empty === 'function') reseeds += empties;
      if (empties === 0 && lastChangedFraction <= tolerance) break;
    }
    return { centroids, k, iterations, lastChangedFraction, assignment, scores, reseeds, distanceEvaluations };
  } finally {
    kernel.release();
  }
}

/** Runs a step generator, awaiting every promise it yields; a rejection is thrown into it (its `finally` runs). */
async function drive<T>(steps: Generator<Promise<void> | void, T>): Promise<T> {
  let r = steps.next();
  while (!r.done) {
    if (r.value) {
      try {
        await r.value;
      } catch (error) {
        r = steps.throw(error);
        continue;
      }
    }
    r = steps.next();
  }
  return r.value;
}

/** Runs a step generator to its end; its options hold no pause or hook, so it yields no promise. */
function driveSync<T>(steps: Generator<Promise<void> | void, T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * Nearest of `k` centroids for every point of `points` (ties to the lower index) with the same kernels as
 * {@link lloydKMeans}: centroid into `outIdx[p]`, score (squared distance or dot product) into `outScore[p]`.
 * Pauses between pieces like a Lloyd iteration. Cost O(n * k * dim).
 */
export async function assignNearest(
  points: PointSet,
  centroids: Float32Array,
  k: number,
  outIdx: Int32Array,
  outScore: Float64Array,
  options: Pick<LloydKMeansOptions, 'geometry' | 'kernel' | 'pause' | 'batchSize'> = {},
): Promise<void> {
  return drive(assignSteps(points, centroids, k, outIdx, outScore, options));
}

/** {@link assignNearest} without pauses, for synchronous callers. Cost O(n * k * dim). */
export function assignNearestSync(
  points: PointSet,
  centroids: Float32Array,
  k: number,
  outIdx: Int32Array,
  outScore: Float64Array,
  options: Pick<LloydKMeansOptions, 'geometry' | 'kernel' | 'batchSize'> = {},
): void {
  driveSync(assignSteps(points, centroids, k, outIdx, outScore, options));
}

function* assignSteps(
  points: PointSet,
  centroids: Float32Array,
  k: number,
  outIdx: Int32Array,
  outScore: Float64Array,
  options: Pick<LloydKMeansOptions, 'geometry' | 'kernel' | 'pause' | 'batchSize'>,
): Generator<Promise<void> | void, void> {
  const geometry = options.geometry ?? 'euclidean';
  const kernel = options.kernel?.(points, k, geometry) ?? javascriptKernel(points, geometry);
  const piece = Math.min(Math.max(4, ((options.batchSize ?? 1024) + 3) & ~3), kernel.rowsPerCall);
  try {
    kernel.load(centroids, k);
    for (let start = 0; start < points.rows.length; start += piece) {
      const end = Math.min(points.rows.length, start + piece);
      kernel.nearest(start, end, outIdx, outScore);
      yield options.pause?.((end - start) * k * points.dim);
    }
  } finally {
    kernel.release();
  }
}

/**
 * Moves each empty centroid (in index order) onto the point worst served by its own centroid (largest squared
 * distance, or smallest dot product; the first such point on ties), each point used once. Marks the used points
 * in `scores`. @returns the centroids moved
 */
function relocateEmpty(points: PointSet, centroids: Float32Array, k: number, counts: Int32Array, scores: Float64Array, spherical: boolean): number {
  const { data, dim, rows } = points;
  const sign = spherical ? -1 : 1;
  let moved = 0;
  for (let c = 0; c < k; c++) {
    if (counts[c]! > 0) continue;
    let worst = -1;
    let worstCost = -Infinity;
    for (let p = 0; p < rows.length; p++) {
      const cost = sign * scores[p]!;
      if (cost > worstCost) {
        worstCost = cost;
        worst = p;
      }
    }
    if (worst < 0) break;
    scores[worst] = sign * -Infinity;
    centroids.set(data.subarray(rows[worst]! * dim, rows[worst]! * dim + dim), c * dim);
    moved++;
  }
  return moved;
}

/**
 * k-means++ seeding: the first centroid is a uniformly drawn point; at each next step `trials` points are drawn
 * with probability proportional to their distance weight to the nearest centroid chosen so far (squared
 * Euclidean distance; for unit vectors `1 - dot`, half of it), and with more than one trial the one that lowers
 * the total weight most is kept (greedy k-means++). When every point coincides with a chosen centroid
 * (duplicates) the lowest unused point is taken. Deterministic for a given generator state.
 * Cost O((trials + 1) * n * k * dim) (O(n k dim) for 1 trial); memory 9n bytes.
 */
function* seedPlusPlus(
  points: PointSet,
  k: number,
  spherical: boolean,
  rng: KMeansRandom,
  trials: number,
  kernel: AssignmentKernel,
  pause: (work: number) => Promise<void> | void,
): Generator<Promise<void> | void, Float32Array> {
  const { data, dim, rows } = points;
  const n = rows.length;
  const centroids = new Float32Array(k * dim);
  const weight = new Float64Array(n).fill(Infinity);
  const chosen = new Uint8Array(n);
  const dotsWith = spherical ? kernel.dotsWith?.bind(kernel) : undefined;
  let view: Float32Array | undefined;
  let base = 0;
  /** Weight of point i against the point at offset `po` (from `view` when the kernel computed the dots). */
  const weightTo = (i: number, po: number): number => {
    if (view) return 1 - view[base + i]!;
    if (spherical) return 1 - dot(data, rows[i]! * dim, data, po, dim);
    return squaredDistance(data, rows[i]! * dim, data, po, dim);
  };
  const against = (po: number): void => {
    if (!dotsWith) return;
    ({ view, base } = dotsWith(po));
  };

  let pick = rng.nextInt(n);
  for (let j = 0; j < k; j++) {
    const po = rows[pick]! * dim;
    chosen[pick] = 1;
    centroids.set(data.subarray(po, po + dim), j * dim);
    if (j === k - 1) break;
    yield pause(n * dim);
    let total = 0;
    against(po);
    for (let i = 0; i < n; i++) {
      const w = weight[i]!;
      if (w > 0) {
        const d = weightTo(i, po);
        const v = d > 0 ? (d < w ? d : w) : 0;
        weight[i] = v;
        total += v;
      }
    }
    if (!(total > 0)) {
      pick = chosen.indexOf(0);
      continue;
    }
    let bestPotential = Infinity;
    for (let t = 0; t < trials; t++) {
      let u = rng.nextFloat() * total;
      let candidate = -1;
      for (let i = 0; i < n; i++) {
        const w = weight[i]!;
        if (w <= 0) continue;
        candidate = i;
        u -= w;
        if (u < 0) break;
      }
      if (candidate < 0) break;
      if (trials === 1) {
        pick = candidate;
        break;
      }
      const co = rows[candidate]! * dim;
      against(co);
      let potential = 0;
      for (let i = 0; i < n && potential < bestPotential; i++) {
        const w = weight[i]!;
        if (w <= 0) continue;
        const d = weightTo(i, co);
        potential += d < w ? (d > 0 ? d : 0) : w;
      }
      if (potential < bestPotential) {
        bestPotential = potential;
        pick = candidate;
      }
    }
  }
  return centroids;
}

/**
 * The built-in JavaScript kernels: squared distances point by point (euclidean), `nearestOfFour` 4x2 register tiling
 * (spherical). What the engine uses when no kernel is plugged in; a plugged-in kernel may wrap it.
 */
export function javascriptKernel(points: PointSet, geometry: KMeansGeometry): AssignmentKernel {
  const { data, dim, rows } = points;
  let c: Float32Array = new Float32Array(0);
  let k = 0;
  const best = new Int32Array(4);
  const bestScore = new Float64Array(4);
  return {
    // Cost per point is k * dim: pause often enough when k is large.
    rowsPerCall: 64,
    load(centroids, count) {
      c = centroids;
      k = count;
    },
    nearest(start, end, outIdx, outScore) {
      // Locals, not the closure's variables, in the hot loops (V8 keeps them in registers).
      const cs = c;
      const kk = k;
      if (geometry === 'spherical') {
        for (let i = start; i < end; i += 4) {
          const m = Math.min(4, end - i);
          const o0 = rows[i]! * dim;
          const o1 = m > 1 ? rows[i + 1]! * dim : o0;
          const o2 = m > 2 ? rows[i + 2]! * dim : o0;
          const o3 = m > 3 ? rows[i + 3]! * dim : o0;
          nearestOfFour(data, o0, o1, o2, o3, cs, kk, dim, best, bestScore);
          for (let t = 0; t < m; t++) {
            outIdx[i + t] = best[t]!;
            outScore[i + t] = bestScore[t]!;
          }
        }
        return;
      }
      nearestEuclidean(data, rows, dim, cs, kk, start, end, outIdx, outScore);
    },
    values: () => data,
    offset: (p) => rows[p]! * dim,
    release() {},
  };
}

/** Nearest centroid by squared Euclidean distance (ties to the lower index) of points `[start, end)`. */
function nearestEuclidean(data: Float32Array, rows: Int32Array, dim: number, c: Float32Array, k: number, start: number, end: number, outIdx: Int32Array, outScore: Float64Array): void {
  for (let i = start; i < end; i++) {
    const xo = rows[i]! * dim;
    let bestC = 0;
    let bestD = Infinity;
    for (let j = 0; j < k; j++) {
      const v = squaredDistance(data, xo, c, j * dim, dim);
      if (v < bestD) {
        bestD = v;
        bestC = j;
      }
    }
    outIdx[i] = bestC;
    outScore[i] = bestD;
  }
}

/** Squared Euclidean distance of `dim` floats of `a` from `ao` and of `b` from `bo`. */
function squaredDistance(a: Float32Array, ao: number, b: Float32Array, bo: number, dim: number): number {
  let s = 0;
  for (let t = 0; t < dim; t++) {
    const x = a[ao + t]! - b[bo + t]!;
    s += x * x;
  }
  return s;
}
