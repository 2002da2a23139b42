/**
 * Text search, SemGrove and mood endpoints of the index service (shapes: shared/contracts/src/semantic.ts):
 * POST /api/clap/search, POST /api/clap/warmup, GET /api/clap/top_queries, POST /api/sem_grove/search,
 * GET /api/mood_centroids, and GET /internal/stats (dashboard numbers). Bad input -> 400; unknown seed ->
 * 404; no tagged song -> 503 tags_unavailable with the reason.
 */
import { Router, type Request } from 'express';
import { CLAP_DEFAULT_LIMIT, SEM_GROVE_DEFAULT_LIMIT, semanticRoutes as routes } from '@polyphony/contracts';
import { asyncRoute, parseOrThrow } from '@polyphony/platform';
import type { IndexState } from '../domain/generation';
import { RequestScope, type ScopeDeps } from '../domain/scope';
import type { SemanticService } from '../domain/semantic/semantic.service';

export function semanticRoutes(state: IndexState, scopeDeps: ScopeDeps, semantic: SemanticService): Router {
  const r = Router();
  const scopeOf = (req: Request) => new RequestScope(state.current(), req.identity?.serverId, scopeDeps);

  r.post(
    routes.clapSearch.path,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(routes.clapSearch.body, req.body ?? {}, 'body');
      res.status(200).json(await semantic.textSearch(scopeOf(req), body.query, body.limit ?? CLAP_DEFAULT_LIMIT));
    }),
  );
  r.post(
    routes.clapWarmup.path,
    asyncRoute(async (_req, res) => {
      res.status(200).json(await semantic.warmup());
    }),
  );
  r.get(
    routes.clapTopQueries.path,
    asyncRoute(async (_req, res) => {
      res.status(200).json({ queries: await semantic.topQueries() });
    }),
  );
  r.post(
    routes.semGrove.path,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(routes.semGrove.body, req.body ?? {}, 'body');
      res.status(200).json(await semantic.semGrove(scopeOf(req), body.item_id, body.limit ?? SEM_GROVE_DEFAULT_LIMIT));
    }),
  );
  r.get(
    routes.moodCentroids.path,
    asyncRoute(async (_req, res) => {
      res.status(200).json(await semantic.moodCentroids(state.current()));
    }),
  );
  r.get(
    '/internal/stats',
    asyncRoute(async (_req, res) => {
      res.status(200).json(await semantic.stats());
    }),
  );
  return r;
}
