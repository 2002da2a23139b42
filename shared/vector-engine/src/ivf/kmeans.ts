import type { IvfWorkerPool, WorkerReply } from './worker-pool';
import type { LloydOptions } from './lloyd-options';
import { type AssignmentKernelFactory, lloydKMeans, nearestOfFour, normaliseSumInto, type PointSet as VectorPointSet, SeededRandom } from '@polyphony/vectors';
import { acquireKernelMemory, nearestRowsSimd, releaseKernelMemory, scratchKernels } from '../simd/kernels';
import { CentroidTree } from './centroid-tree';

export type { LloydOptions } from './lloyd-options';
export { CentroidTree };

/**
 * The IVF coarse quantiser's training: spherical k-means on the shared Lloyd engine of `@polyphony/vectors`
 * (`sphericalLloyd`, with this service's WebAssembly SIMD kernel plugged in), two-level training for large
 * nlist (`trainCentroids`) and the cone-bounded nearest-centroid search (`CentroidTree`).
 *
 * All vectors are unit length and "nearest" means largest dot product (= smallest cosine distance).
 * Centroids are re-normalised after every update (spherical k-means, Dhillon & Modha, "Concept
 * decompositions for large sparse text data using clustering", Machine Learning 42, 2001; FAISS
 * `Clustering` with `spherical=true` does the same), so ranking centroids by dot product ranks them by cosine.
 */

/** A subset of rows of a unit-vector matrix. `rows[i]` is a row of `data` (offset `rows[i] * dim`). */
export type PointSet = VectorPointSet;

/** Outcome of one Lloyd run. */
export interface LloydResult {
  /** `k * dim` unit centroids. */
  centroids: Float32Array;
  k: number;
  /** Lloyd iterations executed (>= 1 when there is at least one point). */
  iterations: number;
  /** Fraction of points that changed centroid in the last iteration (1 on the first). */
  lastChangedFraction: number;
  /** Centroid of every point (index into `points.rows`) from the last assignment step. */
  assignment: Int32Array;
  /** Centroids that went empty and were re-seeded on a far point. */
  reseeds: number;
  /** Dot products computed. */
  dotProducts: number;
}

/**
 * Spherical k-means of the coarse quantiser: the shared Lloyd engine (`lloydKMeans` of `@polyphony/vectors`,
 * geometry `spherical`, greedy k-means++ by default) with the WebAssembly SIMD kernel of this service plugged in
 * (`simdAssignmentKernel`, ~8x the JavaScript one) and the build's cooperative scheduler as its pause.
 * Every run here has k of the order of sqrt(nlist) (two-level training), so it stays cheap even at nlist = 8192.
 *
 * @param k number of centroids, 1 <= k <= points.rows.length
 * Complexity O(iterations * n * k * dim).
 * @throws RangeError when k is out of range.
 */
export async function sphericalLloyd(points: PointSet, k: number, options: LloydOptions): Promise<LloydResult> {
  const r = await lloydKMeans(points, k, {
    geometry: 'spherical',
    random: new SeededRandom(options.seed),
    maxIterations: options.maxIterations,
    tolerance: options.tolerance,
    batchSize: options.batchSize,
    seedingTrials: options.seedingTrials,
    kernel: simdAssignmentKernel,
    pause: () => options.scheduler.maybeYield(),
  });
  const { centroids, iterations, lastChangedFraction, assignment, reseeds } = r;
  return { centroids, k, iterations, lastChangedFraction, assignment, reseeds, dotProducts: r.distanceEvaluations };
}

/**
 * The WebAssembly SIMD nearest-centroid kernel as an `AssignmentKernel` of the shared Lloyd engine, or undefined
 * (the engine's JavaScript kernel) when the kernels are unavailable, `dim % 4 != 0`, the geometry is not
 * spherical or the points exceed LLOYD_SIMD_MAX_BYTES. The points are copied once into the run's own kernel
 * memory (padded to a multiple of 4 rows), the centroids once per iteration; the centroid sums read that
 * resident copy (contiguous and cache-warm, unlike the sample's scattered rows). Scores are float32 sums
 * (see simd/kernels.wat). Also gives k-means++ its dot products (`dotsWith`).
 */
