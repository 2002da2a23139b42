import { IvfCorruptStoreError, IvfInputError } from './errors';
import { IdTableBuilder } from './id-table';
import { normaliseInto } from '@polyphony/vectors';

/** One stored cell as the persistence layer hands it back to `IvfIndex.restore`. */
export interface StoredCell {
  cellId: number;
  /** Rows of the generation held by the cell. */
  rowIds: ArrayLike<number>;
  /** Canonical id of each of those rows, same order. */
  ids: readonly string[];
  /** `rowIds.length * dim` vectors, same order (re-normalised on load). */
  vectors: Float32Array;
}

/** Input of `IvfIndex.restore`. */
export interface RestoreInput {
  dim: number;
  /** Number of rows of the stored generation. */
  count: number;
  /** `nlist * dim` stored centroids. */
  centroids: Float32Array;
  /** Every stored cell exactly once, in any order; cells with no rows may be omitted. */
  cells: AsyncIterable<StoredCell> | Iterable<StoredCell>;
  generation?: number;
  defaultNprobe?: number;
}

/**
 * The checks every restore of a stored generation makes, float (`IvfIndex.restore`) and quantised
 * (`restoreQuantised`) alike: the header (dim, count, centroid matrix) at construction, then each cell
 * (`cell`) and each of its rows (`row`) as they stream in, then that every row was stored (`finish`).
 * Collects the cell of every row and the id table.
 */
export class RestoreChecks {
  readonly dim: number;
  readonly count: number;
  /** Number of stored centroids. */
  readonly nlist: number;
  /** The stored centroids scaled to unit length (`nlist * dim`). */
  readonly unitCentroids: Float32Array;
  /** Cell of every row (-1 until its cell arrives). */
  readonly cellOfRow: Int32Array;
  /** Canonical ids by row: the caller sets each row's id after `row`. */
  readonly ids: IdTableBuilder;
  private readonly seenCells: Uint8Array;

  /**
   * @throws IvfInputError when dim is not a positive integer or count a non-negative one
   * @throws IvfCorruptStoreError when the centroid matrix is not a whole number of rows, or rows have no centroids
   */
  constructor(input: RestoreInput) {
    const { dim, count, centroids } = input;
    if (!Number.isInteger(dim) || dim < 1) throw new IvfInputError(`dim must be a positive integer, got ${dim}`);
    if (!Number.isInteger(count) || count < 0) throw new IvfInputError(`count must be a non-negative integer, got ${count}`);
    if (centroids.length % dim !== 0) throw new IvfCorruptStoreError('centroid matrix length is not a multiple of dim');
    const nlist = centroids.length / dim;
    if (count > 0 && nlist === 0) throw new IvfCorruptStoreError('rows without centroids');
    this.dim = dim;
    this.count = count;
    this.nlist = nlist;
    this.unitCentroids = new Float32Array(centroids.length);
    for (let c = 0; c < nlist; c++) normaliseInto(centroids, c * dim, this.unitCentroids, c * dim, dim);
    this.cellOfRow = new Int32Array(count).fill(-1);
    this.ids = new IdTableBuilder(count);
    this.seenCells = new Uint8Array(nlist);
  }

  /** @throws IvfCorruptStoreError when the cell id is out of range, the cell came before, or its rows, ids and vectors disagree in length */
  cell(cell: StoredCell): void {
    const { cellId, rowIds } = cell;
    if (!Number.isInteger(cellId) || cellId < 0 || cellId >= this.nlist) throw new IvfCorruptStoreError(`cell id ${cellId} outside [0, ${this.nlist})`);
    if (this.seenCells[cellId]) throw new IvfCorruptStoreError(`cell ${cellId} stored twice`);
    this.seenCells[cellId] = 1;
    if (cell.ids.length !== rowIds.length || cell.vectors.length !== rowIds.length * this.dim) throw new IvfCorruptStoreError(`cell ${cellId}: rows, ids and vectors disagree in length`);
  }

  /**
   * Claims the `i`-th row of `cell` for it and writes its vector, scaled to unit length, to `out[oo .. oo+dim)`.
   * @returns the row number
   * @throws IvfCorruptStoreError when the row is out of range, already in another cell, or its vector is not finite
   */
  row(cell: StoredCell, i: number, out: Float32Array, oo: number): number {
    const row = cell.rowIds[i]!;
    if (!Number.isInteger(row) || row < 0 || row >= this.count) throw new IvfCorruptStoreError(`cell ${cell.cellId}: row ${row} outside [0, ${this.count})`);
    if (this.cellOfRow[row] !== -1) throw new IvfCorruptStoreError(`row ${row} stored in two cells`);
    this.cellOfRow[row] = cell.cellId;
    const norm = normaliseInto(cell.vectors, i * this.dim, out, oo, this.dim);
    if (!Number.isFinite(norm)) throw new IvfCorruptStoreError(`row ${row} has a non-finite vector`);
    return row;
  }

  /** @throws IvfCorruptStoreError when a row was in no stored cell */
  finish(): void {
    for (let r = 0; r < this.count; r++) if (this.cellOfRow[r] === -1) throw new IvfCorruptStoreError(`row ${r} is in no stored cell`);
  }
}
