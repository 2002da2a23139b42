import { semanticRoutes } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { DashboardService } from '../domain/dashboard.service';

/** GET /api/dashboard/summary (any authenticated caller): see DashboardService; always 200 (missing parts are listed in `unavailable`). */
export function dashboardRoutes(dashboard: DashboardService): RouteHandlers {
  const r = routeHandlers();
  r.json(semanticRoutes.dashboardSummary, () => dashboard.summary());
  return r;
}
