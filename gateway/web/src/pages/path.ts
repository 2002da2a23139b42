/**
 * Song path (PER SERVER): a path of songs between two songs (or moods) on the selected server; savable as a playlist.
 * A link may name the start song (`#/path?start_song_id=…&start_title=…&start_author=…`, from Recording search).
 */
import { featureRoutes, MOOD_NAMES, type TrackRowDto } from '@polyphony/contracts';
import { call } from '../api';
import { busy, field, h, msg, numberInput, say, select } from '../dom';
import type { Page } from '../page';
import { songPicker } from '../picker';
import { fmtDistance } from '../track-format';
import { playlistSaver, trackTable } from '../tracks';

const page: Page = {
  title: 'Song path',
  tag: 'PER SERVER',
  render(root, { params }) {
    const out = msg();
    const results = h('div');
    let path: TrackRowDto[] = [];
    const moodOptions: Array<[string, string]> = [['', 'a song (search below)'], ...MOOD_NAMES.map((m): [string, string] => [m, `the mood "${m}"`])];
    const startMood = select(moodOptions, '');
    const endMood = select(moodOptions, '');
    const start = songPicker('Start song', () => update());
    const end = songPicker('End song', () => update());
    const steps = numberInput(25, 2, 200);
    const button = h('button', { type: 'button', class: 'primary', text: 'Find path', disabled: true });
    const update = () => {
      button.disabled = !((startMood.value || start.get()) && (endMood.value || end.get()));
    };
    startMood.addEventListener('change', update);
    endMood.addEventListener('change', update);
    const saver = playlistSaver(() => path.map((t) => t.item_id), () => 'Song path');
    button.addEventListener('click', () =>
      busy(button, out, async () => {
        say(out, 'Finding a path…');
        const r = await call(
          featureRoutes.findPath,
          {
            query: {
              start_song_id: startMood.value ? undefined : start.get()?.item_id,
              start_mood: startMood.value || undefined,
              end_song_id: endMood.value ? undefined : end.get()?.item_id,
              end_mood: endMood.value || undefined,
              max_steps: Number(steps.value),
            },
          },
          { scoped: true },
        );
        path = r.path;
        say(out, path.length ? `${path.length} songs, total distance ${fmtDistance(r.total_distance)}.` : 'No path found.');
        results.replaceChildren(path.length ? trackTable('Path', path, [{ header: 'Distance', cell: (t) => fmtDistance(t.distance) }]) : '');
        saver.show(path.length > 0);
      }),
    );
    const linked = params.get('start_song_id');
    if (linked) start.set({ item_id: linked, title: params.get('start_title') || null, author: params.get('start_author') || null, album: null, album_artist: null });
    root.append(
      h('div', { class: 'two' }, h('div', {}, field('Start from', startMood), start.element), h('div', {}, field('End at', endMood), end.element)),
      h('div', { class: 'toolbar' }, field('Max steps', steps), button),
      out,
      results,
      saver.element,
    );
  },
};
export default page;
