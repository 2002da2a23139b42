/**
 * Result lists shared by the PER SERVER pages: a track table whose rows link to Similar songs, and
 * the "Save as playlist" form that writes the list on the selected server and reports how many
 * tracks that server does not have.
 */
import { chatRoutes, playlistRoutes } from '@polyphony/contracts';
import { call } from './api';
import { portableButtons } from './portable';
import { busy, field, h, msg, say } from './dom';
import { selectedServer } from './state';
import { similarHref, trackLabel, type TrackLike } from './track-format';

export { trackLabel };

export interface Column<T> {
  header: string;
  cell: (t: T, i: number) => Node | string;
}

/** A table of tracks: #, song (a link to its similar songs), artist-album, plus extra columns. */
export function trackTable<T extends TrackLike>(caption: string, tracks: T[], extra: Array<Column<T>> = []): HTMLTableElement {
  return h(
    'table',
    { class: 'tracks' },
    h('caption', { text: caption }),
    h('thead', {}, h('tr', {}, ['#', 'Song', 'Album', ...extra.map((c) => c.header)].map((x) => h('th', { scope: 'col', text: x })))),
    h(
      'tbody',
      {},
      tracks.map((t, i) =>
        h(
          'tr',
          { 'data-item-id': t.item_id },
          h('td', { text: String(i + 1) }),
          h('td', {}, h('a', { href: similarHref(t), title: 'Similar songs to this one', text: trackLabel(t) })),
          h('td', { text: t.album ?? '' }),
          ...extra.map((c) => h('td', {}, c.cell(t, i))),
        ),
      ),
    ),
  );
}

/**
 * "Save as playlist": POST /api/create_playlist (or the chat variant) on the selected server with
 * the ids `getIds()` returns; shows the created name and the unavailable count the API reports. With it, the
 * portable actions on the same list: Export M3U8 / JSON (a download) and Add to queue.
 */
export function playlistSaver(getIds: () => string[], defaultName: () => string, opts: { chat?: boolean } = {}): { element: HTMLFormElement; show(on: boolean): void } {
  const name = h('input', { required: true, maxlength: '200', autocomplete: 'off' });
  const button = h('button', { type: 'submit', text: 'Save as playlist' });
  const out = msg();
  const form = h(
    'form',
    { class: 'inline saver', hidden: true },
    field('Playlist name', name),
    button,
    portableButtons(() => ({ track_ids: getIds() }), out, () => name.value.trim() || defaultName()),
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void busy(button, out, async () => {
      const route = opts.chat ? chatRoutes.chatCreatePlaylist : playlistRoutes.createPlaylist;
      const r = await call(route, { body: { playlist_name: name.value.trim(), track_ids: getIds() } }, { scoped: true });
      const where = selectedServer()?.name ?? 'the server';
      const missing = r.unavailable ?? 0;
      const whose = r.account === 'user' ? ' in your own account' : '';
      say(out, `Playlist "${r.playlist_name}" created on ${where}${whose} with ${r.mapped} songs; ${missing} unavailable there.`, 'ok');
    });
  });
  return {
    element: form,
    show(on: boolean) {
      form.hidden = !on;
      if (on && !name.value) name.value = defaultName();
      if (on) say(out, '');
    },
  };
}
