/**
 * Text search, SemGrove and mood endpoints of the index service (shapes: shared/contracts/src/semantic.ts):
 * POST /api/clap/search (steerable), GET /api/clap/concepts, POST /api/clap/warmup, GET /api/clap/top_queries, POST /api/sem_grove/search,
 * GET /api/mood_centroids, and GET /internal/stats (dashboard numbers). Bad input -> 400; unknown seed ->
 * 404; no tagged song -> 503 tags_unavailable with the reason.
 */
import type { Request } from 'express';
import { CLAP_DEFAULT_LIMIT, SEM_GROVE_DEFAULT_LIMIT, semanticRoutes as routes, api } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { IndexState } from '../core/generation';
import { requestScope, type ScopeDeps } from '../core/scope';
import type { SemanticService } from './semantic.service';

export function semanticRoutes(state: IndexState, scopeDeps: ScopeDeps, semantic: SemanticService): RouteHandlers {
  const r = routeHandlers();
  const scopeOf = (req: Request) => requestScope(state.current(), req, scopeDeps);

  r.json(routes.clapSearch, async ({ body }, req) => semantic.textSearch((await scopeOf(req)), body.query, body.limit ?? CLAP_DEFAULT_LIMIT, body.steering ?? []));
  r.json(routes.clapConcepts, async (_input, req) => semantic.concepts((await scopeOf(req))));
  r.json(routes.clapWarmup, () => semantic.warmup());
  r.json(routes.clapTopQueries, async () => ({ queries: await semantic.topQueries() }));
  r.json(routes.semGrove, async ({ body }, req) => semantic.semGrove((await scopeOf(req)), body.item_id, body.limit ?? SEM_GROVE_DEFAULT_LIMIT));
  r.json(routes.moodCentroids, (_input, req) => {
    const gen = state.current();
    req.res?.setHeader('X-Index-Generation', String(gen.generation));
    return semantic.moodCentroids(gen);
  });
  r.json(api.internal.indexStats, () => semantic.stats());
  return r;
}
