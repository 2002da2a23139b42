/**
 * Text search, SemGrove and mood endpoints of the index service (shapes: shared/contracts/src/semantic.ts):
 * POST /api/clap/search, POST /api/clap/warmup, GET /api/clap/top_queries, POST /api/sem_grove/search,
 * GET /api/mood_centroids, and GET /internal/stats (dashboard numbers). Bad input -> 400; unknown seed ->
 * 404; no tagged song -> 503 tags_unavailable with the reason.
 */
import type { Request } from 'express';
import { CLAP_DEFAULT_LIMIT, SEM_GROVE_DEFAULT_LIMIT, semanticRoutes as routes, api } from '@polyphony/contracts';
import { asyncRoute, parseOrThrow, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { IndexState } from '../domain/generation';
import { RequestScope, type ScopeDeps } from '../domain/scope';
import type { SemanticService } from '../domain/semantic/semantic.service';

export function semanticRoutes(state: IndexState, scopeDeps: ScopeDeps, semantic: SemanticService): RouteHandlers {
  const r = routeHandlers();
  const scopeOf = (req: Request) => new RequestScope(state.current(), req.identity?.serverId, scopeDeps);

  r.on(routes.clapSearch,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(routes.clapSearch.body, req.body ?? {}, 'body');
      res.status(200).json(await semantic.textSearch(scopeOf(req), body.query, body.limit ?? CLAP_DEFAULT_LIMIT));
    }),
  );
  r.on(routes.clapWarmup,
    asyncRoute(async (_req, res) => {
      res.status(200).json(await semantic.warmup());
    }),
  );
  r.on(routes.clapTopQueries,
    asyncRoute(async (_req, res) => {
      res.status(200).json({ queries: await semantic.topQueries() });
    }),
  );
  r.on(routes.semGrove,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(routes.semGrove.body, req.body ?? {}, 'body');
      res.status(200).json(await semantic.semGrove(scopeOf(req), body.item_id, body.limit ?? SEM_GROVE_DEFAULT_LIMIT));
    }),
  );
  r.on(routes.moodCentroids,
    asyncRoute(async (_req, res) => {
      res.status(200).json(await semantic.moodCentroids(state.current()));
    }),
  );
  r.on(api.internal.indexStats,
    asyncRoute(async (_req, res) => {
      res.status(200).json(await semantic.stats());
    }),
  );
  return r;
}
