/**
 * Public cleaning endpoint (the gateway routes /api/cleaning* here; admin only, enforced there and here):
 * POST /api/cleaning/start, body `{}` or `{clean_catalogue?: boolean}` -> 202 {task_id, task_type:
 * 'cleaning', status: 'NEW'}; 409 while a cleaning, sweep or alignment is queued or running. Progress and
 * the summary are on the task board (GET /api/status/<task_id>).
 */
import { CleaningStartAccepted, taskRoutes } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { BatchRunner } from '../domain/batch-runner';

/** The cleaning routes. */
export function cleaningRoutes(runner: BatchRunner): RouteHandlers {
  const r = routeHandlers();
  r.json(taskRoutes.cleaningStart, async ({ body }) => {
    const task = await runner.startCleaning(body.clean_catalogue ?? null);
    return { task_id: task.id, task_type: 'cleaning', status: 'NEW' } satisfies CleaningStartAccepted;
  });
  return r;
}