export const simdAssignmentKernel: AssignmentKernelFactory = (points, k, geometry) => {
  const { data, dim, rows } = points;
  const n = rows.length;
  const padded = (n + 3) & ~3;
  if (geometry !== 'spherical' || dim % 4 !== 0 || padded * dim * 4 > LLOYD_SIMD_MAX_BYTES) return undefined;
  const km = acquireKernelMemory(padded * dim * 4 + k * dim * 4 + padded * 8 + dim * 4 + 256);
  if (!km) return undefined;
  const xPtr = km.alloc(padded * dim * 4);
  const cPtr = km.alloc(k * dim * 4);
  const idxPtr = km.alloc(padded * 4);
  const scorePtr = km.alloc(padded * 4);
  const vPtr = km.alloc(dim * 4);
  for (let i = 0; i < padded; i++) km.putF32(xPtr + i * dim * 4, data, rows[Math.min(i, n - 1)]! * dim, dim);
  let count = k;
  return {
    rowsPerCall: Infinity,
    load(centroids, kk) {
      count = kk;
      km.putF32(cPtr, centroids, 0, kk * dim);
    },
    nearest(start, end, outIdx, outScore) {
      // Ranges start at multiples of 4; the last one runs to the padded end.
      const stop = end === n ? padded : end;
      km.nearest4(xPtr + start * dim * 4, stop - start, cPtr, count, dim, idxPtr + start * 4, scorePtr + start * 4);
      const i32 = km.i32;
      const f32 = km.f32;
      for (let p = start; p < end; p++) {
        outIdx[p] = i32[(idxPtr >> 2) + p]!;
        outScore[p] = f32[(scorePtr >> 2) + p]!;
      }
    },
    values: () => km.f32,
    offset: (p) => (xPtr >> 2) + p * dim,
    dotsWith(po) {
      km.putF32(vPtr, data, po, dim);
      km.dots(vPtr, xPtr, n, dim, scorePtr);
      return { view: km.f32, base: scorePtr >> 2 };
    },
    release: () => releaseKernelMemory(km),
  };
};

/**
 * Nearest of `k` unit centroids (largest dot product, ties to the lower index) for the rows `rows[from..to)` of
 * `data` (`rows` null: rows from..to themselves), written to `out[0 .. to-from)`. WebAssembly SIMD kernel
 * (float32 sums) when available and `dim % 4 == 0`, else `nearestOfFour` (float64 sums): the two may differ on
 * near-ties, so one build uses one of them throughout (every thread of a process sees the same availability).
 */
export function nearestCentroids(data: Float32Array, rows: Int32Array | null, from: number, to: number, centroids: Float32Array, k: number, dim: number, out: Int32Array): void {
  const km = dim % 4 === 0 ? scratchKernels() : undefined;
  if (km) {
    const list = rows ?? Int32Array.from({ length: to - from }, (_, i) => from + i);
    const f = rows ? from : 0;
    nearestRowsSimd(km, data, list, f, f + (to - from), centroids, k, dim, out, new Float32Array(to - from));
    return;
  }
  const best = new Int32Array(4);
  const bestScore = new Float64Array(4);
  const at = (i: number): number => (rows ? rows[i]! : i) * dim;
  for (let i = from; i < to; i += 4) {
    const m = Math.min(4, to - i);
    const o0 = at(i);
    nearestOfFour(data, o0, m > 1 ? at(i + 1) : o0, m > 2 ? at(i + 2) : o0, m > 3 ? at(i + 3) : o0, centroids, k, dim, best, bestScore);
    for (let t = 0; t < m; t++) out[i - from + t] = best[t]!;
  }
}

/** Largest point set (bytes) a Lloyd run copies into kernel memory for the SIMD path (larger sets use JavaScript). */
const LLOYD_SIMD_MAX_BYTES = 512 << 20;


/** Tunables of `trainCentroids`. */
export interface TrainOptions extends LloydOptions {
  /** Use two-level training when nlist is at least this (below it a flat Lloyd run is cheap). */
  twoLevelMinCells: number;
  /** First-level centroids = round(coarseCellsPerSqrtNlist * sqrt(nlist)). */
  coarseCellsPerSqrtNlist: number;
  /** First-level training points per coarse centroid (FAISS warns below 39 and subsamples above 256). */
  coarsePointsPerCentroid: number;
  /** k-means++ trials of the second-level runs (1 = plain k-means++; the first level stays greedy). */
  fineSeedingTrials: number;
  /** Global Lloyd refinement iterations over all nlist centroids after the two-level training. */
  refineIterations: number;
  /** Coarse groups searched per point by the refinement's `CentroidTree.nearest` (Infinity = exact). */
  searchGroups: number;
  /** Worker threads for the coarse assignment and the second-level runs (same results as without). */
  pool?: IvfWorkerPool;
}

