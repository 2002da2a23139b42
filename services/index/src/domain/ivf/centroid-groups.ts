import { assignNearestSync, dot, lloydKMeansSync } from '@polyphony/vectors';

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
 */
export class CentroidGroups {
  private readonly groupScores: Float64Array;
  private readonly groupOrder: Int32Array;

  private constructor(
    readonly count: number,
    private readonly dim: number,
    /** `count * dim` unit group centres. */
    private readonly centres: Float32Array,
    /** Cells of group j: `members[offsets[j] .. offsets[j+1])`. */
    private readonly members: Int32Array,
    private readonly offsets: Int32Array,
  ) {
    this.groupScores = new Float64Array(count);
    this.groupOrder = new Int32Array(count);
  }

  /** Bytes held (centres, members, offsets, per-query scratch). */
  get bytes(): number {
    return this.centres.byteLength + this.members.byteLength + this.offsets.byteLength + this.groupScores.byteLength + this.groupOrder.byteLength;
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
    return new CentroidGroups(g, dim, centres, members, offsets);
  }

  /**
   * Scores the centroids of the groups nearest to unit query `q` into `scores` (the rest set to -Infinity)
   * until at least `budget` centroids were scored. `centroids` are the index's unit centroids.
   * @returns the number of centroids scored (group centres included)
   */
  scoreBest(q: Float32Array, centroids: Float32Array, scores: Float64Array, budget: number): number {
    const dim = this.dim;
    const gs = this.groupScores;
    const order = this.groupOrder;
    for (let j = 0; j < this.count; j++) {
      gs[j] = dot(this.centres, j * dim, q, 0, dim);
      order[j] = j;
    }
    order.sort((a, b) => gs[b]! - gs[a]! || a - b);
    scores.fill(-Infinity);
    let scored = 0;
    for (let i = 0; i < this.count && scored < budget; i++) {
      const j = order[i]!;
      for (let m = this.offsets[j]!; m < this.offsets[j + 1]!; m++) {
        const c = this.members[m]!;
        scores[c] = dot(centroids, c * dim, q, 0, dim);
      }
      scored += this.offsets[j + 1]! - this.offsets[j]!;
    }
    return this.count + scored;
  }
}
