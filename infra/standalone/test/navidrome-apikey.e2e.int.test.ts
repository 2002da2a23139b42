import request from 'supertest';
import { ArrayCatalogue, createFakeSubsonic, wesnothTracks, type StartedFake, type TestDatabase } from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { API_TOKEN, startTestStack } from './helpers';

/**
 * Issue "Operations" (credentials users have): an OpenSubsonic server that authenticates with an API
 * key (`{url, api_key}`, sent as `apiKey=`, never with a user name) is added, analyzed from its real
 * audio (four Wesnoth tracks on the project's fake OpenSubsonic server with the
 * `apiKeyAuthentication` extension; supysonic 0.7 has no API keys), answers similar songs in its own
 * ids, and gets a playlist written back, all through the gateway with the bearer token.
 */
describe('Navidrome/OpenSubsonic server with an API key, end to end (full stack)', () => {
  jest.setTimeout(10 * 60_000);
  const API_KEY = 'opensubsonic-api-key-7f3a9c';
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  const wes = wesnothTracks();
  const four = [...wes].slice(0, 4);
  const fake = createFakeSubsonic({ catalogue: new ArrayCatalogue(wes.libraries, four), apiKey: API_KEY });
  let server: StartedFake;
  let stack: Stack;
  let db: TestDatabase;
  let url: string;

  beforeAll(async () => {
    server = await fake.start();
    ({ stack, db, url } = await startTestStack());
  });
  afterAll(async () => {
    await stack?.stop();
    await db?.drop();
    await server?.close();
  });

  it('When the server is added with {url, api_key} and analyzed, then its songs are analyzed from its audio, similar songs answer in its ids and a playlist is written back, with apiKey on every call and no user name', async () => {
    const tested = await request(url).post('/api/servers/test').set(auth).send({ server_type: 'navidrome', creds: { url: server.url, api_key: API_KEY } }).expect(200);
    expect(tested.body).toMatchObject({ ok: true, reachable: true });
    const created = await request(url).post('/api/servers').set(auth).send({ name: 'Keyed', server_type: 'navidrome', creds: { url: server.url, api_key: API_KEY } }).expect(201);
    expect(JSON.stringify(created.body)).not.toContain(API_KEY);

    const start = await request(url).post('/api/analysis/start').set(auth).send({}).expect(202);
    const deadline = Date.now() + 8 * 60_000;
    let state = '';
    while (Date.now() < deadline) {
      const s = await request(url).get(`/api/status/${start.body.task_id}`).set(auth);
      state = s.body.state;
      if (['SUCCESS', 'FAIL', 'REVOKED'].includes(state)) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    expect(state).toBe('SUCCESS');
    const analyzed = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM catalogue.score`);
    expect(analyzed[0]!.n).toBe(four.length);

    // The server's own ids (the fake hands out hex ids, as Navidrome does).
    const synced = (await request(url).get('/api/sync?server=Keyed').set(auth).expect(200)).body.tracks as Array<{ id: string }>;
    const ids = synced.map((t) => t.id);
    expect(ids).toHaveLength(four.length);
    const similar = await request(url).get(`/api/similar_tracks?item_id=${ids[0]}&n=3&server=Keyed`).set(auth).expect(200);
    expect(similar.body.length).toBeGreaterThan(0);
    for (const row of similar.body as Array<{ item_id: string }>) expect(ids).toContain(row.item_id);

    const playlist = await request(url).post('/api/create_playlist').set(auth).send({ playlist_name: 'Keyed mix', track_ids: ids.slice(0, 2), server: 'Keyed' }).expect(201);
    expect(playlist.body.playlist_id).toBeTruthy();

    // Every call the product made to the server authenticated with the key alone.
    const calls = fake.core.requests.filter((r) => r.path.startsWith('/rest/'));
    expect(calls.length).toBeGreaterThan(4);
    for (const c of calls) {
      expect(c.query.apiKey).toBe(API_KEY);
      expect(c.query.u).toBeUndefined();
      expect(c.query.p).toBeUndefined();
      expect(c.query.t).toBeUndefined();
    }
    expect(calls.some((c) => /\/rest\/(stream|download)/.test(c.path))).toBe(true);
  });
});
