/**
 * Search by recording endpoints of the index service (shapes: shared/contracts/src/recording.ts):
 * POST /api/recording_search/search, POST /api/recording_search/by_track, POST /api/recording_search/warmup,
 * GET /api/recording_search/status.
 *
 * Placeholder while the fingerprint index is being wired (issue 33): every route answers 503 `index_not_ready`
 * in the error envelope, the documented answer while the index is not loaded.
 */
import { recordingRoutes as routes } from '@polyphony/contracts';
import { AppError, routeHandlers, type RouteHandlers } from '@polyphony/platform';

export function recordingRoutes(): RouteHandlers {
  const r = routeHandlers();
  const notReady = () => {
    throw new AppError('index_not_ready', 'The recording fingerprint index is not loaded yet', 503);
  };
  r.json(routes.search, notReady);
  r.json(routes.byTrack, notReady);
  r.json(routes.warmup, notReady);
  r.json(routes.status, notReady);
  return r;
}
