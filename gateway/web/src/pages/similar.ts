/**
 * Similar songs (PER SERVER): pick a seed song (or arrive from any track row's link), list its
 * nearest songs on the selected server, save them as a playlist there.
 */
import { featureRoutes, type TrackRowDto } from '@polyphony/contracts';
import { call } from '../api';
import { busy, field, h, msg, numberInput, say } from '../dom';
import type { Page } from '../page';
import { songPicker } from '../picker';
import { fmtDistance } from '../track-format';
import { playlistSaver, trackTable } from '../tracks';

const page: Page = {
  title: 'Similar songs',
  tag: 'PER SERVER',
  render(root, { params }) {
    const out = msg();
    const results = h('div');
    const count = numberInput(20, 1, 200);
    const perArtist = numberInput(3, 0, 1000);
    let tracks: TrackRowDto[] = [];
    let seed: { item_id: string; label: string } | undefined;
    const findButton = h('button', { type: 'button', class: 'primary', text: 'Find similar songs', disabled: true });
    const picker = songPicker('Seed song', (t) => {
      seed = { item_id: t.item_id, label: t.title ?? 'song' };
      findButton.disabled = false;
    });
    const saver = playlistSaver(
      () => (seed ? [seed.item_id, ...tracks.map((t) => t.item_id)] : tracks.map((t) => t.item_id)),
      () => `Similar to ${seed?.label ?? 'song'}`,
    );
    const find = () =>
      busy(findButton, out, async () => {
        if (!seed) return;
        say(out, 'Searching the index…');
        tracks = await call(featureRoutes.similarTracks, { query: { item_id: seed.item_id, n: Number(count.value), max_songs_per_artist: Number(perArtist.value) } }, { scoped: true });
        say(out, tracks.length ? `${tracks.length} songs similar to ${seed.label}.` : 'No similar song available on this server.');
        results.replaceChildren(tracks.length ? trackTable('Similar songs', tracks, [{ header: 'Distance', cell: (t) => fmtDistance(t.distance) }]) : '');
        saver.show(tracks.length > 0);
      });
    findButton.addEventListener('click', () => void find());
    root.append(picker.element, h('div', { class: 'toolbar' }, field('How many', count), field('Songs per artist (0 = any)', perArtist), findButton), out, results, saver.element);
    const fromLink = params.get('item_id');
    if (fromLink) {
      seed = { item_id: fromLink, label: params.get('label') ?? fromLink };
      findButton.disabled = false;
      void find();
    }
  },
};
export default page;
