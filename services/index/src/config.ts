import { DEFAULT_LIVE_LIBRARY, type LiveLibrarySettings } from './generation/live/settings';
import { loadServiceConfig, readEnv, type ServiceConfig } from '@polyphony/platform';
import { RECORDING_LIMITS } from '@polyphony/contracts';
import { DEFAULT_PQ_M, parseRerankSource, parseVectorMode, type RerankSource, type VectorMode } from '@polyphony/vector-engine';

/** Default `INDEX_VECTOR_RESIDENT_MIB`: float copies up to 128 MiB (~167k songs at 200-d) stay in memory too. */
export const DEFAULT_RESIDENT_MIB = 128;

/**
 * Default `INDEX_TABLE_RESIDENT_MIB`: per-generation tables (display metadata, text-search columns) up to 32 MiB each
 * stay in memory (100k songs: ~11 and ~13 MiB); larger ones (1M: ~100 and ~126 MiB) live in a file in `INDEX_VECTOR_DIR`.
 */
export const DEFAULT_TABLE_RESIDENT_MIB = 32;

/**
 * Default `RECORDING_POSTINGS_RESIDENT_MIB`: fingerprint postings up to 64 MiB (~9k songs at ~7.5k postings per
 * 4-minute song) stay in memory; a larger library's go to a local file (issue 33: 100k songs hold ~726 MiB).
 */
export const DEFAULT_RECORDING_POSTINGS_RESIDENT_MIB = 64;

/** How index generations hold their vectors in memory (issue 19 "Bounded memory"). */
export interface VectorStoreSettings {
  /** `INDEX_VECTOR_MODE`: float | int8 (default) | pq. */
  mode: VectorMode;
  /** `INDEX_VECTOR_DIR`: directory of the on-disk float copy of quantised generations (default `$TMPDIR/polyphony-index`). */
  dir?: string;
  /**
   * `INDEX_VECTOR_RESIDENT_MIB`: a quantised generation whose float copy is at most this many MiB keeps it in memory
   * as well as on disk, so re-ranking reads no file (default 128: 100k x 200-d = 76 MiB is kept, 1M = 763 MiB is
   * not, so the 1M memory bound is unchanged; 0 or absent = always disk only).
   */
  residentMiB?: number;
  /**
   * `INDEX_RERANK_SOURCE`: where an int8 generation whose float copy is not resident (over `INDEX_VECTOR_RESIDENT_MIB`,
   * e.g. 1M songs) re-ranks its short list and takes a similar-songs seed from: `codes` (default, issue 35: the int8
   * codes in memory, no file read on the query path; distances within the int8 error, ~1e-3) or `file` (exact float
   * rows read from the disk copy, one positional read each). Generations with a resident copy always use it (exact).
   */
  rerank?: RerankSource;
  /**
   * `INDEX_TABLE_RESIDENT_MIB`: the display metadata and the text-search columns of a generation are each kept in
   * memory while at most this many MiB, else written to an unlinked file in `dir` and read per query (a result row's
   * record, a text query's columns); default 32, 0 = always on disk.
   */
  tableResidentMiB?: number;
  /** `INDEX_PQ_M`: PQ sub-spaces, must divide 200 (default 25). */
  pqM: number;
  /** `INDEX_BUILD_WORKERS`: worker threads of a build (default 2; 0 = build on the main thread). */
  buildWorkers: number;
}

/**
 * Default of `INDEX_BUILD_REUSE_MAX_CHANGED`: 0.05 (since session 19; 0 = off before). A build over at most 5 % new,
 * changed or removed rows keeps the serving generation's basis, IVF cells, quantiser and codes, map positions and
 * artist mixtures of unchanged songs (generation/reuse.ts): the end-of-run rebuild after a run that added a few
 * songs then costs the changed rows instead of a whole layout (issue 35: "map and artist mixtures reusing the previous
 * generation where songs did not change"). The map and artist answers follow the previous generation's basis and
 * positions (a stable map between runs), so they differ from a fresh build of the same songs; the golden suite
 * therefore pins 0. A cumulative bound (`INDEX_BUILD_REUSE_MAX_DRIFT`) and a drift-requested build train afresh.
 */
export const DEFAULT_REUSE_MAX_CHANGED = 0.05;

