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
  };
}
