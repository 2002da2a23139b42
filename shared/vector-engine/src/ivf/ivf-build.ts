import { CooperativeScheduler } from './cooperative';
import { IvfInputError } from './errors';
import { IdTableBuilder, type IdTable } from './id-table';
import { DEFAULT_NPROBE, IvfIndex, arrangeByCell } from './ivf-index';
import { CentroidTree, nearestCentroids, PointSet, TrainOptions, trainCentroids } from './kmeans';
import { hashString32, normaliseInto } from '@polyphony/vectors';
import { IvfWorkerPool } from './worker-pool';
import { assignKeptCells, type KeptCells } from './kept-cells';

/** Reference constants (reference-implementation.md 1.4, `tasks/paged_ivf.py`). */
export const IVF_NLIST_MAX = 8192;
/** nlist = round(IVF_CELLS_PER_SQRT_N * sqrt(N)) before clamping. */
export const IVF_CELLS_PER_SQRT_N = 8;
/** Training sample size = this many points per cell (no cap). */
export const IVF_TRAIN_POINTS_PER_CELL = 50;
/**
 * Coarse groups visited per vector by the final assignment (see `IvfBuildOptions.assignGroups`): the groups whose
 * axes are nearest to the row (`CentroidTree`). Issue 35, session 17, `recall-decomposition` on the 1M benchmark
 * catalogue (500 songs, nprobe 64, nlist 8000 in 179 groups): true neighbours outside their nearest centroid's cell
 * 22.1% with 4 groups, 12.6% with 8; recall@10 of the int8 service path 0.970 / 0.981 (0.950 before the
 * nearest-axes order); 358 / 537 dot products per row (11.0 / 16.3 s in one thread at 1M); query CPU unchanged.
 * Kept at 4: with 8, one row of the 8k test mixture (quantised-index.test.ts) got an int8 codes distance 0.056 off
 * (cause not analysed; perhaps a residual outside the int8 trained range), to be understood before raising it.
 */
export const DEFAULT_ASSIGN_GROUPS = 4;
/** Embedding dimension of the MusiCNN vectors the shared index holds. */
export const DEFAULT_DIM = 200;

/**
 * One batch from the vector source: `ids.length` items, their raw vectors row-major in `vectors`
 * (`ids.length * dim` floats, any norm; the index stores L2-normalised copies and never keeps the batch).
 * Rows are numbered in arrival order across batches: the first item of the stream is row 0.
 * The build has copied a batch before it asks the source for the next one, so a source may reuse its buffers.
 */
export interface VectorBatch {
  readonly ids: readonly string[];
  readonly vectors: Float32Array;
}

/** The build reads its input exactly once, batch by batch (e.g. a keyset-paginated SELECT). */
export type VectorSource = AsyncIterable<VectorBatch> | Iterable<VectorBatch>;

/** Emitted once, after training and before the first cell. */
export interface TrainedInfo {
  generation: number;
  /** Number of rows of the new generation. */
  count: number;
  dim: number;
  nlist: number;
  /** `nlist * dim` unit centroids (the build's own array: copy before the next await if you keep it mutable). */
  centroids: Float32Array;
  /** Size of the k-means training sample. */
  sampleSize: number;
}

/**
 * Receives one completed cell: its rows, their unit vectors (`rowIds.length * dim` floats, same order) and
 * canonical ids. `rowIds` and `vectors` are views into the new index: copy them if you keep them after the
 * returned promise settles. The build awaits each call, so a slow sink applies back-pressure. Empty cells
 * are emitted too (so a store can tell "empty" from "missing").
 */
/**
 * Receives one completed cell: its rows, their unit vectors (slot order) and ids. `rowIds` and `vectors` are views of
 * the built index's own arrays (no copy): they stay valid and unchanged for the index's lifetime (nothing writes them
 * after the arrange step), so a sink may keep them to write later; `ids` is a fresh array per cell.
 */
export type CellSink = (cellId: number, rowIds: Int32Array, vectors: Float32Array, ids: readonly string[]) => void | Promise<void>;

/** Progress notification (cheap, synchronous). `done`/`total` are in items for ingest/assign, cells otherwise. */
export interface BuildProgress {
  phase: 'ingest' | 'train' | 'assign' | 'arrange' | 'emit';
  done: number;
  total: number;
}

