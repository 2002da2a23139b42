// Shared browser helpers: API calls, the selected music server, and a tiny DOM builder.
// No framework, no build step: plain ES modules served as static files by the gateway.

/** An API failure: `message` is the server's error.message (errors are {error:{code,message,requestId}}). */
export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * App-wide state. `setupMode` is the first-run window (no admin exists yet): only the Setup page
 * is shown and the API is reached without a session.
 */
export const state = { me: null, servers: [], defaultId: null, setupMode: false };

const SERVER_KEY = 'polyphony.server';
let onUnauthorized = () => {};
/** Called on any 401 (except calls made with allow401); the shell redirects to /login. */
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

/** The server chosen in the sidebar (id), or the default when none was chosen or it no longer exists. */
export function selectedServerId() {
  const stored = localStorage.getItem(SERVER_KEY);
  return stored && state.servers.some((s) => s.id === stored) ? stored : state.defaultId;
}

/** Remembers the sidebar choice in this browser. */
export function selectServer(id) {
  localStorage.setItem(SERVER_KEY, id);
}

/** The value of the `server` parameter for feature calls: undefined while the default server is selected. */
export function serverParam() {
  const id = selectedServerId();
  return id && id !== state.defaultId ? id : undefined;
}

/**
 * JSON API call. Options: method (GET), query (object; empty values skipped), body (JSON),
 * scoped (add the selected non-default server as `server` in the query or JSON body),
 * allow401 (do not trigger the login redirect). Resolves to the parsed body (null when empty);
 * rejects with ApiError carrying the server's error.message.
 */
export async function api(path, opts = {}) {
  const { method = 'GET', query, body, scoped = false, allow401 = false } = opts;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const server = scoped ? serverParam() : undefined;
  let payload = body;
  if (server && method === 'GET') params.set('server', server);
  else if (server) payload = { ...(body ?? {}), server };
  const qs = params.toString();
  const res = await fetch(qs ? `${path}?${qs}` : path, {
    method,
    credentials: 'same-origin',
    headers: payload !== undefined ? { 'content-type': 'application/json', accept: 'application/json' } : { accept: 'application/json' },
    body: payload !== undefined ? JSON.stringify(payload) : undefined,
  });
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    if (res.status === 401 && !allow401) onUnauthorized();
    throw new ApiError(res.status, data?.error?.message ?? `Request failed (HTTP ${res.status})`, data?.error?.code);
  }
  return data;
}

/**
 * Builds an element. attrs: `class`, `text`, `on<event>` listeners, boolean `true` -> empty
 * attribute, false/null/undefined skipped, anything else set as an attribute. Children: nodes or
 * strings (always text, never HTML).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') el.textContent = String(v);
    else if (k === 'class') el.className = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = Boolean(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

let fieldSeq = 0;
/** A labelled control: `<label for>` plus an optional hint tied by aria-describedby. */
export function field(labelText, control, hint) {
  if (!control.id) control.id = `f${++fieldSeq}`;
  const hintEl = hint ? h('small', { class: 'hint', id: `${control.id}-hint`, text: hint }) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: control.id, text: labelText }), control, hintEl);
}

/** Shows a one-line message in a status/alert element (kind: ok | error | info). */
export function say(el, message, kind = 'info') {
  el.textContent = message ?? '';
  el.className = `msg msg-${kind}`;
  el.setAttribute('role', kind === 'error' ? 'alert' : 'status');
}

/** Runs an async action with the button disabled; errors land in `out` as error.message. */
export async function busy(button, out, fn) {
  button.disabled = true;
  try {
    return await fn();
  } catch (err) {
    if (out) say(out, err.message, 'error');
    return undefined;
  } finally {
    button.disabled = false;
  }
}

/** Track label "Title — Artist". */
export function trackLabel(t) {
  return `${t.title ?? '(untitled)'} — ${t.author ?? 'unknown artist'}`;
}

/** A table with a header row and a body built from rows of cells (nodes or strings). */
export function table(caption, headers, rows) {
  return h(
    'table',
    {},
    caption ? h('caption', { text: caption }) : null,
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col', text: x })))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))),
  );
}
