import { AvailabilityMask } from './availability-mask';
import { arrangeByCell, cellOfSlot, sortedSlotsOfMask } from './cell-layout';
import { CellRanking, fitCoarseQuantiser, probeCount, remainingCells, topCells } from './cell-ranking';
import { IvfCorruptStoreError, IvfInputError } from './errors';
import type { IdTable } from './id-table';
import { DEFAULT_NPROBE, type IvfIndexParts, type QuantisedParts, type SearchOptions, type SearchStats, type VectorMode } from './ivf-types';
import { QuantisedSearch } from './quantised-search';
import { RestoreChecks, type RestoreInput } from './restore-checks';
import { clampInt, finish, toSet } from './search-result';
import { type Neighbour, TopK } from './top-k';
import { dot, normaliseInto } from '@polyphony/vectors';

export type { Neighbour } from './top-k';
export type { RestoreInput, StoredCell } from './restore-checks';
// The generation's vocabulary, layout and ranking helpers live in their own files (split by responsibility);
// they are re-exported here so that importers of ivf-index keep their imports.
export {
  DEFAULT_NPROBE,
  QUANTISED_RERANK_FACTOR,
  QUANTISED_RERANK_MIN,
  parseRerankSource,
  type CoarseQuantiser,
  type IvfIndexParts,
  type QuantisedParts,
  type RerankSource,
  type SearchOptions,
  type SearchStats,
  type VectorMode,
} from './ivf-types';
export { arrangeByCell } from './cell-layout';
export { fitCoarseQuantiser } from './cell-ranking';

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
 * The int8 / pq generations take the same steps on their codes and re-rank a short list (`QuantisedSearch`).
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
  /** Centroid scores of the current query and the coarse quantiser (`cell-ranking.ts`). */
  private readonly ranking: CellRanking;
  /** float | int8 | pq. */
  readonly mode: VectorMode;
  private readonly q?: QuantisedParts;
  /** The quantised search path (`quantised-search.ts`); present exactly when `q` is. */
  private readonly quantisedSearch?: QuantisedSearch;
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
    this.rowOfSlot = parts.rowOfSlot;
    this.slotOfRow = parts.slotOfRow;
    this.ids = parts.ids;
    this.ranking = new CellRanking(parts.centroids, parts.nlist, parts.dim, parts.groups === null ? undefined : (parts.groups ?? fitCoarseQuantiser(parts.centroids, parts.nlist, parts.dim)));
    if (parts.quantised) {
      const layout = { dim: parts.dim, nlist: parts.nlist, size: n, centroids: parts.centroids, cellOffsets: parts.cellOffsets, rowOfSlot: parts.rowOfSlot, slotOfRow: parts.slotOfRow };
      this.quantisedSearch = new QuantisedSearch(parts.quantised, layout, this.ranking);
    }
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
      groups: this.ranking.coarse ?? null,
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
      centroids: this.centroids.byteLength + this.ranking.bytes + (this.quantisedSearch?.scratchBytes ?? 0),
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
    return this.quantisedSearch?.codesServeQueries ?? false;
  }

  /** Cell holding `row`. O(log nlist). @throws IvfInputError for a bad row. */
  cellOf(row: number): number {
    this.checkRow(row);
    return cellOfSlot(this.cellOffsets, this.nlist, this.slotOfRow[row]!);
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
      return this.quantisedSearch ? this.quantisedSearch.scanMask(q, mask, k, exclude, stats, options.rerank) : this.scanMask(q, mask, k, exclude, stats);
    }
    if (this.quantisedSearch) return this.quantisedSearch.search(q, k, nprobe, mask, exclude, stats, options.rerank);
    const want = k + exclude.size;
    const heap = new TopK(Math.min(want, this.size));
    const scores = this.ranking.scores;
    const probe = probeCount(nprobe, this.size, this.nlist, mask ? available : undefined);
    const partial = this.ranking.scoreCells(q, probe);
    const order = topCells(scores, probe);
    let candidates = 0;
    let cellsProbed = 0;
    for (let i = 0; i < order.length; i++) {
      candidates += this.scanCell(order[i]!, q, mask, heap);
      cellsProbed++;
    }
    if (candidates < want && probe < this.nlist) {
      // Adaptive probing: continue in centroid order until enough available candidates were seen.
      if (partial) this.ranking.scoreRemainingCells(q);
      const rest = remainingCells(scores, order);
      for (let i = 0; i < rest.length && candidates < want; i++) {
        candidates += this.scanCell(rest[i]!, q, mask, heap);
        cellsProbed++;
      }
    }
    return finish(heap, exclude, k, stats, 'ivf', cellsProbed, candidates, this.ranking.work);
  }

  /**
   * Like `search` with the stored vector of `row` as the query and `row` itself excluded
   * (the similar-songs case). @throws IvfInputError for a bad row.
   */
  searchByRow(row: number, options: SearchOptions): Neighbour[] {
    const exclude = toSet(options.exclude);
    exclude.add(row);
    if (this.quantisedSearch?.codesServeQueries) {
      this.checkRow(row);
      return this.search(this.quantisedSearch.decodedVector(this.slotOfRow[row]!), { ...options, exclude });
    }
    return this.search(this.getVector(row), { ...options, exclude });
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

  /**
   * `exactSearch` of several queries in one pass over the rows: each row's vector is read once (float mode: from
   * memory; int8/pq: from the disk copy, 4096 rows per read) and scored against every query, so m queries cost one
   * read of the vectors instead of m (100 drift probes at 1M x 200-d read 800 MB once, not 80 GB). Every answer is the
   * one `exactSearch(query, { k, exclude })` gives (same heap, same tie rule). With `scheduler` the scan yields between
   * chunks of 4096 rows, so the event loop waits at most about one slice (the live library's drift probes run beside
   * queries). Cost: size x m x dim multiply-adds.
   * @param queries m x dim floats, row-major (normalised here as `exactSearch` does)
   * @param excludes per query, rows left out of its answer (e.g. the probe's own row)
   * @throws IvfInputError for a query of the wrong length or k < 1; the scheduler's abort error
   */
  async exactSearchMany(queries: Float32Array, k: number, excludes: ReadonlyArray<readonly number[] | undefined> = [], scheduler?: { maybeYield(): Promise<void> }): Promise<Neighbour[][]> {
    const dim = this.dim;
    if (queries.length % dim !== 0) throw new IvfInputError(`queries hold ${queries.length} floats, not a multiple of ${dim}`);
    const m = queries.length / dim;
    const qs = new Float32Array(queries.length);
    for (let j = 0; j < m; j++) qs.set(this.prepareQuery(queries.subarray(j * dim, (j + 1) * dim)), j * dim);
    const { k: kk } = this.checkOptions({ k });
    const sets = Array.from({ length: m }, (_, j) => toSet(excludes[j] ? [...excludes[j]!] : undefined));
    const heaps = sets.map((ex) => new TopK(Math.min(kk + ex.size, this.size)));
    const CHUNK = 4096;
    const chunk = this.q ? new Float32Array(CHUNK * dim) : undefined;
    for (let r0 = 0; r0 < this.size; r0 += CHUNK) {
      const rows = Math.min(CHUNK, this.size - r0);
      // Float mode scans slots in memory (as exactSearch); the disk copy is read in row order.
      if (this.q) this.q.file.readRows(r0, rows, chunk!);
      const src = this.q ? chunk! : this.vectors.subarray(r0 * dim, (r0 + rows) * dim);
      for (let i = 0; i < rows; i++) {
        const row = this.q ? r0 + i : this.rowOfSlot[r0 + i]!;
        for (let j = 0; j < m; j++) heaps[j]!.push(row, 1 - dot(src, i * dim, qs, j * dim, dim));
      }
      await scheduler?.maybeYield();
    }
    return heaps.map((heap, j) => finish(heap, sets[j]!, kk, undefined, 'exact', 0, this.size, 0));
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
    const slots = sortedSlotsOfMask(mask, this.slotOfRow);
    const n = slots.length;
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

