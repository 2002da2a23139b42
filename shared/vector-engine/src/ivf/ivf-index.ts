import { AvailabilityMask } from './availability-mask';
import { CENTROID_GROUPS_VISIT_FACTOR, CentroidGroups } from './centroid-groups';
import { CentroidScan } from './centroid-scan';
import type { CooperativeScheduler } from './cooperative';
import { IvfCorruptStoreError, IvfInputError } from './errors';
import { IdTable } from './id-table';
import { RestoreChecks, type RestoreInput } from './restore-checks';
import type { Quantiser, ScalarQuantiser } from './quantiser';
import { Neighbour, TopK } from './top-k';
import type { VectorFile } from './vector-file';
import { ARENA_BLOCK_ROWS, type CodeArena, quantiseTableInt16 } from '../simd/kernels';
import { dot, normaliseInto } from '@polyphony/vectors';

export type { Neighbour } from './top-k';
export type { RestoreInput, StoredCell } from './restore-checks';

/**
 * Default number of cells probed per query. Tuned with `src/bench/ivf-1m.ts` on a 1M-item, 200-d
 * clustered mixture (nlist 8000): see services/index/src/domain/ivf/README.md for the recall/latency table.
 */
export const DEFAULT_NPROBE = 64;

/** Options of `IvfIndex.search` / `exactSearch`. */
export interface SearchOptions {
  /** Number of neighbours wanted, integer >= 1. Fewer are returned only when fewer rows qualify. */
  k: number;
  /** Cells to probe (IVF only); default: the index's `defaultNprobe`. Clamped to [1, nlist]. */
  nprobe?: number;
  /** Availability mask of the generation being queried; rows not set are never scored nor returned. */
  mask?: AvailabilityMask;
  /** Rows never returned (e.g. the seed song). */
  exclude?: Iterable<number>;
  /** When given, filled with what the query did (for benchmarks, tests and metrics). */
  stats?: SearchStats;
  /**
   * Quantised modes only: size of the short list re-ranked with exact float vectors read from disk.
   * Default `max(QUANTISED_RERANK_MIN[mode], QUANTISED_RERANK_FACTOR * (k + excluded))`.
   */
  rerank?: number;
}

/** How a generation holds its vectors: `float` = float32 in memory; `int8` / `pq` = codes in memory, floats on disk. */
export type VectorMode = 'float' | 'int8' | 'pq';

/**
 * Smallest re-ranking short list per quantised mode (src/bench/ivf-modes.ts at 1M, README table): int8
 * keeps recall@10 0.9975 from a list of 20, so 50 leaves margin; PQ (m = 25) needs 200 for >= 0.95 (0.984;
 * 100 gives 0.946).
 */
export const QUANTISED_RERANK_MIN = { int8: 50, pq: 200 } as const;
/**
 * Short list = this many candidates per wanted result when that is more than the minimum. int8 distances
 * are within ~1e-3 of the exact ones, so a 25% margin keeps recall@199 (src/bench/ivf-modes.ts); every
 * re-ranked row is one positional read (3,192 reads made n=199 cost ~10 ms with the former factor 4).
 */
export const QUANTISED_RERANK_FACTOR = { int8: 1.25, pq: 4 } as const;

/** Where a quantised generation's short list is re-ranked from when its float copy is not in memory (see `QuantisedParts.rerank`). */
export type RerankSource = 'file' | 'codes';

/** Parses a re-rank source setting (`file`, `codes`); undefined/empty = `fallback`. @throws IvfInputError otherwise */
export function parseRerankSource(value: string | undefined, fallback: RerankSource): RerankSource {
  if (value === undefined || value.trim() === '') return fallback;
  const v = value.trim().toLowerCase();
  if (v === 'file' || v === 'codes') return v;
  throw new IvfInputError(`re-rank source must be file or codes, got ${value}`);
}

/** The quantised part of a generation (see `quantised-store.ts`). */
export interface QuantisedParts {
  quantiser: Quantiser;
  /** `size * quantiser.codeSize` bytes in slot (cell) order: the code of the residual `x - centroid(cell)`. */
  codes: Uint8Array;
  /** The exact unit vectors in row order, on disk. */
  file: VectorFile;
  /**
   * Where the short list's distances and a `searchByRow` seed come from when the float copy is not resident
   * (`file.resident` undefined, i.e. larger generations): `file` (default) = exact float rows read from the vector
   * file; `codes` (int8 only) = the int8 codes already in memory: distance `1 - cos(q, x')` to the reconstruction
   * `x' = centroid + min + step * code` (error at most step/2 per component), and the seed decoded the same way:
   * no file read on the query path. A resident copy always wins.
   */
  rerank?: RerankSource;
  /**
   * int8 only: `codes` live in this kernel memory and are scored by the WebAssembly SIMD kernel (u8 codes x
   * int16 query table, exact i32 sums; `simd/kernels.ts`); absent = scored by `quantiser.scoreRange` in JavaScript.
   */
  arena?: CodeArena;
}

/** What one query did. */
export interface SearchStats {
  /** 'ivf' = cell probing; 'exact' = brute-force scan (exactSearch, or the sparse-mask fallback). */
  mode: 'ivf' | 'exact';
  /** Cells whose members were scanned. */
  cellsProbed: number;
  /** Rows whose distance to the query was computed (after the mask). */
  distanceComputations: number;
  /**
   * Centroid distances computed, approximate and exact (nlist for an IVF query scoring every centroid; with the
   * centroid scan `nlist + max(32, 2 * probe)`, plus the rest when adaptive probing needs them; 0 for an exact scan).
   */
  centroidComputations: number;
  /** Quantised modes: exact float vectors read from disk to re-rank the short list. */
  reranked?: number;
}

