/**
 * My accounts (households, issue 34): every signed-in user links their OWN account on each media server, so the
 * playlists they create land in that account and stay private to them here. Credentials go to the API once and
 * are verified against the server; no secret is ever shown or read back (the answer says linked, the account
 * name and the libraries it sees). Below, "My playlists": the playlists polyphony wrote on the selected server
 * that this user may see, each with Export M3U8 / JSON.
 */
import { accountRoutes, playlistRoutes, type AccountDto } from '@polyphony/contracts';
import { call } from '../api';
import { busy, field, h, msg, say, section, table } from '../dom';
import type { Page } from '../page';
import { portableButtons } from '../portable';
import { selectedServer } from '../state';
import { plexClientId } from './setup';

/** The link form of one server, by kind. `done` redraws the page after a change. */
function linkForm(a: AccountDto, done: () => Promise<void>): HTMLElement {
  const out = msg();
  const put = (body: Record<string, string>) => call(accountRoutes.link, { params: { id: a.server_id }, body });
  if (a.server_type === 'lyrion') return h('p', { class: 'hint', text: 'Lyrion Music Server has no per-user accounts: playlists use the server account.' });
  if (a.server_type === 'plex') {
    const start = h('button', { type: 'button', text: 'Link with Plex' });
    const finish = h('button', { type: 'button', text: 'I entered the code', hidden: true });
    let pinId = '';
    start.addEventListener('click', () =>
      void busy(start, out, async () => {
        const pin = await call(accountRoutes.plexPin, { body: { client_id: plexClientId() } });
        pinId = pin.id;
        finish.hidden = false;
        out.replaceChildren('Enter the code ', h('strong', { text: pin.code }), ' at ', h('a', { href: pin.link_url, target: '_blank', rel: 'noopener', text: pin.link_url }), ', then press "I entered the code".');
      }),
    );
    finish.addEventListener('click', () =>
      void busy(finish, out, async () => {
        await put({ plex_pin_id: pinId, client_id: plexClientId() });
        await done();
      }),
    );
    return h('div', { class: 'inline' }, start, finish, out);
  }
  const userKey = a.server_type === 'navidrome' ? 'user' : 'username';
  const user = h('input', { required: true, autocomplete: 'username', maxlength: '200', 'aria-label': `Your user name on ${a.server_name}` });
  const pw = h('input', { type: 'password', required: true, autocomplete: 'current-password', 'aria-label': `Your password on ${a.server_name}` });
  const button = h('button', { type: 'submit', text: a.linked ? 'Replace' : 'Link' });
  const form = h('form', { class: 'inline' }, field('User name', user), field('Password', pw), button, out);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void busy(button, out, async () => {
      await put({ [userKey]: user.value.trim(), password: pw.value });
      form.reset();
      await done();
    });
  });
  return form;
}

/**
 * "Only my libraries" of a linked account on a kind with per-account libraries (issue 34): when checked, the results of
 * this server (similar songs, search, paths, alchemy, maps...) come only from the libraries the account sees.
 */
function scopeToggle(a: AccountDto, out: HTMLElement, done: () => Promise<void>): HTMLElement | null {
  if (a.status !== 'linked' || !a.library_scope_supported) return null;
  const box = h('input', { type: 'checkbox', checked: a.limit_to_libraries, 'aria-label': `Limit results on ${a.server_name} to the libraries your account sees` });
  box.addEventListener('change', () =>
    void busy(box, out, async () => {
      await call(accountRoutes.libraryScope, { params: { id: a.server_id }, body: { limit_to_libraries: box.checked } });
      say(out, box.checked ? `Results on ${a.server_name} now come only from the libraries your account sees.` : `Results on ${a.server_name} cover the whole server again.`, 'ok');
      await done();
    }),
  );
  return h('label', { class: 'inline' }, box, ' Only my libraries');
}

const page: Page = {
  title: 'My accounts',
  tag: 'CATALOGUE',
  render(root) {
    const list = h('div');
    const out = msg();
    const draw = async () => {
      const { accounts } = await call(accountRoutes.list, {});
      const rows = accounts.map((a) => {
        const unlink = a.status === 'not_linked' ? null : h('button', { type: 'button', class: 'small danger', text: 'Unlink', 'aria-label': `Unlink your account on ${a.server_name}` });
        unlink?.addEventListener('click', () =>
          void busy(unlink, out, async () => {
            await call(accountRoutes.unlink, { params: { id: a.server_id } });
            say(out, `Unlinked from ${a.server_name}: your playlists there now use the server account.`, 'ok');
            await draw();
          }),
        );
        const status = a.status === 'linked' ? `linked${a.account_name ? ` as ${a.account_name}` : ''}` : a.status === 'needs_relink' ? 'link again (the stored secret is gone or the server moved)' : 'not linked: the server account is used';
        const libs = a.libraries ? a.libraries.map((l) => l.name).join(', ') || '—' : '—';
        return [a.server_name, a.server_type, status, libs, h('div', {}, linkForm(a, draw), unlink, scopeToggle(a, out, draw))];
      });
      list.replaceChildren(table('Your accounts on the media servers', ['Server', 'Kind', 'Account', 'Libraries it sees', 'Link'], rows, { class: 'accounts' }));
    };
    const mine = h('div');
    const mineOut = msg();
    const drawPlaylists = async () => {
      const server = selectedServer();
      const data = await call(playlistRoutes.playlists, {});
      const entry = data.servers.find((s) => s.server_id === server?.id) ?? data.servers[0];
      const names = entry ? Object.keys(entry.playlists) : [];
      mine.replaceChildren(
        names.length === 0
          ? h('p', { class: 'hint', text: 'No playlist written by polyphony on this server yet.' })
          : table(`Playlists on ${entry?.server_name ?? ''}`, ['Playlist', 'Songs', 'Export'], names.map((n) => [n, String(entry!.playlists[n]!.length), portableButtons(() => ({ track_ids: entry!.playlists[n]!.map((t) => t.item_id) }), mineOut, () => n)])),
      );
    };
    void busy(h('button'), out, draw);
    void busy(h('button'), mineOut, drawPlaylists);
    const refresh = () => void busy(h('button'), mineOut, drawPlaylists);
    window.addEventListener('server-selected', refresh);
    root.append(
      section(
        'My accounts',
        h('p', { class: 'hint', text: 'Link your own account on a media server: the playlists you create are then written with it and only you see them here. Your password is sent once, checked by the server and never shown again. Without a link, the server account is used.' }),
        list,
        out,
      ),
      section('My playlists', h('p', { class: 'hint', text: 'Export as M3U8 (the server\'s file paths where it gives them, else stream links without credentials: your player signs in itself) or JSON, or add to your play queue (Subsonic, Jellyfin/Emby, Plex).' }), mine, mineOut),
    );
    return () => window.removeEventListener('server-selected', refresh);
  },
};

export default page;
