/**
 * Cell ranking of an IVF query (step 1 of `IvfIndex.search`): the centroid scores of the unit query, exactly or
 * through the coarse quantiser, and the probing order taken from them. Split out of ivf-index.ts; shared by the
 * float and the quantised search paths.
 */
import { CENTROID_GROUPS_VISIT_FACTOR } from './centroid-groups';
import { CentroidScan } from './centroid-scan';
import type { CoarseQuantiser } from './ivf-types';
import { clampInt } from './search-result';
import { TopK } from './top-k';
import { dot } from '@polyphony/vectors';

/**
 * The default coarse quantiser of a generation: the int8 centroid scan with exact re-scoring (`CentroidScan`) from
 * CENTROID_SCAN_MIN_NLIST (512) cells on, none below (every centroid scored exactly: the answers of small
 * generations, e.g. the golden suite's, are unchanged). Issue 35: the centroid groups lost recall on the catalogue.
 */
export function fitCoarseQuantiser(centroids: Float32Array, nlist: number, dim: number): CoarseQuantiser | undefined {
  return CentroidScan.fit(centroids, nlist, dim);
}

/**
 * Centroid scores of one generation's queries (searches are synchronous: one query at a time owns `scores`).
 * Memory: `nlist` float64 scores + the coarse quantiser's bytes.
 */
export class CellRanking {
  /** Dot product of the current unit query with each unit centroid; -Infinity for cells a partial scoring left out. */
  readonly scores: Float64Array;
  /** Centroid dot products of the last query (approximate and exact; `SearchStats.centroidComputations`). */
  work = 0;

  /**
   * @param centroids `nlist * dim` unit centroids (float32)
   * @param coarse coarse quantiser over those centroids; undefined = every centroid scored exactly
   */
  constructor(
    private readonly centroids: Float32Array,
    private readonly nlist: number,
    private readonly dim: number,
    readonly coarse: CoarseQuantiser | undefined,
  ) {
    this.scores = new Float64Array(nlist);
  }

  /** Bytes held: the score array and the coarse quantiser. */
  get bytes(): number {
    return this.scores.byteLength + (this.coarse?.bytes ?? 0);
  }

  /**
   * Centroid scores of unit query `q` into `scores` for a query probing `probe` cells: every
   * centroid exactly, or with the centroid scan (when `max(32, 2 * probe)` is under half of nlist) the exact
   * scores of the best centroids by 8-bit score, or with centroid groups (when `16 * probe` is under half of
   * nlist) only those of the best groups; the others left at -Infinity. @returns whether the scores are partial
   */
  scoreCells(q: Float32Array, probe: number): boolean {
    const scores = this.scores;
    const coarse = this.coarse;
    if (coarse instanceof CentroidScan) {
      if (coarse.rescore(probe) * 2 < this.nlist) {
        this.work = coarse.scoreBest(q, this.centroids, scores, probe);
        return true;
      }
    } else if (coarse) {
      const budget = probe * CENTROID_GROUPS_VISIT_FACTOR;
      if (budget * 2 < this.nlist) {
        this.work = coarse.scoreBest(q, this.centroids, scores, budget);
        return true;
      }
    }
    this.scoreAllCells(q);
    this.work = this.nlist;
    return false;
  }

  /**
   * Score of every centroid for unit query `q` into `scores` (the float64 SIMD kernel of the coarse
   * quantiser when there is one: same float64 values as `dot`).
   */
  scoreAllCells(q: Float32Array): void {
    const scores = this.scores;
    if (this.coarse) {
      this.coarse.scoreAll(q, this.centroids, scores);
      return;
    }
    const dim = this.dim;
    for (let c = 0; c < this.nlist; c++) scores[c] = dot(this.centroids, c * dim, q, 0, dim);
  }

  /** Scores the centroids `scoreCells` left out (adaptive probing needs the full order); only after a partial `scoreCells` of the same query. */
  scoreRemainingCells(q: Float32Array): void {
    this.work += this.coarse!.scoreRemaining(q, this.centroids, this.scores);
  }
}

/** Cells with the `count` highest scores, best first (ties: lower cell id). O(nlist log count). */
export function topCells(scores: Float64Array, count: number): Int32Array {
  const heap = new TopK(count);
  // Cells a partial centroid scoring left out (-Infinity) rank last: offered only when the scored cells are
  // fewer than `count`, so the result is the same as offering every cell (the top-k of a total order).
  // A cell above the heap's threshold cannot enter (TopK.push would reject it): skipped before the call (ties go in).
  let threshold = heap.threshold;
  for (let c = 0; c < scores.length; c++) {
    const s = scores[c]!;
    if (s === -Infinity || -s > threshold) continue;
    heap.push(c, -s);
    threshold = heap.threshold;
  }
  if (heap.size < count) for (let c = 0; c < scores.length; c++) if (scores[c] === -Infinity) heap.push(c, Infinity);
  return heap.drainRows();
}

/** Every cell not in `taken`, best score first. */
export function remainingCells(scores: Float64Array, taken: Int32Array): number[] {
  const used = new Uint8Array(scores.length);
  for (let i = 0; i < taken.length; i++) used[taken[i]!] = 1;
  const rest: number[] = [];
  for (let c = 0; c < scores.length; c++) if (!used[c]) rest.push(c);
  rest.sort((a, b) => scores[b]! - scores[a]! || a - b);
  return rest;
}

/**
 * Cells to probe for a query: `nprobe` without a mask; with an availability mask holding `available` of `size`
 * rows, nprobe scaled by size / available (so about as many available rows are scanned as unmasked), clamped to
 * [1, nlist].
 */
export function probeCount(nprobe: number, size: number, nlist: number, available?: number): number {
  if (available === undefined) return nprobe;
  return clampInt(Math.ceil((nprobe * size) / available), 1, nlist);
}