/** Everything an index generation consists of; produced by the build or by `IvfIndex.restore`. */
export interface IvfIndexParts {
  dim: number;
  nlist: number;
  generation: number;
  defaultNprobe: number;
  /** `nlist * dim` unit centroids (float32). */
  centroids: Float32Array;
  /** `nlist + 1` slot offsets: cell `c` holds slots `[cellOffsets[c], cellOffsets[c+1])`. */
  cellOffsets: Int32Array;
  /** `size * dim` unit vectors in slot (cell) order (empty in a quantised generation). */
  vectors: Float32Array;
  /** Present in the int8 / pq modes: codes in memory, exact vectors on disk. */
  quantised?: QuantisedParts;
  /** Row stored in each slot. */
  rowOfSlot: Int32Array;
  /** Slot holding each row (inverse of rowOfSlot). */
  slotOfRow: Int32Array;
  ids: IdTable;
  /**
   * Coarse quantiser over the centroids (issue 35): fitted by the constructor when undefined (a `CentroidScan`, see
   * `fitCoarseQuantiser`; `parts()` hands it on); null = score every centroid exactly on every query. Benchmarks
   * and tests pass a `CentroidGroups` (the two-level quantiser it replaced) or null to compare.
   */
  groups?: CoarseQuantiser | null;
}

/** The coarse quantisers an `IvfIndex` can rank its cells with (see `IvfIndexParts.groups`). */
export type CoarseQuantiser = CentroidScan | CentroidGroups;

/**
 * The default coarse quantiser of a generation: the int8 centroid scan with exact re-scoring (`CentroidScan`) from
 * CENTROID_SCAN_MIN_NLIST (512) cells on, none below (every centroid scored exactly: the answers of small
 * generations, e.g. the golden suite's, are unchanged). Issue 35: the centroid groups lost recall on the catalogue.
 */
export function fitCoarseQuantiser(centroids: Float32Array, nlist: number, dim: number): CoarseQuantiser | undefined {
  return CentroidScan.fit(centroids, nlist, dim);
}

/**
 * One immutable generation of the shared similarity index: IVF-Flat (inverted file with exact float32
 * vectors, FAISS `IndexIVFFlat` terminology) over unit vectors with cosine distance `1 - dot`.
 *
 * Items are addressed by a dense row number in [0, size) plus the canonical id table (`idOf`, `rowOf`).
 * Rows are only meaningful within one generation: masks and results must be built and read against the
 * same instance (take one snapshot from `LiveIvfIndex.current()` per request).
 *
 * Memory: `size * dim * 4` bytes of vectors (800 MB at 1M x 200-d) + `nlist * dim * 4` centroids +
 * 8 bytes per row of slot maps + the id table (~70 bytes per `fp_` id).
 *
 * Query algorithm (`search`):
 *  1. normalise the query; rank the centroids by dot product: all of them exactly (nlist * dim multiply-adds),
 *     or from nlist 512 on with the coarse quantiser `CentroidScan` (issue 35): every centroid on its 8-bit code
 *     (int8 SIMD kernel), the best max(32, 2 * probe) of those exactly, the rest scored exactly only if adaptive
 *     probing needs them (`CentroidGroups`, the two-level quantiser it replaced, can still be passed in `parts`);
 *  2. sparse-mask fallback: when the mask leaves at most `nlist + size * nprobe / nlist` rows (what an
 *     unmasked query would score anyway), scan exactly those rows instead: the cost is no higher and the
 *     answer is exact, so a server holding 1% of the catalogue still gets its true k nearest songs (the
 *     available vectors are copied once into a contiguous block cached with the mask, see `scanMask`);
 *  3. otherwise probe the best `nprobe / density` cells (density = available / size, capped at nlist), so
 *     the expected number of available candidates matches an unmasked query; the mask is tested before
 *     any distance is computed (spec "Shared index" 1);
 *  4. adaptive probing: while fewer than k (+ excluded) available candidates were seen, probe the next
 *     cells in centroid order;
 *  5. keep the k best by exact float32 distance, drop excluded rows.
 * Cost: O(nlist * dim + candidates * dim + candidates * log k).
 */
export class IvfIndex {
  readonly dim: number;
  readonly nlist: number;
  readonly size: number;
  readonly generation: number;
  readonly defaultNprobe: number;
  private readonly centroids: Float32Array;
  private readonly cellOffsets: Int32Array;
  private readonly vectors: Float32Array;
  private readonly rowOfSlot: Int32Array;
  private readonly slotOfRow: Int32Array;
  private readonly ids: IdTable;
  private readonly centroidScores: Float64Array;
  private readonly groups?: CoarseQuantiser;
  /** Centroid dot products of the last query (stats). */
  private centroidWork = 0;
  /** float | int8 | pq. */
  readonly mode: VectorMode;
  private readonly q?: QuantisedParts;
  /** Scratch of the approximate scores of one cell (quantised modes; searches are synchronous). */
  private readonly cellScores: Float64Array;
  private readonly queryTable: Float32Array;
  /** Scale of the int16 table in the arena for the current query (kernel scores / scale = table scores). */
  private tableScale = 1;
  private readonly scratchVector: Float32Array;
  /** Slot-ordered codes of the available rows of sparse masks (quantised modes), dropped with the mask. */
  private readonly compactCodes = new WeakMap<AvailabilityMask, { rows: Int32Array; cells: Int32Array; codes: Uint8Array }>();
  /** Slot-ordered copies of the available rows of sparse masks (see `scanMask`), dropped with the mask. */
  private readonly compactMasks = new WeakMap<AvailabilityMask, { rows: Int32Array; vectors: Float32Array }>();

