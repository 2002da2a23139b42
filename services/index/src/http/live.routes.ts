import { api } from '@polyphony/contracts';
import { asyncRoute, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { IndexState } from '../domain/generation';
import type { GenerationRepository } from '../store/generation.repository';

/**
 * GET /internal/index/live (service to service; never routed by the gateway): the generation this
 * replica answers queries from, `{ generation, items, buildStartedAt }`. `buildStartedAt` (ISO time,
 * database clock) is when that generation's build began: every song stored in the catalogue before
 * that instant is queryable. Batch tasks (analysis) end SUCCESS only once it is later than their
 * rebuild request. `generation` 0 means nothing is built yet.
 */
export function liveGenerationRoutes(state: IndexState, generations: GenerationRepository): RouteHandlers {
  const r = routeHandlers();
  r.on(api.internal.indexLive,
    asyncRoute(async (_req, res) => {
      const g = state.current();
      const startedAt = g.generation > 0 ? await generations.buildStartedAt(g.generation) : undefined;
      res.json({ generation: g.generation, items: g.index.size, buildStartedAt: startedAt?.toISOString() ?? null });
    }),
  );
  return r;
}
