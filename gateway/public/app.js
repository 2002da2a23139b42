// Shell of the web UI: who is signed in, sidebar navigation (hash routes), the Music server
// dropdown, the running-task progress bar, and mounting of the page modules.
import { ApiError, api, h, selectServer, selectedServerId, setUnauthorizedHandler, state } from './lib.js';
import dashboard from './pages/dashboard.js';
import setup from './pages/setup.js';
import analysis from './pages/analysis.js';
import similar from './pages/similar.js';
import songPath from './pages/path.js';
import users from './pages/users.js';

/** Page modules: { title, tag: 'CATALOGUE' | 'PER SERVER', admin?, render(container) -> cleanup? }. */
const ROUTES = { '': dashboard, setup, analysis, similar, path: songPath, users };
const NAV = [
  ['', 'Dashboard'],
  ['setup', 'Setup'],
  ['analysis', 'Analysis'],
  ['similar', 'Similar songs'],
  ['path', 'Song path'],
  ['users', 'Users'],
];

const view = document.getElementById('view');
const navList = document.getElementById('nav-list');
const picker = document.getElementById('server-picker');
const serverSelect = document.getElementById('server');
let cleanup;

setUnauthorizedHandler(() => {
  if (!state.setupMode) location.replace('/login');
});

const isAdmin = () => state.setupMode || state.me?.role === 'admin';
const currentRoute = () => location.hash.replace(/^#\/?/, '').split('?')[0];

/** Reloads the server list (GET /api/servers) and the sidebar dropdown (shown with more than one server). */
export async function refreshServers() {
  const data = await api('/api/servers');
  state.servers = data?.servers ?? [];
  state.defaultId = data?.default_id ?? null;
  serverSelect.replaceChildren(...state.servers.map((s) => h('option', { value: s.id, text: s.is_default ? `${s.name} (default)` : s.name })));
  serverSelect.value = selectedServerId() ?? '';
  picker.hidden = state.servers.length < 2;
  window.dispatchEvent(new CustomEvent('servers-changed'));
  return state.servers;
}

function renderNav() {
  const route = state.setupMode ? 'setup' : currentRoute();
  navList.replaceChildren(
    ...NAV.filter(([key]) => (state.setupMode ? key === 'setup' : !ROUTES[key].admin || isAdmin())).map(([key, label]) =>
      h('li', {}, h('a', { href: `#/${key}`, text: label, 'aria-current': key === route ? 'page' : null })),
    ),
  );
}

function route() {
  let key = currentRoute();
  if (state.setupMode) key = 'setup';
  const page = ROUTES[key] ?? dashboard;
  if (typeof cleanup === 'function') cleanup();
  cleanup = undefined;
  renderNav();
  const heading = h('h1', { tabindex: '-1' }, page.title, ' ', h('span', { class: `tag tag-${page.tag === 'PER SERVER' ? 'server' : 'catalogue'}`, text: page.tag }));
  const body = h('div', { class: 'page' });
  view.replaceChildren(h('header', { class: 'page-head' }, heading), body);
  document.title = `${page.title} · polyphony`;
  if (page.admin && !isAdmin()) {
    body.append(h('p', { class: 'msg msg-error', role: 'alert', text: 'This page needs the admin role.' }));
    return;
  }
  cleanup = page.render(body, { refreshServers, kickTasks, isAdmin: isAdmin() });
  heading.focus({ preventScroll: true });
}

// ---- running task (sweep, analysis, ...): progress bar + one-line status ----
const taskBar = document.getElementById('taskbar');
const taskProgress = taskBar.querySelector('progress');
const taskText = taskBar.querySelector('.task-text');
const taskCancel = taskBar.querySelector('button');
let taskTimer;
let runningTask;
const TASK_NAMES = { sweep: 'Sweep', alignment: 'Alignment', analysis: 'Analysis', main_analysis: 'Analysis', clustering: 'Clustering', cleaning: 'Cleaning', index_build: 'Index build' };

/** Polls GET /api/active_tasks: every 2 s while a task runs, every 20 s otherwise. */
async function pollTasks() {
  clearTimeout(taskTimer);
  let t = {};
  try {
    t = (await api('/api/active_tasks', { allow401: true })) ?? {};
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return; // first-run window: not reachable before an admin exists
  }
  const active = Boolean(t.task_id);
  taskBar.hidden = !active;
  if (active) {
    const pct = Math.max(0, Math.min(100, Number(t.progress) || 0));
    taskProgress.value = pct;
    taskProgress.textContent = `${pct}%`;
    const name = TASK_NAMES[t.task_type] ?? t.task_type ?? 'Task';
    taskText.textContent = `${name}: ${pct}% · ${t.status_message || t.status || t.state || ''}`;
    taskCancel.hidden = !isAdmin() || state.setupMode;
    taskCancel.onclick = async () => {
      taskCancel.disabled = true;
      try {
        await api(`/api/cancel/${encodeURIComponent(t.task_id)}`, { method: 'POST', body: {} });
      } catch (err) {
        taskText.textContent = err.message;
      }
      taskCancel.disabled = false;
      kickTasks();
    };
  } else if (runningTask) {
    window.dispatchEvent(new CustomEvent('task-finished', { detail: runningTask }));
  }
  runningTask = active ? t : undefined;
  if (!document.hidden || active) taskTimer = setTimeout(pollTasks, active ? 2000 : 20000);
}

/** Polls the task board now (after starting a sweep or analysis). */
export function kickTasks() {
  pollTasks();
}
document.addEventListener('visibilitychange', () => {
  if (!document.hidden) kickTasks();
});

async function boot() {
  try {
    state.me = await api('/api/me', { allow401: true });
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 401) throw err;
    // No session: either the first-run window is open (the Setup API answers) or the user must log in.
    try {
      await api('/api/servers', { allow401: true });
      state.setupMode = true;
    } catch {
      location.replace('/login');
      return;
    }
  }
  document.getElementById('who').textContent = state.setupMode ? 'First-run setup' : `${state.me.username} (${state.me.role})`;
  document.getElementById('logout').hidden = state.setupMode;
  await refreshServers();
  serverSelect.addEventListener('change', () => {
    selectServer(serverSelect.value);
    window.dispatchEvent(new CustomEvent('server-selected'));
    if (ROUTES[currentRoute()]?.tag === 'PER SERVER') route();
  });
  window.addEventListener('hashchange', route);
  route();
  pollTasks();
}

document.getElementById('logout').addEventListener('click', async () => {
  await fetch('/logout', { method: 'POST', credentials: 'same-origin' }).catch(() => undefined);
  location.replace('/login');
});

boot().catch((err) => {
  view.replaceChildren(h('p', { class: 'msg msg-error', role: 'alert', text: `Could not start: ${err.message}` }));
});

