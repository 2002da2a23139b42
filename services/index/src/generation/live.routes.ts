import { api, type IndexLive } from '@polyphony/contracts';
import { asyncRoute, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { IndexState } from '../core/generation';
import type { GenerationRepository } from './generation.repository';
import type { ReplicaRepository } from './replica.repository';

/**
 * GET /internal/index/live (service to service; never routed by the gateway), shape `IndexLive`:
 * the generation this replica answers queries from (`generation`, `items`, `buildStartedAt`) and the
 * report of every replica (`replicas`, from their heartbeat rows; `live` = heart-beat within
 * `liveWithinMs`). `buildStartedAt` (ISO time, database clock) is when a generation's build began:
 * every song stored in the catalogue before that instant is queryable there. Batch tasks (analysis)
 * end SUCCESS only once every live replica serves a generation built after their rebuild request.
 * `generation` 0 means nothing is built yet.
 */
export function liveGenerationRoutes(state: IndexState, generations: GenerationRepository, replicas: ReplicaRepository, liveWithinMs: number): RouteHandlers {
  const r = routeHandlers();
  r.on(api.internal.indexLive,
    asyncRoute(async (_req, res) => {
      const g = state.current();
      const startedAt = g.generation > 0 ? await generations.buildStartedAt(g.generation) : undefined;
      const reports = await replicas.list(liveWithinMs);
      const body: IndexLive = {
        generation: g.generation,
        items: g.index.size,
        buildStartedAt: startedAt?.toISOString() ?? null,
        replicas: reports.map((x) => ({ replica: x.replicaId, generation: x.generation, items: x.items, buildStartedAt: x.buildStartedAt?.toISOString() ?? null, heartbeatAt: x.heartbeatAt.toISOString(), live: x.live })),
        liveWithinMs,
      };
      res.json(body);
    }),
  );
  return r;
}