/**
 * Default of `INDEX_BUILD_REUSE_MAX_DRIFT`: a reusing build keeps the serving generation's cells, basis and map only
 * while the rows placed without training since the lineage's root (this build's changed and removed rows included)
 * are at most this share of the root's rows. 0.25: the per-build share threshold (`INDEX_BUILD_REUSE_MAX_CHANGED`,
 * 0.05) allows about five reusing builds of maximal change, or many small ones, before k-means and the map run again
 * on the whole catalogue. The bound is cumulative where the per-build threshold is not (issue 35: "a full rebuild
 * happens when measured drift says so"); cell imbalance (the live library's rule) and the live library's probe recall
 * (a build it requested for drift trains afresh) are the measured parts.
 */
export const DEFAULT_REUSE_MAX_DRIFT = 0.25;

export type IndexConfig = ServiceConfig & {
  vectors: VectorStoreSettings;
  /** `INDEX_REPLICA_HEARTBEAT_MS`: how often a replica reports the generation it serves (default 5000 ms; live = reported within 3 beats). */
  replicaHeartbeatMs: number;
  /**
   * `INDEX_BUILD_REUSE_MAX_CHANGED` (default 0.05; 0 = off): a build keeps the serving generation's PCA basis, IVF
   * centroids and cells, quantiser and codes, map positions and artist mixtures of unchanged songs when at most this
   * share of rows is new, changed or removed (generation/reuse.ts); with it on, a rebuild reads only the songs the
   * catalogue's change feed lists since the serving generation's mark (generation/snapshot-delta.ts).
   */
  buildReuseMaxChanged: number;
  /**
   * `INDEX_BUILD_REUSE_MAX_DRIFT` (default `DEFAULT_REUSE_MAX_DRIFT`, 0.25; in (0, 10]): a build keeps nothing once the
   * rows placed without training since the lineage's root would pass this share of the root's rows (reuse.ts `reuseLineage`).
   */
  buildReuseMaxDrift: number;
  /**
   * Search by recording clip limits: `RECORDING_MAX_UPLOAD_BYTES` (default 16 MiB), `RECORDING_MAX_CLIP_SECONDS`
   * (default 60), `RECORDING_MIN_CLIP_SECONDS` (default 2); defaults in contracts RECORDING_LIMITS.
   */
  recording: { maxUploadBytes: number; maxClipSeconds: number; minClipSeconds: number };
  /**
   * Where a generation's recording fingerprint postings live: in memory while at most `RECORDING_POSTINGS_RESIDENT_MIB`
   * (default {@link DEFAULT_RECORDING_POSTINGS_RESIDENT_MIB}), else in an unlinked file in `INDEX_VECTOR_DIR` read per
   * query hash (100k songs: ~726 MiB of postings on disk, ~8 MiB of offsets in memory); `RECORDING_MATCH_THREAD=1`
   * runs the matching in a worker thread instead of on the event loop (default off).
   */
  recordingPostings: { residentMiB: number; dir?: string; matchThread?: boolean };
  /** The live library (generation/live): `INDEX_LIVE_LIBRARY`, `INDEX_LIVE_DEBOUNCE_MS` and the drift thresholds `INDEX_LIVE_*`. */
  live: LiveLibrarySettings;
};

/**
 * Index service configuration: connection settings plus the vector store settings
 * (`INDEX_VECTOR_MODE`, `INDEX_VECTOR_DIR`, `INDEX_VECTOR_RESIDENT_MIB`, `INDEX_RERANK_SOURCE`, `INDEX_TABLE_RESIDENT_MIB`, `INDEX_PQ_M`) and the replica heartbeat
 * (`INDEX_REPLICA_HEARTBEAT_MS`); other tunables live in its settings table.
 * @throws IvfInputError (at start) on an unknown mode or an m that does not divide 200
 */
