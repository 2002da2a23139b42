/**
 * Hyperbolic exploration endpoints of the index service (shapes: shared/contracts/src/hyperbolic.ts):
 * POST /api/hyperbolic/similar, POST /api/hyperbolic/journey, GET /api/hyperbolic/tree, GET /api/hyperbolic/points,
 * POST /api/hyperbolic/warmup, GET /api/hyperbolic/warmup/status, GET /api/hyperbolic/cache_status.
 * Bad input (schema, same song at both ends of a journey, unknown tree node) -> 400; unknown seed or one not on
 * the selected server -> 404.
 */
import type { Request } from 'express';
import { hyperbolicRoutes as routes } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { IndexState } from '../core/generation';
import { requestScope, type ScopeDeps } from '../core/scope';
import type { HyperbolicService } from './hyperbolic.service';

export function hyperbolicRoutes(state: IndexState, scopeDeps: ScopeDeps, hyperbolic: HyperbolicService): RouteHandlers {
  const r = routeHandlers();
  const scopeOf = (req: Request) => requestScope(state.current(), req, scopeDeps);
  r.json(routes.similar, async ({ body }, req) => hyperbolic.similar((await scopeOf(req)), body));
  r.json(routes.journey, async ({ body }, req) => hyperbolic.journey((await scopeOf(req)), body));
  r.json(routes.tree, async ({ query }, req) => hyperbolic.tree((await scopeOf(req)), query.node_id));
  r.json(routes.points, async ({ query }, req) => hyperbolic.points((await scopeOf(req)), query.n));
  r.json(routes.warmup, () => hyperbolic.warmup());
  r.json(routes.warmupStatus, () => hyperbolic.warmupStatus());
  r.json(routes.cacheStatus, async (_input, req) => hyperbolic.cacheStatus((await scopeOf(req))));
  return r;
}