/** Tunables of `buildIvfIndex`; every field is optional. */
export interface IvfBuildOptions {
  /** Vector dimension (default 200). */
  dim?: number;
  /** Expected number of items; sizes the vector buffer up front (otherwise it grows by 1.5x). */
  expectedCount?: number;
  /** Seed of the training sample choice and k-means initialisation (default 0x5eed). */
  seed?: number;
  /** Number of cells; default `defaultNlist(N)`. Clamped to [1, N]. */
  nlist?: number;
  /** Training points per cell (default 50, reference `IVF_TRAIN_POINTS_PER_CELL`). */
  trainPointsPerCell?: number;
  /**
   * Lloyd iterations per k-means run, upper bound (default 10; FAISS uses 25 by default). At 200k items
   * 8 instead of 20 iterations cost 0.006 of recall@10 at nprobe 16 and halved training time.
   */
  maxIterations?: number;
  /** Lloyd stops early when at most this fraction of points changed cell (default 0.005). */
  tolerance?: number;
  /** Global refinement iterations after two-level training (default 0: at 20k items one iteration changed recall@10 by < 0.002). */
  refineIterations?: number;
  /**
   * Coarse groups searched when assigning a vector to its nearest centroid (default DEFAULT_ASSIGN_GROUPS = 4; Infinity = exact
   * nearest centroid, slower: pruning alone keeps ~60% of the brute-force work in 200-d).
   */
  assignGroups?: number;
  /** Points per streamed k-means batch (default 1024). */
  batchSize?: number;
  /** nlist from which two-level training is used (default 256). */
  twoLevelMinCells?: number;
  /** Two-level training: first-level centroids per sqrt(nlist) (default 2, i.e. 179 at nlist 8000). */
  coarseCellsPerSqrtNlist?: number;
  /** First-level training points per coarse centroid (default 64). */
  coarsePointsPerCentroid?: number;
  /** k-means++ trials in second-level runs (default 1 = plain k-means++). */
  fineSeedingTrials?: number;
  /** nprobe stored in the index as its default (default DEFAULT_NPROBE). */
  defaultNprobe?: number;
  /** Generation number stamped on the index (default 0; LiveIvfIndex passes previous + 1). */
  generation?: number;
  /** Longest stretch of computation between two event-loop turns, in ms (default 10). */
  sliceMs?: number;
  /**
   * Worker threads for training and assignment (default 0 = everything on the calling thread). With
   * workers the vectors are held in a SharedArrayBuffer the workers read in place; the result is
   * bit-identical to the in-thread build. The calling thread only waits meanwhile, so it keeps serving.
   */
  workers?: number;
  signal?: AbortSignal;
  /**
   * Asked once after the ingest with the number of rows: the cells to take over from the generation this build
   * replaces (`KeptCells`: its centroids and the cell of every unchanged row), or undefined to train k-means as
   * usual. With kept cells nothing is sampled or trained; rows without a kept cell go to their nearest centroid
   * (`assignKeptCells`); arrange and emit are as usual. Issue 35 (generation reuse).
   */
  keptCells?: (count: number) => KeptCells | undefined | Promise<KeptCells | undefined>;
  onTrained?: (info: TrainedInfo) => void | Promise<void>;
  onCell?: CellSink;
  onProgress?: (progress: BuildProgress) => void;
}

/** What the build did and how long each phase took. */
export interface IvfBuildReport {
  count: number;
  dim: number;
  nlist: number;
  sampleSize: number;
  /** Lloyd iterations summed over every k-means run. */
  trainingIterations: number;
  trainingDotProducts: number;
  /** Dot products of the final assignment; compare with `count * nlist` for brute force. */
  assignmentDotProducts: number;
  emptyCells: number;
  largestCell: number;
  /** Rows placed at their nearest kept centroid when the build took over the old cells (`keptCells`); undefined when it trained. */
  keptCellsPlaced?: number;
  /** Times the build handed the event loop back to other work. */
  yields: number;
  /** Longest computation between two event-loop turns, ms (wall clock, includes preemption by other processes). */
  longestSliceMs: number;
  timingsMs: { ingest: number; train: number; assign: number; arrange: number; emit: number; total: number };
}

