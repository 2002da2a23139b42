/**
 * A tiny typed DOM builder and the few widgets every page shares. Plain DOM, no framework:
 * text is always set as text (never HTML), so nothing the API returns can inject markup.
 */

type Child = Node | string | number | null | undefined | false;
type Children = Array<Child | Child[]>;
type Listener = (ev: Event) => unknown;
export type Attrs = Record<string, string | number | boolean | null | undefined | Listener>;

/**
 * Builds an element. attrs: `class`, `text`, `value`, `checked`, `on<event>` listeners; boolean
 * true = empty attribute, false/null/undefined skipped, anything else set as an attribute.
 */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Children): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (typeof v === 'function') {
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      continue;
    }
    if (k === 'text') el.textContent = String(v);
    else if (k === 'class') el.className = String(v);
    else if (k === 'value') (el as HTMLInputElement).value = String(v);
    else if (k === 'checked') (el as HTMLInputElement).checked = Boolean(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

let fieldSeq = 0;
/** A labelled control: `<label for>` plus an optional hint tied by aria-describedby. */
export function field(labelText: string, control: HTMLElement, hint?: string | null): HTMLDivElement {
  if (!control.id) control.id = `f${++fieldSeq}`;
  const hintEl = hint ? h('small', { class: 'hint', id: `${control.id}-hint`, text: hint }) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: control.id, text: labelText }), control, hintEl);
}

export type MsgKind = 'ok' | 'error' | 'info';
/** Shows a one-line message in a status/alert element. */
export function say(el: HTMLElement, message: string | null | undefined, kind: MsgKind = 'info'): void {
  el.textContent = message ?? '';
  el.className = `msg msg-${kind}`;
  el.setAttribute('role', kind === 'error' ? 'alert' : 'status');
}

/** A status line element (empty: hidden by CSS). */
export function msg(): HTMLParagraphElement {
  return h('p', { class: 'msg', role: 'status' });
}

/** The message of anything thrown (ApiError carries the API's `error` message). */
export function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Runs an async action with the button (or input) disabled; errors land in `out` as their message. */
export async function busy<T>(button: HTMLButtonElement | HTMLInputElement, out: HTMLElement | null, fn: () => Promise<T>): Promise<T | undefined> {
  button.disabled = true;
  try {
    return await fn();
  } catch (err) {
    if (out) say(out, errText(err), 'error');
    return undefined;
  } finally {
    button.disabled = false;
  }
}

/** A table with a header row and a body built from rows of cells (nodes or strings). */
export function table(caption: string | null, headers: string[], rows: Child[][], attrs: Attrs = {}): HTMLTableElement {
  return h(
    'table',
    attrs,
    caption ? h('caption', { text: caption }) : null,
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col', text: x })))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))),
  );
}

/** A section with an h2 heading tied by aria-labelledby. */
let sectionSeq = 0;
export function section(title: string, ...children: Children): HTMLElement {
  const id = `s${++sectionSeq}`;
  return h('section', { 'aria-labelledby': id }, h('h2', { id, text: title }), ...children);
}

/** A labelled number input. */
export function numberInput(value: number, min: number, max: number, step: number | 'any' = 1): HTMLInputElement {
  return h('input', { type: 'number', min: String(min), max: String(max), step: String(step), value: String(value), inputmode: 'decimal' });
}

/** A select from [value, label] pairs. */
export function select(options: Array<[string, string]>, value?: string): HTMLSelectElement {
  const s = h('select', {}, options.map(([v, l]) => h('option', { value: v, text: l })));
  if (value !== undefined) s.value = value;
  return s;
}

/** The present children of a list (for replaceChildren, which takes no null). */
export function nodes(...c: Array<Node | string | null | undefined | false>): Array<Node | string> {
  return c.filter((x): x is Node | string => x !== null && x !== undefined && x !== false);
}
