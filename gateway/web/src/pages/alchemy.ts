/**
 * Song alchemy (PER SERVER): add and subtract songs, artists, moods, playlists written here, or
 * anchors; temperature and subtract radius; results near the ADD centroid and away from SUBTRACT
 * items (POST /api/alchemy), savable as a playlist on the selected server.
 */
import { ALCHEMY_ITEM_TYPES, featureRoutes, MOOD_NAMES, parityRoutes, type AlchemyItemType, type AlchemyResponse } from '@polyphony/contracts';
import { call } from '../api';
import { busy, field, h, msg, numberInput, say, select } from '../dom';
import { lookup } from '../lookup';
import type { Page } from '../page';
import { songPicker } from '../picker';
import { fmtDistance, trackLabel } from '../track-format';
import { playlistSaver, trackTable } from '../tracks';

interface Item {
  id: string;
  op: 'ADD' | 'SUBTRACT';
  type: AlchemyItemType;
  label: string;
}

const page: Page = {
  title: 'Song alchemy',
  tag: 'PER SERVER',
  render(root, { params }) {
    const items: Item[] = [];
    const out = msg();
    const results = h('div');
    const chips = h('ul', { class: 'items', 'aria-label': 'Ingredients' });
    const op = select([['ADD', 'Add'], ['SUBTRACT', 'Subtract']], 'ADD');
    const type = select(ALCHEMY_ITEM_TYPES.map((t): [string, string] => [t, t]), 'song');
    const chooser = h('div');
    const n = numberInput(50, 1, 500);
    const temperature = numberInput(1, 0, 100, 0.1);
    const radius = numberInput(0.2, 0, 2, 0.01);
    const run = h('button', { type: 'button', class: 'primary', text: 'Mix', disabled: true });
    let answer: AlchemyResponse | undefined;
    const saver = playlistSaver(() => answer?.results.map((t) => t.item_id) ?? [], () => 'Alchemy');

    const drawChips = () => {
      chips.replaceChildren(
        ...items.map((it, i) =>
          h('li', {}, `${it.op === 'ADD' ? '+' : '−'} ${it.type}: ${it.label}`, h('button', { type: 'button', class: 'small', text: '×', 'aria-label': `Remove ${it.label}`, onclick: () => {
            items.splice(i, 1);
            drawChips();
          } })),
        ),
      );
      run.disabled = !items.some((x) => x.op === 'ADD');
    };
    const add = (id: string, label: string) => {
      items.push({ id, label, op: op.value as Item['op'], type: type.value as AlchemyItemType });
      drawChips();
    };
    const drawChooser = () => {
      const t = type.value as AlchemyItemType;
      if (t === 'song') chooser.replaceChildren(songPicker('Song', (s) => add(s.item_id, trackLabel(s))).element);
      else if (t === 'artist')
        chooser.replaceChildren(
          lookup('Artist', async (q) => (await call(parityRoutes.searchArtists, { query: { query: q } }, { scoped: true })).map((a) => ({ id: a.artist_id ?? a.artist, label: `${a.artist} (${a.track_count} songs)` })), (hit) => add(hit.id, hit.label)),
        );
      else if (t === 'playlist')
        chooser.replaceChildren(lookup('Playlist', async (q) => (await call(parityRoutes.searchPlaylists, { query: { query: q } }, { scoped: true })).map((p) => ({ id: p.id, label: p.name })), (hit) => add(hit.id, hit.label)));
      else if (t === 'mood') {
        const mood = select(MOOD_NAMES.map((m): [string, string] => [m, m]));
        chooser.replaceChildren(h('div', { class: 'toolbar' }, field('Mood', mood), h('button', { type: 'button', text: 'Add mood', onclick: () => add(mood.value, mood.value) })));
      } else {
        const id = h('input', { autocomplete: 'off' });
        chooser.replaceChildren(h('div', { class: 'toolbar' }, field('Anchor id', id), h('button', { type: 'button', text: 'Add anchor', onclick: () => id.value.trim() && add(id.value.trim(), id.value.trim()) })));
      }
    };
    type.addEventListener('change', drawChooser);
    run.addEventListener('click', () =>
      busy(run, out, async () => {
        say(out, 'Mixing…');
        answer = await call(
          featureRoutes.alchemy,
          { body: { items: items.map(({ id, op, type }) => ({ id, op, type })), n: Number(n.value), temperature: Number(temperature.value), subtract_distance: Number(radius.value) } },
          { scoped: true },
        );
        const a = answer;
        say(out, `${a.results.length} songs${a.filtered_out.length ? `, ${a.filtered_out.length} dropped near a subtracted item` : ''}${a.unresolved.length ? `; not found: ${a.unresolved.join(', ')}` : ''}.`, a.results.length ? 'ok' : 'info');
        results.replaceChildren(a.results.length ? trackTable('Alchemy results', a.results, [{ header: 'Distance', cell: (t) => fmtDistance(t.distance) }]) : '');
        saver.show(a.results.length > 0);
      }),
    );
    root.append(
      h('fieldset', {}, h('legend', { text: 'Ingredients' }), h('div', { class: 'toolbar' }, field('Operation', op), field('Kind', type)), chooser, chips),
      h('div', { class: 'toolbar' }, field('Songs', n), field('Temperature (0 = strict top)', temperature), field('Subtract radius', radius), run),
      out,
      results,
      saver.element,
    );
    drawChooser();
    const seed = params.get('item_id');
    if (seed) add(seed, params.get('label') ?? seed);
  },
};
export default page;