export interface IvfBuildResult {
  index: IvfIndex;
  report: IvfBuildReport;
}

/**
 * Number of IVF cells for N items: `min(8192, round(8 * sqrt(N)), N)`, at least 1 (0 for an empty
 * catalogue). Reference `build_and_store_paged_ivf` (reference-implementation.md 1.4).
 */
export function defaultNlist(count: number): number {
  if (count <= 0) return 0;
  return Math.max(1, Math.min(IVF_NLIST_MAX, Math.round(IVF_CELLS_PER_SQRT_N * Math.sqrt(count)), count));
}

/**
 * Builds one IVF-Flat generation from a single pass over `source`.
 *
 * Phases:
 *  1. ingest: store an L2-normalised copy of every vector (row order) and its canonical id;
 *  2. sample: the `min(N, 50 * nlist)` rows whose seeded 32-bit id hash is smallest (deterministic and
 *     independent of arrival order, like the reference's smallest-blake2b rule), ordered by hash so any
 *     prefix is a uniform sub-sample; no cap;
 *  3. train: spherical k-means (`trainCentroids`), the sample streamed in `batchSize` batches;
 *  4. assign: every row to its nearest centroid among the centroids of its `assignGroups` coarse groups of
 *     nearest axes (`CentroidTree.nearest`; on the mixture 98.5% of rows at 1M and 99.5% at 200k got the brute-force
 *     nearest centroid with 4 groups chosen by bound; on the benchmark catalogue at 1M 77.9% of the true neighbours
 *     of 500 songs with 4 nearest-axes groups (87.4% with 8), see DEFAULT_ASSIGN_GROUPS; `assignGroups: Infinity` makes it exact at
 *     several times the cost, 5x at 20k items);
 *  5. arrange: permute the vectors in place into cell order;
 *  6. emit: `onTrained`, then `onCell` for every cell 0..nlist-1, awaited one by one.
 * The work is cut into slices of `sliceMs` with event-loop turns between them, so a live index keeps
 * answering queries during a rebuild. Same input order + same options => bit-identical index.
 *
 * Memory: the new index (`N * dim * 4` bytes of vectors + ~80 bytes per row) plus `4 * N` bytes of hashes
 * and `4 * N` of cell assignments; k-means state is `nlist * dim * 8` bytes. The training sample is not copied.
 * @throws IvfInputError on a batch whose vector length is not `ids.length * dim` or with a non-finite vector
 * @throws IvfDuplicateIdError when an id repeats
 * @throws IvfBuildAbortedError when `signal` fires
 */
