/**
 * Album creation (PER SERVER, issue 31): a song or a few words become a sequenced album on the selected server
 * (POST /api/album_creation/generate); the sequence shows each track's role and the album's stats, tracks can be
 * moved up or down or dropped, and the result is saved as a playlist there (the shared "Save as playlist" form).
 */
import { albumRoutes, type AlbumGenerateResponse, type AlbumTrackDto } from '@polyphony/contracts';
import { call } from '../api';
import { busy, field, h, msg, numberInput, say, select } from '../dom';
import type { Page } from '../page';
import { songPicker } from '../picker';
import { playlistSaver } from '../tracks';

/** "m:ss" of seconds; "—" when unknown. */
function fmtLength(s: number | null): string {
  if (s === null || !Number.isFinite(s)) return '—';
  const m = Math.floor(s / 60);
  return `${m}:${String(Math.round(s - m * 60)).padStart(2, '0')}`;
}

const page: Page = {
  title: 'Album creation',
  tag: 'PER SERVER',
  render(root) {
    const out = msg();
    const seedType = select(
      [
        ['song', 'a song (search below)'],
        ['text', 'a few words'],
      ],
      'song',
    );
    const picker = songPicker('Seed song', () => update());
    const words = h('input', { type: 'text', maxlength: '500', placeholder: 'e.g. dark ambient with piano', autocomplete: 'off', 'aria-label': 'Seed words' });
    const wordsField = field('Seed words', words, 'Genre, instrument and mood words the learned tags know (ambient, piano, rock, sad…).');
    const length = numberInput(12, 4, 30);
    const button = h('button', { type: 'button', class: 'primary', text: 'Create album' });
    const stats = h('p', { class: 'album-stats', 'aria-live': 'polite' });
    const results = h('div');
    let album: AlbumGenerateResponse | undefined;
    let tracks: AlbumTrackDto[] = [];
    const saver = playlistSaver(
      () => tracks.map((t) => t.item_id),
      () => album?.suggested_name ?? 'Album',
    );
    const update = () => {
      const song = seedType.value === 'song';
      picker.element.hidden = !song;
      wordsField.hidden = song;
      button.disabled = song ? !picker.get() : words.value.trim().length < 3;
    };
    seedType.addEventListener('change', update);
    words.addEventListener('input', update);

    /** Shows the sequence; each track keeps the role it was generated with when it is moved. */
    const render = () => {
      const minutes = Math.round(tracks.reduce((t, x) => t + (x.duration ?? 0), 0) / 6) / 10;
      if (album) {
        const s = album.stats;
        // Counts follow the edits; cohesion and the opener style are the generated album's.
        stats.textContent = `${tracks.length} tracks, ${minutes} min, ${new Set(tracks.map((t) => t.author.toLowerCase())).size} artists · as generated: cohesion ${s.cohesion} (target ${s.target_cohesion}), opens with ${s.opener_style === 'intro' ? 'an intro' : 'a bang'}`;
      }
      const rows = tracks.map((t, i) => {
        const up = h('button', { type: 'button', class: 'small', text: '↑', title: 'Move up', 'aria-label': `Move ${t.title} up`, disabled: i === 0 });
        const down = h('button', { type: 'button', class: 'small', text: '↓', title: 'Move down', 'aria-label': `Move ${t.title} down`, disabled: i === tracks.length - 1 });
        const drop = h('button', { type: 'button', class: 'small danger', text: 'Drop', 'aria-label': `Drop ${t.title}` });
        up.addEventListener('click', () => {
          [tracks[i - 1], tracks[i]] = [tracks[i]!, tracks[i - 1]!];
          render();
        });
        down.addEventListener('click', () => {
          [tracks[i + 1], tracks[i]] = [tracks[i]!, tracks[i + 1]!];
          render();
        });
        drop.addEventListener('click', () => {
          tracks.splice(i, 1);
          render();
        });
        return h(
          'tr',
          { 'data-item-id': t.item_id },
          h('td', { text: String(i + 1) }),
          h('td', { class: `role role-${t.role}`, text: t.role }),
          h('td', { text: `${t.title} - ${t.author}` }),
          h('td', { text: t.album ?? '' }),
          h('td', { text: fmtLength(t.duration) }),
          h('td', {}, h('div', { class: 'actions' }, up, down, drop)),
        );
      });
      results.replaceChildren(
        tracks.length
          ? h(
              'table',
              { class: 'tracks album' },
              h('caption', { text: album ? `${album.suggested_name} (seed: ${album.seed.label})` : 'Album' }),
              h('thead', {}, h('tr', {}, ['#', 'Suggested role', 'Song', 'Album', 'Length', 'Order'].map((x) => h('th', { scope: 'col', text: x })))),
              h('tbody', {}, rows),
            )
          : '',
      );
      saver.show(tracks.length > 0);
    };

    button.addEventListener('click', () =>
      busy(button, out, async () => {
        say(out, 'Creating the album…');
        const song = seedType.value === 'song';
        album = await call(
          albumRoutes.generate,
          { body: song ? { seed_type: 'song', item_id: picker.get()!.item_id, length: Number(length.value) } : { seed_type: 'text', query: words.value.trim(), length: Number(length.value) } },
          { scoped: true },
        );
        tracks = [...album.tracks];
        say(out, '');
        render();
      }),
    );
    update();
    root.append(
      field('Start from', seedType),
      picker.element,
      wordsField,
      h('div', { class: 'toolbar' }, field('Tracks', length), button),
      out,
      stats,
      results,
      saver.element,
    );
  },
};
export default page;
