import { dot } from '@polyphony/vectors';
import { KernelMemory, quantiseTableInt16, simdKernelsAvailable } from '../simd/kernels';
import { TopK } from './top-k';

/** The scan is used from this many cells on (the same threshold as the centroid groups it replaced). */
export const CENTROID_SCAN_MIN_NLIST = 512;
/**
 * Centroids re-scored exactly per probed cell: the best `CENTROID_SCAN_RESCORE_FACTOR * probe` centroids by their
 * int8 score (at least CENTROID_SCAN_RESCORE_MIN) get their exact float64 score; the query probes the best `probe`
 * of those. Measured with bench/src/vector-engine/coarse-quantiser.ts (catalogue and mixture data, 200k and 1M,
 * nprobe 32/64/128): see the vector engine README's coarse quantiser table.
 */
export const CENTROID_SCAN_RESCORE_FACTOR = 2;
export const CENTROID_SCAN_RESCORE_MIN = 32;

/**
 * Coarse quantiser of the IVF index from nlist 512 on (issue 35): every centroid is scored on an 8-bit scalar
 * quantised copy, then the best `rescore(probe)` centroids by that score are re-scored exactly; the other cells
 * keep score -Infinity until adaptive probing asks for them (`scoreRemaining`).
 *
 * Why not a hierarchy: the centroid groups it replaced (sqrt(nlist) spherical k-means centres over the
 * centroids, `CentroidGroups`) lose most of the recall on the catalogue data (independent album centres: the
 * centroids have no coarser structure), 0.731 instead of 0.951 recall@10 at 1M / nprobe 64. A flat scan finds the
 * best cells on any data; its cost is made small instead: the int8 scan is the engine's `dotU8I16` kernel (u8 codes x
 * int16 query table, `i32x4.dot_i16x8_s`: 8 multiply-adds per instruction against 2 for the float64 kernel).
 *
 * Codes: per dimension `d`, `lo_d = min_c x_cd`, `step_d = (max_c x_cd - lo_d) / 255`, `code_cd = round((x_cd - lo_d)
 * / step_d)` (FAISS `ScalarQuantizer` QT_8bit, trained on the centroids themselves). The int8 score of centroid c is
 * `sum_d code_cd * T_d` with `T = round(scale * q_d * step_d)` (`quantiseTableInt16`): exact integer arithmetic, the
 * constant `sum_d q_d lo_d` left out (same for every centroid). Integer sums and the selection (ties to the lower
 * cell) do not depend on the kernels being on, and the re-scored values are `dot` of `@polyphony/vectors` (the
 * `dotsF64` kernel is bit-identical to it), so the same query always probes the same cells, with or without SIMD.
 *
 * Cost per query: `nlist * dim` u8 x i16 multiply-adds + `rescore(probe) * dim` float64 ones + an O(nlist log R)
 * selection. Memory: `nlist * dim` bytes of codes + `nlist * dim * 4` bytes of float centroids in kernel memory (the
 * exact re-score and `scoreAll` run there) + `nlist * 8` bytes of scratch.
 */
export class CentroidScan {
  /** Kernel memory: codes, table, i32 output, the query, float centroids, float64 output; undefined without kernels. */
  private readonly simd?: { km: KernelMemory; codes: number; table: number; out: number; q: number; centroids: number; exact: number };
  private readonly approx: Int32Array;
  private readonly tableF: Float32Array;
  private readonly tableI: Int16Array;
  /** Cells re-scored exactly by the last query (`rescoredCount` of them). */
  private readonly rescored: Int32Array;
  private rescoredCount = 0;

  private constructor(
    readonly nlist: number,
    private readonly dim: number,
    /** `nlist * dim` u8 codes, row-major (JavaScript path; the kernel path holds its own copy). */
    private readonly codes: Uint8Array,
    private readonly step: Float32Array,
    centroids: Float32Array,
    /** Centroids re-scored exactly per probed cell (Infinity: every centroid, i.e. exact full scoring). */
    readonly rescoreFactor: number,
  ) {
    this.approx = new Int32Array(nlist);
    this.tableF = new Float32Array(dim);
    this.tableI = new Int16Array(dim);
    this.rescored = new Int32Array(nlist);
    if (simdKernelsAvailable() && dim % 8 === 0) {
      const km = new KernelMemory(nlist * dim * 5 + dim * 6 + nlist * 12 + 1024);
      const c = km.alloc(nlist * dim);
      const table = km.alloc(dim * 2);
      const out = km.alloc(nlist * 4);
      const q = km.alloc(dim * 4);
      const cf = km.alloc(nlist * dim * 4);
      const exact = km.alloc(nlist * 8);
      km.u8.set(codes, c);
      km.putF32(cf, centroids, 0, nlist * dim);
      this.simd = { km, codes: c, table, out, q, centroids: cf, exact };
      this.codes = new Uint8Array(0);
    }
  }

