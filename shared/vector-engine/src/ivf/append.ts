import { dot, normaliseInto } from '@polyphony/vectors';
import { IvfInputError } from './errors';
import { IvfIndex, type QuantisedParts } from './ivf-index';
import { VectorFile } from './vector-file';
import { createCodeArena } from '../simd/kernels';

/** Where an appended quantised generation writes its exact vectors (as `QuantiseOptions`). */
export interface AppendOptions {
  /** Directory of the new vector file (quantised modes). */
  dir?: string;
  /** Keep the vector file resident up to this many bytes (quantised modes). */
  residentMaxBytes?: number;
  /**
   * Copy the exact vectors into a new file instead of appending to the generation's own file (benchmarks: the cost
   * before issue 35's in-place append). Default false; a copy is also made when the file cannot grow in place.
   */
  copyVectorFile?: boolean;
}

/**
 * A new generation object holding every row of `index` (same row numbers, same cells, same centroids, same
 * quantiser) plus `ids.length` appended rows (rows `size .. size + m - 1`, in the given order), each placed in the
 * cell of its nearest centroid (highest dot product, ties: lower cell) at the end of that cell, and in the quantised
 * modes encoded with the generation's existing quantiser (residual to that centroid). Nothing is trained: centroids
 * and quantiser stay those of the full build, so cells can drift from their rows' mean (the drift settings in the
 * index's live-library module decide when a full rebuild is due). `index` itself is not modified (queries holding it
 * keep working); the result shares the centroids, coarse quantiser (`CentroidScan`) and quantiser with it.
 * Cost: nlist x dim per appended row to place it (the float64 SIMD kernel of the coarse quantiser when present), plus one copy of the vectors (float: size x dim x 4 bytes in
 * memory; quantised: the codes in memory, size x codeSize bytes). The exact vectors of a quantised generation are not
 * copied: the new rows are written after the old ones in the same file (`VectorFile.grownTo`; a copy only when
 * another generation already grew from this one, or `copyVectorFile`).
 * @param vectors m x dim floats, any non-zero finite norm (stored normalised)
 * @throws IvfInputError on a wrong length or a zero/non-finite vector; IvfDuplicateIdError when an id is already a row
 *   or repeats; IvfInputError when `index` has no cells (nothing built: a full build is needed)
 */
export function appendRows(index: IvfIndex, ids: readonly string[], vectors: Float32Array, options: AppendOptions = {}): IvfIndex {
  const parts = index.parts();
  const { dim, nlist, centroids, cellOffsets, rowOfSlot } = parts;
  const m = ids.length;
  const size = rowOfSlot.length;
  if (vectors.length !== m * dim) throw new IvfInputError(`expected ${m} x ${dim} floats, got ${vectors.length}`);
  if (m === 0) return index;
  if (nlist === 0) throw new IvfInputError('the generation has no cells: build it before appending rows');
  // Normalise and place every new row.
  const unit = new Float32Array(m * dim);
  const cellOfNew = new Int32Array(m);
  // Every centroid's score: on the coarse quantiser's float64 SIMD kernel when the generation has one (bit-identical to `dot`).
  const groups = parts.groups ?? undefined;
  const scores = new Float64Array(nlist);
  for (let i = 0; i < m; i++) {
    let norm = 0;
    for (let d = 0; d < dim; d++) norm += vectors[i * dim + d]! * vectors[i * dim + d]!;
    if (!(norm > 0) || !Number.isFinite(norm)) throw new IvfInputError(`vector ${i} (${ids[i]}) is zero or not finite`);
    normaliseInto(vectors, i * dim, unit, i * dim, dim);
    const row = unit.subarray(i * dim, (i + 1) * dim);
    if (groups) groups.scoreAll(row, centroids, scores);
    else for (let c = 0; c < nlist; c++) scores[c] = dot(centroids, c * dim, row, 0, dim);
    let best = 0;
    for (let c = 1; c < nlist; c++) if (scores[c]! > scores[best]!) best = c;
    cellOfNew[i] = best;
  }
  // Ids: the old table's rows (bytes copied, not decoded), then the new ones (IdTable.appended).
  const idTable = parts.ids.appended(ids);
  // New layout: each cell's old slots, then its new rows in the given order.
  const added = new Int32Array(nlist);
  for (let i = 0; i < m; i++) added[cellOfNew[i]!]!++;
  const offsets = new Int32Array(nlist + 1);
  for (let c = 0; c < nlist; c++) offsets[c + 1] = offsets[c]! + (cellOffsets[c + 1]! - cellOffsets[c]!) + added[c]!;
  const n = size + m;
  const newRowOfSlot = new Int32Array(n);
  const newSlotOfRow = new Int32Array(n);
  // Old slot s of cell c moves to s + shift[c] (the rows added to earlier cells).
  const shift = new Int32Array(nlist);
  for (let c = 1; c < nlist; c++) shift[c] = shift[c - 1]! + added[c - 1]!;
  const fill = new Int32Array(nlist);
  for (let c = 0; c < nlist; c++) {
    const from = cellOffsets[c]!;
    const len = cellOffsets[c + 1]! - from;
    newRowOfSlot.set(rowOfSlot.subarray(from, from + len), from + shift[c]!);
    fill[c] = offsets[c]! + len;
  }
  const newSlotOfNew = new Int32Array(m);
  for (let i = 0; i < m; i++) {
    const s = fill[cellOfNew[i]!]!++;
    newRowOfSlot[s] = size + i;
    newSlotOfNew[i] = s;
  }
  for (let s = 0; s < n; s++) newSlotOfRow[newRowOfSlot[s]!] = s;
  const common = { dim, nlist, generation: index.generation, defaultNprobe: index.defaultNprobe, centroids, cellOffsets: offsets, rowOfSlot: newRowOfSlot, slotOfRow: newSlotOfRow, ids: idTable, groups: parts.groups ?? null };
  const q = parts.quantised;
  if (!q) {
    const out = new Float32Array(n * dim);
    for (let c = 0; c < nlist; c++) {
      const from = cellOffsets[c]!;
      out.set(parts.vectors.subarray(from * dim, cellOffsets[c + 1]! * dim), (from + shift[c]!) * dim);
    }
    for (let i = 0; i < m; i++) out.set(unit.subarray(i * dim, (i + 1) * dim), newSlotOfNew[i]! * dim);
    return new IvfIndex({ ...common, vectors: out });
  }
  return new IvfIndex({ ...common, vectors: new Float32Array(0), quantised: appendQuantised(q, dim, nlist, cellOffsets, offsets, shift, unit, cellOfNew, newSlotOfNew, centroids, size, options) });
}

