/**
 * The batch-task panel of Analysis, Clustering, Cleaning (and restore/backup): Start (with the
 * page's parameters), the current or last task of that kind with a progress bar, per-server
 * results, the last log lines, Cancel. Batch tasks always run over every server (spec: Batch tasks 1):
 * there is deliberately no server selector.
 *
 * Admins read the latest task of the kind from GET /api/tasks?kind=<kind>&limit=1; other users
 * from /api/active_tasks and /api/last_task when those are of the kind.
 */
import { opsRoutes, taskRoutes } from '@polyphony/contracts';
import { call } from './api';
import { busy, errText, h, msg, nodes, say, table } from './dom';
import { isActiveState, taskServerRows, type TaskView } from './task-logic';
import { fmtDuration } from './numbers';
import { state } from './state';

export interface TaskPanelOptions {
  /** Task type (prefix) this panel follows, e.g. 'analysis'. */
  kind: string;
  startLabel: string;
  /** Starts the task; resolves to its answer (task_id when the API gives one). */
  start: () => Promise<unknown>;
  isAdmin: boolean;
  kickTasks: () => void;
  /** Extra rendering of a task's details (e.g. clustering playlists, cleaning orphans). */
  details?: (t: TaskView) => Node | null;
}

/** Builds the panel; returns its element and a cleanup that stops polling. */
export function taskPanel(opts: TaskPanelOptions): { element: HTMLElement; stop: () => void; refresh: () => Promise<void> } {
  const out = msg();
  const body = h('div', { class: 'task-view' }, h('p', { class: 'muted', text: 'Loading…' }));
  const startButton = h('button', { type: 'button', class: 'primary', text: opts.startLabel, disabled: !opts.isAdmin });
  const cancelButton = h('button', { type: 'button', text: 'Cancel task', hidden: true, disabled: !opts.isAdmin });
  let shown: TaskView | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;

  const latest = async (): Promise<TaskView | undefined> => {
    if (opts.isAdmin && !state.setupMode) {
      const r = (await call(opsRoutes.taskHistory, { query: { kind: opts.kind, limit: 1 } })) as { tasks?: TaskView[] } | null;
      return r?.tasks?.[0];
    }
    const active = (await call(taskRoutes.active, {})) as TaskView | null;
    if (active?.task_id && active.task_type?.startsWith(opts.kind)) return active;
    const last = (await call(taskRoutes.last, {})) as TaskView | null;
    return last?.task_id && last.task_type?.startsWith(opts.kind) ? last : undefined;
  };

  const draw = (t: TaskView | undefined) => {
    if (!t) {
      body.replaceChildren(h('p', { class: 'muted', text: 'No task of this kind has run yet.' }));
      cancelButton.hidden = true;
      return;
    }
    const servers = taskServerRows(t, new Map(state.servers.map((s) => [s.id, s.name])));
    const log = Array.isArray(t.details?.log) ? (t.details.log as unknown[]).map(String).slice(-8) : [];
    const when = t.finished_at ? `finished ${new Date(t.finished_at).toLocaleString()}` : t.started_at ? `started ${new Date(t.started_at).toLocaleString()}` : '';
    body.replaceChildren(
      ...nodes(
      h('p', {}, h('strong', { text: `${t.task_type ?? 'task'} · ${t.state ?? t.status ?? ''}` }), ` · ${t.progress ?? 0}% · ${t.status_message ?? ''}`),
      h('progress', { max: '100', value: String(t.progress ?? 0), 'aria-label': `${opts.kind} progress` }),
      h('p', { class: 'muted small', text: [when, t.running_time_seconds !== undefined ? `running time ${fmtDuration(t.running_time_seconds)}` : ''].filter(Boolean).join(' · ') }),
      servers.length ? table('Per server', ['Server', 'Status', 'Seen', 'Already mapped', 'Mapped to existing', 'Processed', 'Failed'], servers) : null,
      opts.details?.(t) ?? null,
      log.length ? h('details', {}, h('summary', { text: 'Log' }), h('pre', { class: 'log', text: log.join('\n') })) : null,
      ),
    );
    cancelButton.hidden = !isActiveState(t.state ?? t.status);
  };

  const refresh = async () => {
    clearTimeout(timer);
    try {
      shown = await latest();
      draw(shown);
    } catch (err) {
      say(out, errText(err), 'error');
    }
    if (!stopped) timer = setTimeout(() => void refresh(), shown && isActiveState(shown.state ?? shown.status) ? 2000 : 10000);
  };
  startButton.addEventListener('click', () =>
    busy(startButton, out, async () => {
      const r = (await opts.start()) as { task_id?: string } | null;
      say(out, `${opts.startLabel}: started${r?.task_id ? ` (task ${r.task_id})` : ''}.`, 'ok');
      opts.kickTasks();
      await refresh();
    }),
  );
  cancelButton.addEventListener('click', () =>
    busy(cancelButton, out, async () => {
      if (!shown?.task_id) return;
      await call(taskRoutes.cancel, { params: { id: shown.task_id } });
      say(out, 'Cancellation requested; work already done is kept.', 'ok');
      opts.kickTasks();
      await refresh();
    }),
  );
  void refresh();
  const element = h(
    'div',
    { class: 'task-panel' },
    h('div', { class: 'toolbar' }, startButton, cancelButton),
    opts.isAdmin ? null : h('p', { class: 'muted small', text: 'Starting and cancelling need the admin role.' }),
    out,
    h('section', { 'aria-labelledby': `tp-${opts.kind}` }, h('h2', { id: `tp-${opts.kind}`, text: 'Current or last run' }), body),
  );
  return {
    element,
    refresh,
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
