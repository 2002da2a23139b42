import { api } from '@polyphony/contracts';
import { NotFoundError, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { AnalysisRunService } from '../domain/analysis-run.service';
import type { ChangeWatchService } from '../domain/change-watch.service';
import type { ExclusionService } from '../domain/exclusions.service';
import type { LyricsBackfillService } from '../domain/lyrics-backfill.service';
import type { LearnedModel } from '../domain/musicnn/model-state';
import type { ReferenceVectorService } from '../domain/reference-vector.service';

/**
 * POST /api/analysis/start (admin or bearer; JSON body AnalysisStartRequest, `{}` accepted:
 * `num_recent_albums` (>= 0) and `top_n_moods` (1-50) override the NUM_RECENT_ALBUMS / TOP_N_MOODS
 * settings for this run; other fields are tolerated; a wrong type is 400) -> 202 {task_id, task_type,
 * status}; 409 while a run is live. GET /api/analysis/exclusions lists files excluded as undecodable/unreadable.
 * POST /api/analysis/lyrics_backfill (admin) -> 202 {task_id, task_type: 'lyrics_backfill', status: 'NEW'}:
 * looks up lyrics of songs analyzed before lyrics were kept (resumable; progress on the task board);
 * 409 while one runs. An analysis run always ends: cancel ends it in the database, a dead
 * coordinator's lease expires and another replica finishes it.
 * GET /internal/analysis/stats (services) -> the dashboard's analysis numbers (RunRepository.stats).
 * GET /internal/analysis/run (services) -> {live, task_id}: whether a full analysis run is live (the index's live
 * library asks before it requests the first build of an empty index).
 * GET /api/analysis/model (any user) -> 200 ModelStatus: whether the MusiCNN model is loaded
 * (status ready | missing | error | loading, model id, backend, patches per track) and, when it is
 * not, the reason and how to install it.
 * POST /internal/change-watch/:serverId/nudge {token} (the gateway's public webhook POST /api/hooks/servers/:id/changed)
 * -> 202 {accepted: true}: the server's change check runs at the next tick of any replica; 401 without a valid push
 * token, 404 unknown server, 409 change detection off.
 * POST /internal/analysis/reference-vector {serverId, providerId} (the catalogue's import) -> {vector: 200 numbers,
 * patches, precision}: the reference implementation's MusiCNN vector of that file (ReferenceVectorService); 400 unknown
 * server, 502 download failed, 422 undecodable, 503 model not installed.
 */
export function analysisRoutes(
  service: AnalysisRunService,
  exclusions: ExclusionService,
  backfill?: LyricsBackfillService,
  learned?: LearnedModel,
  watch?: ChangeWatchService,
  referenceVectors?: ReferenceVectorService,
): RouteHandlers {
  const r = routeHandlers();
  r.json(api.internal.referenceVector, ({ body }) => {
    if (!referenceVectors) throw new NotFoundError('No MusiCNN analysis in this deployment');
    return referenceVectors.compute(body.serverId, body.providerId);
  });
  r.json(api.internal.changeNudge, async ({ params: { serverId }, body }) => {
    if (!watch) throw new NotFoundError('No change detection in this deployment');
    await watch.nudge(serverId, body.token);
    return { accepted: true };
  });
  r.json(api.tasks.analysisModel, () => {
    if (!learned) throw new NotFoundError('No learned model in this deployment');
    return learned.status();
  });
  r.json(api.tasks.analysisStart, async ({ body }) => {
    const run = await service.start({ numRecentAlbums: body.num_recent_albums, topNMoods: body.top_n_moods });
    return { task_id: run.id, task_type: 'main_analysis', status: 'NEW' };
  });
  r.json(api.tasks.lyricsBackfill, () => {
    if (!backfill) throw new NotFoundError('No lyrics backfill in this deployment');
    const { taskId } = backfill.start();
    return { task_id: taskId, task_type: 'lyrics_backfill', status: 'NEW' };
  });
  r.json(api.tasks.analysisExclusions, async ({ query }, req) => ({ exclusions: await exclusions.list(req.identity?.serverId, query.all !== undefined) }));
  r.json(api.internal.analysisStats, () => exclusions.stats());
  r.json(api.internal.analysisRunLive, async () => {
    const run = await service.liveRun();
    return { live: run !== undefined, task_id: run?.id ?? null };
  });
  r.json(api.browse.unanalyzable, ({ query }) => exclusions.page(query));
  return r;
}
