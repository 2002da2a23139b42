// Dashboard: the music server(s) and, with more than one, the Music Server Status section
// (matched songs per server, refreshed hourly and after a task ends), plus the last task.
import { api, h, say, state, table } from '../lib.js';

const HOUR_MS = 60 * 60 * 1000;

function serverStatus(servers) {
  const rows = servers.map((s) => {
    const matched = s.matched_count ?? null;
    const total = s.track_count ?? null;
    const pct = matched !== null && total ? ` (${Math.round((100 * matched) / total)}%)` : '';
    const name = h('span', {}, s.name, s.is_default ? h('span', { class: 'badge', text: 'default' }) : null);
    return [name, s.server_type, matched === null ? '—' : `${matched}${pct}`, total === null ? '—' : String(total)];
  });
  return table(null, ['Server', 'Type', 'Matched songs', 'Tracks on server'], rows);
}

function lastTask(t) {
  if (!t || !t.task_id) return h('p', { class: 'muted', text: 'No task has run yet.' });
  return h(
    'dl',
    { class: 'facts' },
    h('dt', { text: 'Task' }),
    h('dd', { text: t.task_type ?? '' }),
    h('dt', { text: 'State' }),
    h('dd', { text: t.status ?? t.state ?? '' }),
    h('dt', { text: 'Progress' }),
    h('dd', { text: `${t.progress ?? 0}%` }),
    h('dt', { text: 'Message' }),
    h('dd', { text: t.status_message ?? '' }),
  );
}

export default {
  title: 'Dashboard',
  tag: 'CATALOGUE',
  render(root, { refreshServers }) {
    const statusSection = h('section', { 'aria-labelledby': 'mss-h' });
    const taskSection = h('section', { 'aria-labelledby': 'last-h' }, h('h2', { id: 'last-h', text: 'Last task' }));
    const taskBody = h('div');
    taskSection.append(taskBody);
    const out = h('p');
    root.append(out, statusSection, taskSection);

    const drawServers = () => {
      const servers = state.servers;
      if (servers.length === 0) {
        statusSection.replaceChildren(h('h2', { id: 'mss-h', text: 'Music server' }), h('p', {}, 'No music server is configured yet. ', h('a', { href: '#/setup', text: 'Add one in Setup' }), '.'));
      } else if (servers.length === 1) {
        const s = servers[0];
        statusSection.replaceChildren(h('h2', { id: 'mss-h', text: 'Music server' }), h('p', { text: `${s.name} (${s.server_type})` }));
      } else {
        statusSection.replaceChildren(
          h('h2', { id: 'mss-h', text: 'Music Server Status' }),
          serverStatus(servers),
          h('p', { class: 'muted small', text: `Updated ${new Date().toLocaleTimeString()}; refreshed hourly.` }),
        );
      }
    };
    const refresh = async () => {
      try {
        await refreshServers();
        drawServers();
        taskBody.replaceChildren(lastTask(await api('/api/last_task')));
        say(out, '');
      } catch (err) {
        say(out, err.message, 'error');
      }
    };
    drawServers();
    refresh();
    const timer = setInterval(refresh, HOUR_MS);
    window.addEventListener('task-finished', refresh);
    return () => {
      clearInterval(timer);
      window.removeEventListener('task-finished', refresh);
    };
  },
};
