/**
 * The quantised (int8 / pq) search path of an IVF generation (split out of ivf-index.ts; `IvfIndex` delegates to it
 * when the generation has `QuantisedParts`): candidates ranked by their approximate dot product on the codes (ADC with
 * a per-query table; int8 codes scored by the WebAssembly SIMD kernel when they live in a kernel arena), then the
 * short list re-ranked by the exact float distance (vector file, resident copy, or the int8 reconstruction).
 */
import type { AvailabilityMask } from './availability-mask';
import { cellOfSlot, sortedSlotsOfMask } from './cell-layout';
import { type CellRanking, probeCount, remainingCells, topCells } from './cell-ranking';
import { QUANTISED_RERANK_FACTOR, QUANTISED_RERANK_MIN, type QuantisedParts, type SearchStats } from './ivf-types';
import type { ScalarQuantiser } from './quantiser';
import { finish } from './search-result';
import { type Neighbour, TopK } from './top-k';
import { ARENA_BLOCK_ROWS, quantiseTableInt16 } from '../simd/kernels';
import { dot } from '@polyphony/vectors';

/** The cell layout a `QuantisedSearch` reads (shared with its `IvfIndex`, not copied). */
export interface QuantisedLayout {
  dim: number;
  nlist: number;
  /** Rows in the generation. */
  size: number;
  /** `nlist * dim` unit centroids. */
  centroids: Float32Array;
  /** `nlist + 1` slot offsets of the cells. */
  cellOffsets: Int32Array;
  /** Row stored in each slot. */
  rowOfSlot: Int32Array;
  /** Slot holding each row. */
  slotOfRow: Int32Array;
}

/**
 * Search state of one quantised generation. Searches are synchronous: the per-query scratch (cell scores, ADC
 * table, int16 table scale) belongs to one query at a time. Memory: `scratchBytes` + the sparse-mask code copies
 * cached with their masks.
 */
export class QuantisedSearch {
  private readonly dim: number;
  private readonly nlist: number;
  private readonly size: number;
  private readonly centroids: Float32Array;
  private readonly cellOffsets: Int32Array;
  private readonly rowOfSlot: Int32Array;
  private readonly slotOfRow: Int32Array;
  /** Scratch of the approximate scores of one cell. */
  private readonly cellScores: Float64Array;
  private readonly queryTable: Float32Array;
  /** Scale of the int16 table in the arena for the current query (kernel scores / scale = table scores). */
  private tableScale = 1;
  private readonly scratchVector: Float32Array;
  /** Slot-ordered codes of the available rows of sparse masks, dropped with the mask. */
  private readonly compactCodes = new WeakMap<AvailabilityMask, { rows: Int32Array; cells: Int32Array; codes: Uint8Array }>();

  /**
   * @param qp the generation's codes, quantiser and vector file
   * @param layout the generation's cells and slot maps
   * @param ranking the generation's cell ranking (centroid scores), shared with the float path
   */
  constructor(
    private readonly qp: QuantisedParts,
    layout: QuantisedLayout,
    private readonly ranking: CellRanking,
  ) {
    this.dim = layout.dim;
    this.nlist = layout.nlist;
    this.size = layout.size;
    this.centroids = layout.centroids;
    this.cellOffsets = layout.cellOffsets;
    this.rowOfSlot = layout.rowOfSlot;
    this.slotOfRow = layout.slotOfRow;
    let largest = 0;
    for (let c = 0; c < layout.nlist; c++) largest = Math.max(largest, layout.cellOffsets[c + 1]! - layout.cellOffsets[c]!);
    this.cellScores = new Float64Array(largest);
    this.queryTable = new Float32Array(qp.quantiser.tableSize);
    this.scratchVector = new Float32Array(layout.dim);
  }

  /** Bytes of per-query scratch counted with the centroids in `IvfIndex.memory` (cell scores and ADC table). */
  get scratchBytes(): number {
    return this.cellScores.byteLength + this.queryTable.byteLength;
  }

  /**
   * True when queries take their seed vectors and re-rank distances from the int8 codes (`QuantisedParts.rerank`
   * `codes` and no resident float copy): no file read on the query path, distances within the int8 error.
   */
  get codesServeQueries(): boolean {
    const q = this.qp;
    return q.rerank === 'codes' && q.quantiser.kind === 'int8' && q.file.resident === undefined;
  }

