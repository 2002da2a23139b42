import { CooperativeScheduler } from './cooperative';
import { slotMapsByCell } from './cell-layout';
import { IvfCorruptStoreError, IvfInputError } from './errors';
import { RestoreChecks } from './restore-checks';
import { DEFAULT_NPROBE, IvfIndex, type RerankSource, type RestoreInput, type VectorMode } from './ivf-index';
import { ProductQuantiser, ScalarQuantiser, type Quantiser } from './quantiser';
import { VectorFile } from './vector-file';
import { type CodeArena, createCodeArena } from '../simd/kernels';
import { IvfWorkerPool } from './worker-pool';

/** PQ sub-spaces by default: 25 sub-spaces of 8 dimensions for 200-d vectors (25 bytes per vector). */
export const DEFAULT_PQ_M = 25;
/** Training sample of the int8 ranges (rows, evenly spaced). */
export const INT8_TRAIN_SAMPLE = 65536;
/** Training sample of the PQ codebooks (rows): 32 points per centroid, ~4e9 multiply-adds at 200-d. */
export const PQ_TRAIN_SAMPLE = 8192;

/** How to quantise a generation (`VectorMode` other than float). */
export interface QuantiseOptions {
  mode: Exclude<VectorMode, 'float'>;
  /** PQ sub-spaces; must divide dim (default DEFAULT_PQ_M). */
  pqM?: number;
  /** Rows of the training sample (default INT8_TRAIN_SAMPLE / PQ_TRAIN_SAMPLE). */
  sampleSize?: number;
  /** Directory of the disk copy of the float vectors (default `$TMPDIR/polyphony-index`). */
  dir?: string;
  /**
   * The float copy is also kept in memory when it is at most this many bytes (`VectorFile` resident copy: re-ranking
   * without read calls); default 0 = disk only.
   */
  residentMaxBytes?: number;
  /**
   * Where queries re-rank from and take a similar-songs seed when the float copy is not resident (`QuantisedParts.rerank`):
   * `file` (default, exact floats read per row) or `codes` (int8 only: from the codes in memory, no file read).
   */
  rerank?: RerankSource;
  seed?: number;
  /** Time slicing / abort (default: 10 ms slices, no abort). */
  scheduler?: CooperativeScheduler;
  /**
   * Worker threads for the encoding (default 0 = in-thread). The quantiser is trained in-thread; rows are
   * encoded in parallel ranges straight from the vector file, codes written into shared memory.
   */
  workers?: number;
  /** Progress of the encoding, rows. */
  onProgress?: (done: number, total: number) => void;
}

/**
 * Codes stored with a generation (`restoreQuantised`): the quantiser the building replica trained and the
 * codes of every non-empty cell, `codeSize` bytes per row, rows in ascending row order within the cell.
 */
export interface StoredCodes {
  quantiser: Quantiser;
  cells: AsyncIterable<{ cellId: number; codes: Uint8Array }> | Iterable<{ cellId: number; codes: Uint8Array }>;
}

/**
 * The quantiser of `mode` from its stored `toParams()` values.
 * @throws IvfCorruptStoreError when the values do not describe a quantiser of `dim` (and `pqM` for pq)
 */
export function quantiserFromParams(mode: Exclude<VectorMode, 'float'>, dim: number, params: Float32Array, pqM?: number): Quantiser {
  try {
    const q = mode === 'int8' ? ScalarQuantiser.fromParams(dim, params) : ProductQuantiser.fromParams(dim, params);
    if (q instanceof ProductQuantiser && pqM !== undefined && q.m !== pqM) throw new IvfCorruptStoreError(`stored PQ has ${q.m} sub-spaces, ${pqM} configured`);
    return q;
  } catch (err) {
    if (err instanceof IvfCorruptStoreError) throw err;
    throw new IvfCorruptStoreError(`stored ${mode} quantiser: ${(err as Error).message}`);
  }
}

/** Trains the quantiser of `mode` on `n` residual vectors. */
async function trainQuantiser(sample: Float32Array, n: number, dim: number, options: QuantiseOptions, scheduler: CooperativeScheduler): Promise<Quantiser> {
  if (options.mode === 'int8') return ScalarQuantiser.train(sample, n, dim);
  const m = options.pqM ?? DEFAULT_PQ_M;
  if (n < 256) {
    // Tiny generation: repeat the sample so that every centroid has a point (exact codes for these rows).
    const grown = new Float32Array(256 * dim);
    for (let i = 0; i < 256; i++) grown.set(sample.subarray((i % Math.max(1, n)) * dim, ((i % Math.max(1, n)) + 1) * dim), i * dim);
    return ProductQuantiser.train(grown, 256, dim, m, { seed: options.seed ?? 0x5eed, maybeYield: () => scheduler.maybeYield() });
  }
  return ProductQuantiser.train(sample, n, dim, m, { seed: options.seed ?? 0x5eed, maybeYield: () => scheduler.maybeYield() });
}

