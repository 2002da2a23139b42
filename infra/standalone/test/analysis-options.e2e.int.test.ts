import request from 'supertest';
import { ArrayCatalogue, createFakeSubsonic, wesnothTracks, type FakeTrack, type StartedFake } from '@polyphony/testkit';
import { API_TOKEN, useTestStack, waitForTask } from './helpers';

/**
 * Issue "Operations" (settings: analysis options): NUM_RECENT_ALBUMS limits an analysis run to the
 * tracks of the N most recently added albums of each server (reference: 0 = all), as a live setting
 * (PUT /api/config) and as a per-run override of POST /api/analysis/start, next to TOP_N_MOODS. The
 * server is the project's protocol-faithful fake Navidrome (getAlbumList2 type=newest, getAlbum)
 * serving six real Wesnoth files as three albums added a month apart.
 */
describe('analysis options NUM_RECENT_ALBUMS and TOP_N_MOODS (full stack)', () => {
  jest.setTimeout(15 * 60_000);
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  const wes = wesnothTracks();
  const albums = [
    { id: 'al-old', name: 'Oldest', addedAt: '2024-01-01T00:00:00.000Z' },
    { id: 'al-mid', name: 'Middle', addedAt: '2024-02-01T00:00:00.000Z' },
    { id: 'al-new', name: 'Newest', addedAt: '2024-03-01T00:00:00.000Z' },
  ];
  const six: FakeTrack[] = [...wes].slice(0, 6).map((t, i) => {
    const a = albums[Math.floor(i / 2)]!;
    return { ...t, album: a.name, albumId: a.id, albumArtist: 'Wesnoth', albumArtistId: 'ar-wesnoth', addedAt: a.addedAt, trackNumber: (i % 2) + 1 };
  });
  const fake = createFakeSubsonic({ catalogue: new ArrayCatalogue(wes.libraries, six) });
  let server: StartedFake;

  async function run(body: Record<string, unknown>): Promise<{ state: string; servers: Array<Record<string, unknown>>; details: Record<string, unknown> }> {
    const start = await request(app.url).post('/api/analysis/start').set(auth).send(body).expect(202);
    const s = await waitForTask(app.url, start.body.task_id, { timeoutMs: 8 * 60_000 });
    return { state: s.state, servers: s.details.servers, details: s.details };
  }

  beforeAll(async () => {
    server = await fake.start();
  });
  const app = useTestStack();
  beforeAll(async () => {
    await request(app.url).post('/api/servers').set(auth).send({ name: 'Recent', server_type: 'navidrome', creds: { url: server.url, user: 'alice', password: 'sesame' } }).expect(201);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('When the options are out of range or the wrong type, then 400 and no run starts', async () => {
    await request(app.url).post('/api/analysis/start').set(auth).send({ num_recent_albums: -1 }).expect(400);
    await request(app.url).post('/api/analysis/start').set(auth).send({ top_n_moods: 0 }).expect(400);
    await request(app.url).post('/api/analysis/start').set(auth).send({ num_recent_albums: 'all' }).expect(400);
    const bad = await request(app.url).put('/api/config').set(auth).send({ NUM_RECENT_ALBUMS: 'many', TOP_N_MOODS: 51 }).expect(400);
    expect(JSON.stringify(bad.body)).toMatch(/NUM_RECENT_ALBUMS|TOP_N_MOODS/);
    const active = await request(app.url).get('/api/active_tasks').set(auth).expect(200);
    expect(JSON.stringify(active.body)).not.toMatch(/analysis/);
  });

  it('When NUM_RECENT_ALBUMS is set to 2, then a run reads only the two newest albums, and a start override of 1 and 0 wins over the setting', async () => {
    const put = await request(app.url).put('/api/config').set(auth).send({ NUM_RECENT_ALBUMS: 2, TOP_N_MOODS: 7 }).expect(200);
    expect(put.body.restart_required).toEqual([]);
    const settings = (await request(app.url).get('/api/config/settings').set(auth).expect(200)).body.settings as Array<{ key: string; value: unknown; source: string; owner: string }>;
    expect(settings.find((s) => s.key === 'NUM_RECENT_ALBUMS')).toMatchObject({ value: 2, source: 'database', owner: 'analysis' });
    expect((await request(app.url).get('/api/config').set(auth).expect(200)).body.top_n_moods).toBe(7);
    // Services read settings through a 5 s cache (SettingsReader): the change applies within that.
    await new Promise((r) => setTimeout(r, 5500));

    fake.core.clearRequests();
    const first = await run({});
    expect(first.state).toBe('SUCCESS');
    expect(first.details.options).toEqual({ numRecentAlbums: 2, topNMoods: 7 });
    expect(first.servers[0]).toMatchObject({ seen: 4, failed: 0 });
    const titles = (await app.db.query<{ title: string }>(`SELECT title FROM catalogue.score ORDER BY title`)).map((r) => r.title);
    expect(titles).toEqual(six.slice(2).map((t) => t.title).sort());
    const newest = fake.core.requests.filter((r) => r.path === '/rest/getAlbumList2.view');
    expect(newest.length).toBeGreaterThan(0);
    expect(newest.every((r) => r.query.type === 'newest')).toBe(true);
    expect(fake.core.requests.filter((r) => r.path === '/rest/getAlbum.view').map((r) => r.query.id)).toHaveLength(2);

    const one = await run({ num_recent_albums: 1, top_n_moods: 3 });
    expect(one.details.options).toEqual({ numRecentAlbums: 1, topNMoods: 3 });
    expect(one.servers[0]).toMatchObject({ seen: 2, skippedMapped: 2, analyzed: 0 });

    const all = await run({ num_recent_albums: 0 });
    expect(all.state).toBe('SUCCESS');
    expect(all.details.options).toEqual({ numRecentAlbums: 0, topNMoods: 7 });
    expect(all.servers[0]).toMatchObject({ seen: 6, skippedMapped: 4 });
    expect(await app.db.count(`SELECT count(*)::int AS n FROM catalogue.score`)).toBe(6);
  });

  it('When an analysis schedule carries {num_recent_albums: 1}, then its firing starts a run with that option and the TOP_N_MOODS setting', async () => {
    const created = await request(app.url).post('/api/cron').set(auth).send({ name: 'recent albums', kind: 'analysis', cron: '*/2 * * * * *', timezone: 'UTC', params: { num_recent_albums: 1 } }).expect(201);
    const deadline = Date.now() + 60_000;
    let taskId: string | null | undefined;
    while (!taskId && Date.now() < deadline) {
      const row = ((await request(app.url).get('/api/cron').set(auth).expect(200)).body.schedules as Array<{ id: string; history: Array<{ outcome: string; task_id: string | null }> }>).find((x) => x.id === created.body.id);
      taskId = row?.history.find((h) => h.outcome === 'started')?.task_id;
      if (!taskId) await new Promise((r) => setTimeout(r, 250));
    }
    await request(app.url).delete(`/api/cron/${created.body.id}`).set(auth).expect(200);
    expect(taskId).toEqual(expect.any(String));
    const st = await waitForTask(app.url, taskId!, { timeoutMs: deadline + 120_000 - Date.now() });
    expect(st.state).toBe('SUCCESS');
    expect(st.details.options).toEqual({ numRecentAlbums: 1, topNMoods: 7 });
    expect(st.details.servers[0]).toMatchObject({ seen: 2 });
  });
});
