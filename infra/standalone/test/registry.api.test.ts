import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Client } from 'pg';
import { testAmqpUrl, createFakeEmby, createFakeJellyfin, createFakeLyrion, createFakePlex, createFakePlexTv, createFakeSubsonic, syntheticCatalogue, type StartedFake } from '@polyphony/testkit';
import { API_TOKEN, createMigratedTestDatabase, loginCookie, startTestStack, useTestStack } from './helpers';

/** A plain HTTP server that records every request and answers 500 with a marker body (an "upstream" we must never echo). */
async function startRecorder(): Promise<{ url: string; seen: IncomingMessage[]; close(): Promise<void> }> {
  const seen: IncomingMessage[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req);
    res.writeHead(500, { 'Content-Type': 'text/plain' });
    res.end('UPSTREAM-BODY-MARKER internal details');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** Server registry through the gateway against fakes of all five kinds (issue: registry and Setup API). */
// Standalone wiring (in-process bus) and distributed wiring (RabbitMQ) run the same suite.
describe.each([
  ['in-process bus', undefined],
  ['RabbitMQ', testAmqpUrl()],
])('server registry (full stack, fake media servers, %s)', (_bus, amqpUrl) => {
  const started: StartedFake[] = [];
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  const catalogue = syntheticCatalogue(30);
  const jf = createFakeJellyfin({ catalogue, token: 'jf-secret-token' });
  const emby = createFakeEmby({ catalogue, token: 'emby-secret-token' });
  const sub = createFakeSubsonic({ catalogue, user: 'nav', password: 'nav-secret-pw' });
  const subKey = createFakeSubsonic({ catalogue, user: 'keyed', password: 'unused-pw-1', apiKey: 'nav-api-key-secret' });
  const jfLogin = createFakeJellyfin({ catalogue, token: 'jf-signin-token', userName: 'jfuser', password: 'jf-login-pw' });
  const embyLogin = createFakeEmby({ catalogue, token: 'emby-signin-token', userName: 'embyuser', password: 'emby-login-pw' });
  const lyr = createFakeLyrion({ catalogue });
  const plex = createFakePlex({ catalogue, token: 'plex-secret-token' });
  const plexTv = createFakePlexTv({ accountToken: 'linked-plex-token-123' });
  const urls: Record<string, string> = {};
  const SECRETS = ['jf-secret-token', 'emby-secret-token', 'nav-secret-pw', 'plex-secret-token', 'linked-plex-token-123', 'nav-api-key-secret', 'jf-signin-token', 'emby-signin-token', 'jf-login-pw', 'emby-login-pw'];

  const noSecrets = (body: unknown) => {
    const text = JSON.stringify(body);
    for (const s of SECRETS) expect(text).not.toContain(s);
  };

  beforeAll(async () => {
    for (const [k, f] of Object.entries({ jellyfin: jf, emby, navidrome: sub, navkey: subKey, jflogin: jfLogin, embylogin: embyLogin, lyrion: lyr, plex, plextv: plexTv })) {
      const s = await f.start();
      started.push(s);
      urls[k] = s.url;
    }
  });
  const app = useTestStack(() => ({ PLEX_TV_URL: urls.plextv }), { amqpUrl });
  const { sql } = app;
  afterAll(async () => {
    for (const s of started) await s.close();
  });

  const bodies = () => ({
    jellyfin: { name: 'Jelly', server_type: 'jellyfin', creds: { url: urls.jellyfin, user_id: jf.userId, token: 'jf-secret-token' } },
    emby: { name: 'Emby', server_type: 'emby', creds: { url: urls.emby, user_id: emby.userId, token: 'emby-secret-token' } },
    navidrome: { name: 'Navi', server_type: 'navidrome', creds: { url: urls.navidrome, user: 'nav', password: 'nav-secret-pw' } },
    lyrion: { name: 'Lyrion', server_type: 'lyrion', creds: { url: urls.lyrion } },
    plex: { name: 'Plex', server_type: 'plex', creds: { url: urls.plex, token: 'plex-secret-token' } },
  });

  it('When each kind is tested before saving, then the test reports reachability, a sample and libraries without echoing secrets', async () => {
    const KEYS = ['auth_failed', 'error', 'error_class', 'libraries', 'library_count', 'ok', 'path_format', 'reachable', 'sample_count', 'server_name', 'server_type', 'version', 'warnings'];
    for (const b of Object.values(bodies())) {
      const res = await request(app.url).post('/api/servers/test').set(auth).send({ server_type: b.server_type, creds: b.creds }).expect(200);
      expect(Object.keys(res.body).sort()).toEqual(KEYS);
      expect(res.body).toMatchObject({ ok: true, reachable: true, server_type: b.server_type, error: null, error_class: null, auth_failed: false });
      expect(res.body.sample_count).toBeGreaterThan(0);
      expect(res.body.libraries.length).toBeGreaterThan(0);
      expect(res.body.library_count).toBe(res.body.libraries.length);
      expect(typeof res.body.version).toBe('string');
      noSecrets(res.body);
    }
    const bad = await request(app.url).post('/api/servers/test').set(auth).send({ server_type: 'jellyfin', creds: { ...bodies().jellyfin.creds, token: 'wrong' } }).expect(200);
    expect(bad.body).toMatchObject({ ok: false, reachable: true, auth_failed: true, error_class: 'bad_credentials' });
    const down = await request(app.url).post('/api/servers/test').set(auth).send({ server_type: 'plex', creds: { url: 'http://127.0.0.1:9', token: 'x' } }).expect(200);
    expect(down.body).toMatchObject({ ok: false, reachable: false, auth_failed: false, error_class: 'unreachable' });
  });

  it('When servers of all five kinds are added, then the first is the default and secrets are masked for admins and absent for users', async () => {
    const ids: string[] = [];
    for (const b of Object.values(bodies())) {
      const res = await request(app.url).post('/api/servers').set(auth).send(b).expect(201);
      noSecrets(res.body);
      ids.push(res.body.id);
    }
    const list = await request(app.url).get('/api/servers').set(auth).expect(200);
    noSecrets(list.body);
    expect(list.body.servers).toHaveLength(5);
    expect(list.body.servers.find((s: { id: string }) => s.id === ids[0]).is_default).toBe(true);
    expect(list.body.default_id).toBe(ids[0]);
    const jelly = list.body.servers.find((s: { name: string }) => s.name === 'Jelly');
    expect(jelly.creds).toEqual({ url: urls.jellyfin, user_id: jf.userId, token: '__unchanged__' });
    await request(app.url).post('/api/users').set(auth).send({ username: 'listener', password: 'listener-pass' }).expect(201);
    const cookie = await loginCookie(app.url, 'listener', 'listener-pass');
    const asUser = await request(app.url).get('/api/servers').set('Cookie', cookie).expect(200);
    expect(asUser.body.servers.every((s: Record<string, unknown>) => !('creds' in s))).toBe(true);
    await request(app.url).post('/api/servers').set('Cookie', cookie).send(bodies().lyrion).expect(403);
  });

  it('When bad input is sent, then it is a clear 4xx and nothing is written', async () => {
    const before = (await sql(`SELECT count(*)::int AS n, max(updated_at) AS m FROM registry.music_servers`))[0];
    const cases: Array<[unknown, RegExp]> = [
      [{ name: 'X', server_type: 'winamp', creds: { url: 'http://a' } }, /server_type/],
      [{ name: 'X', server_type: 'plex', creds: { url: urls.plex } }, /creds.token is required/],
      [{ name: 'X', server_type: 'jellyfin', creds: { url: 'not a url', user_id: 'u', token: 't' } }, /not a valid URL/],
      [{ ...bodies().lyrion, name: 'lyrion' }, /already exists/],
      [{ name: '', server_type: 'lyrion', creds: { url: urls.lyrion } }, /name/],
    ];
    for (const [body, message] of cases) {
      const res = await request(app.url).post('/api/servers').set(auth).send(body as object);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.body.error).toMatch(message);
    }
    await request(app.url).put('/api/servers/00000000-0000-0000-0000-000000000000').set(auth).send({ name: 'Y' }).expect(404);
    await request(app.url).delete('/api/servers/nope').set(auth).expect(404);
    const after = (await sql(`SELECT count(*)::int AS n, max(updated_at) AS m FROM registry.music_servers`))[0];
    expect(after).toEqual(before);
  });

  it('When a server is edited with a blank or masked secret, then the stored secret is kept; a new one replaces it', async () => {
    const list = (await request(app.url).get('/api/servers').set(auth)).body.servers;
    const plexRow = list.find((s: { name: string }) => s.name === 'Plex');
    await request(app.url).put(`/api/servers/${plexRow.id}`).set(auth).send({ name: 'Plex Home', creds: { url: urls.plex, token: '' } }).expect(200);
    await request(app.url).put(`/api/servers/${plexRow.id}`).set(auth).send({ creds: { url: urls.plex, token: '__unchanged__' } }).expect(200);
    let [row] = await sql(`SELECT name, creds FROM registry.music_servers WHERE id = $1`, [plexRow.id]);
    expect(row).toEqual({ name: 'Plex Home', creds: { url: urls.plex, token: 'plex-secret-token' } });
    await request(app.url).put(`/api/servers/${plexRow.id}`).set(auth).send({ creds: { url: urls.plex, token: 'rotated-token' } }).expect(200);
    [row] = await sql(`SELECT creds FROM registry.music_servers WHERE id = $1`, [plexRow.id]);
    expect(row.creds.token).toBe('rotated-token');
    await request(app.url).put(`/api/servers/${plexRow.id}`).set(auth).send({ creds: { url: urls.plex, token: 'plex-secret-token' } }).expect(200);
  });

  it('When the default is deleted, then it is refused; another server can be made default and the old one deleted', async () => {
    const { servers, default_id } = (await request(app.url).get('/api/servers').set(auth)).body;
    const del = await request(app.url).delete(`/api/servers/${default_id}`).set(auth).expect(409);
    expect(del.body.code).toBe('default_server');
    const other = servers.find((s: { id: string }) => s.id !== default_id);
    await request(app.url).post(`/api/servers/${other.id}/default`).set(auth).expect(200);
    await request(app.url).delete(`/api/servers/${default_id}`).set(auth).expect(200);
    const now = (await request(app.url).get('/api/servers').set(auth)).body;
    expect(now.default_id).toBe(other.id);
    expect(now.servers).toHaveLength(4);
  });

  it('When many default changes race, then exactly one default remains', async () => {
    const { servers } = (await request(app.url).get('/api/servers').set(auth)).body;
    await Promise.all(servers.flatMap((s: { id: string }) => [request(app.url).post(`/api/servers/${s.id}/default`).set(auth), request(app.url).post(`/api/servers/${s.id}/default`).set(auth)]));
    const [{ n }] = await sql(`SELECT count(*)::int AS n FROM registry.music_servers WHERE is_default`);
    expect(n).toBe(1);
    // The database itself refuses a second default or none at all.
    await expect(sql(`UPDATE registry.music_servers SET is_default = true`)).rejects.toThrow();
    await expect(sql(`UPDATE registry.music_servers SET is_default = false`)).rejects.toThrow(/exactly one default/);
  });

  it('When a server is selected by name or id, then the gateway resolves it; an unknown one is 400', async () => {
    const { servers } = (await request(app.url).get('/api/servers').set(auth)).body;
    const target = servers[1];
    const byName = await request(app.url).get(`/api/analysis/exclusions?server=${encodeURIComponent(target.name.toUpperCase())}`).set(auth);
    expect(byName.status).toBe(200);
    await request(app.url).get(`/api/analysis/exclusions?server=${target.id}`).set(auth).expect(200);
    await request(app.url).get('/api/analysis/exclusions?server=Ghost').set(auth).expect(400);
  });

  it('When libraries are listed for the form, then each kind returns its filter units', async () => {
    const b = bodies();
    for (const k of ['jellyfin', 'navidrome', 'plex', 'lyrion'] as const) {
      const res = await request(app.url).post('/api/servers/libraries').set(auth).send({ server_type: b[k].server_type, creds: b[k].creds }).expect(200);
      expect(res.body.libraries.length).toBeGreaterThan(0);
    }
  });

  it('When Plex PIN linking runs, then the code and link URL are returned and polling yields the token once approved', async () => {
    const pin = await request(app.url).post('/api/plex/pin').set(auth).send({ client_id: 'browser-1' }).expect(200);
    expect(pin.body.code).toMatch(/\w+/);
    expect(pin.body.link_url).toMatch(/link/);
    const pending = await request(app.url).get(`/api/plex/pin/${pin.body.id}?client_id=browser-1`).set(auth).expect(200);
    expect(pending.body.token).toBeNull();
    plexTv.approve(Number(pin.body.id));
    const done = await request(app.url).get(`/api/plex/pin/${pin.body.id}?client_id=browser-1`).set(auth).expect(200);
    expect(done.body.token).toBe('linked-plex-token-123');
  });

  it('When the classic config is read by a session admin, then it is a projection of the default server without secrets; a token gets only the public fields', async () => {
    const res = await request(app.url).get('/api/config').set({ Cookie: await loginCookie(app.url) }).expect(200);
    expect(res.body.MEDIASERVER_TYPE).toBeDefined();
    noSecrets(res.body);
    const token = await request(app.url).get('/api/config').set(auth).expect(200);
    expect(token.body.MEDIASERVER_TYPE).toBeUndefined();
    expect(token.body.ai_model_provider).toBe('NONE');
  });

  it('When the test action reaches a server that answers with its own text, then only the structured result comes back (no upstream body)', async () => {
    const rec = await startRecorder();
    try {
      for (const [server_type, creds] of [
        ['jellyfin', { url: rec.url, user_id: 'u', token: 'some-token' }],
        ['navidrome', { url: rec.url, user: 'u', password: 'some-password' }],
        ['lyrion', { url: rec.url }],
      ] as const) {
        const res = await request(app.url).post('/api/servers/test').set(auth).send({ server_type, creds }).expect(200);
        expect(JSON.stringify(res.body)).not.toContain('UPSTREAM-BODY-MARKER');
        expect(res.body).toMatchObject({ ok: false, error_class: expect.any(String), server_type });
        expect(typeof res.body.error).toBe('string');
      }
      expect(rec.seen.length).toBeGreaterThan(0);
    } finally {
      await rec.close();
    }
  });

  it('When an existing server is tested, listed or edited with a new url and its stored secret, then 400 and the secret never reaches the new url', async () => {
    const { servers } = (await request(app.url).get('/api/servers').set(auth)).body;
    const plexRow = servers.find((s: { server_type: string }) => s.server_type === 'plex');
    const naviRow = servers.find((s: { server_type: string }) => s.server_type === 'navidrome');
    const rec = await startRecorder();
    try {
      for (const [path, body] of [
        ['/api/servers/test', { server_type: 'plex', server_id: plexRow.id, creds: { url: rec.url, token: '__unchanged__' } }],
        ['/api/servers/test', { server_type: 'plex', server_id: plexRow.id, creds: { url: rec.url, token: '' } }],
        ['/api/servers/libraries', { server_type: 'plex', server_id: plexRow.id, creds: { url: rec.url, token: '__unchanged__' } }],
        ['/api/servers/test', { server_type: 'navidrome', server_id: naviRow.id, creds: { url: `${rec.url}/rest`, user: 'nav', password: '__unchanged__' } }],
      ] as const) {
        const res = await request(app.url).post(path).set(auth).send(body).expect(400);
        expect(res.body.error).toMatch(/re-enter creds\.(token|password)/);
        noSecrets(res.body);
      }
      const put = await request(app.url).put(`/api/servers/${plexRow.id}`).set(auth).send({ creds: { url: rec.url, token: '__unchanged__' } }).expect(400);
      expect(put.body.error).toMatch(/re-enter creds\.token/);
      await request(app.url).put(`/api/servers/${plexRow.id}`).set(auth).send({ creds: { url: rec.url } }).expect(400);
      expect(rec.seen).toHaveLength(0);
      const [row] = await sql(`SELECT creds FROM registry.music_servers WHERE id = $1`, [plexRow.id]);
      expect(row.creds).toEqual({ url: urls.plex, token: 'plex-secret-token' });

      // The saved url (trailing slash and host case aside) still gets the stored secret.
      const same = await request(app.url).post('/api/servers/test').set(auth).send({ server_type: 'plex', server_id: plexRow.id, creds: { url: `${urls.plex}/`, token: '__unchanged__' } }).expect(200);
      expect(same.body).toMatchObject({ ok: true, error_class: null });
      // A re-entered secret may go to the new url: it is the caller's own, not the stored one.
      const fresh = await request(app.url).post('/api/servers/test').set(auth).send({ server_type: 'plex', server_id: plexRow.id, creds: { url: rec.url, token: 'typed-again' } }).expect(200);
      expect(fresh.body.ok).toBe(false);
      expect(rec.seen.length).toBeGreaterThan(0);
      expect(rec.seen.every((q) => q.headers['x-plex-token'] === 'typed-again')).toBe(true);
      await request(app.url).post('/api/servers/test').set(auth).send({ server_type: 'plex', server_id: '00000000-0000-0000-0000-000000000000', creds: { url: urls.plex, token: '__unchanged__' } }).expect(404);
    } finally {
      await rec.close();
    }
  });

  it('When the media server behind /api/servers/libraries is unreachable or refuses the credentials, then 502 or 400 with a clear message, never 500', async () => {
    const down = await request(app.url).post('/api/servers/libraries').set(auth).send({ server_type: 'jellyfin', creds: { url: 'http://127.0.0.1:9', user_id: 'u', token: 'x' } }).expect(502);
    expect(down.body).toMatchObject({ code: 'upstream_unavailable', error: expect.stringMatching(/could not be reached/) });
    const rec = await startRecorder();
    try {
      const broken = await request(app.url).post('/api/servers/libraries').set(auth).send({ server_type: 'plex', creds: { url: rec.url, token: 'x' } }).expect(502);
      expect(JSON.stringify(broken.body)).not.toContain('UPSTREAM-BODY-MARKER');
    } finally {
      await rec.close();
    }
    const refused = await request(app.url).post('/api/servers/libraries').set(auth).send({ server_type: 'plex', creds: { url: urls.plex, token: 'wrong' } }).expect(400);
    expect(refused.body).toMatchObject({ code: 'media_server_auth_failed', error: expect.stringMatching(/refused the credentials/) });
  });

  it('When a Navidrome server uses an OpenSubsonic API key, then it is tested, added, listed masked and switched from user + password', async () => {
    const creds = { url: urls.navkey, api_key: 'nav-api-key-secret' };
    const t = await request(app.url).post('/api/servers/test').set(auth).send({ server_type: 'navidrome', creds }).expect(200);
    expect(t.body).toMatchObject({ ok: true, error_class: null });
    expect(t.body.sample_count).toBeGreaterThan(0);
    const wrong = await request(app.url).post('/api/servers/test').set(auth).send({ server_type: 'navidrome', creds: { ...creds, api_key: 'not-the-key' } }).expect(200);
    expect(wrong.body).toMatchObject({ ok: false, error_class: 'bad_credentials', auth_failed: true });
    const libs = await request(app.url).post('/api/servers/libraries').set(auth).send({ server_type: 'navidrome', creds }).expect(200);
    expect(libs.body.libraries.length).toBeGreaterThan(0);
    const created = await request(app.url).post('/api/servers').set(auth).send({ name: 'Navi key', server_type: 'navidrome', creds }).expect(201);
    expect(created.body.creds).toEqual({ url: urls.navkey, api_key: '__unchanged__' });
    const [row] = await sql(`SELECT creds FROM registry.music_servers WHERE id = $1`, [created.body.id]);
    expect(row.creds).toEqual(creds);
    const mixed = await request(app.url).post('/api/servers').set(auth).send({ name: 'Mixed', server_type: 'navidrome', creds: { ...creds, user: 'nav', password: 'pw' } }).expect(400);
    expect(mixed.body.error).toMatch(/not both/);
    const none = await request(app.url).post('/api/servers').set(auth).send({ name: 'None', server_type: 'navidrome', creds: { url: urls.navkey } }).expect(400);
    expect(none.body.error).toBe('creds.api_key is required for navidrome (or give url, user, password)');
    // Switching the password server to an API key replaces the stored user + password.
    const navi = (await request(app.url).get('/api/servers').set(auth)).body.servers.find((s: { name: string }) => s.name === 'Navi');
    await request(app.url).put(`/api/servers/${navi.id}`).set(auth).send({ creds: { url: urls.navidrome, api_key: 'switched-key' } }).expect(200);
    const [switched] = await sql(`SELECT creds FROM registry.music_servers WHERE id = $1`, [navi.id]);
    expect(switched.creds).toEqual({ url: urls.navidrome, api_key: 'switched-key' });
    await request(app.url).put(`/api/servers/${navi.id}`).set(auth).send({ creds: { url: urls.navidrome, user: 'nav', password: 'nav-secret-pw' } }).expect(200);
    const [back] = await sql(`SELECT creds FROM registry.music_servers WHERE id = $1`, [navi.id]);
    expect(back.creds).toEqual({ url: urls.navidrome, user: 'nav', password: 'nav-secret-pw' });
    await request(app.url).delete(`/api/servers/${created.body.id}`).set(auth).expect(200);
  });

  it('When a Jellyfin or Emby user signs in with username and password, then only the obtained token and user id are stored', async () => {
    for (const [server_type, fake, name, user, pw, token] of [
      ['jellyfin', jfLogin, 'Jelly signed', 'jfuser', 'jf-login-pw', 'jf-signin-token'],
      ['emby', embyLogin, 'Emby signed', 'embyuser', 'emby-login-pw', 'emby-signin-token'],
    ] as const) {
      const target = server_type === 'jellyfin' ? urls.jflogin : urls.embylogin;
      const refused = await request(app.url).post('/api/servers/signin').set(auth).send({ server_type, url: target, username: user, password: 'wrong-pw', name }).expect(400);
      expect(refused.body.code).toBe('media_server_auth_failed');
      const res = await request(app.url).post('/api/servers/signin').set(auth).send({ server_type, url: target, username: user, password: pw, name }).expect(201);
      noSecrets(res.body);
      expect(res.body.creds).toEqual({ url: target, user_id: fake.userId, token: '__unchanged__' });
      const [row] = await sql(`SELECT creds FROM registry.music_servers WHERE id = $1`, [res.body.id]);
      expect(row.creds).toEqual({ url: target, user_id: fake.userId, token });
      expect(JSON.stringify(row)).not.toContain(pw);
      const t = await request(app.url).post('/api/servers/test').set(auth).send({ server_type, server_id: res.body.id, creds: { url: target, user_id: fake.userId, token: '__unchanged__' } }).expect(200);
      expect(t.body.ok).toBe(true);
      // Signing in again on the existing server replaces its credentials (200).
      const again = await request(app.url).post('/api/servers/signin').set(auth).send({ server_type, url: target, username: user, password: pw, server_id: res.body.id }).expect(200);
      expect(again.body.id).toBe(res.body.id);
      await request(app.url).delete(`/api/servers/${res.body.id}`).set(auth).expect(200);
    }
    const down = await request(app.url).post('/api/servers/signin').set(auth).send({ server_type: 'jellyfin', url: 'http://127.0.0.1:9', username: 'a', password: 'b', name: 'Nowhere' }).expect(502);
    expect(down.body.code).toBe('upstream_unavailable');
    await request(app.url).post('/api/servers/signin').set(auth).send({ server_type: 'jellyfin', url: urls.jflogin, username: 'jfuser', password: 'jf-login-pw' }).expect(400);
    await request(app.url).post('/api/servers/signin').set(auth).send({ server_type: 'plex', url: urls.plex, username: 'a', password: 'b', name: 'P' }).expect(400);
    const cookie = await loginCookie(app.url, 'listener', 'listener-pass');
    await request(app.url).post('/api/servers/signin').set('Cookie', cookie).send({ server_type: 'jellyfin', url: urls.jflogin, username: 'jfuser', password: 'jf-login-pw', name: 'X' }).expect(403);
  });
});

