import { loadServiceConfig, readEnv, type ServiceConfig } from '@polyphony/platform';

export type AnalysisConfig = ServiceConfig;

/** Analysis service configuration: connection settings only (tunables live in its settings table). */
export function loadAnalysisConfig(env: Record<string, string | undefined> = readEnv()): AnalysisConfig {
  return loadServiceConfig('analysis-worker', 'analysis', env);
}
