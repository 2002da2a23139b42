/**
 * Dashboard (CATALOGUE): every live task with its progress bar (admins: the running tasks of GET /api/tasks;
 * other users: GET /api/active_tasks, which names one), last result per task kind, library summary (songs,
 * albums, artists, tagged, lyrics, recording fingerprints in all and per server, mood coverage bars) from GET /api/dashboard/summary, and the
 * Music Server Status (matched songs per server; refreshed hourly and when a task ends).
 */
import { opsRoutes, semanticRoutes, taskRoutes, type DashboardSummary } from '@polyphony/contracts';
import { call } from '../api';
import { h, say, section, table } from '../dom';
import type { Page } from '../page';
import { state, type Server } from '../state';
import { pct } from '../numbers';
import { liveTasks, type TaskView } from '../task-logic';

const HOUR_MS = 60 * 60 * 1000;

function serverStatus(servers: Server[]): HTMLTableElement {
  const rows = servers.map((s) => {
    const matched = s.matched_count ?? null;
    const total = s.track_count ?? null;
    const share = matched !== null && total ? ` (${pct(matched, total)})` : '';
    const name = h('span', {}, s.name, s.is_default ? h('span', { class: 'badge', text: 'default' }) : null);
    return [name, s.server_type, matched === null ? '—' : `${matched}${share}`, total === null ? '—' : String(total)];
  });
  return table(null, ['Server', 'Type', 'Matched songs', 'Tracks on server'], rows);
}

function summaryView(s: DashboardSummary): HTMLElement {
  const c = s.content;
  const facts: Array<[string, string]> = [
    ['Songs', String(c.songs)],
    ['Analyzed', `${c.analyzed} (${pct(c.analyzed, c.songs)})`],
    ['Albums', String(c.distinct_albums)],
    ['Artists', String(c.distinct_artists)],
    ['Tagged (moods)', `${c.tagged} (${pct(c.tagged, c.songs)})`],
    ['With lyrics', `${c.lyrics} (${pct(c.lyrics, c.songs)})`],
    ['Fingerprinted (search by recording)', `${c.fingerprinted} (${pct(c.fingerprinted, c.songs)})`],
    ...c.music_servers.map((m): [string, string] => [`Fingerprinted on ${m.name}`, `${m.fingerprinted} of ${m.unique_songs} (${pct(m.fingerprinted, m.unique_songs)})`]),
    ['Text-searchable', String(c.clap_indexed)],
    ['Artists with a profile', String(c.gmm_indexed)],
  ];
  const moods = c.moods_coverage.length
    ? h(
        'figure',
        { class: 'bars', 'aria-label': 'Mood coverage: mean mood score over tagged songs' },
        h('figcaption', { text: 'Mood coverage (mean score over tagged songs)' }),
        ...c.moods_coverage.map((m) =>
          h('div', { class: 'bar-row' }, h('span', { class: 'bar-label', text: m.label }), h('meter', { min: '0', max: '1', value: String(m.score), 'aria-label': `${m.label} ${Math.round(m.score * 100)}%` }), h('span', { class: 'bar-value', text: `${Math.round(m.score * 100)}%` })),
        ),
      )
    : h('p', { class: 'muted', text: 'No mood coverage yet: analyze songs with the learned model to see it.' });
  return h(
    'div',
    {},
    h('dl', { class: 'facts' }, ...facts.flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })])),
    moods,
    s.unavailable.length ? h('p', { class: 'msg msg-info', text: `Not available right now: ${s.unavailable.join(', ')} (numbers shown as 0).` }) : null,
  );
}

function lastResults(s: DashboardSummary): HTMLElement {
  const kinds = Object.entries(s.tasks);
  if (kinds.length === 0) return h('p', { class: 'muted', text: 'No task has run yet.' });
  return table(
    null,
    ['Task', 'Result', 'Progress', 'When'],
    kinds.map(([kind, t]) => [kind, t.status, `${t.progress}%`, t.updated_at ? new Date(t.updated_at).toLocaleString() : '—']),
  );
}

const page: Page = {
  title: 'Dashboard',
  tag: 'CATALOGUE',
  render(root, { refreshServers, isAdmin }) {
    const out = h('p', { class: 'msg' });
    const liveBody = h('div');
    const summaryBody = h('div', {}, h('p', { class: 'muted', text: 'Loading…' }));
    const resultsBody = h('div');
    const statusSection = h('section', { 'aria-labelledby': 'mss-h' });
    root.append(out, section('Running tasks', liveBody), section('Library', summaryBody), statusSection, section('Last results', resultsBody));

    const drawServers = () => {
      const servers = state.servers;
      if (servers.length === 0) {
        statusSection.replaceChildren(h('h2', { id: 'mss-h', text: 'Music server' }), h('p', {}, 'No music server is configured yet. ', h('a', { href: '#/setup', text: 'Add one in Setup' }), '.'));
      } else if (servers.length === 1) {
        const s = servers[0]!;
        statusSection.replaceChildren(h('h2', { id: 'mss-h', text: 'Music server' }), h('p', { text: `${s.name} (${s.server_type}): ${s.matched_count ?? 0} matched songs of ${s.track_count ?? '?'}` }));
      } else {
        statusSection.replaceChildren(
          h('h2', { id: 'mss-h', text: 'Music Server Status' }),
          serverStatus(servers),
          h('p', { class: 'muted small', text: `Updated ${new Date().toLocaleTimeString()}; refreshed hourly.` }),
        );
      }
    };
    const drawLive = async () => {
      const tasks = isAdmin && !state.setupMode
        ? liveTasks(((await call(opsRoutes.taskHistory, { query: { limit: 100 } })) as { tasks?: TaskView[] } | null)?.tasks ?? [])
        : liveTasks([(await call(taskRoutes.active, {})) as TaskView | null]);
      liveBody.replaceChildren(
        tasks.length
          ? h(
              'ul',
              { class: 'plain live-tasks' },
              tasks.map((t) =>
                h(
                  'li',
                  { 'data-task-id': t.task_id },
                  h('p', { text: `${t.task_type ?? 'task'}: ${t.progress ?? 0}%${t.status_message ? ` · ${t.status_message}` : ''}` }),
                  h('progress', { max: '100', value: String(t.progress ?? 0), 'aria-label': `${t.task_type ?? 'task'} progress` }),
                ),
              ),
            )
          : h('p', { class: 'muted', text: 'No task is running.' }),
      );
    };
    const refresh = async () => {
      try {
        await refreshServers();
        drawServers();
        const s = await call(semanticRoutes.dashboardSummary, {});
        summaryBody.replaceChildren(summaryView(s));
        resultsBody.replaceChildren(lastResults(s));
        await drawLive();
        say(out, '');
      } catch (err) {
        say(out, err instanceof Error ? err.message : String(err), 'error');
      }
    };
    drawServers();
    void refresh();
    const timer = setInterval(() => void refresh(), HOUR_MS);
    const live = setInterval(() => void drawLive().catch(() => undefined), 5000);
    const onEnd = () => void refresh();
    window.addEventListener('task-finished', onEnd);
    return () => {
      clearInterval(timer);
      clearInterval(live);
      window.removeEventListener('task-finished', onEnd);
    };
  },
};
export default page;
