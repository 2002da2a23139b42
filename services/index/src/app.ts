import { ServiceRuntime, type RuntimeDeps } from '@polyphony/platform';
import type { IndexConfig } from './config';
import { indexMigrations } from './store/migrations';

export type IndexDeps = RuntimeDeps;

/** Composition root of the index service. */
export function buildIndex(config: IndexConfig, deps: IndexDeps = {}) {
  const rt = new ServiceRuntime(config, indexMigrations, deps);
  rt.finishRoutes();
  return { name: 'index', runtime: rt, http: rt.app, start: () => rt.start(), stop: () => rt.stop(), listen: (port?: number, host?: string) => rt.listen(port, host) };
}
export type IndexService = ReturnType<typeof buildIndex>;