export function loadIndexConfig(env: Record<string, string | undefined> = readEnv()): IndexConfig {
  const replicaHeartbeatMs = env.INDEX_REPLICA_HEARTBEAT_MS ? Number(env.INDEX_REPLICA_HEARTBEAT_MS) : 5000;
  if (!Number.isInteger(replicaHeartbeatMs) || replicaHeartbeatMs < 100 || replicaHeartbeatMs > 600_000) throw new Error(`INDEX_REPLICA_HEARTBEAT_MS must be an integer in [100, 600000], got ${env.INDEX_REPLICA_HEARTBEAT_MS}`);
  const buildReuseMaxChanged = env.INDEX_BUILD_REUSE_MAX_CHANGED ? Number(env.INDEX_BUILD_REUSE_MAX_CHANGED) : DEFAULT_REUSE_MAX_CHANGED;
  if (!Number.isFinite(buildReuseMaxChanged) || buildReuseMaxChanged < 0 || buildReuseMaxChanged > 1) throw new Error(`INDEX_BUILD_REUSE_MAX_CHANGED must be a number in [0, 1], got ${env.INDEX_BUILD_REUSE_MAX_CHANGED}`);
  const buildReuseMaxDrift = env.INDEX_BUILD_REUSE_MAX_DRIFT ? Number(env.INDEX_BUILD_REUSE_MAX_DRIFT) : DEFAULT_REUSE_MAX_DRIFT;
  if (!Number.isFinite(buildReuseMaxDrift) || buildReuseMaxDrift <= 0 || buildReuseMaxDrift > 10) throw new Error(`INDEX_BUILD_REUSE_MAX_DRIFT must be a number in (0, 10], got ${env.INDEX_BUILD_REUSE_MAX_DRIFT}`);
  return { ...loadServiceConfig('index', 'index', env), vectors: vectorSettingsFrom(env), replicaHeartbeatMs, buildReuseMaxChanged, buildReuseMaxDrift, recording: recordingLimitsFrom(env), recordingPostings: recordingPostingsFrom(env), live: liveSettingsFrom(env) };
}

/**
 * Parses `RECORDING_POSTINGS_RESIDENT_MIB` (and takes `INDEX_VECTOR_DIR` as the file's directory) and
 * `RECORDING_MATCH_THREAD` (`1`/`true`: matching in a worker thread; `0`/`false`/unset: on the event loop).
 * @throws Error on a value out of range
 */
export function recordingPostingsFrom(env: Record<string, string | undefined>): IndexConfig['recordingPostings'] {
  const raw = env.RECORDING_POSTINGS_RESIDENT_MIB;
  const residentMiB = raw ? Number(raw) : DEFAULT_RECORDING_POSTINGS_RESIDENT_MIB;
  if (!Number.isFinite(residentMiB) || residentMiB < 0 || residentMiB > 65536) throw new Error(`RECORDING_POSTINGS_RESIDENT_MIB must be a number of MiB in [0, 65536], got ${raw}`);
  const thread = env.RECORDING_MATCH_THREAD ?? '0';
  if (!['0', '1', 'true', 'false'].includes(thread)) throw new Error(`RECORDING_MATCH_THREAD must be 0, 1, true or false, got ${thread}`);
  return { residentMiB, ...(env.INDEX_VECTOR_DIR ? { dir: env.INDEX_VECTOR_DIR } : {}), ...(thread === '1' || thread === 'true' ? { matchThread: true } : {}) };
}

/**
 * Live library settings (defaults in DEFAULT_LIVE_LIBRARY / DEFAULT_DRIFT): `INDEX_LIVE_LIBRARY` on|off, `INDEX_LIVE_DEBOUNCE_MS`
 * (0-600000), `INDEX_LIVE_RECHECK_MS` (100-600000), `INDEX_LIVE_MAX_CELL_IMBALANCE` (>= 1), `INDEX_LIVE_MIN_PROBE_RECALL` (0-1), `INDEX_LIVE_PROBES` (1-10000),
 * `INDEX_LIVE_MAX_GROWTH` (> 0, fraction of the built rows), `INDEX_LIVE_PROBE_EVERY` (0-1, fraction of the built rows appended
 * between two probe-recall measures; 0 = after every batch).
 * @throws Error on a value out of range
 */
