import { playlistRoutes as defs, type z, type TaskStartResponse } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import { clusteringParams, type ClusteringDefaults } from '../domain/clustering-params';
import { CLUSTERING_TASK_TYPE, type ClusteringService } from '../domain/clustering.service';

/**
 * POST /api/clustering/start (admin or bearer). JSON body; `{}` and an empty body are accepted, the
 * reference's other parameters are tolerated; num_clusters/k, num_clusters_min/max, max/min songs per
 * playlist and top_n_playlists are validated (400 when out of range). -> 202 {task_id, task_type:
 * 'main_clustering', status:'NEW'}; 409 while a run is live. Left-out bounds come from the admin settings (`defaults`). Progress is on the registry's task board.
 */
export function clusteringRoutes(service: ClusteringService, defaults: () => Promise<ClusteringDefaults>): RouteHandlers {
  const r = routeHandlers();
  r.json(defs.clusteringStart, async ({ body }) => {
    const run = await service.start(clusteringParams(body, await defaults()));
    return { task_id: run.id, task_type: CLUSTERING_TASK_TYPE, status: 'NEW' } satisfies z.infer<typeof TaskStartResponse>;
  });
  return r;
}
