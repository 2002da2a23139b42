import type { Request } from 'express';
import { albumRoutes as routes } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { IndexState } from '../core/generation';
import { requestScope, type ScopeDeps } from '../core/scope';
import type { AlbumService } from './album.service';

/**
 * Album creation routes (shapes: shared/contracts/src/album.ts): the body is parsed by the route's schema
 * (400 for a bad seed before this runs); the scope is the live generation and the server the gateway resolved.
 */
export function albumRoutesRouter(state: IndexState, scopeDeps: ScopeDeps, albums: AlbumService): RouteHandlers {
  const r = routeHandlers();
  const scopeOf = (req: Request) => requestScope(state.current(), req, scopeDeps);
  r.json(routes.generate, async ({ body }, req) => albums.generate((await scopeOf(req)), body));
  r.json(routes.weeklyRun, () => albums.albumOfTheWeek());
  return r;
}
