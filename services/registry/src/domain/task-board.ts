import { pluginStatus as platformPluginStatus } from '@polyphony/platform';
import type { TaskRecord } from './ports';

/** Plugin vocabulary for a task's `status`: the platform task-run module's one definition. */
export const pluginStatus = (state: TaskRecord['state']): string => platformPluginStatus(state);

/**
 * Task as `/api/status/<id>`, `/api/active_tasks` and `/api/last_task` answer it (reference and plugin
 * shapes). `state`/`status` are always the owner's (its latest snapshot); while a cancel it was asked
 * for is pending, the message says so (`Cancel requested · <owner message>`) and
 * `details.cancel_requested_at` (ISO time) is set, until the owner's REVOKED snapshot arrives.
 */
export function toStatusDto(t: TaskRecord, now = Date.now()) {
  const end = t.finishedAt?.getTime() ?? now;
  const start = t.startedAt?.getTime() ?? t.createdAt.getTime();
  const cancelPending = t.cancelRequestedAt !== undefined && (t.state === 'NEW' || t.state === 'RUNNING');
  const message = cancelPending ? `Cancel requested · ${t.message}`.slice(0, 500) : t.message;
  return {
    task_id: t.taskId,
    task_type: t.type,
    task_type_from_db: t.type,
    state: t.state,
    status: pluginStatus(t.state),
    status_message: message,
    progress: Math.round(t.progress),
    running_time_seconds: Math.max(0, Math.round((end - start) / 1000)),
    details: { ...t.details, status_message: message, log: t.log, servers: t.servers, ...(t.cancelRequestedAt ? { cancel_requested_at: t.cancelRequestedAt.toISOString() } : {}) },
  };
}