  /** Wraps finished parts (see `buildIvfIndex` / `IvfIndex.restore`); checks their shapes. */
  constructor(parts: IvfIndexParts) {
    const n = parts.rowOfSlot.length;
    if (parts.centroids.length !== parts.nlist * parts.dim) throw new IvfCorruptStoreError('centroid matrix does not match nlist * dim');
    if (parts.cellOffsets.length !== parts.nlist + 1 || parts.cellOffsets[parts.nlist] !== n) throw new IvfCorruptStoreError('cell offsets do not cover every row');
    if ((!parts.quantised && parts.vectors.length < n * parts.dim) || parts.slotOfRow.length !== n || parts.ids.size !== n) throw new IvfCorruptStoreError('index arrays disagree on the number of rows');
    if (parts.quantised && (parts.quantised.codes.length !== n * parts.quantised.quantiser.codeSize || parts.quantised.file.count !== n)) throw new IvfCorruptStoreError('quantised codes or vector file do not cover every row');
    this.dim = parts.dim;
    this.nlist = parts.nlist;
    this.size = n;
    this.generation = parts.generation;
    this.defaultNprobe = parts.defaultNprobe;
    this.centroids = parts.centroids;
    this.cellOffsets = parts.cellOffsets;
    this.vectors = parts.quantised ? new Float32Array(0) : parts.vectors.length === n * parts.dim ? parts.vectors : parts.vectors.subarray(0, n * parts.dim);
    this.q = parts.quantised;
    this.mode = parts.quantised ? parts.quantised.quantiser.kind : 'float';
    let largest = 0;
    for (let c = 0; c < parts.nlist; c++) largest = Math.max(largest, parts.cellOffsets[c + 1]! - parts.cellOffsets[c]!);
    this.cellScores = new Float64Array(parts.quantised ? largest : 0);
    this.queryTable = new Float32Array(parts.quantised ? parts.quantised.quantiser.tableSize : 0);
    this.scratchVector = new Float32Array(parts.dim);
    this.rowOfSlot = parts.rowOfSlot;
    this.slotOfRow = parts.slotOfRow;
    this.ids = parts.ids;
    this.centroidScores = new Float64Array(parts.nlist);
    this.groups = parts.groups === null ? undefined : (parts.groups ?? fitCoarseQuantiser(parts.centroids, parts.nlist, parts.dim));
  }

  /**
   * Rebuilds a generation from what a build emitted (`onTrained` centroids + every `onCell` payload),
   * without re-clustering. Cells may arrive in any order; rows keep their stored numbers.
   * Memory: the final index plus `size` bytes; vectors are placed by row, then permuted in place into cell order.
   * @throws IvfCorruptStoreError when a row is missing or repeated, a cell id is out of range, or sizes disagree
   * @throws IvfDuplicateIdError when two rows carry the same canonical id
   */
  static async restore(input: RestoreInput): Promise<IvfIndex> {
    const checks = new RestoreChecks(input);
    const { dim, count, nlist, cellOfRow, ids } = checks;
    const vectors = new Float32Array(count * dim);
    for await (const cell of input.cells) {
      checks.cell(cell);
      for (let i = 0; i < cell.rowIds.length; i++) ids.set(checks.row(cell, i, vectors, cell.rowIds[i]! * dim), cell.ids[i]!);
    }
    checks.finish();
    const layout = await arrangeByCell(vectors, count, dim, cellOfRow, nlist);
    return new IvfIndex({
      dim,
      nlist,
      generation: input.generation ?? 0,
      defaultNprobe: input.defaultNprobe ?? DEFAULT_NPROBE,
      centroids: checks.unitCentroids,
      vectors,
      ...layout,
      ids: ids.finish(count),
    });
  }

  /**
   * The parts of this generation (shared, not copied) - for `quantiseIndex`, which re-packs a float
   * generation into a quantised one. @internal
   */
  parts(): IvfIndexParts {
    return {
      dim: this.dim,
      nlist: this.nlist,
      generation: this.generation,
      defaultNprobe: this.defaultNprobe,
      centroids: this.centroids,
      cellOffsets: this.cellOffsets,
      vectors: this.vectors,
      rowOfSlot: this.rowOfSlot,
      slotOfRow: this.slotOfRow,
      ids: this.ids,
      ...(this.q ? { quantised: this.q } : {}),
      groups: this.groups ?? null,
    };
  }

  /**
   * Bytes held in memory by each part of this generation (issue 19 memory accounting): `vectors` (float
   * mode) or `codes` (quantised; the whole kernel arena when the SIMD kernels hold them), `centroids`
   * (unit centroids, coarse groups and per-query scratch), `layout` (cell offsets and the two slot maps),
   * `ids` (canonical id table). The exact vectors of a quantised generation are on disk and not counted, except
   * their resident copy when the generation is small enough to keep one (`VectorFile`), counted in `vectors`.
   */
  memory(): { vectors: number; codes: number; centroids: number; layout: number; ids: number } {
    const q = this.q;
    return {
      vectors: this.vectors.byteLength + (q ? q.file.residentBytes : 0),
      codes: q ? (q.arena ? q.arena.km.capacity : q.codes.byteLength) : 0,
      centroids: this.centroids.byteLength + this.centroidScores.byteLength + this.cellScores.byteLength + this.queryTable.byteLength + (this.groups?.bytes ?? 0),
      layout: this.cellOffsets.byteLength + this.rowOfSlot.byteLength + this.slotOfRow.byteLength,
      ids: this.ids.bytes,
    };
  }

  /** Bytes held in memory by the vectors or codes of this generation (not the id table). */
  get vectorBytes(): number {
    return this.q ? this.q.codes.byteLength : this.vectors.byteLength;
  }

  /** Canonical id of a row. @throws IvfInputError for a row outside [0, size). */
  idOf(row: number): string {
    return this.ids.idOf(row);
  }

  /** Row of a canonical id in this generation, or -1 when absent. */
  rowOf(id: string): number {
    return this.ids.rowOf(id);
  }

  /** Availability mask of this generation from canonical ids; ids not in the index are ignored. O(#ids). */
  maskFromIds(ids: Iterable<string>): AvailabilityMask {
    const rows: number[] = [];
    for (const id of ids) {
      const row = this.ids.rowOf(id);
      if (row >= 0) rows.push(row);
    }
    return AvailabilityMask.fromRows(this.size, rows);
  }

