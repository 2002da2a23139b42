/**
 * @polyphony/vector-engine: approximate nearest-neighbour search over unit vectors (README.md: design,
 * trade-off table, measured figures). It knows vectors, row numbers, opaque string keys and availability
 * masks, nothing about what the vectors describe. What a user of the engine needs:
 *  - build: `buildIvfIndex` (two-level spherical k-means coarse quantiser, rows arranged by cell), `LiveIvfIndex`;
 *  - query: `IvfIndex.search` / `searchWithin`, `TopK`, `AvailabilityMask`, `SearchStats`;
 *  - compressed modes: `quantiseIndex`, `restoreQuantised`, `ScalarQuantiser` (int8), `ProductQuantiser` (PQ);
 *  - storage: `VectorFile` (float rows on local disk), `ByteLog`, persisted cells (`StoredCell`, `StoredCodes`);
 *  - threads: `IvfWorkerPool` (build phases, plus jobs its user registers: `WorkerJobs`), `startModuleWorker`;
 *  - kernels: the WebAssembly SIMD scratch memory (`acquireKernelMemory`) for users that score blocks of rows.
 * Errors are `IvfError` subclasses with a `code` (errors.ts).
 */
export { AvailabilityMask } from './ivf/availability-mask';
export { CooperativeScheduler } from './ivf/cooperative';
export { IvfError, IvfInputError, IvfDuplicateIdError, IvfNotReadyError, IvfCorruptStoreError, IvfBuildAbortedError, type IvfErrorCode } from './ivf/errors';
export { IdTable, IdTableBuilder } from './ivf/id-table';
export {
  DEFAULT_DIM,
  buildIvfIndex,
  defaultNlist,
  type BuildProgress,
  type IvfBuildOptions,
  type IvfBuildReport,
  type IvfBuildResult,
  type TrainedInfo,
  type VectorBatch,
  type VectorSource,
} from './ivf/ivf-build';
export { assignKeptCells, cellImbalance, type KeptCells } from './ivf/kept-cells';
export { quantiseKeepingCodes, type KeptCodes } from './ivf/quantise-kept';
export { DEFAULT_NPROBE, IvfIndex, fitCoarseQuantiser, type CoarseQuantiser, parseRerankSource, type RerankSource, type RestoreInput, type SearchOptions, type SearchStats, type StoredCell, type VectorMode } from './ivf/ivf-index';
export { CentroidGroups } from './ivf/centroid-groups';
export { CentroidScan, CENTROID_SCAN_RESCORE_FACTOR, CENTROID_SCAN_RESCORE_MIN } from './ivf/centroid-scan';
export { LiveIvfIndex } from './ivf/live-ivf-index';
export { appendRows, type AppendOptions } from './ivf/append';
export { DEFAULT_PQ_M, cellsOfCodes, encodeIndexCodes, parseVectorMode, quantiseIndex, quantiserFromParams, restoreQuantised, type QuantiseOptions, type StoredCodes } from './ivf/quantised-store';
export { ProductQuantiser, ScalarQuantiser, type Quantiser } from './ivf/quantiser';
export { TopK, type Neighbour } from './ivf/top-k';
export { VectorFile } from './ivf/vector-file';
export { IvfWorkerPool, type WorkerJobHandler, type WorkerJobs } from './ivf/worker-pool';
export { acquireKernelMemory, drainKernelMemoryPool, releaseKernelMemory, setSimdKernelsEnabled, simdKernelsAvailable, KernelMemory } from './simd/kernels';
export { ByteLog } from './storage/byte-log';
export { DEFAULT_INDEX_FILE_DIR } from './storage/unlinked-file';
export { moduleFile, startModuleWorker } from '@polyphony/platform';
