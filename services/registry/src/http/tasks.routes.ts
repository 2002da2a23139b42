import { Router } from 'express';
import { RoutingKeys, z, type TaskCancelRequestedEvent } from '@polyphony/contracts';
import { NotFoundError, asyncRoute, parseOrThrow, requireRole, type Bus } from '@polyphony/platform';
import { toStatusDto } from '../domain/task-board';
import type { TaskRepository } from '../store/task.repository';

/**
 * Task board endpoints: `/api/status/<id>`, `/api/cancel/<id>`, `/api/active_tasks`,
 * `/api/last_task` in the shapes existing plugins read (`status` in PENDING/PROGRESS/...).
 * Cancel marks the task REVOKED at once and asks its owner to stop (work done is kept).
 */
export function taskRoutes(tasks: TaskRepository, bus: Bus): Router {
  const r = Router();
  r.get(
    '/api/status/:id',
    asyncRoute(async (req, res) => {
      const t = await tasks.find(String(req.params.id));
      if (!t) {
        res.status(404).json({ task_id: req.params.id, state: 'UNKNOWN', status: 'UNKNOWN', status_message: 'Task not found', progress: 0, details: {}, error: { code: 'not_found', message: 'Task not found', requestId: req.requestId } });
        return;
      }
      res.json(toStatusDto(t));
    }),
  );
  r.post(
    '/api/cancel/:id',
    requireRole('admin'),
    asyncRoute(async (req, res) => {
      const { id } = parseOrThrow(z.object({ id: z.string().min(1).max(100) }), req.params, 'path');
      const t = await tasks.find(id);
      if (!t) throw new NotFoundError(`Task ${id} not found`);
      if (t.state === 'NEW' || t.state === 'RUNNING') {
        await bus.publish(RoutingKeys.taskCancelRequested, { taskId: id, type: t.type } satisfies TaskCancelRequestedEvent);
        await tasks.markRevoked(id);
      }
      res.json({ message: 'Cancellation requested', task_id: id, cancelled_jobs_count: t.state === 'NEW' || t.state === 'RUNNING' ? 1 : 0 });
    }),
  );
  r.get(
    '/api/active_tasks',
    asyncRoute(async (_req, res) => {
      const active = await tasks.active();
      res.json(active[0] ? toStatusDto(active[0]) : {});
    }),
  );
  r.get(
    '/api/last_task',
    asyncRoute(async (_req, res) => {
      const t = await tasks.last();
      res.json(t ? toStatusDto(t) : {});
    }),
  );
  return r;
}