  /** A copy of the stored unit vector of `row` (dim floats). @throws IvfInputError for a bad row. */
  getVector(row: number): Float32Array {
    this.checkRow(row);
    if (this.q) {
      const out = new Float32Array(this.dim);
      this.q.file.readRow(row, out);
      return out;
    }
    const o = this.slotOfRow[row]! * this.dim;
    return this.vectors.slice(o, o + this.dim);
  }

  /**
   * True when queries take their seed vectors and re-rank distances from the int8 codes (`QuantisedParts.rerank`
   * `codes` and no resident float copy): no file read on the query path, distances within the int8 error.
   */
  get codesServeQueries(): boolean {
    const q = this.q;
    return q !== undefined && q.rerank === 'codes' && q.quantiser.kind === 'int8' && q.file.resident === undefined;
  }

  /** The int8 reconstruction `centroid + min + step * code` of `row` (not normalised; dim floats). */
  private decodedVector(row: number): Float32Array {
    this.checkRow(row);
    const q = this.q!;
    const dim = this.dim;
    const out = new Float32Array(dim);
    const slot = this.slotOfRow[row]!;
    q.quantiser.decode(q.codes, slot * dim, out, 0);
    const c = this.cellOfSlot(slot) * dim;
    for (let d = 0; d < dim; d++) out[d] = out[d]! + this.centroids[c + d]!;
    return out;
  }

  /** Cell holding `row`. O(log nlist). @throws IvfInputError for a bad row. */
  cellOf(row: number): number {
    this.checkRow(row);
    return this.cellOfSlot(this.slotOfRow[row]!);
  }

  /** Cell holding slot `slot`: binary search of the cell offsets, O(log nlist). */
  private cellOfSlot(slot: number): number {
    let lo = 0;
    let hi = this.nlist - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.cellOffsets[mid]! <= slot) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Rows of cell `cellId` (a copy). */
  cellRows(cellId: number): Int32Array {
    if (!Number.isInteger(cellId) || cellId < 0 || cellId >= this.nlist) throw new IvfInputError(`cell ${cellId} outside [0, ${this.nlist})`);
    return this.rowOfSlot.slice(this.cellOffsets[cellId]!, this.cellOffsets[cellId + 1]!);
  }

  /** Unit centroid of a cell (a copy, dim floats). */
  centroid(cellId: number): Float32Array {
    if (!Number.isInteger(cellId) || cellId < 0 || cellId >= this.nlist) throw new IvfInputError(`cell ${cellId} outside [0, ${this.nlist})`);
    return this.centroids.slice(cellId * this.dim, (cellId + 1) * this.dim);
  }

  /** Number of rows in every cell (length nlist). */
  cellSizes(): Int32Array {
    const out = new Int32Array(this.nlist);
    for (let c = 0; c < this.nlist; c++) out[c] = this.cellOffsets[c + 1]! - this.cellOffsets[c]!;
    return out;
  }

  /**
   * Approximate k nearest rows to `query` by cosine distance (algorithm in the class comment).
   * @param query dim floats, any non-zero finite norm (normalised internally)
   * @returns at most k neighbours, ascending distance (ties: lower row first)
   * @throws IvfInputError on a wrong dimension, zero or non-finite query, bad k or a mask of another size
   */
  search(query: Float32Array, options: SearchOptions): Neighbour[] {
    const q = this.prepareQuery(query);
    const { k, mask } = this.checkOptions(options);
    const exclude = toSet(options.exclude);
    const stats = options.stats;
    const available = mask ? mask.count : this.size;
    if (available === 0 || this.nlist === 0) return finish(new TopK(0), exclude, k, stats, 'ivf', 0, 0, 0);
    const nprobe = clampInt(options.nprobe ?? this.defaultNprobe, 1, this.nlist);
    if (mask && available <= this.nlist + Math.ceil((this.size * nprobe) / this.nlist)) {
      return this.q ? this.scanMaskQuantised(this.q, q, mask, k, exclude, stats, options.rerank) : this.scanMask(q, mask, k, exclude, stats);
    }
    if (this.q) return this.searchQuantised(this.q, q, k, nprobe, mask, exclude, stats, options.rerank);
    const want = k + exclude.size;
    const heap = new TopK(Math.min(want, this.size));
    const scores = this.centroidScores;
    const probe = mask ? clampInt(Math.ceil((nprobe * this.size) / available), 1, this.nlist) : nprobe;
    const partial = this.scoreCells(q, probe);
    const order = topCells(scores, probe);
    let candidates = 0;
    let cellsProbed = 0;
    for (let i = 0; i < order.length; i++) {
      candidates += this.scanCell(order[i]!, q, mask, heap);
      cellsProbed++;
    }
    if (candidates < want && probe < this.nlist) {
      // Adaptive probing: continue in centroid order until enough available candidates were seen.
      if (partial) this.scoreRemainingCells(q);
      const rest = remainingCells(scores, order);
      for (let i = 0; i < rest.length && candidates < want; i++) {
        candidates += this.scanCell(rest[i]!, q, mask, heap);
        cellsProbed++;
      }
    }
    return finish(heap, exclude, k, stats, 'ivf', cellsProbed, candidates, this.centroidWork);
  }

  /**
   * Like `search` with the stored vector of `row` as the query and `row` itself excluded
   * (the similar-songs case). @throws IvfInputError for a bad row.
   */
  searchByRow(row: number, options: SearchOptions): Neighbour[] {
    const exclude = toSet(options.exclude);
    exclude.add(row);
    return this.search(this.codesServeQueries ? this.decodedVector(row) : this.getVector(row), { ...options, exclude });
  }

