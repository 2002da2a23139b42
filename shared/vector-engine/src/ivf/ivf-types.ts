/**
 * Public vocabulary of an IVF generation (`IvfIndex`): search options and statistics, vector modes, the
 * quantised parts and their re-rank settings, the parts a generation is made of. Split out of ivf-index.ts
 * (re-exported there unchanged).
 */
import type { AvailabilityMask } from './availability-mask';
import type { CentroidGroups } from './centroid-groups';
import type { CentroidScan } from './centroid-scan';
import { IvfInputError } from './errors';
import type { IdTable } from './id-table';
import type { Quantiser } from './quantiser';
import type { VectorFile } from './vector-file';
import type { CodeArena } from '../simd/kernels';

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
