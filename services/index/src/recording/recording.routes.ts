/**
 * Search by recording endpoints of the index service (shapes: shared/contracts/src/recording.ts):
 * - POST /api/recording_search/search: multipart `clip` (+ `n_results`, default 100) -> `{clip_seconds,
 *   clip_level_db, count, results}`; 400 `bad_clip` / `clip_too_short` / `clip_silent`, 413 `payload_too_large` /
 *   `clip_too_long`, 415 not multipart, 503 `index_not_ready`, 503 `match_unavailable` (with RECORDING_MATCH_THREAD=1:
 *   the match thread stopped during the query; the next request starts a new one).
 * - POST /api/recording_search/by_track `{item_id, n_results}`: songs sharing material with a stored song.
 * - POST /api/recording_search/warmup: loads the live generation's fingerprint index, answers its status.
 * - GET /api/recording_search/status: the fingerprint index's readiness on this replica.
 * Every answer is for the server the gateway resolved (availability mask, provider ids).
 */
import type { Request } from 'express';
import { RECORDING_DEFAULT_RESULTS, RECORDING_MAX_RESULTS, recordingRoutes as routes, type RecordingSearchResponse } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { IndexState } from '../core/generation';
import { requestScope, type ScopeDeps } from '../core/scope';
import { decodeClip, formInt, receiveClip } from './clip';
import type { RecordingIndexService } from './recording-index.service';

export function recordingRoutes(state: IndexState, scopeDeps: ScopeDeps, recording: RecordingIndexService): RouteHandlers {
  const r = routeHandlers();
  const scopeOf = (req: Request) => requestScope(state.current(), req, scopeDeps);

  r.json(routes.search, async ({ query }, req): Promise<RecordingSearchResponse> => {
    const scope = (await scopeOf(req));
    // Not ready: refused before the upload is read (and a load is started).
    recording.assertReady(scope);
    const clip = await receiveClip(req, recording.limits);
    try {
      const n = formInt(clip.fields.n_results, 'n_results', 1, RECORDING_MAX_RESULTS) ?? query.n_results ?? RECORDING_DEFAULT_RESULTS;
      const decoded = await decodeClip(clip.file, recording.limits);
      const results = await recording.search(scope, decoded.pcm, n);
      return { clip_seconds: Math.round(decoded.seconds * 100) / 100, clip_level_db: Math.round(decoded.levelDb * 10) / 10, count: results.length, results };
    } finally {
      await clip.cleanup();
    }
  });
  r.json(routes.byTrack, async ({ body }, req) => {
    const results = await recording.byTrack((await scopeOf(req)), body.item_id, body.n_results ?? RECORDING_DEFAULT_RESULTS);
    return { item_id: body.item_id, count: results.length, results };
  });
  r.json(routes.warmup, async (_input, req) => recording.warmup((await scopeOf(req))));
  r.json(routes.status, async (_input, req) => recording.status((await scopeOf(req))));
  return r;
}
