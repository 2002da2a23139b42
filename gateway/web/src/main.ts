/**
 * Shell of the web UI: who is signed in, sidebar navigation (hash routes `#/<page>?<params>`), the
 * Music server dropdown (more than one server), the running-task progress bar, and mounting of the
 * page modules.
 */
import type { z } from 'zod';
import { authRoutes, taskRoutes, type TaskStatusDto } from '@polyphony/contracts';
import { ApiError, call, setServerSource, setUnauthorizedHandler } from './api';
import { errText, h } from './dom';
import type { Page } from './page';
import { NAV, PAGES } from './pages';
import { isAdmin, loadServers, selectServer, selectedServerId, serverParam, state } from './state';
import { parseHashRoute } from './route';

const $ = <T extends HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} missing from index.html`);
  return el as T;
};
const view = $<HTMLElement>('view');
const navList = $<HTMLElement>('nav-list');
const picker = $<HTMLElement>('server-picker');
const serverSelect = $<HTMLSelectElement>('server');
let cleanup: void | (() => void);

setUnauthorizedHandler(() => {
  if (!state.setupMode) location.replace('/login');
});
setServerSource(serverParam);

const current = () => parseHashRoute(location.hash);
const pageOf = (key: string): Page | undefined => PAGES[key];

/** Reloads the server list and the sidebar dropdown (shown with more than one server). */
async function refreshServers(): Promise<void> {
  await loadServers();
  serverSelect.replaceChildren(...state.servers.map((s) => h('option', { value: s.id, text: s.is_default ? `${s.name} (default)` : s.name })));
  serverSelect.value = selectedServerId() ?? '';
  picker.hidden = state.servers.length < 2;
}

function renderNav(active: string): void {
  const visible = (key: string) => (state.setupMode ? key === 'setup' : !pageOf(key)?.admin || isAdmin());
  navList.replaceChildren(
    ...NAV.map((group) => {
      const items = group.keys.filter(visible);
      if (items.length === 0) return null;
      return h(
        'li',
        { class: 'nav-group' },
        h('span', { class: 'nav-group-title', text: group.title }),
        h('ul', {}, items.map((key) => h('li', {}, h('a', { href: `#/${key}`, text: pageOf(key)?.title ?? key, 'aria-current': key === active ? 'page' : null })))),
      );
    }).filter((x): x is HTMLLIElement => x !== null),
  );
}

// ---- narrow screens: the sidebar is a top bar whose menu (nav + account) opens with the Menu button ----
const menuToggle = $<HTMLButtonElement>('menu-toggle');
const layout = document.querySelector<HTMLElement>('.layout')!;
function setMenuOpen(open: boolean): void {
  menuToggle.setAttribute('aria-expanded', String(open));
  layout.classList.toggle('menu-open', open);
}
menuToggle.addEventListener('click', () => setMenuOpen(menuToggle.getAttribute('aria-expanded') !== 'true'));
// Choosing a page closes the menu, also the page already shown (no hashchange then).
navList.addEventListener('click', (e) => {
  if ((e.target as Element).closest('a')) setMenuOpen(false);
});
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && layout.classList.contains('menu-open')) {
    setMenuOpen(false);
    menuToggle.focus();
  }
});

/**
 * Tables reflow into one card per row at narrow widths (style.css): every body cell carries its column's header as
 * `data-label`, shown before the value. Labelled here for every table a page adds, however it was built.
 */
function labelCells(scope: ParentNode): void {
  for (const t of Array.from(scope.querySelectorAll<HTMLTableElement>('table'))) {
    const heads = Array.from(t.tHead?.rows[0]?.cells ?? []).map((c) => c.textContent?.trim() ?? '');
    if (heads.length === 0) continue;
    for (const body of Array.from(t.tBodies)) {
      for (const row of Array.from(body.rows)) {
        Array.from(row.cells).forEach((cell, i) => {
          if (!cell.hasAttribute('data-label')) cell.setAttribute('data-label', heads[i] ?? '');
        });
      }
    }
  }
}
new MutationObserver(() => labelCells(view)).observe(view, { childList: true, subtree: true });