export function liveSettingsFrom(env: Record<string, string | undefined>): LiveLibrarySettings {
  const num = (name: string, dflt: number, ok: (x: number) => boolean): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return dflt;
    const x = Number(raw);
    if (!Number.isFinite(x) || !ok(x)) throw new Error(`${name} out of range: ${raw}`);
    return x;
  };
  const flag = (env.INDEX_LIVE_LIBRARY ?? 'on').toLowerCase();
  if (!['on', 'off', 'true', 'false', '1', '0'].includes(flag)) throw new Error(`INDEX_LIVE_LIBRARY must be on or off, got ${env.INDEX_LIVE_LIBRARY}`);
  const d = DEFAULT_LIVE_LIBRARY;
  return {
    enabled: ['on', 'true', '1'].includes(flag),
    debounceMs: num('INDEX_LIVE_DEBOUNCE_MS', d.debounceMs, (x) => Number.isInteger(x) && x >= 0 && x <= 600_000),
    recheckMs: num('INDEX_LIVE_RECHECK_MS', d.recheckMs, (x) => Number.isInteger(x) && x >= 100 && x <= 600_000),
    drift: {
      maxCellImbalance: num('INDEX_LIVE_MAX_CELL_IMBALANCE', d.drift.maxCellImbalance, (x) => x >= 1),
      minProbeRecall: num('INDEX_LIVE_MIN_PROBE_RECALL', d.drift.minProbeRecall, (x) => x >= 0 && x <= 1),
      probes: num('INDEX_LIVE_PROBES', d.drift.probes, (x) => Number.isInteger(x) && x >= 1 && x <= 10_000),
      maxGrowth: num('INDEX_LIVE_MAX_GROWTH', d.drift.maxGrowth, (x) => x > 0),
      probeEvery: num('INDEX_LIVE_PROBE_EVERY', d.drift.probeEvery, (x) => x >= 0 && x <= 1),
    },
  };
}

/** Parses the clip limits of search by recording (see IndexConfig.recording). @throws Error on a value out of range */
export function recordingLimitsFrom(env: Record<string, string | undefined>): IndexConfig['recording'] {
  const num = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    const v = raw ? Number(raw) : fallback;
    if (!Number.isFinite(v) || v < min || v > max) throw new Error(`${name} must be a number in [${min}, ${max}], got ${raw}`);
    return v;
  };
  const maxClipSeconds = num('RECORDING_MAX_CLIP_SECONDS', RECORDING_LIMITS.maxClipSeconds, 5, 600);
  return {
    maxUploadBytes: Math.floor(num('RECORDING_MAX_UPLOAD_BYTES', RECORDING_LIMITS.maxUploadBytes, 64 * 1024, 256 * 1024 * 1024)),
    maxClipSeconds,
    minClipSeconds: num('RECORDING_MIN_CLIP_SECONDS', RECORDING_LIMITS.minClipSeconds, 0.5, maxClipSeconds),
  };
}

/** Parses the vector store settings from the environment. */
export function vectorSettingsFrom(env: Record<string, string | undefined>): VectorStoreSettings {
  const mode = parseVectorMode(env.INDEX_VECTOR_MODE, 'int8');
  const pqM = env.INDEX_PQ_M ? Number(env.INDEX_PQ_M) : DEFAULT_PQ_M;
  if (!Number.isInteger(pqM) || pqM < 1 || 200 % pqM !== 0) throw new Error(`INDEX_PQ_M must be a divisor of 200, got ${env.INDEX_PQ_M}`);
  const buildWorkers = env.INDEX_BUILD_WORKERS ? Number(env.INDEX_BUILD_WORKERS) : 2;
  if (!Number.isInteger(buildWorkers) || buildWorkers < 0 || buildWorkers > 64) throw new Error(`INDEX_BUILD_WORKERS must be an integer in [0, 64], got ${env.INDEX_BUILD_WORKERS}`);
  const residentMiB = env.INDEX_VECTOR_RESIDENT_MIB ? Number(env.INDEX_VECTOR_RESIDENT_MIB) : DEFAULT_RESIDENT_MIB;
  if (!Number.isFinite(residentMiB) || residentMiB < 0 || residentMiB > 65536) throw new Error(`INDEX_VECTOR_RESIDENT_MIB must be a number of MiB in [0, 65536], got ${env.INDEX_VECTOR_RESIDENT_MIB}`);
  const tableResidentMiB = env.INDEX_TABLE_RESIDENT_MIB ? Number(env.INDEX_TABLE_RESIDENT_MIB) : DEFAULT_TABLE_RESIDENT_MIB;
  if (!Number.isFinite(tableResidentMiB) || tableResidentMiB < 0 || tableResidentMiB > 65536) throw new Error(`INDEX_TABLE_RESIDENT_MIB must be a number of MiB in [0, 65536], got ${env.INDEX_TABLE_RESIDENT_MIB}`);
  const rerank = parseRerankSource(env.INDEX_RERANK_SOURCE, 'codes');
  return { mode, pqM, buildWorkers, residentMiB, rerank, tableResidentMiB, ...(env.INDEX_VECTOR_DIR ? { dir: env.INDEX_VECTOR_DIR } : {}) };
}
