/**
 * Artist similarity (PER SERVER): pick an artist of the selected server, list the artists whose song
 * mixtures are closest (GET /api/similar_artists, divergence: lower is closer), show an artist's songs
 * (GET /api/artist_tracks) and save them as a playlist.
 */
import { featureRoutes, parityRoutes, type SimilarArtistDto } from '@polyphony/contracts';
import { call } from '../api';
import { busy, field, h, msg, numberInput, say, table } from '../dom';
import { lookup, type Hit } from '../lookup';
import type { Page } from '../page';
import { playlistSaver, trackTable } from '../tracks';

const page: Page = {
  title: 'Artist similarity',
  tag: 'PER SERVER',
  render(root) {
    const out = msg();
    const list = h('div');
    const songs = h('div');
    const n = numberInput(20, 1, 200);
    const components = h('input', { type: 'checkbox', id: 'artist-components' });
    const find = h('button', { type: 'button', class: 'primary', text: 'Find similar artists', disabled: true });
    let chosen: Hit | undefined;
    let tracks: Array<{ item_id: string }> = [];
    let tracksOf = '';
    const picked = h('p', { class: 'picked', 'aria-live': 'polite' });
    const saver = playlistSaver(() => tracks.map((t) => t.item_id), () => `Songs of ${tracksOf}`);
    const showSongs = async (artist: string, artistId: string | null) => {
      const rows = await call(parityRoutes.artistTracks, { query: artistId ? { artist_id: artistId } : { artist } }, { scoped: true });
      tracks = rows;
      tracksOf = artist;
      songs.replaceChildren(rows.length ? trackTable(`Songs of ${artist}`, rows.map((r) => ({ ...r, album: null }))) : h('p', { class: 'muted', text: `No song of ${artist} on this server.` }));
      saver.show(rows.length > 0);
    };
    find.addEventListener('click', () =>
      busy(find, out, async () => {
        if (!chosen) return;
        say(out, 'Comparing artists…');
        const rows: SimilarArtistDto[] = await call(featureRoutes.similarArtists, { query: { artist: chosen.id, n: Number(n.value), include_component_matches: components.checked } }, { scoped: true });
        say(out, rows.length ? `${rows.length} artists close to ${chosen.label}.` : 'No similar artist on this server.', 'ok');
        list.replaceChildren(
          rows.length
            ? table(
                'Similar artists',
                ['Artist', 'Divergence', 'Closest songs', 'Songs'],
                rows.map((a) => {
                  const b = h('button', { type: 'button', class: 'small', text: 'Show songs', 'aria-label': `Show songs of ${a.artist}` });
                  b.addEventListener('click', () => busy(b, out, () => showSongs(a.artist, a.artist_id)));
                  const matches = a.component_matches?.[0];
                  return [a.artist, a.divergence.toFixed(3), matches ? matches.artist2_representative_songs.map((s) => s.title ?? s.item_id).slice(0, 3).join(', ') : '—', b];
                }),
              )
            : '',
        );
      }),
    );
    root.append(
      lookup(
        'Artist',
        async (q) => (await call(parityRoutes.searchArtists, { query: { query: q } }, { scoped: true })).map((a) => ({ id: a.artist_id ?? a.artist, label: a.artist })),
        (hit) => {
          chosen = hit;
          picked.textContent = `Selected: ${hit.label}`;
          find.disabled = false;
        },
      ),
      picked,
      h('div', { class: 'toolbar' }, field('How many', n), h('label', { class: 'check', for: 'artist-components' }, components, 'Show matching songs'), find),
      out,
      list,
      songs,
      saver.element,
    );
  },
};
export default page;