export async function buildIvfIndex(source: VectorSource, options: IvfBuildOptions = {}): Promise<IvfBuildResult> {
  const t0 = performance.now();
  const dim = options.dim ?? DEFAULT_DIM;
  if (!Number.isInteger(dim) || dim < 1) throw new IvfInputError(`dim must be a positive integer, got ${dim}`);
  const seed = (options.seed ?? 0x5eed) >>> 0;
  const scheduler = new CooperativeScheduler(options.sliceMs ?? 10, options.signal);
  const progress = options.onProgress;
  scheduler.throwIfAborted();

  // 1. ingest
  let capacity = Math.max(1024, Math.ceil(options.expectedCount ?? 65536));
  const shared = (options.workers ?? 0) > 0;
  let vectors: Float32Array = allocate(capacity * dim, shared);
  let keys: Uint32Array = new Uint32Array(capacity);
  const ids = new IdTableBuilder(capacity);
  let count = 0;
  for await (const batch of source) {
    const n = batch.ids.length;
    if (batch.vectors.length !== n * dim) throw new IvfInputError(`batch of ${n} ids carries ${batch.vectors.length} floats, expected ${n * dim}`);
    if (count + n > capacity) {
      capacity = Math.max(count + n, Math.ceil(capacity * 1.5));
      vectors = grow(vectors, capacity * dim, count * dim, shared);
      const k2 = new Uint32Array(capacity);
      k2.set(keys.subarray(0, count));
      keys = k2;
    }
    for (let i = 0; i < n; i++) {
      const row = count + i;
      const id = batch.ids[i]!;
      const norm = normaliseInto(batch.vectors, i * dim, vectors, row * dim, dim);
      if (!Number.isFinite(norm)) throw new IvfInputError(`vector of ${id} has a non-finite component`);
      ids.set(row, id);
      keys[row] = hashString32(id, seed);
      if ((i & 1023) === 1023) await scheduler.maybeYield();
    }
    count += n;
    progress?.({ phase: 'ingest', done: count, total: options.expectedCount ?? count });
    await scheduler.maybeYield();
  }
  if (capacity - count > capacity / 8) {
    // Give back a badly over-estimated buffer (transiently needs both copies).
    vectors = grow(vectors, count * dim, count * dim, shared);
  }
  const idTable = ids.finish(count);
  const tIngest = performance.now();

  const kept = count > 0 && options.keptCells ? await options.keptCells(count) : undefined;
  scheduler.throwIfAborted();
  if (kept) return finishWithKeptCells(kept, { t0, tIngest, dim, count, vectors, idTable, scheduler, options });
  const nlist = count === 0 ? 0 : Math.max(1, Math.min(count, Math.floor(options.nlist ?? defaultNlist(count))));
  const trainPerCell = options.trainPointsPerCell ?? IVF_TRAIN_POINTS_PER_CELL;
  const sampleSize = Math.min(count, Math.max(nlist, trainPerCell * nlist));

  // 2-3. sample and train
  const sample = smallestKeyRows(keys.subarray(0, count), sampleSize);
  keys = new Uint32Array(0);
  const trainOptions: TrainOptions = {
    seed,
    maxIterations: options.maxIterations ?? 10,
    tolerance: options.tolerance ?? 0.005,
    batchSize: options.batchSize ?? 1024,
    scheduler,
    twoLevelMinCells: options.twoLevelMinCells ?? 256,
    coarseCellsPerSqrtNlist: options.coarseCellsPerSqrtNlist ?? 2,
    coarsePointsPerCentroid: options.coarsePointsPerCentroid ?? 64,
    fineSeedingTrials: options.fineSeedingTrials ?? 1,
    refineIterations: options.refineIterations ?? 0,
    searchGroups: options.assignGroups ?? DEFAULT_ASSIGN_GROUPS,
  };
  progress?.({ phase: 'train', done: 0, total: nlist });
  const points: PointSet = { data: vectors, dim, rows: sample };
  // Workers only pay off for two-level training (flat training means a small catalogue).
  const pool = shared && nlist >= trainOptions.twoLevelMinCells ? new IvfWorkerPool(Math.floor(options.workers!), options.signal) : undefined;
  let trained: { centroids: Float32Array; groupOf: Int32Array; groupCount: number; iterations: number; dotProducts: number };
  let cellOfRow: Int32Array = new Int32Array(count);
  let assignmentDotProducts = 0;
  let tTrain: number;
  try {
    if (pool) {
      await pool.share(vectors, dim);
      trainOptions.pool = pool;
    }
    trained =
      nlist === 0
        ? { centroids: new Float32Array(0), groupOf: new Int32Array(0), groupCount: 0, iterations: 0, dotProducts: 0 }
        : await trainCentroids(points, nlist, trainOptions);
    tTrain = performance.now();
    if (pool && trained.groupCount > 1) {
      // 4. assign every row, in parallel: row ranges, results written into a shared array.
      const cells = new SharedArrayBuffer(count * 4);
      const chunk = Math.max(4096, Math.ceil(count / (8 * pool.size)));
      const tasks: Promise<unknown>[] = [];
      let doneRows = 0;
      for (let from = 0; from < count; from += chunk) {
        const to = Math.min(count, from + chunk);
        tasks.push(
          pool
            .run({ type: 'assign', from, to, treeKey: seed, centroids: trained.centroids, nlist, groupOf: trained.groupOf, groupCount: trained.groupCount, searchGroups: trainOptions.searchGroups, cellOfRow: cells })
            .then((r) => {
              if (r.type === 'assign') assignmentDotProducts += r.dotProducts;
              doneRows += to - from;
              progress?.({ phase: 'assign', done: doneRows, total: count });
            }),
        );
      }
      await Promise.all(tasks);
      cellOfRow = new Int32Array(cells);
    }
  } finally {
    if (pool) await pool.close();
  }
  const centroids = trained.centroids;

  // 4. assign every row (in-thread)
  if (pool && trained.groupCount > 1) {
    // done above
  } else if (nlist > 0 && trained.groupCount > 1) {
    const tree = new CentroidTree(centroids, nlist, dim, trained.groupOf, trained.groupCount);
    for (let r = 0; r < count; r++) {
      cellOfRow[r] = tree.nearest(vectors, r * dim, trainOptions.searchGroups);
      if ((r & 63) === 63) {
        if ((r & 4095) === 4095) progress?.({ phase: 'assign', done: r + 1, total: count });
        await scheduler.maybeYield();
      }
    }
    assignmentDotProducts = tree.dotProducts;
  } else if (nlist > 0) {
    for (let r = 0; r < count; r += 1024) {
      nearestCentroids(vectors, null, r, Math.min(count, r + 1024), centroids, nlist, dim, cellOfRow.subarray(r));
      await scheduler.maybeYield();
    }
    assignmentDotProducts = count * nlist;
  }
  const tAssign = performance.now();
  const out = await arrangeAndEmit({ dim, count, vectors, idTable, scheduler, options }, cellOfRow, nlist, trained.centroids, sampleSize);
  return {
    index: out.index,
    report: {
      count,
      dim,
      nlist,
      sampleSize,
      trainingIterations: trained.iterations,
      trainingDotProducts: trained.dotProducts,
      assignmentDotProducts,
      emptyCells: out.emptyCells,
      largestCell: out.largestCell,
      yields: scheduler.yields,
      longestSliceMs: scheduler.longestSliceMs,
      timingsMs: {
        ingest: tIngest - t0,
        train: tTrain - tIngest,
        assign: tAssign - tTrain,
        arrange: out.tArrange - tAssign,
        emit: out.tEmit - out.tArrange,
        total: out.tEmit - t0,
      },
    },
  };
}

