/**
 * Song picker of the PER SERVER pages: a search box over GET /api/search_tracks (scoped to the
 * selected server) and a list of hits to choose from.
 */
import { featureRoutes, type SearchRowDto } from '@polyphony/contracts';
import { call } from './api';
import { errText, h, say } from './dom';
import { trackLabel } from './track-format';

export interface Picker {
  element: HTMLElement;
  get(): SearchRowDto | undefined;
  set(t: SearchRowDto): void;
}

/** A labelled search-and-choose control; onPick(track) runs on each choice. */
export function songPicker(label: string, onPick: (t: SearchRowDto) => void = () => undefined): Picker {
  let chosen: SearchRowDto | undefined;
  const input = h('input', { type: 'search', autocomplete: 'off', placeholder: 'Title, artist or album' });
  const button = h('button', { type: 'submit', text: 'Search' });
  const hits = h('ul', { class: 'hits', 'aria-label': `${label}: results` });
  const out = h('p', { class: 'msg', role: 'status' });
  const picked = h('p', { class: 'picked', 'aria-live': 'polite' });
  const form = h('form', { class: 'search', role: 'search' }, h('label', { class: 'field grow' }, h('span', { text: label }), input), button);
  const choose = (t: SearchRowDto) => {
    chosen = t;
    picked.textContent = `Selected: ${trackLabel(t)}`;
    hits.replaceChildren();
    onPick(t);
  };
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = input.value.trim();
    if (!q) return;
    button.disabled = true;
    say(out, 'Searching…');
    call(featureRoutes.searchTracks, { query: { search_query: q, limit: 20 } }, { scoped: true })
      .then((rows) => {
        say(out, rows.length ? '' : 'No song found on this server.');
        hits.replaceChildren(...rows.map((t) => h('li', {}, h('button', { type: 'button', class: 'link', text: `${trackLabel(t)}${t.album ? ` (${t.album})` : ''}`, onclick: () => choose(t) }))));
      })
      .catch((err: unknown) => say(out, errText(err), 'error'))
      .finally(() => {
        button.disabled = false;
      });
  });
  return {
    element: h('div', { class: 'picker' }, form, out, hits, picked),
    get: () => chosen,
    set: choose,
  };
}
