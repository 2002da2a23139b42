/**
 * Lyrics search (PER SERVER): songs of the selected server whose lyrics match the words
 * (POST /api/lyrics/search/text, PostgreSQL full-text search), with the matching snippet; savable.
 */
import { semanticRoutes, type LyricsSearchResponse } from '@polyphony/contracts';
import { call } from '../api';
import { busy, field, h, msg, numberInput, say } from '../dom';
import type { Page } from '../page';
import { snippetParts } from '../track-format';
import { playlistSaver, trackTable } from '../tracks';

const page: Page = {
  title: 'Lyrics search',
  tag: 'PER SERVER',
  render(root) {
    const q = h('input', { type: 'search', autocomplete: 'off', minlength: '3', placeholder: 'words from the lyrics' });
    const limit = numberInput(50, 1, 500);
    const go = h('button', { type: 'submit', class: 'primary', text: 'Search lyrics' });
    const out = msg();
    const results = h('div');
    let rows: LyricsSearchResponse['results'] = [];
    const saver = playlistSaver(() => rows.map((r) => r.item_id), () => `Lyrics ${q.value.trim()}`.slice(0, 60));
    const form = h('form', { class: 'inline', role: 'search' }, field('Lyrics', q, 'At least 3 characters'), field('At most', limit), go);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void busy(go, out, async () => {
        rows = (await call(semanticRoutes.lyricsSearch, { body: { query: q.value.trim(), limit: Number(limit.value) } }, { scoped: true })).results;
        say(out, rows.length ? `${rows.length} songs.` : 'No lyrics match on this server.', rows.length ? 'ok' : 'info');
        results.replaceChildren(
          rows.length
            ? trackTable('Lyrics matches', rows, [
                { header: 'Snippet', cell: (t) => h('span', { class: 'snippet' }, ...snippetParts(t.snippet).map((p) => (p.bold ? h('b', { text: p.text }) : p.text))) },
                { header: 'Score', cell: (t) => t.score.toFixed(3) },
              ])
            : '',
        );
        saver.show(rows.length > 0);
      });
    });
    root.append(form, out, results, saver.element);
  },
};
export default page;