/** The ingested rows a build goes on with after its ingest. */
interface Ingested {
  dim: number;
  count: number;
  vectors: Float32Array;
  idTable: IdTable;
  scheduler: CooperativeScheduler;
  options: IvfBuildOptions;
}

/**
 * The build's end on kept cells (`IvfBuildOptions.keptCells`): no sample, no k-means; rows without a kept cell
 * placed at their nearest centroid (`assignKeptCells`, reported as the assign phase), then arrange and emit.
 */
async function finishWithKeptCells(kept: KeptCells, at: Ingested & { t0: number; tIngest: number }): Promise<IvfBuildResult> {
  const { t0, tIngest, dim, count, scheduler } = at;
  at.options.onProgress?.({ phase: 'assign', done: 0, total: count });
  // With build workers, enough rows to place (PLACE_WORKER_MIN_ROWS, counted by assignKeptCells) run in a pool's
  // threads sharing the vectors (same cells).
  const workers = Math.floor(at.options.workers ?? 0);
  const shareable = workers > 0 && at.vectors.buffer instanceof SharedArrayBuffer && at.vectors.byteOffset === 0;
  const assigned = await assignKeptCells(at.vectors, dim, count, kept, scheduler, shareable ? () => new IvfWorkerPool(workers, at.options.signal) : undefined);
  const tAssign = performance.now();
  const out = await arrangeAndEmit(at, assigned.cellOfRow, kept.nlist, kept.centroids.slice(), 0);
  return {
    index: out.index,
    report: {
      count,
      dim,
      nlist: kept.nlist,
      sampleSize: 0,
      trainingIterations: 0,
      trainingDotProducts: 0,
      assignmentDotProducts: assigned.dotProducts,
      emptyCells: out.emptyCells,
      largestCell: out.largestCell,
      keptCellsPlaced: assigned.placed,
      yields: scheduler.yields,
      longestSliceMs: scheduler.longestSliceMs,
      timingsMs: { ingest: tIngest - t0, train: 0, assign: tAssign - tIngest, arrange: out.tArrange - tAssign, emit: out.tEmit - out.tArrange, total: out.tEmit - t0 },
    },
  };
}