describe('legacy install migration at first start', () => {
  it('When an old install has media-server keys in app_config and env, then they become the default registry row and leave app_config', async () => {
    const db = await createMigratedTestDatabase();
    try {
      const first = await startTestStack({}, db);
      await first.stack.stop();
      const c = new Client({ connectionString: db.url });
      await c.connect();
      await c.query(`INSERT INTO registry.app_config (key, value) VALUES ('MEDIASERVER_TYPE','navidrome'),('NAVIDROME_URL','http://nas:4533'),('NAVIDROME_USER','me'),('NAVIDROME_PASSWORD','pw-legacy'),('CLUSTER_ALGO','kmeans')`);
      const second = await startTestStack({}, db);
      const list = await request(second.url).get('/api/servers').set({ Authorization: `Bearer ${API_TOKEN}` }).expect(200);
      expect(list.body.servers).toHaveLength(1);
      expect(list.body.servers[0]).toMatchObject({ name: 'Navidrome', server_type: 'navidrome', is_default: true, creds: { url: 'http://nas:4533', user: 'me', password: '__unchanged__' } });
      const left = (await c.query(`SELECT key FROM registry.app_config ORDER BY key`)).rows.map((r) => r.key);
      expect(left).toEqual(['CLUSTER_ALGO']);
      const cfg = await request(second.url).get('/api/config').set({ Cookie: await loginCookie(second.url) }).expect(200);
      expect(cfg.body).toMatchObject({ MEDIASERVER_TYPE: 'navidrome', NAVIDROME_URL: 'http://nas:4533', NAVIDROME_USER: 'me', CLUSTER_ALGO: 'kmeans' });
      expect(cfg.body.NAVIDROME_PASSWORD).toBeUndefined();
      await c.end();
      await second.stack.stop();
    } finally {
      await db.drop();
    }
  });
});
