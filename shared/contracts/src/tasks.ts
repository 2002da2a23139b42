import { ConsumerQueues } from './events';
import { defineRoute } from './openapi';
import { z } from './zod';

/** Task states as existing plugins read them (`status`), besides our own `state`. */
export const TaskStatusDto = z
  .object({
    task_id: z.string(),
    task_type: z.string(),
    state: z.string(),
    status: z.string(),
    status_message: z.string(),
    progress: z.number(),
    running_time_seconds: z.number(),
    details: z.record(z.unknown()),
  })
  .openapi('TaskStatus');

/** Body of POST /api/cleaning/start: `{}` follows the CLEANING_CATALOGUE setting; `clean_catalogue` decides orphan deletion for this run. */
export const CleaningStartRequest = z
  .object({ clean_catalogue: z.boolean().optional().openapi({ description: 'Delete orphans (songs mapped on no server) in this run; absent = the CLEANING_CATALOGUE setting. Refused anyway unless every server was read completely and orphans are fewer than half the catalogue.' }) })
  .passthrough()
  .openapi('CleaningStartRequest');
export type CleaningStartRequest = z.infer<typeof CleaningStartRequest>;

/**
 * Body of POST /api/analysis/start (reference `{num_recent_albums?, top_n_moods?}`): per-run overrides of
 * the NUM_RECENT_ALBUMS and TOP_N_MOODS settings; absent = the setting. Other fields are tolerated.
 * Integers given as numeric strings (HTML forms) are accepted.
 */
export const AnalysisStartRequest = z
  .object({
    num_recent_albums: z.coerce.number().int().min(0).max(1_000_000).optional().openapi({ description: 'Analyze only the N most recently added albums of each server (0 = everything)' }),
    top_n_moods: z.coerce.number().int().min(1).max(50).optional().openapi({ description: 'MSD tags kept in the mood_vector of songs this run analyzes' }),
  })
  .passthrough()
  .openapi('AnalysisStartRequest');
export type AnalysisStartRequest = z.infer<typeof AnalysisStartRequest>;

/** 202 answer of POST /api/cleaning/start (progress and the summary: GET /api/status/<task_id>). */
export const CleaningStartAccepted = z
  .object({ task_id: z.string(), task_type: z.literal('cleaning'), status: z.literal('NEW') })
  .openapi('CleaningStartAccepted');
export type CleaningStartAccepted = z.infer<typeof CleaningStartAccepted>;

/** Body of POST /api/tasks/dead-letters/replay: which dead letters to put back in their queue. */
export const DeadLetterReplayRequest = z
  .object({
    queue: z.string().min(1).max(100).optional().openapi({ description: 'Only this queue (default: every queue)' }),
    message_ids: z.array(z.string().min(1).max(200)).max(1000).optional().openapi({ description: 'Only these messages (default: all, up to limit)' }),
    limit: z.number().int().min(1).max(10000).default(1000),
  })
  .strict()
  .openapi('DeadLetterReplayRequest');
export type DeadLetterReplayRequest = z.infer<typeof DeadLetterReplayRequest>;

/** `GET /api/tasks/dead-letters?queue=&limit=`: one work queue (default: every one) and at most `limit` messages per queue. */
export const DeadLettersQuery = z.object({ queue: z.enum(ConsumerQueues).optional(), limit: z.coerce.number().int().min(1).max(1000).default(100) });

/** A task id in a path (`/api/status/:id` takes any string: an unknown id answers 404 with the plugin shape). */
const TaskIdParams = z.object({ id: z.string().min(1).max(100) });