  /**
   * Exact k nearest rows by brute force over every (available) row: the recall reference for tests and
   * benchmarks. Same arguments and result shape as `search` (nprobe is ignored). O(size * dim).
   */
  exactSearch(query: Float32Array, options: SearchOptions): Neighbour[] {
    const q = this.prepareQuery(query);
    const { k, mask } = this.checkOptions(options);
    const exclude = toSet(options.exclude);
    if (mask && !this.q) return this.scanMask(q, mask, k, exclude, options.stats);
    const heap = new TopK(Math.min(k + exclude.size, this.size));
    const dim = this.dim;
    if (this.q) {
      // Exact scan of the disk copy, 4096 rows per read.
      const chunk = new Float32Array(4096 * dim);
      let scanned = 0;
      for (let r0 = 0; r0 < this.size; r0 += 4096) {
        const rows = Math.min(4096, this.size - r0);
        this.q.file.readRows(r0, rows, chunk);
        for (let i = 0; i < rows; i++) {
          const row = r0 + i;
          if (mask && !mask.has(row)) continue;
          scanned++;
          heap.push(row, 1 - dot(chunk, i * dim, q, 0, dim));
        }
      }
      return finish(heap, exclude, k, options.stats, 'exact', 0, scanned, 0);
    }
    for (let s = 0; s < this.size; s++) heap.push(this.rowOfSlot[s]!, 1 - dot(this.vectors, s * dim, q, 0, dim));
    return finish(heap, exclude, k, options.stats, 'exact', 0, this.size, 0);
  }

  /** Short-list size of a quantised query. */
  private shortList(want: number, rerank: number | undefined): number {
    const m = this.mode === 'pq' ? 'pq' : 'int8';
    const r = rerank ?? Math.max(QUANTISED_RERANK_MIN[m], Math.ceil(QUANTISED_RERANK_FACTOR[m] * want));
    return Math.min(this.size, Math.max(want, Math.floor(r)));
  }

  /**
   * IVF search over quantised codes: same probing as the float path, candidates ranked by their
   * approximate dot product (ADC with a per-query table), then the best `shortList` re-ranked by the exact
   * float distance read from the vector file.
   */
  private searchQuantised(
    qp: QuantisedParts,
    q: Float32Array,
    k: number,
    nprobe: number,
    mask: AvailabilityMask | undefined,
    exclude: Set<number>,
    stats: SearchStats | undefined,
    rerank: number | undefined,
  ): Neighbour[] {
    const want = k + exclude.size;
    const approx = new TopK(this.shortList(want, rerank));
    const scores = this.centroidScores;
    const constant = this.prepareTable(qp, q);
    const available = mask ? mask.count : this.size;
    const probe = mask ? clampInt(Math.ceil((nprobe * this.size) / available), 1, this.nlist) : nprobe;
    const partial = this.scoreCells(q, probe);
    const order = topCells(scores, probe);
    let candidates = 0;
    let cellsProbed = 0;
    for (let i = 0; i < order.length; i++) {
      candidates += this.scanCellCodes(qp, order[i]!, scores[order[i]!]! + constant, mask, approx);
      cellsProbed++;
    }
    if (candidates < want && probe < this.nlist) {
      if (partial) this.scoreRemainingCells(q);
      const rest = remainingCells(scores, order);
      for (let i = 0; i < rest.length && candidates < want; i++) {
        candidates += this.scanCellCodes(qp, rest[i]!, scores[rest[i]!]! + constant, mask, approx);
        cellsProbed++;
      }
    }
    const exact = this.rerankExact(qp, q, approx, want);
    if (stats) stats.reranked = approx.size;
    return finish(exact, exclude, k, stats, 'ivf', cellsProbed, candidates, this.centroidWork);
  }

  /**
   * Fills the per-query ADC table (`queryTable`) and, with a kernel arena, its int16 copy in the arena
   * (`tableScale`). @returns the constant term of every approximate dot product
   */
  private prepareTable(qp: QuantisedParts, q: Float32Array): number {
    const constant = qp.quantiser.prepare(q, this.queryTable);
    if (qp.arena) this.tableScale = quantiseTableInt16(this.queryTable, this.dim, qp.arena.km.i16, qp.arena.table >> 1);
    return constant;
  }

  /**
   * Centroid scores of unit query `q` into `centroidScores` for a query probing `probe` cells: every
   * centroid exactly, or with the centroid scan (when `max(32, 2 * probe)` is under half of nlist) the exact
   * scores of the best centroids by 8-bit score, or with centroid groups (when `16 * probe` is under half of
   * nlist) only those of the best groups; the others left at -Infinity. @returns whether the scores are partial
   */
  private scoreCells(q: Float32Array, probe: number): boolean {
    const scores = this.centroidScores;
    const coarse = this.groups;
    if (coarse instanceof CentroidScan) {
      if (coarse.rescore(probe) * 2 < this.nlist) {
        this.centroidWork = coarse.scoreBest(q, this.centroids, scores, probe);
        return true;
      }
    } else if (coarse) {
      const budget = probe * CENTROID_GROUPS_VISIT_FACTOR;
      if (budget * 2 < this.nlist) {
        this.centroidWork = coarse.scoreBest(q, this.centroids, scores, budget);
        return true;
      }
    }
    this.scoreAllCells(q);
    this.centroidWork = this.nlist;
    return false;
  }

  /**
   * Score of every centroid for unit query `q` into `centroidScores` (the float64 SIMD kernel of the coarse
   * quantiser when there is one: same float64 values as `dot`).
   */
  private scoreAllCells(q: Float32Array): void {
    const scores = this.centroidScores;
    if (this.groups) {
      this.groups.scoreAll(q, this.centroids, scores);
      return;
    }
    const dim = this.dim;
    for (let c = 0; c < this.nlist; c++) scores[c] = dot(this.centroids, c * dim, q, 0, dim);
  }

  /** Scores the centroids `scoreCells` left out (adaptive probing needs the full order); only after a partial `scoreCells` of the same query. */
  private scoreRemainingCells(q: Float32Array): void {
    this.centroidWork += this.groups!.scoreRemaining(q, this.centroids, this.centroidScores);
  }