/**
 * Encodes the residual of slot `s` (its float vector minus the centroid of its cell `c`) into `out` at byte `at`;
 * `residual` is a `dim`-float scratch. The one encoding rule of `quantiseIndex` and `encodeIndexCodes`.
 */
export function encodeSlot(vectors: Float32Array, centroids: Float32Array, dim: number, s: number, c: number, quantiser: Quantiser, residual: Float32Array, out: Uint8Array, at: number): void {
  for (let d = 0; d < dim; d++) residual[d] = vectors[s * dim + d]! - centroids[c * dim + d]!;
  quantiser.encode(residual, 0, out, at);
}

function sampleStride(count: number, sampleSize: number): number {
  return Math.max(1, Math.floor(count / Math.max(1, sampleSize)));
}

/**
 * Re-packs a float generation into a quantised one (used after a build): writes the unit vectors to a
 * vector file in row order, trains the quantiser on the residuals of an evenly spaced row sample, encodes
 * every residual in slot order. The float index is not modified; drop it afterwards to free its memory.
 * Cost: int8 `~3 * N * dim`, PQ `256 * N * dim` multiply-adds (the encoding dominates).
 */
export async function quantiseIndex(index: IvfIndex, options: QuantiseOptions): Promise<IvfIndex> {
  const parts = index.parts();
  if (parts.quantised) throw new IvfInputError('index is already quantised');
  const { dim, nlist, centroids, cellOffsets, vectors, rowOfSlot, slotOfRow } = parts;
  const size = rowOfSlot.length;
  const scheduler = options.scheduler ?? new CooperativeScheduler(10);
  const file = await writeVectorFile(parts, options, scheduler);
  const quantiser = await trainOnIndex(parts, options, scheduler);
  if ((options.workers ?? 0) > 0 && size >= 4096) {
    const cellOfRow = new Int32Array(size);
    for (let c = 0; c < nlist; c++) for (let s = cellOffsets[c]!; s < cellOffsets[c + 1]!; s++) cellOfRow[rowOfSlot[s]!] = c;
    const shared = await encodeInWorkers(file, quantiser, centroids, cellOfRow, slotOfRow, options);
    const store = codeStore(quantiser, size, cellOffsets);
    store.codes.set(shared);
    return new IvfIndex({ ...parts, vectors: new Float32Array(0), quantised: { quantiser, ...store, file, rerank: options.rerank ?? 'file' } });
  }
  const store = codeStore(quantiser, size, cellOffsets);
  const codes = store.codes;
  const residual = new Float32Array(dim);
  let done = 0;
  for (let c = 0; c < nlist; c++) {
    for (let s = cellOffsets[c]!; s < cellOffsets[c + 1]!; s++) {
      encodeSlot(vectors, centroids, dim, s, c, quantiser, residual, codes, s * quantiser.codeSize);
      if ((++done & 255) === 0) {
        options.onProgress?.(done, size);
        await scheduler.maybeYield();
      }
    }
  }
  return new IvfIndex({ ...parts, vectors: new Float32Array(0), quantised: { quantiser, ...store, file, rerank: options.rerank ?? 'file' } });
}

/**
 * The exact unit vectors of a float generation written to a new `VectorFile` in row order (1024 rows per write),
 * the disk copy a quantised generation re-ranks from. @internal (quantiseIndex, quantiseKeepingCodes)
 */
export async function writeVectorFile(parts: ReturnType<IvfIndex['parts']>, options: QuantiseOptions, scheduler: CooperativeScheduler): Promise<VectorFile> {
  const { dim, vectors, rowOfSlot, slotOfRow } = parts;
  const size = rowOfSlot.length;
  const file = new VectorFile(dim, size, options.dir, options.residentMaxBytes);
  const chunk = new Float32Array(1024 * dim);
  for (let r0 = 0; r0 < size; r0 += 1024) {
    const rows = Math.min(1024, size - r0);
    for (let i = 0; i < rows; i++) {
      const s = slotOfRow[r0 + i]!;
      chunk.set(vectors.subarray(s * dim, s * dim + dim), i * dim);
    }
    file.writeRows(r0, chunk, 0, rows);
    await scheduler.maybeYield();
  }
  return file;
}

