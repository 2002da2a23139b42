// Analysis (CATALOGUE): start an analysis over every server (default first), follow and cancel
// the running task, and see how the last task ended, per server.
import { api, busy, h, say, state, table } from '../lib.js';

const ACTIVE = new Set(['NEW', 'RUNNING', 'PENDING', 'STARTED', 'PROGRESS']);

function taskView(t) {
  if (!t || !t.task_id) return h('p', { class: 'muted', text: 'No task yet.' });
  const servers = Array.isArray(t.details?.servers) ? t.details.servers : [];
  const names = new Map(state.servers.map((s) => [s.id, s.name]));
  return h(
    'div',
    {},
    h('p', {}, h('strong', { text: `${t.task_type ?? 'task'} · ${t.status ?? t.state}` }), ` · ${t.progress ?? 0}% · ${t.status_message ?? ''}`),
    h('progress', { max: '100', value: String(t.progress ?? 0), 'aria-label': 'Task progress' }),
    servers.length
      ? table('Per server', ['Server', 'Status', 'Seen', 'Already mapped', 'Mapped to existing', 'Analyzed', 'Failed'], servers.map((s) => [s.serverName ?? names.get(s.serverId) ?? s.serverId, s.error ? `${s.status ?? ''} ${s.error}` : s.status ?? '', String(s.seen ?? 0), String(s.skippedMapped ?? 0), String(s.mappedExisting ?? 0), String(s.analyzed ?? 0), String(s.failed ?? 0)]))
      : null,
  );
}

export default {
  title: 'Analysis',
  tag: 'CATALOGUE',
  render(root, { kickTasks, isAdmin }) {
    const out = h('p', { class: 'msg', role: 'status' });
    const current = h('div');
    const start = h('button', { type: 'button', class: 'primary', text: 'Start analysis', disabled: !isAdmin });
    const cancel = h('button', { type: 'button', text: 'Cancel task', hidden: true, disabled: !isAdmin });
    let shown;
    const refresh = async () => {
      try {
        const active = await api('/api/active_tasks');
        shown = active?.task_id ? active : await api('/api/last_task');
        current.replaceChildren(taskView(shown));
        cancel.hidden = !(shown?.task_id && ACTIVE.has(shown.state ?? shown.status));
      } catch (err) {
        say(out, err.message, 'error');
      }
    };
    start.addEventListener('click', () =>
      busy(start, out, async () => {
        const r = await api('/api/analysis/start', { method: 'POST', body: {} });
        say(out, `Analysis started (task ${r?.task_id ?? ''}).`, 'ok');
        kickTasks();
        await refresh();
      }),
    );
    cancel.addEventListener('click', () =>
      busy(cancel, out, async () => {
        await api(`/api/cancel/${encodeURIComponent(shown.task_id)}`, { method: 'POST', body: {} });
        say(out, 'Cancellation requested; work already done is kept.', 'ok');
        kickTasks();
        await refresh();
      }),
    );
    root.append(
      h('p', { text: 'Analysis runs over every configured server, one after the other, default server first. Songs already analyzed from another server are only mapped, never analyzed twice.' }),
      h('div', { class: 'toolbar' }, start, cancel),
      out,
      h('section', { 'aria-labelledby': 'task-h' }, h('h2', { id: 'task-h', text: 'Current or last task' }), current),
    );
    refresh();
    const timer = setInterval(refresh, 3000);
    return () => clearInterval(timer);
  },
};