/** Trained coarse quantiser. */
export interface TrainedCentroids {
  /** `nlist * dim` unit centroids. */
  centroids: Float32Array;
  nlist: number;
  /** Group of every centroid for `CentroidTree` (all zeros for flat training). */
  groupOf: Int32Array;
  groupCount: number;
  /** Lloyd iterations summed over all runs (coarse + every fine group + refinement). */
  iterations: number;
  /** Dot products spent on training. */
  dotProducts: number;
  /** Centroids re-seeded because their cluster went empty. */
  reseeds: number;
}

/**
 * Trains `nlist` unit centroids on `points` (the training sample, ordered so that every prefix is itself a
 * uniform sample).
 *
 * - `nlist < twoLevelMinCells`: one flat spherical Lloyd run.
 * - otherwise two-level clustering as in FAISS `contrib/clustering.py: two_level_clustering` (rebalance on):
 *   `k1 = round(coarseCellsPerSqrtNlist * sqrt(nlist))` coarse centroids are trained on the first `coarsePointsPerCentroid * k1`
 *   points, every training point is assigned to its coarse cluster, each coarse cluster `g` gets
 *   `k2_g` fine centroids in proportion to its share of points (largest remainder, at least 1, at most its
 *   size, summing to nlist), and a flat Lloyd run inside each coarse cluster trains them on all of its
 *   points. A second-level Lloyd iteration costs about `n * (nlist / k1) * dim` instead of `n * nlist * dim`
 *   for a flat run. Measured at 1M items (nlist 8000, 400k training points, k1 179): 368M dot products for
 *   the whole training, against 3.2G for a single flat Lloyd iteration. Optional `refineIterations` global
 *   Lloyd iterations over all centroids (assignment by `CentroidTree.nearest` with `searchGroups`) smooth the
 *   borders between coarse clusters; off by default because they did not move recall measurably.
 *
 * @param nlist 1 <= nlist <= points.rows.length
 */
export async function trainCentroids(points: PointSet, nlist: number, options: TrainOptions): Promise<TrainedCentroids> {
  const { dim, rows, data } = points;
  const n = rows.length;
  if (nlist < options.twoLevelMinCells) {
    const flat = await sphericalLloyd(points, nlist, options);
    return {
      centroids: flat.centroids,
      nlist,
      groupOf: new Int32Array(nlist),
      groupCount: 1,
      iterations: flat.iterations,
      dotProducts: flat.dotProducts,
      reseeds: flat.reseeds,
    };
  }
  const k1 = Math.min(nlist, Math.max(2, Math.round(options.coarseCellsPerSqrtNlist * Math.sqrt(nlist))));
  const coarseSet: PointSet = { data, dim, rows: rows.subarray(0, Math.min(n, options.coarsePointsPerCentroid * k1)) };
  const coarse = await sphericalLloyd(coarseSet, k1, { ...options, seed: mixSeed(options.seed, 0x0c0a75e) });
  let iterations = coarse.iterations;
  let dotProducts = coarse.dotProducts;
  let reseeds = coarse.reseeds;

  // Coarse assignment of the full training sample.
  let groupOfPoint = new Int32Array(n);
  const pool = options.pool;
  if (pool) {
    const chunk = Math.max(4096, Math.ceil(n / (4 * pool.size)));
    const parts: Promise<WorkerReply>[] = [];
    for (let i = 0; i < n; i += chunk) parts.push(pool.run({ type: 'nearest', rows: rows.slice(i, Math.min(n, i + chunk)), centroids: coarse.centroids, k: k1 }));
    const replies = await Promise.all(parts);
    groupOfPoint = new Int32Array(n);
    let o = 0;
    for (const r of replies) {
      if (r.type !== 'nearest') throw new Error('unexpected worker reply');
      groupOfPoint.set(r.nearest, o);
      o += r.nearest.length;
    }
  }
  for (let i = 0; !pool && i < n; i += 1024) {
    nearestCentroids(data, rows, i, Math.min(n, i + 1024), coarse.centroids, k1, dim, groupOfPoint.subarray(i));
    await options.scheduler.maybeYield();
  }
  dotProducts += n * k1;
  const sizes = new Int32Array(k1);
  for (let i = 0; i < n; i++) sizes[groupOfPoint[i]!]!++;
  const k2 = allocateProportionally(sizes, nlist);

  const members: Int32Array[] = [];
  const fill = new Int32Array(k1);
  for (let g = 0; g < k1; g++) members.push(new Int32Array(sizes[g]!));
  for (let i = 0; i < n; i++) {
    const g = groupOfPoint[i]!;
    members[g]![fill[g]!++] = rows[i]!;
  }

  const centroids = new Float32Array(nlist * dim);
  const groupOf = new Int32Array(nlist);
  let base = 0;
  /** Places coarse group `g`'s `kg` fine centroids after the previous groups' and adds up its run's counts. */
  const take = (g: number, kg: number, fine: Pick<LloydResult, 'centroids' | 'iterations' | 'dotProducts' | 'reseeds'>): void => {
    centroids.set(fine.centroids, base * dim);
    groupOf.fill(g, base, base + kg);
    base += kg;
    iterations += fine.iterations;
    dotProducts += fine.dotProducts;
    reseeds += fine.reseeds;
  };
  if (pool) {
    // Largest groups first, so the last task to finish is a small one.
    const order = Array.from({ length: k1 }, (_, g) => g).filter((g) => k2[g]! > 0);
    order.sort((a, b) => sizes[b]! * k2[b]! - sizes[a]! * k2[a]! || a - b);
    const lloyd = { maxIterations: options.maxIterations, tolerance: options.tolerance, batchSize: options.batchSize, seedingTrials: options.fineSeedingTrials };
    const results = new Map<number, Promise<WorkerReply>>();
    for (const g of order) results.set(g, pool.run({ type: 'lloyd', rows: members[g]!, k: k2[g]!, options: { ...lloyd, seed: mixSeed(options.seed, g + 1) } }));
    for (let g = 0; g < k1; g++) {
      const kg = k2[g]!;
      if (kg === 0) continue;
      const fine = await results.get(g)!;
      if (fine.type !== 'lloyd') throw new Error('unexpected worker reply');
      take(g, kg, fine);
    }
  }
  for (let g = 0; !pool && g < k1; g++) {
    const kg = k2[g]!;
    if (kg === 0) continue;
    const fine = await sphericalLloyd({ data, dim, rows: members[g]! }, kg, {
      ...options,
      seed: mixSeed(options.seed, g + 1),
      seedingTrials: options.fineSeedingTrials,
    });
    take(g, kg, fine);
  }

  for (let it = 0; it < options.refineIterations; it++) {
    const tree = new CentroidTree(centroids, nlist, dim, groupOf, k1);
    const sums = new Float64Array(nlist * dim);
    const counts = new Int32Array(nlist);
    for (let i = 0; i < n; i++) {
      const xo = rows[i]! * dim;
      const c = tree.nearest(data, xo, options.searchGroups);
      counts[c]!++;
      const so = c * dim;
      for (let d = 0; d < dim; d++) sums[so + d]! += data[xo + d]!;
      if ((i & 255) === 0) await options.scheduler.maybeYield();
    }
    // An emptied centroid keeps its previous position (it still partitions space; cells may be empty).
    for (let c = 0; c < nlist; c++) if (counts[c]! > 0) normaliseSumInto(sums, c * dim, centroids, c * dim, dim);
    iterations++;
    dotProducts += tree.dotProducts;
  }
  return { centroids, nlist, groupOf, groupCount: k1, iterations, dotProducts, reseeds };
}