/**
 * Steps 5-6 of a build: the vectors permuted in place into cell order, the index made, then `onTrained` and
 * `onCell` for every cell 0..nlist-1, awaited one by one. @returns the index, cell statistics and phase end times
 */
async function arrangeAndEmit(at: Ingested, cellOfRow: Int32Array, nlist: number, centroids: Float32Array, sampleSize: number): Promise<{ index: IvfIndex; emptyCells: number; largestCell: number; tArrange: number; tEmit: number }> {
  const { dim, count, vectors, idTable, scheduler, options } = at;
  const progress = options.onProgress;
  // 5. arrange in cell order
  progress?.({ phase: 'arrange', done: 0, total: nlist });
  const layout = await arrangeByCell(vectors, count, dim, cellOfRow, nlist, scheduler);
  await scheduler.yieldNow();
  const tArrange = performance.now();

  const generation = options.generation ?? 0;
  const index = new IvfIndex({
    dim,
    nlist,
    generation,
    defaultNprobe: options.defaultNprobe ?? DEFAULT_NPROBE,
    centroids,
    vectors,
    ...layout,
    ids: idTable,
  });

  // 6. emit
  if (options.onTrained) await options.onTrained({ generation, count, dim, nlist, centroids, sampleSize });
  let emptyCells = 0;
  let largestCell = 0;
  for (let c = 0; c < nlist; c++) {
    const start = layout.cellOffsets[c]!;
    const end = layout.cellOffsets[c + 1]!;
    if (end === start) emptyCells++;
    largestCell = Math.max(largestCell, end - start);
    if (options.onCell) {
      const cellIds: string[] = [];
      for (let s = start; s < end; s++) cellIds.push(idTable.idOf(layout.rowOfSlot[s]!));
      await options.onCell(c, layout.rowOfSlot.subarray(start, end), vectors.subarray(start * dim, end * dim), cellIds);
      progress?.({ phase: 'emit', done: c + 1, total: nlist });
    }
    await scheduler.maybeYield();
  }
  return { index, emptyCells, largestCell, tArrange, tEmit: performance.now() };
}

/**
 * Rows of the `size` smallest keys, ordered by (key, row). A histogram on the top 16 bits finds the
 * boundary bucket; the rows up to it are then ordered by a stable two-pass LSD radix sort on the key, so
 * equal keys stay in row order. O(N) time, O(size + 65536) memory, no comparison sort.
 */
export function smallestKeyRows(keys: Uint32Array, size: number): Int32Array {
  const n = keys.length;
  const take = Math.max(0, Math.min(size, n));
  const hist = new Uint32Array(65536);
  for (let i = 0; i < n; i++) hist[keys[i]! >>> 16]!++;
  let bucket = 0;
  let upTo = 0;
  while (bucket < 65536 && upTo < take) upTo += hist[bucket++]!; // buckets [0, bucket) hold >= take rows
  const candidates = new Int32Array(upTo);
  let m = 0;
  for (let i = 0; i < n; i++) if (keys[i]! >>> 16 < bucket) candidates[m++] = i;
  const sorted = radixSortByKey(radixSortByKey(candidates, keys, 0), keys, 16);
  return sorted.slice(0, take);
}

/** Stable counting sort of `rows` by the 16-bit digit of `keys[row]` at bit `shift`. */
function radixSortByKey(rows: Int32Array, keys: Uint32Array, shift: number): Int32Array {
  const count = new Uint32Array(65537);
  for (let i = 0; i < rows.length; i++) count[((keys[rows[i]!]! >>> shift) & 0xffff) + 1]!++;
  for (let d = 0; d < 65536; d++) count[d + 1]! += count[d]!;
  const out = new Int32Array(rows.length);
  for (let i = 0; i < rows.length; i++) out[count[(keys[rows[i]!]! >>> shift) & 0xffff]!++] = rows[i]!;
  return out;
}

function allocate(length: number, shared: boolean): Float32Array {
  return shared ? new Float32Array(new SharedArrayBuffer(length * 4)) : new Float32Array(length);
}

function grow(a: Float32Array, length: number, used: number, shared = false): Float32Array {
  const next = allocate(length, shared);
  next.set(a.subarray(0, used));
  return next;
}
