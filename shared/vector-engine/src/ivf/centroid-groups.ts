import { assignNearestSync, dot, lloydKMeansSync } from '@polyphony/vectors';
import { KernelMemory, simdKernelsAvailable } from '../simd/kernels';

/** Groups are used from this many cells on (below, scoring every centroid costs under ~0.1 ms). */
export const CENTROID_GROUPS_MIN_NLIST = 512;
/**
 * Centroids scored per probed cell: a query scores the members of its best groups until this many times
 * `probe` centroids were scored. Measured on the 20k mixture of ivf-index.test.ts (nlist 1131) recall@10 against exact search at nprobe 16/32/64 is 0.9925/1/1 with 16
 * (0.9825/0.9945/1 with 8, 0.998/1/1 scoring every centroid).
 */
export const CENTROID_GROUPS_VISIT_FACTOR = 16;
/** Lloyd iterations of the group centres (spherical k-means over the centroids). */
const ITERATIONS = 4;

/**
 * Two-level coarse quantiser over the IVF centroids, built when a generation is loaded (issue 19: the
 * centroid scan was half of a query's work at 100k and 1M): the `nlist` unit centroids are grouped into
 * `G = round(sqrt(nlist))` groups by spherical k-means on the shared engine (`lloydKMeansSync` of
 * `@polyphony/vectors`: centres started on evenly spaced centroids, ITERATIONS Lloyd steps, an empty group
 * keeping its centre; deterministic), each cell then in the group of its nearest final centre. A query scores the G group centres, then the centroids of its best groups only, until
 * `budget` centroids were scored; the other cells keep score -Infinity. Cost per query
 * `(G + budget) * dim` multiply-adds instead of `nlist * dim` (at 1M: ~89 + 1,024 centroids instead of 8,000).
 * The same idea as FAISS's IVF with an HNSW or two-level coarse quantiser (Jégou et al., "Product
 * quantization for nearest neighbor search", TPAMI 2011, section IV.A, uses a coarse quantiser of the same role).
 * Build cost: `(ITERATIONS + 1) * nlist * G * dim` multiply-adds (~1.4e9 at nlist 8000: 1.1 s CPU on the engine's
 * 4x2-tiled kernel, 2.3 s with the loop it replaced, load 12).
 *
 * Scoring runs on the WebAssembly SIMD kernel `dotsF64` when the kernels are available (issue 19: `scoreBest` in
 * plain JavaScript was ~26% of an index replica's busy time at 100k): the group centres and a copy of the
 * centroids in member order (`nlist * dim * 4` bytes more) live in the kernel memory, and a visited group is one
 * kernel call. `dotsF64` is bit-identical to `dot` of `@polyphony/vectors`, so the scores, hence the probed cells
 * and the answers, are exactly those of the JavaScript path (`IVF_SIMD=0`); centroid-groups.test.ts checks it.
 */
export class CentroidGroups {
  private readonly groupScores: Float64Array;
  private readonly groupOrder: Int32Array;
  /** Groups scored by the last `scoreBest` (its visit prefix of `groupOrder`). */
  private visited = 0;
  /** Kernel memory: centres, centroids in member order, the query, float64 output; undefined without the kernels. */
  private readonly simd?: { km: KernelMemory; centres: number; ordered: number; q: number; out: number };

  private constructor(
    readonly count: number,
    private readonly dim: number,
    /** `count * dim` unit group centres. */
    private readonly centres: Float32Array,
    /** Cells of group j: `members[offsets[j] .. offsets[j+1])`. */
    private readonly members: Int32Array,
    private readonly offsets: Int32Array,
    /** The `nlist * dim` unit centroids (copied into the kernel memory; not kept). */
    centroids: Float32Array,
  ) {
    this.groupScores = new Float64Array(count);
    this.groupOrder = new Int32Array(count);
    if (simdKernelsAvailable()) this.simd = CentroidGroups.kernelCopy(count, dim, centres, members, centroids);
  }

  /** Kernel memory holding the centres and the centroids of every group contiguous (member order). */
  private static kernelCopy(count: number, dim: number, centres: Float32Array, members: Int32Array, centroids: Float32Array): CentroidGroups['simd'] {
    const nlist = members.length;
    const km = new KernelMemory((count + nlist + 1) * dim * 4 + Math.max(count, nlist) * 8 + 1024);
    const c = km.alloc(count * dim * 4);
    const ordered = km.alloc(nlist * dim * 4);
    const q = km.alloc(dim * 4);
    const out = km.alloc(Math.max(count, nlist) * 8);
    km.putF32(c, centres, 0, count * dim);
    for (let m = 0; m < nlist; m++) km.putF32(ordered + m * dim * 4, centroids, members[m]! * dim, dim);
    return { km, centres: c, ordered, q, out };
  }

  /** Bytes held (centres, members, offsets, per-query scratch, kernel memory). */
  get bytes(): number {
    return (
      this.centres.byteLength + this.members.byteLength + this.offsets.byteLength + this.groupScores.byteLength + this.groupOrder.byteLength + (this.simd?.km.capacity ?? 0)
    );
  }

