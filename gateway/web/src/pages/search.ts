/**
 * Search (PER SERVER): metadata search (GET /api/search_tracks: title, artist, album; optionally only
 * songs an index holds) and text/mood search (POST /api/clap/search: a free description scored
 * against tags, synonyms and descriptors, optionally steered by concepts: ../steering.ts), both on the selected
 * server; results savable.
 */
import { featureRoutes, SEARCH_INDEXES, semanticRoutes, type SearchRowDto } from '@polyphony/contracts';
import { call } from '../api';
import { busy, errText, field, h, msg, numberInput, say, section, select } from '../dom';
import type { Page } from '../page';
import { describeSteering, steeringControls } from '../steering';
import { playlistSaver, trackTable } from '../tracks';

const page: Page = {
  title: 'Search',
  tag: 'PER SERVER',
  render(root) {
    // Metadata search.
    const q = h('input', { type: 'search', autocomplete: 'off', placeholder: 'Title, artist or album' });
    const index = select([['', 'any song'], ...SEARCH_INDEXES.map((i): [string, string] => [i, `only in the ${i} index`])], '');
    const limit = numberInput(50, 1, 500);
    const go = h('button', { type: 'submit', class: 'primary', text: 'Search songs' });
    const out = msg();
    const results = h('div');
    let rows: SearchRowDto[] = [];
    const saver = playlistSaver(() => rows.map((r) => r.item_id), () => `Search ${q.value.trim()}`.slice(0, 60));
    const form = h('form', { class: 'inline', role: 'search' }, field('Song search', q), field('Limit to', index), field('At most', limit), go);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      if (!q.value.trim()) return;
      void busy(go, out, async () => {
        rows = await call(featureRoutes.searchTracks, { query: { search_query: q.value.trim(), limit: Number(limit.value), index: (index.value || undefined) as (typeof SEARCH_INDEXES)[number] | undefined } }, { scoped: true });
        say(out, rows.length ? `${rows.length} songs.` : 'No song found on this server.', rows.length ? 'ok' : 'info');
        results.replaceChildren(rows.length ? trackTable('Songs', rows) : '');
        saver.show(rows.length > 0);
      });
    });

    // Text and mood search.
    const tq = h('input', { type: 'search', autocomplete: 'off', minlength: '3', placeholder: 'e.g. happy upbeat guitar' });
    const tlimit = numberInput(100, 1, 500);
    const tgo = h('button', { type: 'submit', class: 'primary', text: 'Search by description' });
    const tout = msg();
    const tresults = h('div');
    const top = h('p', { class: 'muted small' });
    let trows: SearchRowDto[] = [];
    const tsaver = playlistSaver(() => trows.map((r) => r.item_id), () => tq.value.trim().slice(0, 60) || 'Text search');
    const tform = h('form', { class: 'inline', role: 'search' }, field('Describe the music', tq, 'At least 3 characters: moods, genres, instruments, descriptors, names'), field('At most', tlimit), tgo);
    const steer = steeringControls();
    tform.addEventListener('submit', (e) => {
      e.preventDefault();
      void busy(tgo, tout, async () => {
        const steering = steer.items();
        const r = await call(semanticRoutes.clapSearch, { body: { query: tq.value.trim(), limit: Number(tlimit.value), ...(steering.length ? { steering } : {}) } }, { scoped: true });
        trows = r.results;
        const steered = r.steering?.length ? `; steered: ${describeSteering(r.steering)}` : '';
        say(tout, `${r.count} songs. Understood: ${r.understood.join(', ') || 'nothing'}${r.ignored.length ? `; ignored: ${r.ignored.join(', ')}` : ''}${steered}.`, r.count ? 'ok' : 'info');
        tresults.replaceChildren(r.results.length ? trackTable('Text search', r.results, [{ header: 'Match', cell: (t) => t.similarity.toFixed(3) }]) : '');
        tsaver.show(r.results.length > 0);
      });
    });
    call(semanticRoutes.clapTopQueries, {})
      .then((r) => {
        if (!r.queries.length) return;
        top.replaceChildren(
          'Frequent searches: ',
          ...r.queries.slice(0, 8).flatMap((x, i) => [
            i ? ', ' : '',
            h('button', { type: 'button', class: 'link', text: x, onclick: () => {
              tq.value = x;
              tform.requestSubmit();
            } }),
          ]),
        );
      })
      .catch((err: unknown) => say(tout, errText(err), 'error'));
    root.append(section('By title, artist or album', form, out, results, saver.element), section('By description (text and mood)', tform, steer.element, top, tout, tresults, tsaver.element));
  },
};
export default page;
