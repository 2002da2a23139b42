import { loadServiceConfig, readEnv, type ServiceConfig } from '@polyphony/platform';
import { LEGACY_MEDIA_KEYS } from './domain/config.service';

/** General (non-media) keys imported from the environment into app_config on first start. */
export const GENERAL_CONFIG_KEYS = ['TZ', 'PLEX_TV_URL', 'CLEANING_CATALOGUE', 'DUPLICATE_DISTANCE_THRESHOLD_COSINE', 'DURATION_TOLERANCE_SECONDS', 'CHROMAPRINT_GATE_ENABLED', 'CATALOGUE_ID_SCHEME_VERSION'];

export interface RegistryConfig extends ServiceConfig {
  /** Raw environment subset for first-start seeding and the legacy migration. */
  seedEnv: Record<string, string | undefined>;
}

/** Registry configuration: connection settings plus the first-start seed values. */
export function loadRegistryConfig(env: Record<string, string | undefined> = readEnv()): RegistryConfig {
  const base = loadServiceConfig('registry', 'registry', env);
  const seedEnv: Record<string, string | undefined> = {};
  for (const k of [...GENERAL_CONFIG_KEYS, ...LEGACY_MEDIA_KEYS]) seedEnv[k] = env[k];
  return { ...base, seedEnv };
}
