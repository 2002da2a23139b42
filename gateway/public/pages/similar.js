// Similar songs (PER SERVER): pick a seed song, list its nearest songs on the selected server,
// and save them as a playlist on that server.
import { api, busy, field, h, say, table, trackLabel } from '../lib.js';
import { songPicker } from './pick.js';

export default {
  title: 'Similar songs',
  tag: 'PER SERVER',
  render(root) {
    const out = h('p', { class: 'msg', role: 'status' });
    const results = h('div');
    const count = h('input', { type: 'number', min: '1', max: '200', value: '20' });
    let tracks = [];
    let seed;
    const findButton = h('button', { type: 'button', class: 'primary', text: 'Find similar songs', disabled: true });
    const picker = songPicker('Seed song', (t) => {
      seed = t;
      findButton.disabled = false;
    });
    const playlistName = h('input', { required: true, maxlength: '200' });
    const saveButton = h('button', { type: 'submit', text: 'Create playlist' });
    const saveOut = h('p', { class: 'msg', role: 'status' });
    const playlistForm = h('form', { class: 'inline', hidden: true }, field('Playlist name', playlistName), saveButton, saveOut);

    findButton.addEventListener('click', () =>
      busy(findButton, out, async () => {
        say(out, 'Searching the index…');
        tracks = (await api('/api/similar_tracks', { query: { item_id: seed.item_id, n: count.value }, scoped: true })) ?? [];
        say(out, tracks.length ? `${tracks.length} similar songs.` : 'No similar song available on this server.');
        results.replaceChildren(tracks.length ? table('Similar songs', ['#', 'Song', 'Distance'], tracks.map((t, i) => [String(i + 1), trackLabel(t), t.distance.toFixed(4)])) : '');
        playlistForm.hidden = tracks.length === 0;
        playlistName.value = `Similar to ${seed.title ?? 'song'}`;
      }),
    );
    playlistForm.addEventListener('submit', (e) => {
      e.preventDefault();
      busy(saveButton, saveOut, async () => {
        const ids = [seed.item_id, ...tracks.map((t) => t.item_id)];
        const r = await api('/api/create_playlist', { method: 'POST', body: { playlist_name: playlistName.value.trim(), track_ids: ids }, scoped: true });
        const missing = r?.unavailable_count ?? r?.unavailable ?? 0;
        say(saveOut, r?.message ?? `Playlist created${missing ? `; ${missing} songs are not on this server` : ''}.`, 'ok');
      });
    });
    root.append(picker.element, h('div', { class: 'toolbar' }, field('How many', count), findButton), out, results, playlistForm);
  },
};
