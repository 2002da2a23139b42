/** A labelled search box whose hits are buttons (artist and playlist choosers). */
import { errText, h, say } from './dom';

export interface Hit {
  id: string;
  label: string;
}

export function lookup(label: string, search: (q: string) => Promise<Hit[]>, onPick: (hit: Hit) => void): HTMLElement {
  const input = h('input', { type: 'search', autocomplete: 'off' });
  const button = h('button', { type: 'submit', text: 'Search' });
  const hits = h('ul', { class: 'hits', 'aria-label': `${label}: results` });
  const out = h('p', { class: 'msg', role: 'status' });
  const form = h('form', { class: 'search', role: 'search' }, h('label', { class: 'field grow' }, h('span', { text: label }), input), button);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = input.value.trim();
    if (!q) return;
    button.disabled = true;
    search(q)
      .then((rows) => {
        say(out, rows.length ? '' : 'Nothing found on this server.');
        hits.replaceChildren(...rows.map((r) => h('li', {}, h('button', { type: 'button', class: 'link', text: r.label, onclick: () => {
          hits.replaceChildren();
          onPick(r);
        } }))));
      })
      .catch((err: unknown) => say(out, errText(err), 'error'))
      .finally(() => {
        button.disabled = false;
      });
  });
  return h('div', { class: 'picker' }, form, out, hits);
}