  /**
   * Quantises `nlist` unit centroids (row-major, `dim` floats each); undefined below CENTROID_SCAN_MIN_NLIST.
   * Cost: two passes over the centroids.
   * @param rescoreFactor centroids re-scored exactly per probed cell (benchmarks compare others; Infinity = score
   *   every centroid exactly on the float64 kernel, the reference "full scoring")
   */
  static fit(centroids: Float32Array, nlist: number, dim: number, rescoreFactor = CENTROID_SCAN_RESCORE_FACTOR): CentroidScan | undefined {
    if (nlist < CENTROID_SCAN_MIN_NLIST) return undefined;
    const lo = new Float32Array(dim).fill(Infinity);
    const hi = new Float32Array(dim).fill(-Infinity);
    for (let c = 0; c < nlist; c++) {
      for (let d = 0; d < dim; d++) {
        const v = centroids[c * dim + d]!;
        if (v < lo[d]!) lo[d] = v;
        if (v > hi[d]!) hi[d] = v;
      }
    }
    const step = new Float32Array(dim);
    for (let d = 0; d < dim; d++) step[d] = hi[d]! > lo[d]! ? (hi[d]! - lo[d]!) / 255 : 1;
    const codes = new Uint8Array(nlist * dim);
    for (let c = 0; c < nlist; c++) {
      for (let d = 0; d < dim; d++) codes[c * dim + d] = Math.min(255, Math.max(0, Math.round((centroids[c * dim + d]! - lo[d]!) / step[d]!)));
    }
    return new CentroidScan(nlist, dim, codes, step, centroids, rescoreFactor);
  }

  /** Centroids re-scored exactly for a query probing `probe` cells: max(CENTROID_SCAN_RESCORE_MIN, factor * probe). */
  rescore(probe: number): number {
    return Math.max(CENTROID_SCAN_RESCORE_MIN, this.rescoreFactor * probe);
  }

  /** Bytes held (codes or kernel memory, steps, per-query scratch). */
  get bytes(): number {
    return (
      this.codes.byteLength + this.step.byteLength + this.approx.byteLength + this.tableF.byteLength + this.tableI.byteLength + this.rescored.byteLength + (this.simd?.km.capacity ?? 0)
    );
  }

  /**
   * Scores the centroids nearest to unit query `q` for a query probing `probe` cells: the best `rescore(probe)` by
   * int8 score get their exact score (`dot(centroids, c * dim, q, 0, dim)`) in `scores`, the others -Infinity.
   * `centroids` are the unit centroids the scan was fitted on. @returns the number of centroids scored (int8 and exact)
   */
  scoreBest(q: Float32Array, centroids: Float32Array, scores: Float64Array, probe: number): number {
    const nlist = this.nlist;
    const dim = this.dim;
    const approx = this.approx;
    for (let d = 0; d < dim; d++) this.tableF[d] = q[d]! * this.step[d]!;
    if (this.simd) {
      const { km, codes, table, out } = this.simd;
      quantiseTableInt16(this.tableF, dim, km.i16, table >> 1);
      km.dotU8I16(codes, nlist, dim, table, out);
      approx.set(km.i32.subarray(out >> 2, (out >> 2) + nlist));
    } else {
      const t = this.tableI;
      quantiseTableInt16(this.tableF, dim, t, 0);
      const codes = this.codes;
      for (let c = 0; c < nlist; c++) {
        let s = 0;
        const o = c * dim;
        for (let d = 0; d < dim; d++) s += codes[o + d]! * t[d]!;
        approx[c] = s;
      }
    }
    const r = Math.min(nlist, this.rescore(probe));
    // The r cells of highest approximate score, ties to the lower cell: TopK's smallest (distance, row) with
    // distance = -score (the set is what matters; the probed cells are then ranked by their exact scores).
    const best = new TopK(r);
    for (let c = 0; c < nlist; c++) best.push(c, -approx[c]!);
    const n = best.size;
    scores.fill(-Infinity);
    const rescored = this.rescored;
    rescored.set(best.rowsHeld());
    this.rescoredCount = n;
    if (this.simd) {
      const { km, q: qp, centroids: cf, exact } = this.simd;
      km.putF32(qp, q, 0, dim);
      for (let i = 0; i < n; i++) {
        const c = rescored[i]!;
        km.dotsF64(qp, cf + c * dim * 4, 1, dim, exact);
        scores[c] = km.f64[exact >> 3]!;
      }
    } else {
      for (let i = 0; i < n; i++) {
        const c = rescored[i]!;
        scores[c] = dot(centroids, c * dim, q, 0, dim);
      }
    }
    return nlist + n;
  }

  /**
   * Scores the centroids the last `scoreBest` (same `q`, `centroids` and `scores`) left at -Infinity, so that
   * `scores` holds every centroid's exact score. @returns the number of centroids scored
   */
  scoreRemaining(q: Float32Array, centroids: Float32Array, scores: Float64Array): number {
    // The re-scored cells get the same value again (same `dot`), so scoring all of them is equivalent.
    this.scoreAll(q, centroids, scores);
    const scored = this.nlist - this.rescoredCount;
    this.rescoredCount = this.nlist;
    return scored;
  }

  /** Scores every centroid into `scores` (`nlist` entries), as `dot(centroids, c * dim, q, 0, dim)` would. */
  scoreAll(q: Float32Array, centroids: Float32Array, scores: Float64Array): void {
    const dim = this.dim;
    if (!this.simd) {
      for (let c = 0; c < this.nlist; c++) scores[c] = dot(centroids, c * dim, q, 0, dim);
      return;
    }
    const { km, q: qp, centroids: cf, exact } = this.simd;
    km.putF32(qp, q, 0, dim);
    km.dotsF64(qp, cf, this.nlist, dim, exact);
    scores.set(km.f64.subarray(exact >> 3, (exact >> 3) + this.nlist));
  }
}