  /** The int8 reconstruction `centroid + min + step * code` of the row in `slot` (not normalised; dim floats). */
  decodedVector(slot: number): Float32Array {
    const q = this.qp;
    const dim = this.dim;
    const out = new Float32Array(dim);
    q.quantiser.decode(q.codes, slot * dim, out, 0);
    const c = cellOfSlot(this.cellOffsets, this.nlist, slot) * dim;
    for (let d = 0; d < dim; d++) out[d] = out[d]! + this.centroids[c + d]!;
    return out;
  }

  /** Short-list size of a quantised query. */
  private shortList(want: number, rerank: number | undefined): number {
    const m = this.qp.quantiser.kind === 'pq' ? 'pq' : 'int8';
    const r = rerank ?? Math.max(QUANTISED_RERANK_MIN[m], Math.ceil(QUANTISED_RERANK_FACTOR[m] * want));
    return Math.min(this.size, Math.max(want, Math.floor(r)));
  }

  /**
   * IVF search over quantised codes: same probing as the float path, candidates ranked by their
   * approximate dot product (ADC with a per-query table), then the best `shortList` re-ranked by the exact
   * float distance (`rerankExact`). `q` is the normalised query; `nprobe` already clamped to [1, nlist]; `mask` (if
   * any) denser than the sparse-mask fallback's limit. @returns at most k neighbours, ascending distance
   */
  search(
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
    const scores = this.ranking.scores;
    const constant = this.prepareTable(q);
    const available = mask ? mask.count : this.size;
    const probe = probeCount(nprobe, this.size, this.nlist, mask ? available : undefined);
    const partial = this.ranking.scoreCells(q, probe);
    const order = topCells(scores, probe);
    let candidates = 0;
    let cellsProbed = 0;
    for (let i = 0; i < order.length; i++) {
      candidates += this.scanCellCodes(order[i]!, scores[order[i]!]! + constant, mask, approx);
      cellsProbed++;
    }
    if (candidates < want && probe < this.nlist) {
      if (partial) this.ranking.scoreRemainingCells(q);
      const rest = remainingCells(scores, order);
      for (let i = 0; i < rest.length && candidates < want; i++) {
        candidates += this.scanCellCodes(rest[i]!, scores[rest[i]!]! + constant, mask, approx);
        cellsProbed++;
      }
    }
    const exact = this.rerankExact(q, approx, want);
    if (stats) stats.reranked = approx.size;
    return finish(exact, exclude, k, stats, 'ivf', cellsProbed, candidates, this.ranking.work);
  }

  /**
   * Fills the per-query ADC table (`queryTable`) and, with a kernel arena, its int16 copy in the arena
   * (`tableScale`). @returns the constant term of every approximate dot product
   */
  private prepareTable(q: Float32Array): number {
    const qp = this.qp;
    const constant = qp.quantiser.prepare(q, this.queryTable);
    if (qp.arena) this.tableScale = quantiseTableInt16(this.queryTable, this.dim, qp.arena.km.i16, qp.arena.table >> 1);
    return constant;
  }

  /** Approximate scores of the available members of one cell into `heap` (distance = 1 - approximate dot). */
  private scanCellCodes(cell: number, base: number, mask: AvailabilityMask | undefined, heap: TopK): number {
    const qp = this.qp;
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
  private rerankExact(q: Float32Array, approx: TopK, want: number): TopK {
    const qp = this.qp;
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
        const c = cellOfSlot(this.cellOffsets, this.nlist, slot) * dim;
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
   * every one of them is scored approximately, and the short list is re-ranked exactly. @returns at most k
   * neighbours, ascending distance (stats mode 'exact')
   */
  scanMask(
    q: Float32Array,
    mask: AvailabilityMask,
    k: number,
    exclude: Set<number>,
    stats: SearchStats | undefined,
    rerank: number | undefined,
  ): Neighbour[] {
    const qp = this.qp;
    const want = k + exclude.size;
    const scores = this.ranking.scores;
    this.ranking.scoreAllCells(q);
    const constant = this.prepareTable(q);
    const compact = this.compactCodesOf(mask);
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
    const exact = this.rerankExact(q, approx, want);
    if (stats) stats.reranked = approx.size;
    return finish(exact, exclude, k, stats, 'exact', 0, mask.count, this.nlist);
  }

  private compactCodesOf(mask: AvailabilityMask): { rows: Int32Array; cells: Int32Array; codes: Uint8Array } {
    const qp = this.qp;
    const cached = this.compactCodes.get(mask);
    if (cached) return cached;
    const cs = qp.quantiser.codeSize;
    const slots = sortedSlotsOfMask(mask, this.slotOfRow);
    const n = slots.length;
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
}
