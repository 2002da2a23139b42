/** Pure helpers of the task views (unit-tested). */

/** A task as /api/status, /api/active_tasks, /api/last_task and /api/tasks answer it (fields all optional: `{}` = none). */
export interface TaskView {
  task_id?: string;
  task_type?: string;
  state?: string;
  status?: string;
  status_message?: string;
  progress?: number;
  running_time_seconds?: number;
  details?: Record<string, unknown>;
  servers?: unknown[];
  created_at?: string;
  started_at?: string | null;
  finished_at?: string | null;
  duration_seconds?: number | null;
}

const ACTIVE = new Set(['NEW', 'RUNNING', 'PENDING', 'STARTED', 'PROGRESS']);
/** Whether a task state (ours or the plugin vocabulary) means "still running". */
export function isActiveState(s: string | undefined): boolean {
  return s !== undefined && ACTIVE.has(s);
}

/**
 * The live tasks of a task list (GET /api/tasks answers newest first, /api/active_tasks one task or `{}`):
 * those in a running state, each task id once, oldest start first (so bars keep their places between polls).
 */
export function liveTasks(tasks: ReadonlyArray<TaskView | null | undefined>): TaskView[] {
  const seen = new Set<string>();
  const out: TaskView[] = [];
  for (const t of tasks) {
    if (!t?.task_id || seen.has(t.task_id) || !isActiveState(t.state ?? t.status)) continue;
    seen.add(t.task_id);
    out.push(t);
  }
  const at = (t: TaskView) => Date.parse(t.started_at ?? t.created_at ?? '') || 0;
  return out.sort((a, b) => at(a) - at(b) || a.task_id!.localeCompare(b.task_id!));
}

interface ServerCounts {
  serverId?: string;
  serverName?: string;
  status?: string;
  error?: string;
  seen?: number;
  skippedMapped?: number;
  mappedExisting?: number;
  analyzed?: number;
  failed?: number;
}

/** Per-server rows [name, status, seen, already mapped, mapped to existing, processed, failed] of a task. */
export function taskServerRows(t: TaskView, names: Map<string, string>): string[][] {
  const list = (Array.isArray(t.servers) ? t.servers : Array.isArray(t.details?.servers) ? (t.details.servers as unknown[]) : []) as ServerCounts[];
  return list.map((s) => [
    s.serverName ?? names.get(s.serverId ?? '') ?? s.serverId ?? '?',
    [s.status ?? '', s.error ?? ''].filter(Boolean).join(': '),
    String(s.seen ?? 0),
    String(s.skippedMapped ?? 0),
    String(s.mappedExisting ?? 0),
    String(s.analyzed ?? 0),
    String(s.failed ?? 0),
  ]);
}
