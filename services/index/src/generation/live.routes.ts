import { api } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { LiveGenerationService } from './live-generation.service';

/**
 * GET /internal/index/live (service to service; never routed by the gateway), shape `IndexLive`:
 * the generation this replica answers queries from (`generation`, `items`, `buildStartedAt`) and the
 * report of every replica (`replicas`, from their heartbeat rows; `live` = heart-beat within
 * `liveWithinMs`). `buildStartedAt` (ISO time, database clock) is when a generation's build began:
 * every song stored in the catalogue before that instant is queryable there. Batch tasks (analysis)
 * end SUCCESS only once every live replica serves a generation built after their rebuild request.
 * `generation` 0 means nothing is built yet (LiveGenerationService).
 */
export function liveGenerationRoutes(live: LiveGenerationService): RouteHandlers {
  return routeHandlers().json(api.internal.indexLive, () => live.live());
}
