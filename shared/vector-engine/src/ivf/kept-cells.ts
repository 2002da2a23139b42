import { dot } from '@polyphony/vectors';
import type { CoarseQuantiser } from './ivf-index';
import type { CooperativeScheduler } from './cooperative';
import { IvfInputError } from './errors';

/**
 * The cells a build takes over from the generation it replaces instead of training k-means (issue 35, "IVF: keep the
 * centroids and the cell of every unchanged row; assign only new/changed rows"). Given to `buildIvfIndex` through
 * `IvfBuildOptions.keptCells` after its ingest; the caller (the index service's generation reuse) decides when the
 * old cells are still good enough (share of changed rows, cell balance) and otherwise returns undefined (k-means).
 */
export interface KeptCells {
  /** Number of cells (the old generation's nlist, whatever `defaultNlist` of the new size would be). */
  nlist: number;
  /** `nlist * dim` unit centroids (the old generation's; not modified). */
  centroids: Float32Array;
  /** Per new row (length = rows ingested): the cell it keeps, or -1 = place it at its nearest centroid. */
  cellOfRow: Int32Array;
  /** The old generation's coarse quantiser over the same centroids (its exact float64 scoring is used when given). */
  coarse?: CoarseQuantiser | null;
}

/**
 * Completes a `KeptCells` assignment: every row marked -1 goes to the cell of its nearest centroid by dot product
 * (ties: the lower cell), the rule of `appendRows` (the live library's placement), scored exactly with the coarse
 * quantiser's `scoreAll` (float64 SIMD, bit-identical to `dot`) or `dot`. Rows with a kept cell are not looked at.
 * Cost: nlist x dim multiply-adds per placed row (1M catalogue, 1% changed: 10,000 x 8,000 x 200).
 * @param vectors the build's unit vectors, row-major (`count * dim`)
 * @returns the completed cell of every row (a new array) and how many rows were placed
 * @throws IvfInputError when `kept.cellOfRow` does not have `count` entries, a kept cell is outside [0, nlist), or
 *   the centroids are not `nlist * dim` floats
 */
export async function assignKeptCells(vectors: Float32Array, dim: number, count: number, kept: KeptCells, scheduler: CooperativeScheduler): Promise<{ cellOfRow: Int32Array; placed: number; dotProducts: number }> {
  const { nlist, centroids } = kept;
  if (kept.cellOfRow.length !== count) throw new IvfInputError(`kept cells cover ${kept.cellOfRow.length} rows, the build holds ${count}`);
  if (nlist < 1 || centroids.length !== nlist * dim) throw new IvfInputError(`kept centroids hold ${centroids.length} floats, expected ${nlist} x ${dim}`);
  const cellOfRow = kept.cellOfRow.slice();
  const scores = new Float64Array(nlist);
  const coarse = kept.coarse ?? undefined;
  let placed = 0;
  for (let r = 0; r < count; r++) {
    const c = cellOfRow[r]!;
    if (c >= 0) {
      if (c >= nlist) throw new IvfInputError(`kept cell ${c} of row ${r} outside [0, ${nlist})`);
      continue;
    }
    const q = vectors.subarray(r * dim, (r + 1) * dim);
    if (coarse) coarse.scoreAll(q, centroids, scores);
    else for (let k = 0; k < nlist; k++) scores[k] = dot(centroids, k * dim, q, 0, dim);
    let best = 0;
    for (let k = 1; k < nlist; k++) if (scores[k]! > scores[best]!) best = k;
    cellOfRow[r] = best;
    if ((++placed & 31) === 0) await scheduler.maybeYield();
  }
  return { cellOfRow, placed, dotProducts: placed * nlist };
}

/** Largest cell / mean cell size of an assignment (the live library's drift measure `cellImbalance`); 0 when empty. */
export function cellImbalance(cellOfRow: Int32Array, nlist: number): number {
  if (nlist < 1 || cellOfRow.length === 0) return 0;
  const sizes = new Int32Array(nlist);
  let largest = 0;
  for (const c of cellOfRow) largest = Math.max(largest, ++sizes[c]!);
  return largest / (cellOfRow.length / nlist);
}
