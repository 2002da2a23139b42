import { api, semanticRoutes } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { BrowseService } from '../domain/browse.service';
import type { DashboardService } from '../domain/dashboard.service';

/**
 * GET /api/dashboard/summary (any authenticated caller): see DashboardService; always 200 (missing parts are listed in
 * `unavailable`). GET /api/dashboard/browse: see BrowseService (400 unknown server or duplicates without one).
 */
export function dashboardRoutes(dashboard: DashboardService, browse: BrowseService): RouteHandlers {
  const r = routeHandlers();
  r.json(semanticRoutes.dashboardSummary, () => dashboard.summary());
  r.json(api.browse.browse, ({ query }) => browse.browse(query));
  return r;
}
