import { ConfigError, loadServiceConfig, readEnv, type ServiceConfig } from '@polyphony/platform';
import { CATALOGUE_SETTING_KEYS, type CatalogueSettingKey, parseCatalogueSettings } from './settings';

export interface CatalogueConfig extends ServiceConfig {
  /** Environment values of the tunables, imported into catalogue.settings on first start only. */
  seedEnv: Partial<Record<CatalogueSettingKey, string>>;
  /** Trailing debounce of catalogue.mapping.changed.v1 per server, ms (env MAPPING_CHANGED_DEBOUNCE_MS, default 2000). */
  mappingChangedDebounceMs: number;
  /** Score rows per relabel chunk (env RELABEL_CHUNK_SIZE, default 5000). */
  relabelChunkSize: number;
  /** Concurrent chunk reads of the relabel (env RELABEL_CONCURRENCY, default 2). */
  relabelConcurrency: number;
  /** Local songs per sweep matching chunk (env SWEEP_CHUNK_SIZE, default 20000: spec "Limits"). */
  sweepChunkSize: number;
  /** Songs per chunk of the refresh/prune pass over a server's mapping rows (env SWEEP_REFRESH_CHUNK_SIZE, default 5000). */
  sweepRefreshChunkSize: number;
  /** Longest wait for the index rebuild that ends a cleaning run, ms (env INDEX_REBUILD_TIMEOUT_MS, default 1 h). */
  indexRebuildTimeoutMs: number;
  /** Poll interval of the index build status while a cleaning waits for it, ms (env INDEX_REBUILD_POLL_MS, default 1000). */
  indexRebuildPollMs: number;
  /** Period of the queue re-check that picks up batch tasks queued by another replica, ms (env BATCH_RECHECK_MS, default 30000). */
  batchRecheckMs: number;
  /** Shortest interval between two progress snapshots of a running batch task on the task board, ms (env TASK_PROGRESS_INTERVAL_MS, default 1000). */
  taskProgressIntervalMs: number;
}

function intEnv(env: Record<string, string | undefined>, key: string, dflt: number, min: number, max: number): number {
  const v = env[key];
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`Invalid configuration: ${key}: expected an integer in ${min}..${max}, got "${v}"`);
  return n;
}

/**
 * Catalogue service configuration: connection settings, the first-start seed values of its tunables
 * (validated here so a typo fails fast), and process-level knobs.
 * @throws ConfigError on an invalid value.
 */
export function loadCatalogueConfig(env: Record<string, string | undefined> = readEnv()): CatalogueConfig {
  const base = loadServiceConfig('catalogue-identity', 'catalogue', env);
  const seedEnv: Partial<Record<CatalogueSettingKey, string>> = {};
  for (const k of CATALOGUE_SETTING_KEYS) if (env[k] !== undefined) seedEnv[k] = env[k];
  const { problems } = parseCatalogueSettings(seedEnv);
  if (problems.length > 0) throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  return {
    ...base,
    seedEnv,
    mappingChangedDebounceMs: intEnv(env, 'MAPPING_CHANGED_DEBOUNCE_MS', 2000, 0, 600_000),
    relabelChunkSize: intEnv(env, 'RELABEL_CHUNK_SIZE', 5000, 10, 100_000),
    relabelConcurrency: intEnv(env, 'RELABEL_CONCURRENCY', 2, 1, 16),
    sweepChunkSize: intEnv(env, 'SWEEP_CHUNK_SIZE', 20_000, 1, 200_000),
    sweepRefreshChunkSize: intEnv(env, 'SWEEP_REFRESH_CHUNK_SIZE', 5000, 1, 200_000),
    indexRebuildTimeoutMs: intEnv(env, 'INDEX_REBUILD_TIMEOUT_MS', 3_600_000, 1000, 86_400_000),
    indexRebuildPollMs: intEnv(env, 'INDEX_REBUILD_POLL_MS', 1000, 10, 60_000),
    batchRecheckMs: intEnv(env, 'BATCH_RECHECK_MS', 30_000, 50, 3_600_000),
    taskProgressIntervalMs: intEnv(env, 'TASK_PROGRESS_INTERVAL_MS', 1000, 0, 60_000),
  };
}
