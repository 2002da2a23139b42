import { api } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { DeadLetterService } from '../domain/dead-letters.service';
import { toStatusDto } from '../domain/task-board';
import type { TaskBoardService } from '../domain/task-board.service';

/**
 * Task board endpoints: `/api/status/<id>`, `/api/cancel/<id>`, `/api/cancel_all[/<type>]`, `/api/active_tasks`,
 * `/api/last_task`, `/api/tasks` (history) in the shapes existing plugins read (`status` in PENDING/PROGRESS/...),
 * and the dead letters (`/api/tasks/dead-letters`, `/replay`). Cancel: see TaskBoardService (work done is kept).
 */
export function taskRoutes(board: TaskBoardService, deadLetters: DeadLetterService): RouteHandlers {
  const r = routeHandlers();
  // An unknown id answers 404 in the plugins' status shape (they read `state`), besides the error body.
  r.json(api.tasks.status, async ({ params: { id } }, req, res) => {
    const t = await board.find(id);
    if (!t) {
      res.status(404).json({ task_id: id, state: 'UNKNOWN', status: 'UNKNOWN', status_message: 'Task not found', progress: 0, details: {}, error: 'Task not found', code: 'not_found', request_id: req.requestId });
      return;
    }
    res.json(toStatusDto(t));
  });
  r.json(api.tasks.cancel, async ({ params: { id } }) => {
    const { live } = await board.cancel(id);
    return { message: 'Cancellation requested', task_id: id, cancelled_jobs_count: live ? 1 : 0 };
  });
  // Cancel every live task, or those whose type starts with the prefix (the Jellyfin plugin posts
  // `/api/cancel_all/<type>` with an empty body).
  const cancelAll = async (type: string | undefined) => {
    const ids = await board.cancelAll(type);
    return { message: ids.length ? `Cancellation requested for ${ids.length} task(s)` : 'No live task to cancel', task_ids: ids, cancelled_jobs_count: ids.length };
  };
  r.json(api.ops.cancelAll, () => cancelAll(undefined));
  r.json(api.ops.cancelAllOfType, ({ params: { type } }) => cancelAll(type));
  r.json(api.ops.taskHistory, async ({ query: q }) => ({
    tasks: (await board.history({ kind: q.kind, state: q.state, limit: q.limit })).map((t) => ({
      ...toStatusDto(t),
      servers: t.servers,
      created_at: t.createdAt.toISOString(),
      started_at: t.startedAt?.toISOString() ?? null,
      finished_at: t.finishedAt?.toISOString() ?? null,
      duration_seconds: t.startedAt ? Math.round(((t.finishedAt ?? new Date()).getTime() - t.startedAt.getTime()) / 100) / 10 : null,
    })),
  }));
  /**
   * GET /api/tasks/dead-letters?queue=&limit= (admin): `{ queues: [{ queue, count, messages: [{ messageId,
   * routingKey, attempt, error, payload }] }] }` over every work queue (ConsumerQueues) or one; 503 while
   * the broker is unreachable. POST /api/tasks/dead-letters/replay (admin, DeadLetterReplayRequest):
   * puts them back in their own queue with attempt 1 -> `{ replayed: { <queue>: n }, total }`.
   */
  r.json(api.tasks.deadLetters, async ({ query: q }) => ({ queues: await deadLetters.list(q.queue, q.limit) }));
  r.json(api.tasks.deadLettersReplay, ({ body }) => deadLetters.replay(body));
  r.json(api.tasks.active, async () => {
    const active = await board.active();
    return active[0] ? toStatusDto(active[0]) : {};
  });
  r.json(api.tasks.last, async () => {
    const t = await board.last();
    return t ? toStatusDto(t) : {};
  });
  return r;
}
