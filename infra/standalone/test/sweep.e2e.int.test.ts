import request from 'supertest';
import { ArrayCatalogue, createFakeJellyfin, createFakeSubsonic, wesnothTracks, type FakeSubsonic, type StartedFake } from '@polyphony/testkit';
import { API_TOKEN, useTestStack, waitForTask } from './helpers';

/**
 * The "done when" of the alignment issue, through the gateway with the bearer token: a small set is
 * analyzed on server A (fake Jellyfin, 5 Wesnoth tracks); then server B (fake Subsonic) holding the same
 * songs (same tags, same real paths) is added, and the alignment its save enqueues maps all of them
 * without a single download from B and without new songs. Then cleaning: B goes offline, the cleaning
 * skips it (reported) and refuses the orphan deletion it was asked for, rebuilds the index inline, and
 * a second start while it runs is refused.
 */
describe('alignment and cleaning end to end (fake Jellyfin + fake Subsonic, full stack)', () => {
  jest.setTimeout(15 * 60_000);
  let jellyfin: StartedFake;
  let subsonicServer: StartedFake | undefined;
  let subsonic: FakeSubsonic;
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  const wes = wesnothTracks();
  const five = [...wes].slice(0, 5);

  const app = useTestStack();
  const { sql } = app;

  beforeAll(async () => {
    const fake = createFakeJellyfin({ catalogue: new ArrayCatalogue(wes.libraries, five), token: 'jf-token' });
    jellyfin = await fake.start();
    const created = await request(app.url).post('/api/servers').set(auth).send({ name: 'Jelly', server_type: 'jellyfin', creds: { url: jellyfin.url, user_id: fake.userId, token: 'jf-token' } }).expect(201);
    expect(created.body.is_default).toBe(true);
    const start = await request(app.url).post('/api/analysis/start').set(auth).send({}).expect(202);
    const analysis = await waitForTask(app.url, start.body.task_id, { intervalMs: 500 });
    expect(analysis.state).toBe('SUCCESS');
  });
  afterAll(async () => {
    await jellyfin?.close();
    await subsonicServer?.close();
  });

  it('When a second server holding the same songs is added, then the alignment its save enqueues maps them all without any download', async () => {
    const before = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM catalogue.score`);
    expect(before[0]!.n).toBe(5);
    subsonic = createFakeSubsonic({ catalogue: new ArrayCatalogue(wes.libraries, five), reportRealPath: true });
    subsonicServer = await subsonic.start();
    const addedAt = new Date();
    const created = await request(app.url).post('/api/servers').set(auth).send({ name: 'Navi', server_type: 'navidrome', creds: { url: subsonicServer.url, user: subsonic.user, password: subsonic.password } }).expect(201);
    const serverId = created.body.id as string;

    // The save published the alignment request; wait for its task on the board.
    const deadline = Date.now() + 120_000;
    let alignment: { id: string; state: string } | undefined;
    while (Date.now() < deadline) {
      const rows = await sql<{ id: string; state: string }>(`SELECT id, state FROM registry.tasks WHERE type = 'alignment' AND created_at >= $1 ORDER BY created_at DESC LIMIT 1`, [addedAt]);
      alignment = rows[0];
      if (alignment && ['SUCCESS', 'FAIL', 'REVOKED'].includes(alignment.state)) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(alignment?.state).toBe('SUCCESS');
    const status = await request(app.url).get(`/api/status/${alignment!.id}`).set(auth).expect(200);
    expect(status.body).toMatchObject({ task_type: 'alignment', state: 'SUCCESS', status: 'SUCCESS', progress: 100 });
    const navi = (status.body.details.per_server as Array<Record<string, unknown>>).find((s) => s.serverId === serverId);
    expect(navi).toMatchObject({ fetched: 5, matched: 5, byTier: { path: 5, tail: 0, exact_meta: 0, norm_meta: 0 } });

    const rows = await sql<{ provider_id: string; match_tier: string; item_id: string }>(`SELECT provider_id, match_tier, item_id FROM catalogue.track_server_map WHERE server_id = $1`, [serverId]);
    expect(rows.map((r) => r.provider_id).sort()).toEqual(five.map((t) => subsonic.idOf(t)).sort());
    expect(new Set(rows.map((r) => r.match_tier))).toEqual(new Set(['path']));
    // Each B track joined the song analyzed from its A twin; no new song, and B was never downloaded from.
    const pairs = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM catalogue.track_server_map a JOIN catalogue.track_server_map b ON a.item_id = b.item_id WHERE a.server_id = $1 AND b.server_id <> $1`,
      [serverId],
    );
    expect(pairs[0]!.n).toBe(5);
    expect((await sql<{ n: number }>(`SELECT count(*)::int AS n FROM catalogue.score`))[0]!.n).toBe(5);
    const downloads = subsonic.requests.filter((r) => /\/rest\/(stream|download)/.test(r.path));
    expect(downloads).toEqual([]);
    expect(subsonic.requests.some((r) => /\/rest\/(search3|getAlbumList2|getAlbum)/.test(r.path))).toBe(true);

    // The dashboard's counts reached the registry.
    const until = Date.now() + 30_000;
    let view: Record<string, unknown> | undefined;
    while (Date.now() < until) {
      const list = await request(app.url).get('/api/servers').set(auth).expect(200);
      view = (list.body.servers as Array<Record<string, unknown>>).find((s) => s.id === serverId);
      if (view?.matched_count === 5 && view?.track_count === 5) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(view).toMatchObject({ track_count: 5, matched_count: 5 });
  });

  it('When cleaning runs while a server is offline, then that server is skipped and reported, orphan deletion is refused, the index is rebuilt inline, and a second start is refused', async () => {
    await subsonicServer!.close();
    subsonicServer = undefined;
    const start = await request(app.url).post('/api/cleaning/start').set(auth).send({ clean_catalogue: true }).expect(202);
    expect(start.body).toEqual({ task_id: expect.any(String), task_type: 'cleaning', status: 'NEW' });
    const again = await request(app.url).post('/api/cleaning/start').set(auth).send({}).expect(409);
    expect(again.body.code).toBe('task_running');
    const done = await waitForTask(app.url, start.body.task_id, { timeoutMs: 5 * 60_000, intervalMs: 500 });
    expect(done).toMatchObject({ task_type: 'cleaning', state: 'SUCCESS' });
    const details = done.details as Record<string, unknown> & { per_server: Array<Record<string, unknown>>; catalogue_deletion: Record<string, unknown>; index: Record<string, unknown> };
    expect(details.per_server.map((s) => [s.serverName, s.status])).toEqual([
      ['Jelly', 'done'],
      ['Navi', 'failed'],
    ]);
    expect(details).toMatchObject({ orphaned_tracks_count: 0, pruned_mappings: 0 });
    expect(details.catalogue_deletion).toMatchObject({ requested: true, outcome: 'refused' });
    expect(details.index).toMatchObject({ state: 'SUCCESS', items: 5 });
    // The offline server's mappings are untouched.
    expect((await sql<{ n: number }>(`SELECT count(*)::int AS n FROM catalogue.track_server_map`))[0]!.n).toBe(10);
    const index = await request(app.url).get('/api/index/status').set(auth).expect(200);
    expect(index.body).toMatchObject({ generation: details.index.generation, items: 5, building: false });
  });
});
