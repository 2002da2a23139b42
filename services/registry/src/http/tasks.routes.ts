import { ConsumerQueues, DeadLetterReplayRequest, RoutingKeys, TaskHistoryQuery, z, type TaskCancelRequestedEvent, api } from '@polyphony/contracts';
import { NotFoundError, UpstreamUnavailableError, ValidationError, asyncRoute, parseOrThrow, type Bus, routeHandlers, type RouteHandlers } from '@polyphony/platform';

/** Dead-letter access of the bus; 503 when the bus cannot list them or the broker is unreachable. */
function deadLetters(bus: Bus) {
  const wrap = async <T>(fn: () => Promise<T> | undefined): Promise<T> => {
    try {
      const r = await fn();
      if (r === undefined) throw new UpstreamUnavailableError('This bus cannot list dead letters');
      return r;
    } catch (err) {
      if (err instanceof UpstreamUnavailableError) throw err;
      throw new UpstreamUnavailableError(`Message broker unavailable: ${(err as Error).message}`, 503, { cause: err });
    }
  };
  return {
    list: (queue: string, limit: number) => wrap(() => bus.listDeadLetters?.(queue, limit)),
    replay: (queue: string, limit: number, ids?: ReadonlySet<string>) => wrap(() => bus.replayDeadLetters?.(queue, limit, ids)),
  };
}
import { toStatusDto } from '../domain/task-board';
import type { TaskRecord, TaskRepository } from '../store/task.repository';

/**
 * Task board endpoints: `/api/status/<id>`, `/api/cancel/<id>`, `/api/active_tasks`,
 * `/api/last_task` in the shapes existing plugins read (`status` in PENDING/PROGRESS/...).
 * Cancel records the request (shown at once as "Cancel requested" while the task is live) and asks the
 * owning service to stop; the board's state stays the owner's: REVOKED arrives with the owner's snapshot
 * once it has ended the run (work done is kept).
 */
export function taskRoutes(tasks: TaskRepository, bus: Bus): RouteHandlers {
  const r = routeHandlers();
  const cancel = async (t: TaskRecord) => {
    await tasks.requestCancel(t.taskId);
    await bus.publish(RoutingKeys.taskCancelRequested, { taskId: t.taskId, type: t.type } satisfies TaskCancelRequestedEvent);
  };
  r.on(api.tasks.status,
    asyncRoute(async (req, res) => {
      const t = await tasks.find(String(req.params.id));
      if (!t) {
        res.status(404).json({ task_id: req.params.id, state: 'UNKNOWN', status: 'UNKNOWN', status_message: 'Task not found', progress: 0, details: {}, error: 'Task not found', code: 'not_found', request_id: req.requestId });
        return;
      }
      res.json(toStatusDto(t));
    }),
  );
  r.on(api.tasks.cancel,
    asyncRoute(async (req, res) => {
      const { id } = parseOrThrow(z.object({ id: z.string().min(1).max(100) }), req.params, 'path');
      const t = await tasks.find(id);
      if (!t) throw new NotFoundError(`Task ${id} not found`);
      const live = t.state === 'NEW' || t.state === 'RUNNING';
      if (live) await cancel(t);
      res.json({ message: 'Cancellation requested', task_id: id, cancelled_jobs_count: live ? 1 : 0 });
    }),
  );
  // Cancel every live task, or those whose type starts with the prefix (the Jellyfin plugin posts
  // `/api/cancel_all/<type>` with an empty body). Work done so far is kept, as with one cancel.
  const cancelAll = asyncRoute(async (req, res) => {
    const { type } = parseOrThrow(z.object({ type: z.string().max(100).optional() }), req.params, 'path');
    const live = (await tasks.active()).filter((t) => !type || t.type.startsWith(type) || `main_${t.type}`.startsWith(type));
    for (const t of live) await cancel(t);
    res.json({ message: live.length ? `Cancellation requested for ${live.length} task(s)` : 'No live task to cancel', task_ids: live.map((t) => t.taskId), cancelled_jobs_count: live.length });
  });
  r.on(api.ops.cancelAll, cancelAll);
  r.on(api.ops.cancelAllOfType, cancelAll);
  r.on(api.ops.taskHistory,
    asyncRoute(async (req, res) => {
      const q = parseOrThrow(TaskHistoryQuery, req.query, 'query');
      const list = await tasks.history({ kind: q.kind, state: q.state, limit: q.limit });
      res.json({
        tasks: list.map((t) => ({
          ...toStatusDto(t),
          servers: t.servers,
          created_at: t.createdAt.toISOString(),
          started_at: t.startedAt?.toISOString() ?? null,
          finished_at: t.finishedAt?.toISOString() ?? null,
          duration_seconds: t.startedAt ? Math.round(((t.finishedAt ?? new Date()).getTime() - t.startedAt.getTime()) / 100) / 10 : null,
        })),
      });
    }),
  );
  /**
   * GET /api/tasks/dead-letters?queue=&limit= (admin): `{ queues: [{ queue, count, messages: [{ messageId,
   * routingKey, attempt, error, payload }] }] }` over every work queue (ConsumerQueues) or one; 503 while
   * the broker is unreachable. POST /api/tasks/dead-letters/replay (admin, DeadLetterReplayRequest):
   * puts them back in their own queue with attempt 1 -> `{ replayed: { <queue>: n }, total }`.
   */
  r.on(api.tasks.deadLetters,
    asyncRoute(async (req, res) => {
      const q = parseOrThrow(z.object({ queue: z.enum(ConsumerQueues).optional(), limit: z.coerce.number().int().min(1).max(1000).default(100) }), req.query, 'query');
      const out = [];
      for (const queue of q.queue ? [q.queue] : ConsumerQueues) {
        const messages = await deadLetters(bus).list(queue, q.limit);
        out.push({ queue, count: messages.length, messages });
      }
      res.json({ queues: out });
    }),
  );
  r.on(api.tasks.deadLettersReplay,
    asyncRoute(async (req, res) => {
      const body = parseOrThrow(DeadLetterReplayRequest, req.body ?? {}, 'replay request');
      if (body.queue && !(ConsumerQueues as readonly string[]).includes(body.queue)) throw new ValidationError(`Unknown queue ${body.queue}`);
      const ids = body.message_ids ? new Set(body.message_ids) : undefined;
      const replayed: Record<string, number> = {};
      let total = 0;
      for (const queue of body.queue ? [body.queue] : ConsumerQueues) {
        if (total >= body.limit) break;
        const n = await deadLetters(bus).replay(queue, body.limit - total, ids);
        replayed[queue] = n;
        total += n;
      }
      res.json({ replayed, total });
    }),
  );
  r.on(api.tasks.active,
    asyncRoute(async (_req, res) => {
      const active = await tasks.active();
      res.json(active[0] ? toStatusDto(active[0]) : {});
    }),
  );
  r.on(api.tasks.last,
    asyncRoute(async (_req, res) => {
      const t = await tasks.last();
      res.json(t ? toStatusDto(t) : {});
    }),
  );
  return r;
}