/** `GET /api/analysis/model`: the analysis worker's learned-model (MusiCNN) state (services/analysis-worker model-state.ts). */
export const AnalysisModelStatus = z
  .object({
    /** ready: tags are computed; missing: no model file (or MODELS_DIR unset); error: a file is there but unusable; loading: start-up. */
    status: z.enum(['ready', 'missing', 'error', 'loading']),
    /** tags_model stored with the features, e.g. `musicnn-msd@412a832c` (ready only). */
    model: z.string().nullable(),
    /** TensorFlow.js backend (ready only). */
    backend: z.string().nullable(),
    /** Patches per track run by the network (ready only). */
    patchesPerTrack: z.number().int().nullable(),
    /** Precision of MusiCNN's timbral convolutions: 'int8' or 'float' (MUSICNN_PRECISION; 'float' on TensorFlow.js; ready only). */
    precision: z.enum(['int8', 'float']).nullable(),
    /** Why there is no model (missing/error). */
    reason: z.string().nullable(),
    /** How to add the model files. */
    howToInstall: z.string(),
  })
  .passthrough()
  .openapi('AnalysisModelStatus');
export type AnalysisModelStatus = z.infer<typeof AnalysisModelStatus>;

export const taskRoutes = {
  deadLetters: defineRoute({ method: 'get', path: '/api/tasks/dead-letters', summary: 'Messages every retry gave up on, per queue (they stay until replayed)', tags: ['tasks'], access: 'admin', service: 'registry', query: DeadLettersQuery }),
  deadLettersReplay: defineRoute({ method: 'post', path: '/api/tasks/dead-letters/replay', summary: 'Put dead letters back in their queue (attempt 1)', tags: ['tasks'], access: 'admin', service: 'registry', body: DeadLetterReplayRequest }),
  status: defineRoute({ method: 'get', path: '/api/status/:id', summary: 'State, progress, per-server counts and log of a task', tags: ['tasks'], access: 'user', service: 'registry', firstRun: true, params: z.object({ id: z.string() }), response: TaskStatusDto }),
  cancel: defineRoute({ method: 'post', path: '/api/cancel/:id', summary: 'Cancel a task; work done so far is kept', tags: ['tasks'], access: 'admin', service: 'registry', firstRun: true, params: TaskIdParams }),
  active: defineRoute({ method: 'get', path: '/api/active_tasks', summary: 'Running tasks (plugin shape)', tags: ['tasks'], access: 'user', service: 'registry', firstRun: true }),
  last: defineRoute({ method: 'get', path: '/api/last_task', summary: 'Most recent task (plugin shape)', tags: ['tasks'], access: 'user', service: 'registry', firstRun: true }),
  analysisStart: defineRoute({ method: 'post', path: '/api/analysis/start', summary: 'Start one analysis over all servers (202; 409 while one runs)', tags: ['tasks'], access: 'admin', service: 'analysis', body: AnalysisStartRequest, status: 202 }),
  lyricsBackfill: defineRoute({ method: 'post', path: '/api/analysis/lyrics_backfill', summary: 'Start the resumable lyrics backfill over every catalogue item without lyrics (202; 404 when no lyrics provider is configured)', tags: ['tasks'], access: 'admin', service: 'analysis', body: z.object({}).passthrough(), status: 202 }),
  analysisModel: defineRoute({ method: 'get', path: '/api/analysis/model', summary: 'Whether the MusiCNN model is loaded (status ready | missing | error | loading, model id, backend, patches per track, precision) and, when it is not, the reason and how to install it', tags: ['tasks'], access: 'user', service: 'analysis', response: AnalysisModelStatus }),
  analysisExclusions: defineRoute({ method: 'get', path: '/api/analysis/exclusions', summary: 'Songs the analysis skipped and why (the selected server; `all` for every server)', tags: ['tasks'], access: 'user', service: 'analysis', query: z.object({ all: z.string().max(10).optional() }) }),
  cleaningStart: defineRoute({
    method: 'post',
    path: '/api/cleaning/start',
    summary: 'Start cleaning over all servers (202; 409 while a cleaning or a sweep is queued or running). Removes stale mappings per server, reports orphans, deletes them only when asked and safe, ends with the full index rebuild',
    tags: ['tasks'],
    access: 'admin', service: 'catalogue',
    body: CleaningStartRequest,
    response: CleaningStartAccepted,
    status: 202,
  }),
};