  /** Approximate scores of the available members of one cell into `heap` (distance = 1 - approximate dot). */
  private scanCellCodes(qp: QuantisedParts, cell: number, base: number, mask: AvailabilityMask | undefined, heap: TopK): number {
    const start = this.cellOffsets[cell]!;
    const count = this.cellOffsets[cell + 1]! - start;
    if (count === 0) return 0;
    const out = this.cellScores;
    const arena = qp.arena;
    const rowOfSlot = this.rowOfSlot;
    if (arena) {
      // WebAssembly SIMD: exact integer sums of codes x int16 table, scaled back to the float table's units.
      const dim = this.dim;
      arena.km.dotU8I16(arena.codes + start * dim, count, dim, arena.table, arena.out);
      const i32 = arena.km.i32;
      const ob = arena.out >> 2;
      const inv = 1 / this.tableScale;
      // One pass over the kernel's sums (the same float64 distances as when the products were stored in
      // `cellScores` first); a candidate above the heap's threshold cannot enter (TopK.push would reject it),
      // so it is skipped before the call (a tie still goes in: the lower row wins).
      let n = 0;
      let threshold = heap.threshold;
      for (let i = 0; i < count; i++) {
        const row = rowOfSlot[start + i]!;
        if (mask && ((mask.wordAt(row >>> 5) >>> (row & 31)) & 1) === 0) continue;
        n++;
        const d = 1 - (base + i32[ob + i]! * inv);
        if (d > threshold) continue;
        heap.push(row, d);
        threshold = heap.threshold;
      }
      return n;
    } else {
      qp.quantiser.scoreRange(qp.codes, start, count, this.queryTable, out);
    }
    if (!mask) {
      for (let i = 0; i < count; i++) heap.push(rowOfSlot[start + i]!, 1 - (base + out[i]!));
      return count;
    }
    let n = 0;
    for (let i = 0; i < count; i++) {
      const row = rowOfSlot[start + i]!;
      if (((mask.wordAt(row >>> 5) >>> (row & 31)) & 1) === 0) continue;
      n++;
      heap.push(row, 1 - (base + out[i]!));
    }
    return n;
  }

  /**
   * Exact distances of the short list (vectors read in ascending row order: sequential on disk); the best `want`.
   * With a kernel arena (int8) the rows are copied into its scratch block and scored by the SIMD kernel `dotsF64`
   * (bit-identical to `dot`, so the same distances; issue 19: the JavaScript dot products were ~20% of a query's
   * CPU at nprobe 32), a block of rows per call.
   */
  private rerankExact(qp: QuantisedParts, q: Float32Array, approx: TopK, want: number): TopK {
    const rows = approx.rowsHeld();
    rows.sort();
    const exact = new TopK(Math.min(want, rows.length));
    const dim = this.dim;
    if (this.codesServeQueries) {
      // int8 codes in memory: the cosine between the unit query and each candidate's reconstruction
      // x' = centroid + min + step * code, normalised by |x'| (float64 sums). Without that normalisation the
      // reconstruction's norm error ranks the list (recall@10 0.9665 at 1M against 0.9965 from the exact floats;
      // with it 0.995 against 0.9955 for exact floats on a 60k mixture: see README "One default mode at 1M").
      const codes = qp.codes;
      const sq = qp.quantiser as ScalarQuantiser;
      const min = sq.min;
      const step = sq.step;
      const centroids = this.centroids;
      for (let i = 0; i < rows.length; i++) {
        const slot = this.slotOfRow[rows[i]!]!;
        const o = slot * dim;
        const c = this.cellOfSlot(slot) * dim;
        let dq = 0;
        let n2 = 0;
        for (let d = 0; d < dim; d++) {
          const v = centroids[c + d]! + min[d]! + step[d]! * codes[o + d]!;
          dq += q[d]! * v;
          n2 += v * v;
        }
        exact.push(rows[i]!, n2 > 0 ? 1 - dq / Math.sqrt(n2) : 1);
      }
      return exact;
    }
    const arena = qp.arena;
    if (arena && rows.length > 0) {
      // Scratch block: [float64 scores of `per` rows][query][`per` rows of dim floats], 16-byte aligned parts.
      const km = arena.km;
      const bytes = ARENA_BLOCK_ROWS * dim; // the block's size: ARENA_BLOCK_ROWS int8 codes (createCodeArena)
      const per = Math.max(1, Math.floor((bytes - dim * 4 - 32) / (dim * 4 + 8)));
      const out = arena.block;
      const qPtr = out + Math.ceil((per * 8) / 16) * 16;
      const vPtr = qPtr + Math.ceil((dim * 4) / 16) * 16;
      km.putF32(qPtr, q, 0, dim);
      const f32 = km.f32;
      const f64 = km.f64;
      for (let first = 0; first < rows.length; first += per) {
        const count = Math.min(per, rows.length - first);
        for (let i = 0; i < count; i++) qp.file.readRow(rows[first + i]!, f32, (vPtr >> 2) + i * dim);
        km.dotsF64(qPtr, vPtr, count, dim, out);
        const ob = out >> 3;
        for (let i = 0; i < count; i++) exact.push(rows[first + i]!, 1 - f64[ob + i]!);
      }
      return exact;
    }
    const resident = qp.file.resident;
    if (resident) {
      // The float copy is in memory (small generation): the same float32 values, no read call per row.
      for (let i = 0; i < rows.length; i++) exact.push(rows[i]!, 1 - dot(resident, rows[i]! * dim, q, 0, dim));
      return exact;
    }
    const v = this.scratchVector;
    for (let i = 0; i < rows.length; i++) {
      qp.file.readRow(rows[i]!, v);
      exact.push(rows[i]!, 1 - dot(v, 0, q, 0, dim));
    }
    return exact;
  }