/**
 * Splits `total` slots over groups in proportion to `sizes` by largest remainder, giving every non-empty
 * group at least 1 and at most its size. Requires `total` between the number of non-empty groups and the
 * sum of sizes.
 */
export function allocateProportionally(sizes: Int32Array, total: number): Int32Array {
  const G = sizes.length;
  let n = 0;
  for (let g = 0; g < G; g++) n += sizes[g]!;
  const out = new Int32Array(G);
  const quota = new Float64Array(G);
  let assigned = 0;
  for (let g = 0; g < G; g++) {
    const s = sizes[g]!;
    if (s === 0) continue;
    quota[g] = (total * s) / n;
    out[g] = Math.min(s, Math.max(1, Math.floor(quota[g]!)));
    assigned += out[g]!;
  }
  while (assigned < total) {
    let pick = -1;
    let bestGap = -Infinity;
    for (let g = 0; g < G; g++) {
      if (out[g]! >= sizes[g]!) continue;
      const gap = quota[g]! - out[g]!;
      if (gap > bestGap) {
        bestGap = gap;
        pick = g;
      }
    }
    if (pick < 0) break;
    out[pick]!++;
    assigned++;
  }
  while (assigned > total) {
    let pick = -1;
    let bestGap = Infinity;
    for (let g = 0; g < G; g++) {
      if (out[g]! <= 1) continue;
      const gap = quota[g]! - out[g]!;
      if (gap < bestGap) {
        bestGap = gap;
        pick = g;
      }
    }
    if (pick < 0) break;
    out[pick]!--;
    assigned--;
  }
  return out;
}

/** Derives an independent 32-bit seed for a sub-task. */
export function mixSeed(seed: number, salt: number): number {
  let h = (seed ^ Math.imul(salt + 0x632be5ab, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
