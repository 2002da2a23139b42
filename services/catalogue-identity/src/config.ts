import { loadServiceConfig, readEnv, type ServiceConfig } from '@polyphony/platform';

export type CatalogueConfig = ServiceConfig;

/** Catalogue service configuration: connection settings only (tunables live in its settings table). */
export function loadCatalogueConfig(env: Record<string, string | undefined> = readEnv()): CatalogueConfig {
  return loadServiceConfig('catalogue-identity', 'catalogue', env);
}
