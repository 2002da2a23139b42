/**
 * Song alchemy (PER SERVER): add and subtract songs, artists, moods, playlists written here, or
 * anchors; temperature and subtract radius; results near the ADD centroid and away from SUBTRACT
 * items (POST /api/alchemy), savable as a playlist on the selected server.
 */
import { ALCHEMY_ITEM_TYPES, featureRoutes, MOOD_NAMES, parityRoutes, savedAlchemyRoutes, type AlchemyItemType, type AlchemyResponse } from '@polyphony/contracts';
import { call } from '../api';
import { busy, errText, field, h, msg, numberInput, say, section, select, table } from '../dom';
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
        const anchor = h('select', {}, h('option', { value: '', text: 'Loading…' }));
        const addAnchor = h('button', { type: 'button', text: 'Add anchor', onclick: () => anchor.value && add(anchor.value, anchor.selectedOptions[0]?.textContent ?? anchor.value) });
        chooser.replaceChildren(h('div', { class: 'toolbar' }, field('Saved anchor', anchor), addAnchor));
        call(savedAlchemyRoutes.listAnchors, {})
          .then((r) => {
            anchor.replaceChildren(...(r.anchors.length ? r.anchors.map((a) => h('option', { value: String(a.id), text: a.name })) : [h('option', { value: '', text: 'No saved anchor yet' })]));
          })
          .catch((err: unknown) => say(out, errText(err), 'error'));
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
    // Saved anchors (a named centroid of the ingredients, usable as a seed) and radios (an anchor
    // written as "<name>_radio" on every server by the radios task).
    const saveName = h('input', { maxlength: '200', autocomplete: 'off' });
    const saveOut = msg();
    const saveAnchor = h('button', { type: 'button', text: 'Save as anchor' });
    const saveRadio = h('button', { type: 'button', text: 'Save as radio' });
    const savedList = h('div');
    const itemsBody = () => items.map(({ id, op, type }) => ({ id, op, type }));
    saveAnchor.addEventListener('click', () =>
      busy(saveAnchor, saveOut, async () => {
        const r = await call(savedAlchemyRoutes.createAnchor, { body: { name: saveName.value.trim(), items: itemsBody(), subtract_distance: Number(radius.value) } }, { scoped: true });
        say(saveOut, `Anchor "${r.anchor.name}" saved (${r.anchor.points} points, ${r.anchor.exclusions} exclusions)${r.anchor.unresolved?.length ? `; not found: ${r.anchor.unresolved.join(', ')}` : ''}.`, 'ok');
        await drawSaved();
      }),
    );
    saveRadio.addEventListener('click', () =>
      busy(saveRadio, saveOut, async () => {
        const r = await call(savedAlchemyRoutes.createRadio, { body: { name: saveName.value.trim(), items: itemsBody(), temperature: Number(temperature.value), n_results: Number(n.value), enabled: true } }, { scoped: true });
        say(saveOut, `Radio "${r.radio.name}" saved: the radios task writes "${r.radio.playlist_name}" on every server.`, 'ok');
        await drawSaved();
      }),
    );
    const runRadios = h('button', { type: 'button', text: 'Run radios now' });
    runRadios.addEventListener('click', () =>
      busy(runRadios, saveOut, async () => {
        const r = await call(savedAlchemyRoutes.runRadios, { body: {} });
        say(saveOut, r.message, r.failed.length ? 'error' : 'ok');
      }),
    );
    const drawSaved = async () => {
      const [{ anchors }, { radios }] = await Promise.all([call(savedAlchemyRoutes.listAnchors, {}), call(savedAlchemyRoutes.listRadios, {})]);
      const del = (label: string, fn: () => Promise<unknown>) => {
        const b = h('button', { type: 'button', class: 'small danger', text: 'Delete', 'aria-label': `Delete ${label}` });
        b.addEventListener('click', () =>
          busy(b, saveOut, async () => {
            if (!confirm(`Delete ${label}?`)) return;
            await fn();
            await drawSaved();
          }),
        );
        return b;
      };
      savedList.replaceChildren(
        anchors.length
          ? table('Anchors', ['Name', 'Points', 'Exclusions', 'Actions'], anchors.map((a) => [a.name, String(a.points), String(a.exclusions), del(`anchor ${a.name}`, () => call(savedAlchemyRoutes.deleteAnchor, { params: { id: a.id } }))]))
          : h('p', { class: 'muted', text: 'No saved anchor yet.' }),
        radios.length
          ? table(
              'Radios',
              ['Name', 'Playlist', 'Songs', 'Temperature', 'Enabled', 'Actions'],
              radios.map((r) => {
                const toggle = h('button', { type: 'button', class: 'small', text: r.enabled ? 'Disable' : 'Enable', 'aria-label': `${r.enabled ? 'Disable' : 'Enable'} radio ${r.name}` });
                toggle.addEventListener('click', () =>
                  busy(toggle, saveOut, async () => {
                    await call(savedAlchemyRoutes.updateRadio, { params: { id: r.id }, body: { enabled: !r.enabled } });
                    await drawSaved();
                  }),
                );
                return [r.name, r.playlist_name, String(r.n_results), String(r.temperature), r.enabled ? 'yes' : 'no', h('div', { class: 'actions' }, toggle, del(`radio ${r.name}`, () => call(savedAlchemyRoutes.deleteRadio, { params: { id: r.id } })))];
              }),
            )
          : h('p', { class: 'muted', text: 'No radio yet.' }),
      );
    };
    root.append(
      h('fieldset', {}, h('legend', { text: 'Ingredients' }), h('div', { class: 'toolbar' }, field('Operation', op), field('Kind', type)), chooser, chips),
      h('div', { class: 'toolbar' }, field('Songs', n), field('Temperature (0 = strict top)', temperature), field('Subtract radius', radius), run),
      out,
      results,
      saver.element,
      section('Anchors and radios', h('div', { class: 'toolbar' }, field('Name', saveName, 'Saves the ingredients above'), saveAnchor, saveRadio, runRadios), saveOut, savedList),
    );
    drawChooser();
    drawSaved().catch((err: unknown) => say(saveOut, errText(err), 'error'));
    // Seeds from links (`item_id` and `label` repeated, e.g. a lasso selection of the map): ADD song anchors.
    const labels = params.getAll('label');
    params.getAll('item_id').forEach((id, i) => add(id, labels[i] ?? id));
  },
};
export default page;