  /** Groups `nlist` unit centroids (row-major, `dim` floats each); undefined below CENTROID_GROUPS_MIN_NLIST. */
  static fit(centroids: Float32Array, nlist: number, dim: number): CentroidGroups | undefined {
    if (nlist < CENTROID_GROUPS_MIN_NLIST) return undefined;
    const g = Math.max(2, Math.round(Math.sqrt(nlist)));
    const start = new Float32Array(g * dim);
    for (let j = 0; j < g; j++) start.set(centroids.subarray(Math.floor((j * nlist) / g) * dim, Math.floor((j * nlist) / g) * dim + dim), j * dim);
    const points = { data: centroids, dim, rows: Int32Array.from({ length: nlist }, (_, c) => c) };
    const { centroids: centres } = lloydKMeansSync(points, g, { geometry: 'spherical', initialCentroids: start, maxIterations: ITERATIONS, emptyClusters: 'keep' });
    // The groups are the cells nearest to the final centres (one more assignment after the last update).
    const groupOf = new Int32Array(nlist);
    assignNearestSync(points, centres, g, groupOf, new Float64Array(nlist), { geometry: 'spherical' });
    const offsets = new Int32Array(g + 1);
    for (let c = 0; c < nlist; c++) offsets[groupOf[c]! + 1]!++;
    for (let j = 0; j < g; j++) offsets[j + 1]! += offsets[j]!;
    const fill = offsets.slice(0, g);
    const members = new Int32Array(nlist);
    for (let c = 0; c < nlist; c++) members[fill[groupOf[c]!]!++] = c;
    return new CentroidGroups(g, dim, centres, members, offsets, centroids);
  }

  /**
   * Scores the centroids of the groups nearest to unit query `q` into `scores` (the rest set to -Infinity)
   * until at least `budget` centroids were scored. `centroids` are the index's unit centroids (`nlist * dim`,
   * the ones the groups were fitted on; the kernel path reads its own copy). Groups are visited by decreasing
   * centre score, ties to the lower group.
   * @returns the number of centroids scored (group centres included)
   */
  scoreBest(q: Float32Array, centroids: Float32Array, scores: Float64Array, budget: number): number {
    const gs = this.groupScores;
    const order = this.groupOrder;
    if (this.simd) {
      const { km, centres, q: qp, out } = this.simd;
      km.putF32(qp, q, 0, this.dim);
      km.dotsF64(qp, centres, this.count, this.dim, out);
      gs.set(km.f64.subarray(out >> 3, (out >> 3) + this.count));
    } else {
      for (let j = 0; j < this.count; j++) gs[j] = dot(this.centres, j * this.dim, q, 0, this.dim);
    }
    for (let j = 0; j < this.count; j++) order[j] = j;
    order.sort((a, b) => gs[b]! - gs[a]! || a - b);
    scores.fill(-Infinity);
    let scored = 0;
    let i = 0;
    for (; i < this.count && scored < budget; i++) scored += this.scoreGroup(order[i]!, q, centroids, scores);
    this.visited = i;
    return this.count + scored;
  }

  /**
   * Scores the centroids the last `scoreBest` (same `q`, `centroids` and `scores`) left at -Infinity, so that
   * `scores` holds every centroid's score. @returns the number of centroids scored
   */
  scoreRemaining(q: Float32Array, centroids: Float32Array, scores: Float64Array): number {
    if (this.simd) this.simd.km.putF32(this.simd.q, q, 0, this.dim);
    let scored = 0;
    for (let i = this.visited; i < this.count; i++) scored += this.scoreGroup(this.groupOrder[i]!, q, centroids, scores);
    this.visited = this.count;
    return scored;
  }

  /** Scores every centroid into `scores` (`nlist` entries), as `dot(centroids, c * dim, q, 0, dim)` would. */
  scoreAll(q: Float32Array, centroids: Float32Array, scores: Float64Array): void {
    if (!this.simd) {
      for (let c = 0; c < this.members.length; c++) scores[c] = dot(centroids, c * this.dim, q, 0, this.dim);
      return;
    }
    const { km, ordered, q: qp, out } = this.simd;
    km.putF32(qp, q, 0, this.dim);
    km.dotsF64(qp, ordered, this.members.length, this.dim, out);
    const f64 = km.f64;
    const ob = out >> 3;
    for (let m = 0; m < this.members.length; m++) scores[this.members[m]!] = f64[ob + m]!;
  }

  /**
   * Scores the members of group `j` into `scores` (kernel path: the query must already be in the kernel
   * memory). @returns the group's size
   */
  private scoreGroup(j: number, q: Float32Array, centroids: Float32Array, scores: Float64Array): number {
    const from = this.offsets[j]!;
    const to = this.offsets[j + 1]!;
    const dim = this.dim;
    if (this.simd) {
      const { km, ordered, q: qp, out } = this.simd;
      km.dotsF64(qp, ordered + from * dim * 4, to - from, dim, out);
      const f64 = km.f64;
      const ob = (out >> 3) - from;
      for (let m = from; m < to; m++) scores[this.members[m]!] = f64[ob + m]!;
    } else {
      for (let m = from; m < to; m++) {
        const c = this.members[m]!;
        scores[c] = dot(centroids, c * dim, q, 0, dim);
      }
    }
    return to - from;
  }
}