  /**
   * Sparse-mask fallback of the quantised modes: the codes of the available rows are copied once into a
   * contiguous block cached with the mask (`codeSize` bytes per row: 2 MB for a 1% mask at 1M x 200-d int8),
   * every one of them is scored approximately, and the short list is re-ranked exactly.
   */
  private scanMaskQuantised(
    qp: QuantisedParts,
    q: Float32Array,
    mask: AvailabilityMask,
    k: number,
    exclude: Set<number>,
    stats: SearchStats | undefined,
    rerank: number | undefined,
  ): Neighbour[] {
    const want = k + exclude.size;
    const scores = this.centroidScores;
    this.scoreAllCells(q);
    const constant = this.prepareTable(qp, q);
    const compact = this.compactCodesOf(qp, mask);
    const approx = new TopK(this.shortList(want, rerank));
    const arena = qp.arena;
    const out = arena ? undefined : new Float64Array(ARENA_BLOCK_ROWS);
    const cs = qp.quantiser.codeSize;
    for (let first = 0; first < compact.rows.length; first += ARENA_BLOCK_ROWS) {
      const count = Math.min(ARENA_BLOCK_ROWS, compact.rows.length - first);
      if (arena) {
        // Copy the block of compact codes into the arena, score it with the SIMD kernel.
        arena.km.u8.set(compact.codes.subarray(first * cs, (first + count) * cs), arena.block);
        arena.km.dotU8I16(arena.block, count, this.dim, arena.table, arena.out);
        const i32 = arena.km.i32;
        const ob = arena.out >> 2;
        const inv = 1 / this.tableScale;
        let threshold = approx.threshold;
        for (let i = 0; i < count; i++) {
          const d = 1 - (scores[compact.cells[first + i]!]! + constant + i32[ob + i]! * inv);
          // Above the threshold TopK.push would reject the pair: skip the call (ties still go in).
          if (d > threshold) continue;
          approx.push(compact.rows[first + i]!, d);
          threshold = approx.threshold;
        }
      } else {
        qp.quantiser.scoreRange(compact.codes, first, count, this.queryTable, out!);
        for (let i = 0; i < count; i++) approx.push(compact.rows[first + i]!, 1 - (scores[compact.cells[first + i]!]! + constant + out![i]!));
      }
    }
    const exact = this.rerankExact(qp, q, approx, want);
    if (stats) stats.reranked = approx.size;
    return finish(exact, exclude, k, stats, 'exact', 0, mask.count, this.nlist);
  }

  private compactCodesOf(qp: QuantisedParts, mask: AvailabilityMask): { rows: Int32Array; cells: Int32Array; codes: Uint8Array } {
    const cached = this.compactCodes.get(mask);
    if (cached) return cached;
    const cs = qp.quantiser.codeSize;
    const slots = new Int32Array(mask.count);
    let n = 0;
    mask.forEachRow((row) => {
      slots[n++] = this.slotOfRow[row]!;
    });
    slots.sort();
    const rows = new Int32Array(n);
    const cells = new Int32Array(n);
    const codes = new Uint8Array(n * cs);
    let cell = 0;
    for (let i = 0; i < n; i++) {
      const s = slots[i]!;
      while (this.cellOffsets[cell + 1]! <= s) cell++;
      rows[i] = this.rowOfSlot[s]!;
      cells[i] = cell;
      codes.set(qp.codes.subarray(s * cs, s * cs + cs), i * cs);
    }
    const compact = { rows, cells, codes };
    this.compactCodes.set(mask, compact);
    return compact;
  }

  /**
   * Exact scan of the available rows. Available rows of a sparse mask are scattered over the whole vector
   * matrix, and a scattered row costs ~1 us (cache and TLB misses) against ~0.15 us in sequence (measured at
   * 1M x 200-d). So for masks small enough for the sparse fallback at the default nprobe (at most
   * `nlist + size * defaultNprobe / nlist` rows, 12.8 MB of copies at 1M) the first query copies the
   * available vectors into one contiguous block cached with the mask object (WeakMap: it goes away with the
   * mask); later queries on the same mask scan it sequentially.
   */
  private scanMask(q: Float32Array, mask: AvailabilityMask, k: number, exclude: Set<number>, stats?: SearchStats): Neighbour[] {
    const heap = new TopK(Math.min(k + exclude.size, mask.count));
    const dim = this.dim;
    const compact = this.compactRows(mask);
    if (compact) {
      const { rows, vectors } = compact;
      for (let i = 0; i < rows.length; i++) heap.push(rows[i]!, 1 - dot(vectors, i * dim, q, 0, dim));
    } else {
      const vectors = this.vectors;
      const slotOfRow = this.slotOfRow;
      mask.forEachRow((row) => {
        heap.push(row, 1 - dot(vectors, slotOfRow[row]! * dim, q, 0, dim));
      });
    }
    return finish(heap, exclude, k, stats, 'exact', 0, mask.count, 0);
  }

  private compactRows(mask: AvailabilityMask): { rows: Int32Array; vectors: Float32Array } | undefined {
    const cached = this.compactMasks.get(mask);
    if (cached) return cached;
    if (this.nlist === 0 || mask.count > this.nlist + Math.ceil((this.size * this.defaultNprobe) / this.nlist)) return undefined;
    const dim = this.dim;
    const slots = new Int32Array(mask.count);
    let n = 0;
    mask.forEachRow((row) => {
      slots[n++] = this.slotOfRow[row]!;
    });
    slots.sort();
    const rows = new Int32Array(n);
    const vectors = new Float32Array(n * dim);
    for (let i = 0; i < n; i++) {
      const s = slots[i]!;
      rows[i] = this.rowOfSlot[s]!;
      vectors.set(this.vectors.subarray(s * dim, s * dim + dim), i * dim);
    }
    const compact = { rows, vectors };
    this.compactMasks.set(mask, compact);
    return compact;
  }