/**
 * Trains the quantiser of `options.mode` on the residuals of an evenly spaced row sample of a float
 * generation (rows `i * stride`, the rows `restoreQuantised` samples, so both train the same quantiser).
 */
async function trainOnIndex(parts: ReturnType<IvfIndex['parts']>, options: QuantiseOptions, scheduler: CooperativeScheduler): Promise<Quantiser> {
  const { dim, nlist, centroids, cellOffsets, vectors, rowOfSlot, slotOfRow } = parts;
  const size = rowOfSlot.length;
  if (size === 0) return new ScalarQuantiser(dim, new Float32Array(dim), new Float32Array(dim).fill(1));
  const cellOfSlot = (slot: number): number => {
    let lo = 0;
    let hi = nlist - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (cellOffsets[mid]! <= slot) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const wanted = options.sampleSize ?? (options.mode === 'int8' ? INT8_TRAIN_SAMPLE : PQ_TRAIN_SAMPLE);
  const stride = sampleStride(size, wanted);
  const n = Math.min(wanted, Math.ceil(size / stride));
  const sample = new Float32Array(Math.max(1, n) * dim);
  for (let i = 0; i < n; i++) {
    const s = slotOfRow[i * stride]!;
    const c = cellOfSlot(s);
    for (let d = 0; d < dim; d++) sample[i * dim + d] = vectors[s * dim + d]! - centroids[c * dim + d]!;
  }
  return trainQuantiser(sample, n, dim, options, scheduler);
}

/**
 * The codes of a further mode for a float generation, without building a second index (issue 19: a build
 * stores the codes of more than its own mode, so that replicas of either mode restore without training):
 * the quantiser is trained as `quantiseIndex` trains it, and `cells` encodes one cell per step, lazily, in
 * cell order (the codes `quantiseIndex` would produce for that cell), so only one cell's codes are held.
 * Cost: int8 ~3 * N * dim operations in this thread, yielding through `options.scheduler`.
 * @throws IvfInputError when `index` is already quantised
 */
export async function encodeIndexCodes(index: IvfIndex, options: QuantiseOptions): Promise<{ quantiser: Quantiser; cells: AsyncGenerator<{ cellId: number; codes: Uint8Array }> }> {
  const parts = index.parts();
  if (parts.quantised) throw new IvfInputError('index is already quantised');
  const scheduler = options.scheduler ?? new CooperativeScheduler(10);
  const quantiser = await trainOnIndex(parts, options, scheduler);
  const { dim, nlist, centroids, cellOffsets, vectors } = parts;
  async function* cells(): AsyncGenerator<{ cellId: number; codes: Uint8Array }> {
    const residual = new Float32Array(dim);
    for (let c = 0; c < nlist; c++) {
      const from = cellOffsets[c]!;
      const rows = cellOffsets[c + 1]! - from;
      if (rows === 0) continue;
      const codes = new Uint8Array(rows * quantiser.codeSize);
      for (let i = 0; i < rows; i++) {
        encodeSlot(vectors, centroids, dim, from + i, c, quantiser, residual, codes, i * quantiser.codeSize);
      }
      yield { cellId: c, codes };
      await scheduler.maybeYield();
    }
  }
  return { quantiser, cells: cells() };
}

/** The per-cell codes of a slot-ordered code array (cells laid out by `cellOffsets`), empty cells skipped; views, not copies. */
export function* cellsOfCodes(cellOffsets: Int32Array, codes: Uint8Array, codeSize: number): Generator<{ cellId: number; codes: Uint8Array }> {
  for (let c = 0; c + 1 < cellOffsets.length; c++) {
    const from = cellOffsets[c]! * codeSize;
    const to = cellOffsets[c + 1]! * codeSize;
    if (to > from) yield { cellId: c, codes: codes.subarray(from, to) };
  }
}

/**
 * Where a generation's codes live: int8 codes in a kernel arena (WebAssembly SIMD scan, `simd/kernels.ts`)
 * when the kernels run here, else (and for PQ, whose table look-ups SIMD does not speed up) a plain Uint8Array.
 */
export function codeStore(quantiser: Quantiser, count: number, cellOffsets: Int32Array): { codes: Uint8Array; arena?: CodeArena } {
  if (quantiser.kind === 'int8') {
    let largest = 0;
    for (let c = 0; c + 1 < cellOffsets.length; c++) largest = Math.max(largest, cellOffsets[c + 1]! - cellOffsets[c]!);
    const a = createCodeArena(count, quantiser.dim, largest);
    if (a) return a;
  }
  return { codes: new Uint8Array(count * quantiser.codeSize) };
}

/**
 * `IvfIndex.restore` for the quantised modes, in bounded memory: the float vectors never sit in memory
 * all at once. Pass 1 streams the stored cells, writes every normalised vector to the vector file at its
 * row and keeps the residuals of an evenly spaced row sample. With `stored` codes (saved by the build,
 * issue 19) pass 2 copies them into their slots; without, the quantiser is trained on the sample and
 * pass 2 reads the file back sequentially (4096 rows at a time) and encodes every residual into its slot.
 * Memory: codes + id table + 12 bytes per row of maps + the sample (`sampleSize * dim * 4` bytes).
 * Same validation and errors as `IvfIndex.restore`; stored codes of the wrong size or a missing cell's
 * codes are an IvfCorruptStoreError.
 */
export async function restoreQuantised(input: RestoreInput, options: QuantiseOptions, stored?: StoredCodes): Promise<IvfIndex> {
  const checks = new RestoreChecks(input);
  const { dim, count, nlist, cellOfRow, ids, unitCentroids: unit } = checks;
  const scheduler = options.scheduler ?? new CooperativeScheduler(10);
  const file = new VectorFile(dim, count, options.dir, options.residentMaxBytes);
  const wanted = options.sampleSize ?? (options.mode === 'int8' ? INT8_TRAIN_SAMPLE : PQ_TRAIN_SAMPLE);
  const stride = sampleStride(count, wanted);
  // The training sample (52 MB for PQ at 200-d) only when the quantiser must be trained: stored codes are placed as they are.
  const n = stored ? 0 : Math.min(wanted, Math.ceil(count / stride));
  const sample = new Float32Array(stored ? 0 : Math.max(1, n) * dim);
  const v = new Float32Array(dim);
  try {
    for await (const cell of input.cells) {
      checks.cell(cell);
      const { cellId, rowIds } = cell;
      for (let i = 0; i < rowIds.length; i++) {
        const row = checks.row(cell, i, v, 0);
        file.writeRows(row, v, 0, 1);
        if (row % stride === 0 && row / stride < n) {
          const o = (row / stride) * dim;
          for (let d = 0; d < dim; d++) sample[o + d] = v[d]! - unit[cellId * dim + d]!;
        }
        ids.set(row, cell.ids[i]!);
      }
      await scheduler.maybeYield();
    }
    checks.finish();
    // Layout: counting sort of rows by cell (the vectors stay in the file, in row order).
    const { cellOffsets, rowOfSlot, slotOfRow } = slotMapsByCell(cellOfRow, count, nlist);
    let quantiser: Quantiser;
    let store: { codes: Uint8Array; arena?: CodeArena };
    if (stored) {
      quantiser = stored.quantiser;
      if (quantiser.dim !== dim) throw new IvfCorruptStoreError(`stored quantiser is ${quantiser.dim}-d, the generation ${dim}-d`);
      store = codeStore(quantiser, count, cellOffsets);
      await placeStoredCodes(stored, cellOffsets, quantiser.codeSize, scheduler, store.codes);
    } else {
      quantiser = count === 0 ? new ScalarQuantiser(dim, new Float32Array(dim), new Float32Array(dim).fill(1)) : await trainQuantiser(sample, n, dim, options, scheduler);
      store = codeStore(quantiser, count, cellOffsets);
      if ((options.workers ?? 0) > 0 && count >= 4096) store.codes.set(await encodeInWorkers(file, quantiser, unit, cellOfRow, slotOfRow, options));
      else await encodeInThread(file, quantiser, unit, cellOfRow, slotOfRow, count, dim, options, scheduler, store.codes);
    }
    return new IvfIndex({
      dim,
      nlist,
      generation: input.generation ?? 0,
      defaultNprobe: input.defaultNprobe ?? DEFAULT_NPROBE,
      centroids: unit,
      cellOffsets,
      vectors: new Float32Array(0),
      rowOfSlot,
      slotOfRow,
      ids: ids.finish(count),
      quantised: { quantiser, ...store, file, rerank: options.rerank ?? 'file' },
    });
  } catch (err) {
    file.close();
    throw err;
  }
}

/** Copies stored per-cell codes into `codes` in slot order (cells laid out by `cellOffsets`, rows ascending within a cell). */
async function placeStoredCodes(stored: StoredCodes, cellOffsets: Int32Array, codeSize: number, scheduler: CooperativeScheduler, codes: Uint8Array): Promise<Uint8Array> {
  const nlist = cellOffsets.length - 1;
  const seen = new Uint8Array(nlist);
  for await (const cell of stored.cells) {
    const c = cell.cellId;
    if (!Number.isInteger(c) || c < 0 || c >= nlist) throw new IvfCorruptStoreError(`codes of cell ${c} outside [0, ${nlist})`);
    if (seen[c]) throw new IvfCorruptStoreError(`codes of cell ${c} stored twice`);
    seen[c] = 1;
    const bytes = (cellOffsets[c + 1]! - cellOffsets[c]!) * codeSize;
    if (cell.codes.byteLength !== bytes) throw new IvfCorruptStoreError(`codes of cell ${c}: ${cell.codes.byteLength} bytes, expected ${bytes}`);
    codes.set(cell.codes, cellOffsets[c]! * codeSize);
    await scheduler.maybeYield();
  }
  for (let c = 0; c < nlist; c++) if (!seen[c] && cellOffsets[c + 1]! > cellOffsets[c]!) throw new IvfCorruptStoreError(`codes of cell ${c} are missing`);
  return codes;
}

/** Encodes every row of `file` in this thread into `codes`, 4096 rows read at a time; codes in slot order. */
async function encodeInThread(
  file: VectorFile,
  quantiser: Quantiser,
  unit: Float32Array,
  cellOfRow: Int32Array,
  slotOfRow: Int32Array,
  count: number,
  dim: number,
  options: QuantiseOptions,
  scheduler: CooperativeScheduler,
  codes: Uint8Array,
): Promise<Uint8Array> {
  const chunk = new Float32Array(4096 * dim);
  const v = new Float32Array(dim);
  for (let r0 = 0; r0 < count; r0 += 4096) {
    const rows = Math.min(4096, count - r0);
    file.readRows(r0, rows, chunk);
    for (let i = 0; i < rows; i++) {
      const row = r0 + i;
      const c = cellOfRow[row]!;
      for (let d = 0; d < dim; d++) v[d] = chunk[i * dim + d]! - unit[c * dim + d]!;
      quantiser.encode(v, 0, codes, slotOfRow[row]! * quantiser.codeSize);
      if ((i & 255) === 255) await scheduler.maybeYield();
    }
    options.onProgress?.(r0 + rows, count);
  }
  return codes;
}

/** Encodes every row of `file` in `options.workers` threads; codes in slot order (shared memory). */
async function encodeInWorkers(
  file: VectorFile,
  quantiser: Quantiser,
  unit: Float32Array,
  cellOfRow: Int32Array,
  slotOfRow: Int32Array,
  options: QuantiseOptions,
): Promise<Uint8Array> {
  const count = file.count;
  const shareInt = (a: Int32Array): SharedArrayBuffer => {
    const sab = new SharedArrayBuffer(a.byteLength);
    new Int32Array(sab).set(a);
    return sab;
  };
  const codes = new SharedArrayBuffer(count * quantiser.codeSize);
  const cells = shareInt(cellOfRow);
  const slots = shareInt(slotOfRow);
  const pool = new IvfWorkerPool(Math.floor(options.workers!));
  try {
    const chunk = Math.max(4096, Math.ceil(count / (8 * pool.size)));
    let done = 0;
    const tasks: Promise<unknown>[] = [];
    for (let from = 0; from < count; from += chunk) {
      const to = Math.min(count, from + chunk);
      tasks.push(
        pool
          .run({ type: 'encode', fd: file.descriptor, dim: file.dim, from, to, centroids: unit, cellOfRow: cells, slotOfRow: slots, quantiser: { kind: quantiser.kind, params: quantiser.toParams() }, codes })
          .then(() => {
            done += to - from;
            options.onProgress?.(done, count);
          }),
      );
    }
    await Promise.all(tasks);
  } finally {
    await pool.close();
  }
  return new Uint8Array(codes);
}

/** Parses a vector-mode setting (`float`, `int8`, `pq`); undefined/empty = `fallback`. @throws IvfInputError otherwise */
export function parseVectorMode(value: string | undefined, fallback: VectorMode = 'float'): VectorMode {
  if (value === undefined || value.trim() === '') return fallback;
  const v = value.trim().toLowerCase();
  if (v === 'float' || v === 'int8' || v === 'pq') return v;
  throw new IvfInputError(`vector mode must be float, int8 or pq, got ${value}`);
}
