// Song path (PER SERVER): a chain of songs from a start song to an end song through the
// embedding space, restricted to songs available on the selected server.
import { api, busy, field, h, say, table, trackLabel } from '../lib.js';
import { songPicker } from './pick.js';

export default {
  title: 'Song path',
  tag: 'PER SERVER',
  render(root) {
    const out = h('p', { class: 'msg', role: 'status' });
    const results = h('div');
    const start = songPicker('Start song', () => update());
    const end = songPicker('End song', () => update());
    const steps = h('input', { type: 'number', min: '2', max: '200', value: '25' });
    const button = h('button', { type: 'button', class: 'primary', text: 'Find path', disabled: true });
    const update = () => {
      button.disabled = !(start.get() && end.get());
    };
    button.addEventListener('click', () =>
      busy(button, out, async () => {
        say(out, 'Finding a path…');
        const r = await api('/api/find_path', { query: { start_song_id: start.get().item_id, end_song_id: end.get().item_id, max_steps: steps.value }, scoped: true });
        const path = r?.path ?? [];
        say(out, path.length ? `${path.length} songs, total distance ${Number(r.total_distance).toFixed(4)}.` : 'No path found.');
        results.replaceChildren(path.length ? table('Path', ['#', 'Song', 'Distance'], path.map((t, i) => [String(i + 1), trackLabel(t), Number(t.distance).toFixed(4)])) : '');
      }),
    );
    root.append(h('div', { class: 'two' }, start.element, end.element), h('div', { class: 'toolbar' }, field('Max steps', steps), button), out, results);
  },
};
