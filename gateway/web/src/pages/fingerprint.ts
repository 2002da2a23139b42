/**
 * Sonic fingerprint (PER SERVER): songs near the recency-weighted centre of the selected server's
 * listening history (POST /api/sonic_fingerprint/generate). Asks for that server's user credentials
 * when its kind needs them (Jellyfin/Emby user and token, Navidrome user and password); blank uses
 * the stored ones. They are sent once with the request, never stored by the page.
 */
import { featureRoutes, type TrackRowDto } from '@polyphony/contracts';
import { call } from '../api';
import { busy, field, h, msg, nodes, numberInput, say } from '../dom';
import type { Page } from '../page';
import { selectedServer } from '../state';
import { fmtDistance } from '../track-format';
import { playlistSaver, trackTable } from '../tracks';

const page: Page = {
  title: 'Sonic fingerprint',
  tag: 'PER SERVER',
  render(root) {
    const server = selectedServer();
    const kind = server?.server_type;
    const out = msg();
    const results = h('div');
    const n = numberInput(50, 1, 1000);
    const user = h('input', { autocomplete: 'off' });
    const secret = h('input', { type: 'password', autocomplete: 'new-password' });
    const creds: HTMLElement[] = [];
    if (kind === 'jellyfin' || kind === 'emby') creds.push(field('User (name or id)', user, 'Blank: the user stored with the server'), field('Access token', secret, 'Blank: the stored token'));
    else if (kind === 'navidrome') creds.push(field('Navidrome user', user, 'Blank: the stored user'), field('Navidrome password', secret, 'Blank: the stored password'));
    let tracks: TrackRowDto[] = [];
    const saver = playlistSaver(() => tracks.map((t) => t.item_id), () => 'Sonic fingerprint');
    const go = h('button', { type: 'button', class: 'primary', text: 'Generate', disabled: !server });
    go.addEventListener('click', () =>
      busy(go, out, async () => {
        say(out, 'Reading the listening history…');
        const body: Record<string, unknown> = { n: Number(n.value) };
        if (user.value.trim()) body[kind === 'navidrome' ? 'navidrome_user' : 'jellyfin_user_identifier'] = user.value.trim();
        if (secret.value) body[kind === 'navidrome' ? 'navidrome_password' : 'jellyfin_token'] = secret.value;
        tracks = await call(featureRoutes.fingerprintPost, { body }, { scoped: true });
        secret.value = '';
        say(out, tracks.length ? `${tracks.length} songs (your most played first).` : 'No listening history on this server yet.', tracks.length ? 'ok' : 'info');
        results.replaceChildren(tracks.length ? trackTable('Fingerprint', tracks, [{ header: 'Distance', cell: (t) => fmtDistance(t.distance) }]) : '');
        saver.show(tracks.length > 0);
      }),
    );
    root.append(
      ...nodes(
      h('p', { class: 'muted', text: server ? `Listening history of ${server.name} (${server.server_type}).` : 'Add a music server first.' }),
      creds.length ? h('fieldset', {}, h('legend', { text: `${server?.name ?? 'Server'} credentials (optional)` }), ...creds) : null,
      h('div', { class: 'toolbar' }, field('Songs', n), go),
      out,
      results,
      saver.element,
      ),
    );
  },
};
export default page;