function route(): void {
  setMenuOpen(false);
  const { key: asked, params } = current();
  let key = asked;
  if (state.setupMode) key = 'setup';
  if (!pageOf(key)) key = '';
  const page = pageOf(key)!;
  if (typeof cleanup === 'function') cleanup();
  cleanup = undefined;
  renderNav(key);
  const heading = h('h1', { tabindex: '-1' }, page.title, ' ', h('span', { class: `tag tag-${page.tag === 'PER SERVER' ? 'server' : 'catalogue'}`, text: page.tag }));
  const body = h('div', { class: 'page' });
  view.replaceChildren(h('header', { class: 'page-head' }, heading), body);
  document.title = `${page.title} · polyphony`;
  if (page.admin && !isAdmin()) {
    body.append(h('p', { class: 'msg msg-error', role: 'alert', text: 'This page needs the admin role.' }));
    return;
  }
  cleanup = page.render(body, { refreshServers, kickTasks, isAdmin: isAdmin(), params });
  heading.focus({ preventScroll: true });
  // A new page starts at its top, as a page load would (the window's scroll otherwise stays where the last page left it).
  window.scrollTo(0, 0);
}

// ---- running task (sweep, analysis, ...): progress bar + one-line status ----
type Task = Partial<z.infer<typeof TaskStatusDto>>;
const taskBar = $<HTMLElement>('taskbar');
const taskProgress = taskBar.querySelector('progress')!;
const taskText = taskBar.querySelector<HTMLElement>('.task-text')!;
const taskCancel = taskBar.querySelector('button')!;
let taskTimer: ReturnType<typeof setTimeout> | undefined;
let runningTask: Task | undefined;
const TASK_NAMES: Record<string, string> = { sweep: 'Sweep', alignment: 'Alignment', analysis: 'Analysis', main_analysis: 'Analysis', clustering: 'Clustering', cleaning: 'Cleaning', index_build: 'Index build', backup: 'Backup', restore: 'Restore' };

/** Polls GET /api/active_tasks: every 2 s while a task runs, every 20 s otherwise. */
async function pollTasks(): Promise<void> {
  clearTimeout(taskTimer);
  let t: Task = {};
  try {
    t = ((await call(taskRoutes.active, {}, { allow401: true })) as Task | null) ?? {};
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return; // first-run window: not reachable before an admin exists
  }
  const active = Boolean(t.task_id);
  taskBar.hidden = !active;
  if (active) {
    const pct = Math.max(0, Math.min(100, Number(t.progress) || 0));
    taskProgress.value = pct;
    taskProgress.textContent = `${pct}%`;
    const name = TASK_NAMES[t.task_type ?? ''] ?? t.task_type ?? 'Task';
    taskText.textContent = `${name}: ${pct}% · ${t.status_message || t.status || t.state || ''}`;
    taskCancel.hidden = !isAdmin() || state.setupMode;
    taskCancel.onclick = async () => {
      taskCancel.disabled = true;
      try {
        await call(taskRoutes.cancel, { params: { id: t.task_id! } });
      } catch (err) {
        taskText.textContent = errText(err);
      }
      taskCancel.disabled = false;
      kickTasks();
    };
  } else if (runningTask) {
    window.dispatchEvent(new CustomEvent('task-finished', { detail: runningTask }));
  }
  runningTask = active ? t : undefined;
  if (!document.hidden || active) taskTimer = setTimeout(() => void pollTasks(), active ? 2000 : 20000);
}

/** Polls the task board now (after starting a sweep or analysis). */
function kickTasks(): void {
  void pollTasks();
}
document.addEventListener('visibilitychange', () => {
  if (!document.hidden) kickTasks();
});

async function boot(): Promise<void> {
  try {
    state.me = await call(authRoutes.me, {}, { allow401: true });
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 401) throw err;
    // No session: either the first-run window is open (the Setup API answers) or the user must log in.
    try {
      await loadServers();
      state.setupMode = true;
    } catch {
      location.replace('/login');
      return;
    }
  }
  $('who').textContent = state.setupMode ? 'First-run setup' : `${state.me!.username} (${state.me!.role})`;
  $('logout').hidden = state.setupMode;
  await refreshServers();
  serverSelect.addEventListener('change', () => {
    selectServer(serverSelect.value);
    window.dispatchEvent(new CustomEvent('server-selected'));
    if (pageOf(current().key)?.tag === 'PER SERVER') route();
  });
  window.addEventListener('hashchange', route);
  route();
  void pollTasks();
}

$('logout').addEventListener('click', () => {
  void call(authRoutes.logout, {})
    .catch(() => undefined)
    .then(() => location.replace('/login'));
});

boot().catch((err: unknown) => {
  view.replaceChildren(h('p', { class: 'msg msg-error', role: 'alert', text: `Could not start: ${errText(err)}` }));
});
