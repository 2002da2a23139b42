import { api } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { BrowseService } from '../domain/browse.service';

/** GET /internal/browse (the registry's GET /api/dashboard/browse for songs, artists and albums): see BrowseService. */
export function browseRoutes(browse: BrowseService): RouteHandlers {
  const r = routeHandlers();
  r.json(api.browse.catalogueBrowse, ({ query }) => browse.page(query));
  return r;
}
