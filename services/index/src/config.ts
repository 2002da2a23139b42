import { loadServiceConfig, readEnv, type ServiceConfig } from '@polyphony/platform';

export type IndexConfig = ServiceConfig;

/** Index service configuration: connection settings only (tunables live in its settings table). */
export function loadIndexConfig(env: Record<string, string | undefined> = readEnv()): IndexConfig {
  return loadServiceConfig('index', 'index', env);
}
