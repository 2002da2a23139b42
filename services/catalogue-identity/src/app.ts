import { ServiceRuntime, type RuntimeDeps } from '@polyphony/platform';
import type { CatalogueConfig } from './config';
import { catalogueMigrations } from './store/migrations';

export type CatalogueDeps = RuntimeDeps;

/** Composition root of the catalogue-identity service. */
export function buildCatalogue(config: CatalogueConfig, deps: CatalogueDeps = {}) {
  const rt = new ServiceRuntime(config, catalogueMigrations, deps);
  rt.finishRoutes();
  return { name: 'catalogue-identity', runtime: rt, http: rt.app, start: () => rt.start(), stop: () => rt.stop(), listen: (port?: number, host?: string) => rt.listen(port, host) };
}
export type CatalogueService = ReturnType<typeof buildCatalogue>;
