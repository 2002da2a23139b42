import { ServiceRuntime, type RuntimeDeps } from '@polyphony/platform';
import type { AnalysisConfig } from './config';
import { analysisMigrations } from './store/migrations';

export type AnalysisDeps = RuntimeDeps;

/** Composition root of the analysis-worker service. */
export function buildAnalysis(config: AnalysisConfig, deps: AnalysisDeps = {}) {
  const rt = new ServiceRuntime(config, analysisMigrations, deps);
  rt.finishRoutes();
  return { name: 'analysis-worker', runtime: rt, http: rt.app, start: () => rt.start(), stop: () => rt.stop(), listen: (port?: number, host?: string) => rt.listen(port, host) };
}
export type AnalysisService = ReturnType<typeof buildAnalysis>;
