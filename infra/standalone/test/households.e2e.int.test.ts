import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { ServiceClient } from '@polyphony/platform';
import { createFakeJellyfin, createFakeLyrion, createFakeSubsonic, startSupysonic, syntheticCatalogue, WESNOTH_MUSIC_DIR, type StartedFake, type StartedSupysonic } from '@polyphony/testkit';
import { API_TOKEN, loginCookie, rawBody, useTestStack, waitFor } from './helpers';

/**
 * Households (issue 34): a real supysonic with three accounts (the server's own `house`, used by the
 * registry, and `alice` and `bob`, made with supysonic's CLI) serves three Wesnoth songs. Polyphony users
 * alice and bob link their own accounts; carol links none. Each creates a playlist through the gateway:
 * alice's and bob's land in their own Subsonic accounts (read back with getPlaylists under each user's
 * credentials), carol's in the server's account (fallback). Polyphony's list shows each user only their own
 * private playlists (plus the server account's); exports follow the same privacy, embed credentials only from
 * the caller's own account, and no answer ever carries a password. The catalogue is seeded through the
 * catalogue's identity resolver (no audio analysis: playlist creation only needs the id mappings).
 */
describe('households: per-user media-server accounts on a real supysonic', () => {
  jest.setTimeout(5 * 60_000);
  const bearer = { Authorization: `Bearer ${API_TOKEN}` };
  const SONGS = ['victory', 'elf-land', 'revelation'];
  const PASS = { house: 'house-pass-1', alice: 'alice-pass-2', bob: 'bob-pass-3' } as const;
  const POLY_PASS = 'poly-password-1';
  const root = mkdtempSync(join(tmpdir(), 'households-music-'));
  let sub: StartedSupysonic;
  /** Provider ids by file name. */
  const ids: Record<string, string> = {};
  /** Every answer body seen, to check that no secret ever came back. */
  const answers: string[] = [];

  beforeAll(async () => {
    for (const s of SONGS) copyFileSync(join(WESNOTH_MUSIC_DIR, `${s}.ogg`), join(root, `${s}.ogg`));
    sub = await startSupysonic({ musicDir: root, user: 'house', password: PASS.house });
    await sub.addUser('alice', PASS.alice);
    await sub.addUser('bob', PASS.bob);
    const found = (await subsonic('house', 'search3', '&query=&songCount=50')) as { searchResult3: { song: Array<{ id: string; path: string }> } };
    for (const x of found.searchResult3.song) ids[x.path.replace(/\.ogg$/, '')] = x.id;
    expect(Object.keys(ids).sort()).toEqual([...SONGS].sort());
  });
  const app = useTestStack();
  const fakes: StartedFake[] = [];
  afterAll(async () => {
    for (const f of fakes) await f.close();
    await sub?.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** One Subsonic call as `user` (supysonic takes `p`, not token auth). */
  async function subsonic(user: keyof typeof PASS, method: string, extra = ''): Promise<Record<string, unknown>> {
    const res = await fetch(`${sub.url}/rest/${method}.view?u=${user}&p=${PASS[user]}&v=1.12.0&c=t&f=json${extra}`);
    const body = (await res.json()) as { 'subsonic-response': Record<string, unknown> };
    expect(body['subsonic-response'].status).toBe('ok');
    return body['subsonic-response'];
  }
  async function playlistNames(user: keyof typeof PASS): Promise<Array<{ name: string; owner: string }>> {
    const r = (await subsonic(user, 'getPlaylists')) as { playlists: { playlist?: Array<{ name: string; owner: string }> } };
    return (r.playlists.playlist ?? []).map((p) => ({ name: p.name, owner: p.owner }));
  }
  /** Records and returns a response. */
  function seen(res: request.Response): request.Response {
    answers.push(Buffer.isBuffer(res.body) ? res.body.toString('utf8') : (res.text ?? JSON.stringify(res.body)));
    return res;
  }
  /** POST /api/playlists/export as M3U8 text. */
  async function exportText(h: Record<string, string>, body: Record<string, unknown>): Promise<string> {
    const res = seen(await request(app.url).post('/api/playlists/export').set(h).send({ format: 'm3u8', ...body }).buffer(true).parse(rawBody).expect(200));
    expect(res.headers['content-type']).toMatch(/^audio\/x-mpegurl; charset=utf-8/);
    return (res.body as Buffer).toString('utf8');
  }

  let serverId: string;
  const cookies: Record<string, string> = {};
  const userIds: Record<string, string> = {};
  beforeAll(async () => {
    const created = seen(await request(app.url).post('/api/servers').set(bearer).send({ name: 'House', server_type: 'navidrome', creds: { url: sub.url, user: 'house', password: PASS.house } }).expect(201));
    serverId = created.body.id;
    const catalogue = new ServiceClient(() => app.stack.peers().catalogue, app.stack.internalSecret, 'households-test', 30_000);
    for (const [i, name] of SONGS.entries()) {
      const embedding = Array.from({ length: 200 }, (_, k) => Math.sin((i + 1) * (k + 1)));
      await catalogue.post('/internal/identity/resolve', {
        serverId,
        providerId: ids[name],
        embedding,
        embedderVersion: 'dsp-v1',
        durationSeconds: 100 + i,
        metadata: { title: name, artist: 'Wesnoth', album: 'Core', filePath: `${name}.ogg` },
        descriptors: {},
      });
    }
    for (const user of ['alice', 'bob', 'carol']) {
      userIds[user] = (await request(app.url).post('/api/users').set(bearer).send({ username: user, password: POLY_PASS }).expect(201)).body.id;
      cookies[user] = await loginCookie(app.url, user, POLY_PASS);
    }
  });

  const as = (user: string) => ({ Cookie: cookies[user]! });

  it('When users link their own Subsonic accounts, then a wrong password is refused, the right one is verified and stored, and answers hold no secret', async () => {
    const before = seen(await request(app.url).get('/api/me/accounts').set(as('alice')).expect(200));
    expect(before.body.accounts).toEqual([expect.objectContaining({ server_id: serverId, server_type: 'navidrome', status: 'not_linked', linked: false, library_scope_supported: true })]);

    const refused = seen(await request(app.url).put(`/api/me/servers/${serverId}/account`).set(as('alice')).send({ user: 'alice', password: 'wrong-password' }).expect(400));
    expect(refused.body).toMatchObject({ code: 'media_server_auth_failed', request_id: expect.any(String) });
    expect((await request(app.url).get(`/api/me/servers/${serverId}/account`).set(as('alice')).expect(200)).body.status).toBe('not_linked');
    // Keys of another kind, and a kind mismatch, are the caller's input errors.
    expect(seen(await request(app.url).put(`/api/me/servers/${serverId}/account`).set(as('alice')).send({ token: 'x' }).expect(400)).body.code).toBe('validation_failed');
    seen(await request(app.url).put('/api/me/servers/00000000-0000-0000-0000-000000000000/account').set(as('alice')).send({ user: 'alice', password: PASS.alice }).expect(404));
    // The API token is no household member: it has no own accounts.
    seen(await request(app.url).put(`/api/me/servers/${serverId}/account`).set(bearer).send({ user: 'alice', password: PASS.alice }).expect(403));

    for (const user of ['alice', 'bob'] as const) {
      const linked = seen(await request(app.url).put(`/api/me/servers/${serverId}/account`).set(as(user)).send({ user, password: PASS[user] }).expect(200));
      expect(linked.body).toMatchObject({ server_id: serverId, status: 'linked', linked: true, account_name: user, libraries: [{ id: expect.any(String), name: 'Music' }] });
    }
    // Each user sees their own link only.
    expect((await request(app.url).get(`/api/me/servers/${serverId}/account`).set(as('carol')).expect(200)).body.status).toBe('not_linked');
    // Stored like the registry's secrets (in the registry schema), never answered.
    const rows = await app.sql<{ user_id: string; creds: Record<string, string> }>(`SELECT user_id, creds FROM registry.user_accounts ORDER BY creds->>'user'`);
    expect(rows.map((r) => r.creds.user)).toEqual(['alice', 'bob']);
    expect(rows[0]!.creds.url).toBe(sub.url);
  });

  it('When each user creates a playlist, then alice and bob write into their own Subsonic accounts, carol falls back to the server account, and polyphony lists each private playlist to its owner only', async () => {
    const made: Record<string, string> = {};
    for (const [user, songs] of [['alice', ['victory', 'elf-land']], ['bob', ['revelation']], ['carol', ['victory']]] as const) {
      const res = seen(await request(app.url).post('/api/create_playlist').set(as(user)).send({ playlist_name: `${user} mix`, track_ids: songs.map((s) => ids[s]) }).expect(201));
      expect(res.body).toMatchObject({ mapped: songs.length, account: user === 'carol' ? 'server' : 'user' });
      made[user] = res.body.playlist_name;
    }
    // On the media server, read with each account's own credentials.
    expect(await playlistNames('alice')).toEqual([{ name: 'alice mix_instant', owner: 'alice' }]);
    expect(await playlistNames('bob')).toEqual([{ name: 'bob mix_instant', owner: 'bob' }]);
    expect(await playlistNames('house')).toEqual([{ name: 'carol mix_instant', owner: 'house' }]);
    const alicePlaylist = ((await subsonic('alice', 'getPlaylists')) as { playlists: { playlist: Array<{ id: string }> } }).playlists.playlist[0]!.id;
    const entries = (await subsonic('alice', 'getPlaylist', `&id=${alicePlaylist}`)) as { playlist: { entry: Array<{ id: string }> } };
    expect(entries.playlist.entry.map((e) => e.id)).toEqual([ids.victory, ids['elf-land']]);

    // In polyphony's list: own private playlists and the server account's; never another user's.
    const listed = async (h: Record<string, string>) => Object.keys(seen(await request(app.url).get('/api/playlists').set(h).expect(200)).body.servers[0].playlists).sort();
    expect(await listed(as('alice'))).toEqual(['alice mix_instant', 'carol mix_instant']);
    expect(await listed(as('bob'))).toEqual(['bob mix_instant', 'carol mix_instant']);
    expect(await listed(as('carol'))).toEqual(['carol mix_instant']);
    expect(await listed(bearer)).toEqual(['carol mix_instant']);
    expect(made.alice).toBe('alice mix_instant');
  });

  it("When playlists are exported, then paths and stream URLs come from the selected server, another user's private playlist is not found, and credentials are embedded only from the caller's own account", async () => {
    const json = seen(await request(app.url).post('/api/playlists/export').set(as('alice')).send({ playlist: 'alice mix', format: 'json' }).expect(200));
    expect(json.headers['content-disposition']).toMatch(/attachment; filename="alice mix_instant\.json"/);
    expect(json.body).toMatchObject({ format: 'polyphony-playlist', version: 1, name: 'alice mix_instant', server_id: serverId, server_type: 'navidrome', credentials_embedded: false, unavailable_ids: [] });
    expect(json.body.tracks.map((t: { provider_id: string; path: string }) => [t.provider_id, t.path])).toEqual([
      [ids.victory, 'victory.ogg'],
      [ids['elf-land'], 'elf-land.ogg'],
    ]);
    for (const t of json.body.tracks as Array<{ stream_url: string }>) {
      const u = new URL(t.stream_url);
      expect(u.origin + u.pathname).toBe(`${sub.url}/rest/stream`);
      expect([...u.searchParams.keys()].sort()).toEqual(['c', 'id', 'v']);
    }
    expect(await exportText(as('alice'), { playlist: 'alice mix' })).toBe(['#EXTM3U', '#PLAYLIST:alice mix_instant', '#EXTINF:100,Wesnoth - victory', 'victory.ogg', '#EXTINF:101,Wesnoth - elf-land', 'elf-land.ogg', ''].join('\n'));

    // Private to alice: bob cannot export it (404, as if it did not exist).
    expect(seen(await request(app.url).post('/api/playlists/export').set(as('bob')).send({ playlist: 'alice mix', format: 'json' }).expect(404)).body.code).toBe('not_found');

    // Embedded credentials: alice's own salted token (never her password); carol has no own account: refused.
    const withCreds = await exportText(as('alice'), { track_ids: [ids.revelation], locations: 'stream', embed_credentials: true });
    const streamLine = withCreds.split('\n').find((l) => l.startsWith('http'))!;
    const q = new URL(streamLine).searchParams;
    expect(q.get('u')).toBe('alice');
    expect(q.get('t')).toMatch(/^[0-9a-f]{32}$/);
    expect(q.get('s')).toBeTruthy();
    expect(q.get('p')).toBeNull();
    // The embedded token authenticates as alice on a Subsonic server with token auth (checked locally: supysonic 0.7 knows only `p`).
    expect(createHash('md5').update(PASS.alice + q.get('s')).digest('hex')).toBe(q.get('t'));
    const refused = seen(await request(app.url).post('/api/playlists/export').set(as('carol')).send({ track_ids: [ids.revelation], format: 'json', embed_credentials: true }).expect(400));
    expect(refused.body.code).toBe('own_account_required');
    seen(await request(app.url).post('/api/playlists/export').set(bearer).send({ track_ids: [ids.revelation], format: 'json', embed_credentials: true }).expect(400));
    // Bad input is a 400, never a 500.
    seen(await request(app.url).post('/api/playlists/export').set(as('alice')).send({ format: 'json' }).expect(400));
    seen(await request(app.url).post('/api/playlists/export').set(as('alice')).send({ playlist: 'x', track_ids: ['y'] }).expect(400));
  });

  it('When alice unlinks, then her next playlist falls back to the server account and is listed to everyone; the play queue needs an own account; no answer held a secret', async () => {
    await request(app.url).delete(`/api/me/servers/${serverId}/account`).set(as('alice')).expect(204);
    expect((await request(app.url).get(`/api/me/servers/${serverId}/account`).set(as('alice')).expect(200)).body).toMatchObject({ status: 'not_linked', libraries: null });
    const res = seen(await request(app.url).post('/api/create_playlist').set(as('alice')).send({ playlist_name: 'after unlink', track_ids: [ids.victory] }).expect(201));
    expect(res.body.account).toBe('server');
    expect((await playlistNames('house')).map((p) => p.name).sort()).toEqual(['after unlink_instant', 'carol mix_instant']);
    expect(Object.keys(seen(await request(app.url).get('/api/playlists').set(as('bob')).expect(200)).body.servers[0].playlists)).toContain('after unlink_instant');
    // Her earlier private playlist stays hers.
    expect(Object.keys((await request(app.url).get('/api/playlists').set(as('bob')).expect(200)).body.servers[0].playlists)).not.toContain('alice mix_instant');

    // Play queue: supysonic 0.7 has no savePlayQueue (a 404 there), so the media server's failure is a 502, never a 500;
    // carol (no own account, not an admin) is refused before anything is sent.
    expect(seen(await request(app.url).post('/api/queue').set(as('carol')).send({ track_ids: [ids.victory] }).expect(400)).body.code).toBe('own_account_required');
    await request(app.url).put(`/api/me/servers/${serverId}/account`).set(as('bob')).send({ user: 'bob', password: PASS.bob }).expect(200);
    expect(seen(await request(app.url).post('/api/queue').set(as('bob')).send({ track_ids: [ids.victory] }).expect(502)).body.code).toBe('upstream_unavailable');

    for (const body of answers) for (const secret of Object.values(PASS)) expect(body).not.toContain(secret);
  });
  it("When a user links a Jellyfin account by user name and password, then only the token is kept; a Lyrion server offers no accounts; a deleted user's accounts are forgotten", async () => {
    const catalogue = syntheticCatalogue(3);
    const jf = createFakeJellyfin({ catalogue, token: 'jf-user-token-9', userName: 'alice-jf', password: 'jf-login-pass-7' });
    const lms = createFakeLyrion({ catalogue });
    const jfUrl = (await jf.start().then((f) => (fakes.push(f), f))).url;
    const lmsUrl = (await lms.start().then((f) => (fakes.push(f), f))).url;
    const jelly = (await request(app.url).post('/api/servers').set(bearer).send({ name: 'Jelly', server_type: 'jellyfin', creds: { url: jfUrl, user_id: jf.userId, token: 'jf-user-token-9' } }).expect(201)).body.id as string;
    const lyrion = (await request(app.url).post('/api/servers').set(bearer).send({ name: 'Lyrion', server_type: 'lyrion', creds: { url: lmsUrl } }).expect(201)).body.id as string;

    seen(await request(app.url).put(`/api/me/servers/${jelly}/account`).set(as('alice')).send({ username: 'alice-jf', password: 'wrong' }).expect(400));
    const linked = seen(await request(app.url).put(`/api/me/servers/${jelly}/account`).set(as('alice')).send({ username: 'alice-jf', password: 'jf-login-pass-7' }).expect(200));
    expect(linked.body).toMatchObject({ server_type: 'jellyfin', status: 'linked', account_name: 'alice-jf', library_scope_supported: true });
    const stored = await app.sql<{ creds: Record<string, string> }>(`SELECT creds FROM registry.user_accounts WHERE server_id = $1`, [jelly]);
    expect(Object.keys(stored[0]!.creds).sort()).toEqual(['token', 'url', 'user_id']);
    expect(stored[0]!.creds.token).toBe('jf-user-token-9');
    expect(JSON.stringify(linked.body)).not.toContain('jf-user-token-9');

    const refused = seen(await request(app.url).put(`/api/me/servers/${lyrion}/account`).set(as('alice')).send({ user: 'a', password: 'b' }).expect(400));
    expect(refused.body.code).toBe('accounts_not_supported');
    const all = seen(await request(app.url).get('/api/me/accounts').set(as('alice')).expect(200)).body.accounts as Array<{ server_name: string; status: string; library_scope_supported: boolean }>;
    expect(all.map((a) => [a.server_name, a.status, a.library_scope_supported])).toEqual([
      ['House', 'not_linked', true],
      ['Jelly', 'linked', true],
      ['Lyrion', 'not_linked', false],
    ]);
    for (const body of answers) for (const secret of ['jf-login-pass-7', 'jf-user-token-9']) expect(body).not.toContain(secret);

    // A deleted user's accounts (their secrets) go with them.
    const countOf = async (id: string) => (await app.sql<{ n: number }>(`SELECT count(*)::int AS n FROM registry.user_accounts WHERE user_id = $1`, [id]))[0]!.n;
    expect(await countOf(userIds.bob!)).toBe(1);
    await request(app.url).delete(`/api/users/${userIds.bob}`).set(bearer).send({}).expect(200);
    expect(await countOf(userIds.bob!)).toBe(0);
    expect(await countOf(userIds.alice!)).toBe(1);
  });

  it("When alice and carol each save a radio and the radios run, then alice's radio lands in her own Subsonic account (private to her here), carol's in the server's, a second run replaces alice's in her account, and after she unlinks it falls back to the server's account", async () => {
    // Alice links her Subsonic account again (she unlinked it above); carol has none.
    await request(app.url).put(`/api/me/servers/${serverId}/account`).set(as('alice')).send({ user: 'alice', password: PASS.alice }).expect(200);
    const before = (await request(app.url).get('/api/index/status').set(bearer).expect(200)).body.generation as number;
    await request(app.url).post('/api/index/rebuild').set(bearer).send({}).expect(202);
    await waitFor('an index generation with the three songs', async () => {
      const st = (await request(app.url).get('/api/index/status').set(bearer).expect(200)).body;
      return st.generation > before && !st.building && st.items === SONGS.length ? st : undefined;
    }, { timeoutMs: 120_000 });
    const radio = async (user: string, name: string, song: string) =>
      seen(await request(app.url).post('/api/radios').set(as(user)).query({ server: 'House' }).send({ name, items: [{ id: ids[song], op: 'ADD', type: 'song' }], n_results: 2, temperature: 0 }).expect(200)).body.radio as { id: number };
    const aliceRadio = await radio('alice', 'Alice calm', 'victory');
    const carolRadio = await radio('carol', 'Carol loud', 'revelation');
    // The creator is stored with the radio (the gateway's user id).
    const stored = await app.sql<{ id: number; created_by_user_id: string | null }>(`SELECT id, created_by_user_id FROM "index".radios ORDER BY id`);
    expect(stored).toEqual([
      { id: aliceRadio.id, created_by_user_id: userIds.alice },
      { id: carolRadio.id, created_by_user_id: userIds.carol },
    ]);

    for (const round of [1, 2]) {
      const run = seen(await request(app.url).post('/api/radios/run').set(bearer).send({}).expect(200));
      // Jelly and Lyrion hold none of these songs: only House's two playlists are written.
      expect(run.body).toMatchObject({ status: 'SUCCESS', playlists_created: 2, radios_enabled: 2 });
      expect((await playlistNames('alice')).filter((p) => p.name.endsWith('_radio'))).toEqual([{ name: 'Alice calm_radio', owner: 'alice' }]);
      expect((await playlistNames('house')).filter((p) => p.name.endsWith('_radio'))).toEqual([{ name: 'Carol loud_radio', owner: 'house' }]);
      const recorded = await app.sql<{ name: string; account: string; owner_user_id: string | null }>(`SELECT name, account, owner_user_id FROM playlist.playlists WHERE kind = 'radio' ORDER BY name`);
      expect({ round, recorded }).toEqual({
        round,
        recorded: [
          { name: 'Alice calm_radio', account: 'user', owner_user_id: userIds.alice },
          { name: 'Carol loud_radio', account: 'server', owner_user_id: null },
        ],
      });
    }
    // Alice's radio playlist is private to her in polyphony; the server account's is listed to everyone.
    const listed = async (h: Record<string, string>) => Object.keys(seen(await request(app.url).get('/api/playlists').set(h).expect(200)).body.servers[0].playlists).filter((n) => n.endsWith('_radio')).sort();
    expect(await listed(as('alice'))).toEqual(['Alice calm_radio', 'Carol loud_radio']);
    expect(await listed(as('carol'))).toEqual(['Carol loud_radio']);

    // Alice unlinks: her radio falls back to the server's account. The server's account may not delete her old playlist
    // (supysonic: only its owner or an admin), so it stays in her account, its record is forgotten, and the run goes on.
    await request(app.url).delete(`/api/me/servers/${serverId}/account`).set(as('alice')).expect(204);
    const fallback = seen(await request(app.url).post('/api/radios/run').set(bearer).send({}).expect(200));
    expect(fallback.body).toMatchObject({ status: 'SUCCESS', playlists_created: 2 });
    expect((await playlistNames('alice')).filter((p) => p.name.endsWith('_radio'))).toEqual([{ name: 'Alice calm_radio', owner: 'alice' }]);
    expect((await playlistNames('house')).filter((p) => p.name.endsWith('_radio')).map((p) => p.name).sort()).toEqual(['Alice calm_radio', 'Carol loud_radio']);
    expect(await app.sql(`SELECT name, account FROM playlist.playlists WHERE kind = 'radio' ORDER BY name`)).toEqual([
      { name: 'Alice calm_radio', account: 'server' },
      { name: 'Carol loud_radio', account: 'server' },
    ]);
    for (const body of answers) for (const secret of Object.values(PASS)) expect(body).not.toContain(secret);
  });

  it('When dave limits his answers on a Navidrome that gave his account one of its two libraries (fake Subsonic, Navidrome 0.58 multi-library), then his similar songs come from that library only, while carol sees both', async () => {
    // bob was deleted above: dave is a new polyphony user who links the media-server accounts named bob.
    userIds.dave = (await request(app.url).post('/api/users').set(bearer).send({ username: 'dave', password: POLY_PASS }).expect(201)).body.id;
    cookies.dave = await loginCookie(app.url, 'dave', POLY_PASS);
    const synthetic = syntheticCatalogue(16);
    const lib2 = synthetic.libraries[1];
    const fake = createFakeSubsonic({ catalogue: synthetic, user: 'navi-house', password: 'navi-house-pw', accounts: [{ user: 'bob', password: 'navi-bob-pw', libraries: [lib2!.id] }] });
    const started = await fake.start();
    fakes.push(started);
    const naviId = seen(await request(app.url).post('/api/servers').set(bearer).send({ name: 'Navi', server_type: 'navidrome', creds: { url: started.url, user: 'navi-house', password: 'navi-house-pw' } }).expect(201)).body.id as string;
    // Songs as an analysis of this server records them: each mapping with the music folder its file was listed under.
    const catalogue = new ServiceClient(() => app.stack.peers().catalogue, app.stack.internalSecret, 'households-test', 30_000);
    const inLib2 = new Set<string>();
    for (let i = 0; i < synthetic.size; i++) {
      const t = synthetic.trackAt(i);
      if (t.library === lib2!.id) inLib2.add(fake.idOf(t));
      await catalogue.post('/internal/identity/resolve', {
        serverId: naviId,
        providerId: fake.idOf(t),
        embedding: Array.from({ length: 200 }, (_, k) => Math.cos((i + 2) * (k + 1) * 0.37)),
        embedderVersion: 'dsp-v1',
        durationSeconds: 150 + i,
        metadata: { title: `Navi song ${i}`, artist: `Synth ${i}`, album: `Navi album ${i}`, filePath: `navi/${i}.flac`, libraryId: String(fake.folderIdOf(t.library)) },
        descriptors: {},
      });
    }
    expect(inLib2.size).toBeGreaterThan(1);
    expect(inLib2.size).toBeLessThan(synthetic.size);
    const before = (await request(app.url).get('/api/index/status').set(bearer).expect(200)).body.generation as number;
    await request(app.url).post('/api/index/rebuild').set(bearer).send({}).expect(202);
    const built = await waitFor('an index generation with the Navi songs', async () => {
      const st = (await request(app.url).get('/api/index/status').set(bearer).expect(200)).body;
      return st.generation > before && !st.building ? st : undefined;
    }, { timeoutMs: 120_000 });
    expect(built.items).toBe(SONGS.length + synthetic.size);

    const linked = seen(await request(app.url).put(`/api/me/servers/${naviId}/account`).set(as('dave')).send({ user: 'bob', password: 'navi-bob-pw' }).expect(200));
    expect(linked.body.libraries).toEqual([{ id: String(fake.folderIdOf(lib2!.id)), name: lib2!.name }]);
    const seed = [...inLib2][0]!;
    const similar = async (user: string) =>
      (seen(await request(app.url).get('/api/similar_tracks').set(as(user)).query({ item_id: seed, n: synthetic.size, server: 'Navi' }).expect(200)).body as Array<{ item_id: string }>).map((r) => r.item_id);
    const unlimited = await similar('dave');
    expect(unlimited.some((id) => !inLib2.has(id))).toBe(true);
    seen(await request(app.url).put(`/api/me/servers/${naviId}/account/library-scope`).set(as('dave')).send({ limit_to_libraries: true }).expect(200));
    // The index keeps dave's earlier "not limited" answer up to 15 s.
    const limited = await waitFor('dave limited to his library', async () => {
      const got = await similar('dave');
      return got.every((id) => inLib2.has(id)) ? got : undefined;
    }, { timeoutMs: 30_000, intervalMs: 1000 });
    expect(limited.sort()).toEqual([...inLib2].filter((id) => id !== seed).sort());
    expect((await similar('carol')).some((id) => !inLib2.has(id))).toBe(true);
  });

  it("When dave limits his answers to his own account's libraries on the real supysonic (issue 34), then a sweep has recorded each song's music folder, supysonic's every-folder answer needs no filter, and once the server is gone his answers are a 502, never unlimited, while carol's still come", async () => {
    // The songs were seeded without a library: a sweep's listing records supysonic's music folder on every mapping.
    const folders = (await subsonic('house', 'getMusicFolders')) as { musicFolders: { musicFolder: Array<{ id: string | number }> } };
    const folderId = String(folders.musicFolders.musicFolder[0]!.id);
    await request(app.url).post(`/api/servers/${serverId}/sweep`).set(bearer).send({}).expect(202);
    const libraries = await waitFor('library ids on the mappings', async () => {
      const rows = await app.sql<{ library_id: string | null }>(`SELECT library_id FROM catalogue.track_server_map WHERE server_id = $1`, [serverId]);
      return rows.length === SONGS.length && rows.every((r) => r.library_id !== null) ? rows.map((r) => r.library_id) : undefined;
    }, { timeoutMs: 60_000 });
    expect(libraries).toEqual(SONGS.map(() => folderId));

    seen(await request(app.url).put(`/api/me/servers/${serverId}/account`).set(as('dave')).send({ user: 'bob', password: PASS.bob }).expect(200));
    // Only a linked account can be limited; the setting is shown with the account.
    expect(seen(await request(app.url).put(`/api/me/servers/${serverId}/account/library-scope`).set(as('carol')).send({ limit_to_libraries: true }).expect(409)).body.code).toBe('account_not_linked');
    const on = seen(await request(app.url).put(`/api/me/servers/${serverId}/account/library-scope`).set(as('dave')).send({ limit_to_libraries: true }).expect(200));
    expect(on.body).toMatchObject({ status: 'linked', library_scope_supported: true, limit_to_libraries: true });
    // supysonic gives every user every folder: dave's account (supysonic's bob) sees the whole server, so his answer is carol's.
    const similar = async (user: string, status = 200) => seen(await request(app.url).get('/api/similar_tracks').set(as(user)).query({ item_id: ids.victory, n: 2 }).expect(status)).body;
    const carols = await similar('carol');
    expect(carols).toHaveLength(2);
    expect(await similar('dave')).toEqual(carols);

    // The server goes away: dave asked for the limit, so his answer is a 502 saying why (after the index's 15 s cache).
    await sub.close();
    await request(app.url).put(`/api/me/servers/${serverId}/account/library-scope`).set(as('dave')).send({ limit_to_libraries: true }).expect(200);
    const failed = await waitFor('a 502 for dave', async () => {
      const res = await request(app.url).get('/api/similar_tracks').set(as('dave')).query({ item_id: ids.victory, n: 2 });
      return res.status === 200 ? undefined : seen(res);
    }, { timeoutMs: 40_000, intervalMs: 1000 });
    expect([failed.status, failed.body.code]).toEqual([502, 'library_scope_unavailable']);
    expect(failed.body.error).toMatch(/did not answer which libraries your account can see/);
    expect(await similar('carol')).toEqual(carols);
    for (const body of answers) for (const secret of Object.values(PASS)) expect(body).not.toContain(secret);
  });
});
