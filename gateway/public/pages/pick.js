// Song picker for the PER SERVER pages: a search box over GET /api/search_tracks (scoped to the
// selected server) and a list of hits to choose from.
import { api, h, say, trackLabel } from '../lib.js';

/**
 * Returns { element, get() } where get() is the chosen track ({item_id,title,author,album}) or
 * undefined. onPick(track) is called on each choice.
 */
export function songPicker(label, onPick = () => {}) {
  let chosen;
  const input = h('input', { type: 'search', autocomplete: 'off', placeholder: 'Title, artist or album' });
  const button = h('button', { type: 'submit', text: 'Search' });
  const hits = h('ul', { class: 'hits', 'aria-label': `${label}: results` });
  const out = h('p', { class: 'msg', role: 'status' });
  const picked = h('p', { class: 'picked', 'aria-live': 'polite' });
  const form = h('form', { class: 'search', role: 'search' }, h('label', { class: 'field grow' }, h('span', { text: label }), input), button);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const q = input.value.trim();
    if (!q) return;
    button.disabled = true;
    say(out, 'Searching…');
    try {
      const rows = (await api('/api/search_tracks', { query: { search_query: q, limit: 20 }, scoped: true })) ?? [];
      say(out, rows.length ? '' : 'No song found on this server.');
      hits.replaceChildren(
        ...rows.map((t) =>
          h('li', {}, h('button', { type: 'button', class: 'link', text: `${trackLabel(t)}${t.album ? ` (${t.album})` : ''}`, onclick: () => {
            chosen = t;
            picked.textContent = `Selected: ${trackLabel(t)}`;
            hits.replaceChildren();
            onPick(t);
          } })),
        ),
      );
    } catch (err) {
      say(out, err.message, 'error');
    } finally {
      button.disabled = false;
    }
  });
  return { element: h('div', { class: 'picker' }, form, out, hits, picked), get: () => chosen };
}