/** The quantised part of an appended generation: codes moved to their new slots plus the new rows' codes; a new vector file with every exact row. */
function appendQuantised(
  q: QuantisedParts,
  dim: number,
  nlist: number,
  oldOffsets: Int32Array,
  offsets: Int32Array,
  shift: Int32Array,
  unit: Float32Array,
  cellOfNew: Int32Array,
  slotOfNew: Int32Array,
  centroids: Float32Array,
  size: number,
  options: AppendOptions,
): QuantisedParts {
  const quantiser = q.quantiser;
  const cs = quantiser.codeSize;
  const m = cellOfNew.length;
  const n = size + m;
  let largest = 0;
  for (let c = 0; c < nlist; c++) largest = Math.max(largest, offsets[c + 1]! - offsets[c]!);
  const store = quantiser.kind === 'int8' ? createCodeArena(n, dim, largest) : undefined;
  const codes = store ? store.codes : new Uint8Array(n * cs);
  for (let c = 0; c < nlist; c++) codes.set(q.codes.subarray(oldOffsets[c]! * cs, oldOffsets[c + 1]! * cs), (oldOffsets[c]! + shift[c]!) * cs);
  const residual = new Float32Array(dim);
  for (let i = 0; i < m; i++) {
    const c = cellOfNew[i]!;
    for (let d = 0; d < dim; d++) residual[d] = unit[i * dim + d]! - centroids[c * dim + d]!;
    quantiser.encode(residual, 0, codes, slotOfNew[i]! * cs);
  }
  // The exact vectors in row order: the old rows stay where they are in the generation's own file (a grown view of
  // it; the old generation keeps reading its rows) and the new ones are written after them. A copy only when the file
  // cannot grow in place (another generation already grew from this one, or asked for).
  const grown = options.copyVectorFile ? undefined : q.file.grownTo(n, options.residentMaxBytes);
  const file = grown ?? copyVectorFile(q.file, size, n, dim, options);
  file.writeRows(size, unit, 0, m);
  // The re-rank source carries over (issue 35: a large int8 generation keeps re-ranking from its codes after appends).
  return { quantiser, codes, file, ...(q.rerank ? { rerank: q.rerank } : {}), ...(store ? { arena: store.arena } : {}) };
}

/** A new vector file of `n` rows holding the first `size` rows of `from` (the rest written by the caller). */
function copyVectorFile(from: VectorFile, size: number, n: number, dim: number, options: AppendOptions): VectorFile {
  const file = new VectorFile(dim, n, options.dir, options.residentMaxBytes);
  const chunkRows = 4096;
  const chunk = new Float32Array(chunkRows * dim);
  for (let r0 = 0; r0 < size; r0 += chunkRows) {
    const rows = Math.min(chunkRows, size - r0);
    from.readRows(r0, rows, chunk, 0);
    file.writeRows(r0, chunk, 0, rows);
  }
  return file;
}
