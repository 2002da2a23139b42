import { dot } from '@polyphony/vectors';
import type { CoarseQuantiser } from './ivf-index';
import type { CooperativeScheduler } from './cooperative';
import { IvfInputError } from './errors';
import type { IvfWorkerPool } from './worker-pool';

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

/** Below this many rows to place, `assignKeptCells` stays in the calling thread (starting workers costs more). */
export const PLACE_WORKER_MIN_ROWS = 4096;

/**
 * Completes a `KeptCells` assignment: every row marked -1 goes to the cell of its nearest centroid by dot product
 * (ties: the lower cell), the rule of `appendRows` (the live library's placement), scored exactly with the coarse
 * quantiser's `scoreAll` (float64 SIMD, bit-identical to `dot`) or `dot` (`placeRows`). Rows with a kept cell are not
 * looked at. With a worker pool whose threads share `vectors` (`IvfWorkerPool.share`) and at least
 * PLACE_WORKER_MIN_ROWS rows to place, the rows are split over the pool's threads (task `place`, same `placeRows`:
 * the same cells as in this thread, test kept-cells.test.ts). `pool` may be a factory instead: it is called only
 * when there are that many rows to place, and its pool is given `vectors` (`share`) and closed before returning.
 * Cost: nlist x dim multiply-adds per placed row (1M catalogue, 1% changed: 10,000 x 8,000 x 200; 3.4 s in one thread
 * at 1M, session 20).
 * @param vectors the build's unit vectors, row-major (`count * dim`)
 * @param pool optional worker pool sharing `vectors`, or a factory of one (undefined: stay in this thread)
 * @returns the completed cell of every row (a new array) and how many rows were placed
 * @throws IvfInputError when `kept.cellOfRow` does not have `count` entries, a kept cell is outside [0, nlist), or
 *   the centroids are not `nlist * dim` floats; the pool's error (e.g. IvfBuildAbortedError)
 */
export async function assignKeptCells(
  vectors: Float32Array,
  dim: number,
  count: number,
  kept: KeptCells,
  scheduler: CooperativeScheduler,
  pool?: IvfWorkerPool | (() => IvfWorkerPool | undefined),
): Promise<{ cellOfRow: Int32Array; placed: number; dotProducts: number }> {
  const { nlist, centroids } = kept;
  if (kept.cellOfRow.length !== count) throw new IvfInputError(`kept cells cover ${kept.cellOfRow.length} rows, the build holds ${count}`);
  if (nlist < 1 || centroids.length !== nlist * dim) throw new IvfInputError(`kept centroids hold ${centroids.length} floats, expected ${nlist} x ${dim}`);
  const cellOfRow = kept.cellOfRow.slice();
  let toPlace = 0;
  for (let r = 0; r < count; r++) {
    const c = cellOfRow[r]!;
    if (c >= nlist) throw new IvfInputError(`kept cell ${c} of row ${r} outside [0, ${nlist})`);
    if (c < 0) toPlace++;
  }
  const rows = new Int32Array(toPlace);
  for (let r = 0, i = 0; r < count; r++) if (cellOfRow[r]! < 0) rows[i++] = r;
  // A factory's pool is made only when there is enough to place, shares `vectors`, and is closed here.
  const owned = typeof pool === 'function' && toPlace >= PLACE_WORKER_MIN_ROWS ? pool() : undefined;
  const workers = typeof pool === 'function' ? owned : pool;
  if (workers && toPlace >= PLACE_WORKER_MIN_ROWS) {
    try {
      if (owned) await owned.share(vectors, dim);
      const parts = Math.min(workers.size, toPlace);
      const replies = await Promise.all(
        Array.from({ length: parts }, (_, p) => {
          const part = rows.slice(Math.floor((p * toPlace) / parts), Math.floor(((p + 1) * toPlace) / parts));
          return workers.run({ type: 'place', rows: part, centroids, nlist }).then((reply) => ({ part, reply }));
        }),
      );
      for (const { part, reply } of replies) {
        if (reply.type !== 'place') throw new Error(`IVF build worker: unexpected ${reply.type} reply to place`);
        for (let i = 0; i < part.length; i++) cellOfRow[part[i]!] = reply.cells[i]!;
      }
    } finally {
      await owned?.close();
    }
  } else {
    const out = new Int32Array(toPlace);
    for (let i = 0; i < toPlace; i += 32) {
      placeRows(vectors, dim, rows.subarray(i, Math.min(toPlace, i + 32)), centroids, nlist, kept.coarse ?? undefined, out.subarray(i));
      await scheduler.maybeYield();
    }
    for (let i = 0; i < toPlace; i++) cellOfRow[rows[i]!] = out[i]!;
  }
  return { cellOfRow, placed: toPlace, dotProducts: toPlace * nlist };
}

/**
 * The nearest of `nlist` unit centroids by dot product (ties: the lower cell) of each row in `rows`, into
 * `out[i]`: scored with `scorer.scoreAll` (a coarse quantiser over the same centroids; float64, bit-identical to
 * `dot`) when given, else `dot`. The one placement rule of `assignKeptCells` in any thread.
 */
export function placeRows(vectors: Float32Array, dim: number, rows: Int32Array, centroids: Float32Array, nlist: number, scorer: Pick<CoarseQuantiser, 'scoreAll'> | undefined, out: Int32Array): void {
  const scores = new Float64Array(nlist);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    const q = vectors.subarray(r * dim, (r + 1) * dim);
    if (scorer) scorer.scoreAll(q, centroids, scores);
    else for (let k = 0; k < nlist; k++) scores[k] = dot(centroids, k * dim, q, 0, dim);
    let best = 0;
    for (let k = 1; k < nlist; k++) if (scores[k]! > scores[best]!) best = k;
    out[i] = best;
  }
}

/** Largest cell / mean cell size of an assignment (the live library's drift measure `cellImbalance`); 0 when empty. */
export function cellImbalance(cellOfRow: Int32Array, nlist: number): number {
  if (nlist < 1 || cellOfRow.length === 0) return 0;
  const sizes = new Int32Array(nlist);
  let largest = 0;
  for (const c of cellOfRow) largest = Math.max(largest, ++sizes[c]!);
  return largest / (cellOfRow.length / nlist);
}