  /** Scores the available members of one cell into `heap`; returns how many were available. */
  private scanCell(cell: number, q: Float32Array, mask: AvailabilityMask | undefined, heap: TopK): number {
    const dim = this.dim;
    const start = this.cellOffsets[cell]!;
    const end = this.cellOffsets[cell + 1]!;
    const vectors = this.vectors;
    const rowOfSlot = this.rowOfSlot;
    if (!mask) {
      for (let s = start; s < end; s++) heap.push(rowOfSlot[s]!, 1 - dot(vectors, s * dim, q, 0, dim));
      return end - start;
    }
    let n = 0;
    for (let s = start; s < end; s++) {
      const row = rowOfSlot[s]!;
      if (((mask.wordAt(row >>> 5) >>> (row & 31)) & 1) === 0) continue;
      n++;
      heap.push(row, 1 - dot(vectors, s * dim, q, 0, dim));
    }
    return n;
  }

  private prepareQuery(query: Float32Array): Float32Array {
    if (!(query instanceof Float32Array) || query.length !== this.dim) throw new IvfInputError(`query must be a Float32Array of ${this.dim} values`);
    const q = new Float32Array(this.dim);
    const norm = normaliseInto(query, 0, q, 0, this.dim);
    if (!(norm > 0) || !Number.isFinite(norm)) throw new IvfInputError('query vector must be finite and non-zero');
    return q;
  }

  private checkOptions(options: SearchOptions): { k: number; mask?: AvailabilityMask } {
    const { k, mask } = options;
    if (!Number.isInteger(k) || k < 1) throw new IvfInputError(`k must be an integer >= 1, got ${k}`);
    if (mask && mask.size !== this.size) throw new IvfInputError(`mask covers ${mask.size} rows but the index generation has ${this.size}`);
    if (options.nprobe !== undefined && !(options.nprobe >= 1)) throw new IvfInputError(`nprobe must be >= 1, got ${options.nprobe}`);
    return mask ? { k, mask } : { k };
  }

  private checkRow(row: number): void {
    if (!Number.isInteger(row) || row < 0 || row >= this.size) throw new IvfInputError(`row ${row} outside [0, ${this.size})`);
  }
}

/**
 * Reorders a row-ordered vector matrix in place into cell order (counting sort by cell, stable within a
 * cell) and returns the slot maps. Memory: `size` bytes of visited flags + 2 vectors of scratch.
 * Permutation by cycle following: every vector moves exactly once. O(size * dim).
 * With a scheduler it yields to the event loop every 1024 moves (state lives in locals, nothing else touches
 * the matrix meanwhile).
 */
export async function arrangeByCell(
  vectors: Float32Array,
  size: number,
  dim: number,
  cellOfRow: Int32Array,
  nlist: number,
  scheduler?: CooperativeScheduler,
): Promise<{ cellOffsets: Int32Array; rowOfSlot: Int32Array; slotOfRow: Int32Array }> {
  const cellOffsets = new Int32Array(nlist + 1);
  for (let r = 0; r < size; r++) cellOffsets[cellOfRow[r]! + 1]!++;
  for (let c = 0; c < nlist; c++) cellOffsets[c + 1]! += cellOffsets[c]!;
  const fill = cellOffsets.slice(0, nlist);
  const slotOfRow = new Int32Array(size);
  const rowOfSlot = new Int32Array(size);
  for (let r = 0; r < size; r++) {
    const s = fill[cellOfRow[r]!]!++;
    slotOfRow[r] = s;
    rowOfSlot[s] = r;
  }
  const done = new Uint8Array(size);
  let carry = new Float32Array(dim);
  let spare = new Float32Array(dim);
  for (let start = 0; start < size; start++) {
    if (done[start]) continue;
    if (scheduler && (start & 4095) === 0) await scheduler.maybeYield();
    done[start] = 1;
    if (slotOfRow[start] === start) continue;
    // Position p initially holds row p. Walk the cycle start -> slotOfRow[start] -> ...
    const so = start * dim;
    for (let d = 0; d < dim; d++) carry[d] = vectors[so + d]!;
    let r = start;
    let moves = 0;
    for (;;) {
      // A random permutation's longest cycle spans ~60% of the rows: yield inside cycles too.
      if (scheduler && (++moves & 1023) === 0) await scheduler.maybeYield();
      const t = slotOfRow[r]!;
      const to = t * dim;
      if (t === start) {
        for (let d = 0; d < dim; d++) vectors[to + d] = carry[d]!;
        break;
      }
      for (let d = 0; d < dim; d++) {
        spare[d] = vectors[to + d]!;
        vectors[to + d] = carry[d]!;
      }
      const tmp = carry;
      carry = spare;
      spare = tmp;
      done[t] = 1;
      r = t;
    }
  }
  return { cellOffsets, rowOfSlot, slotOfRow };
}

/** Cells with the `count` highest scores, best first (ties: lower cell id). O(nlist log count). */
function topCells(scores: Float64Array, count: number): Int32Array {
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
function remainingCells(scores: Float64Array, taken: Int32Array): number[] {
  const used = new Uint8Array(scores.length);
  for (let i = 0; i < taken.length; i++) used[taken[i]!] = 1;
  const rest: number[] = [];
  for (let c = 0; c < scores.length; c++) if (!used[c]) rest.push(c);
  rest.sort((a, b) => scores[b]! - scores[a]! || a - b);
  return rest;
}

function finish(
  heap: TopK,
  exclude: Set<number>,
  k: number,
  stats: SearchStats | undefined,
  mode: 'ivf' | 'exact',
  cellsProbed: number,
  distanceComputations: number,
  centroidComputations: number,
): Neighbour[] {
  if (stats) {
    stats.mode = mode;
    stats.cellsProbed = cellsProbed;
    stats.distanceComputations = distanceComputations;
    stats.centroidComputations = centroidComputations;
  }
  const sorted = heap.sorted();
  const out: Neighbour[] = [];
  for (const hit of sorted) {
    if (exclude.has(hit.row)) continue;
    out.push(hit);
    if (out.length === k) break;
  }
  return out;
}

function toSet(rows: Iterable<number> | undefined): Set<number> {
  return rows ? new Set(rows) : new Set();
}

function clampInt(v: number, lo: number, hi: number): number {
  const r = Math.floor(v);
  return r < lo ? lo : r > hi ? hi : r;
}
