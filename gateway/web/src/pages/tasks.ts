/**
 * Task history (CATALOGUE, admin): every task (GET /api/tasks) with state, progress, duration and
 * per-server results, filterable by kind and state; running ones can be cancelled.
 */
import { opsRoutes, TaskType, taskRoutes } from '@polyphony/contracts';
import { call } from '../api';
import { busy, errText, field, h, msg, numberInput, say, select, table } from '../dom';
import type { Page } from '../page';
import { state } from '../state';
import { isActiveState, taskServerRows, type TaskView } from '../task-logic';
import { fmtDuration } from '../numbers';

const STATES = ['NEW', 'RUNNING', 'SUCCESS', 'FAIL', 'REVOKED'] as const;

const page: Page = {
  title: 'Task history',
  tag: 'CATALOGUE',
  admin: true,
  render(root, { kickTasks }) {
    const out = msg();
    const kind = select([['', 'any'], ...TaskType.options.map((k): [string, string] => [k, k])], '');
    const st = select([['', 'any'], ...STATES.map((k): [string, string] => [k, k])], '');
    const limit = numberInput(50, 1, 500);
    const show = h('button', { type: 'submit', text: 'Show' });
    const list = h('div');
    const form = h('form', { class: 'inline' }, field('Kind', kind), field('State', st), field('At most', limit), show);
    const names = () => new Map(state.servers.map((s) => [s.id, s.name]));
    const load = async () => {
      const r = (await call(opsRoutes.taskHistory, { query: { kind: kind.value || undefined, state: (st.value || undefined) as (typeof STATES)[number] | undefined, limit: Number(limit.value) } })) as { tasks?: TaskView[] } | null;
      const tasks = r?.tasks ?? [];
      list.replaceChildren(
        tasks.length
          ? table(
              `${tasks.length} tasks, newest first`,
              ['Created', 'Kind', 'State', 'Progress', 'Duration', 'Message', 'Per server'],
              tasks.map((t) => {
                const rows = taskServerRows(t, names());
                const cancel = isActiveState(t.state) ? h('button', { type: 'button', class: 'small', text: 'Cancel', 'aria-label': `Cancel task ${t.task_id}` }) : null;
                cancel?.addEventListener('click', () =>
                  busy(cancel, out, async () => {
                    await call(taskRoutes.cancel, { params: { id: t.task_id! } });
                    kickTasks();
                    await load();
                  }),
                );
                return [
                  t.created_at ? new Date(t.created_at).toLocaleString() : '—',
                  t.task_type ?? '',
                  h('span', {}, t.state ?? '', cancel ? ' ' : '', cancel),
                  `${t.progress ?? 0}%`,
                  fmtDuration(t.duration_seconds ?? undefined),
                  t.status_message ?? '',
                  rows.length ? h('details', {}, h('summary', { text: `${rows.length} servers` }), table(null, ['Server', 'Status', 'Seen', 'Mapped', 'Existing', 'Processed', 'Failed'], rows)) : '—',
                ];
              }),
              { class: 'task-history' },
            )
          : h('p', { class: 'muted', text: 'No task matches.' }),
      );
    };
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void busy(show, out, load);
    });
    root.append(form, out, list);
    load().catch((err: unknown) => say(out, errText(err), 'error'));
  },
};
export default page;
