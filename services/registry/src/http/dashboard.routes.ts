import { semanticRoutes } from '@polyphony/contracts';
import { asyncRoute, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { DashboardService } from '../domain/dashboard.service';

/** GET /api/dashboard/summary (any authenticated caller): see DashboardService; always 200 (missing parts are listed in `unavailable`). */
export function dashboardRoutes(dashboard: DashboardService): RouteHandlers {
  const r = routeHandlers();
  r.on(semanticRoutes.dashboardSummary,
    asyncRoute(async (_req, res) => {
      res.status(200).json(await dashboard.summary());
    }),
  );
  return r;
}
