import { createHash } from 'node:crypto';
import request from 'supertest';
import { Client } from 'pg';
import { RoutingKeys, TaskUpdatedEvent, type TaskCancelRequestedEvent, type ServerDeletedEvent } from '@polyphony/contracts';
import { createMediaServerClient, type MediaServerClient, type ServerConnection } from '@polyphony/media-servers';
import { signIdentity } from '@polyphony/platform';
import { createFakeJellyfin, createFakeSubsonic, createTestDatabase, syntheticCatalogue, type StartedFake, type TestDatabase } from '@polyphony/testkit';
import { buildPlaylist, loadPlaylistConfig, type PlaylistService } from '../src';
import type { ServerInfo } from '../src/domain/ports';
import { FakePeers, type FakeSong } from './fake-peers';

/**
 * The playlist service over HTTP (supertest against buildPlaylist) with real PostgreSQL, the in-process
 * bus, a fake registry + catalogue, and two REAL fake media servers (Jellyfin, Navidrome) on which the
 * playlists are really created and read back.
 *
 * Catalogue: 36 songs in three well-separated embedding groups (i % 3) with distinct descriptors.
 * - Jelly (Jellyfin, default): every song; Navi (Navidrome): songs with i % 4 != 0;
 *   Broken (Jellyfin with a wrong token): every song, but every call fails with 401;
 *   Tiny (Navidrome): one song only, too few to cluster.
 * - syn-36 is on Jelly with a minority embedder version (left out of clustering);
 *   syn-37 is mapped only on a server that is not in the registry.
 */
describe('playlist service (API, real PostgreSQL, fake media servers)', () => {
  const SECRET = 'playlist-api-test-internal-secret-0123456789';
  const catalogue = syntheticCatalogue(38);
  const jf = createFakeJellyfin({ catalogue, token: 'jf-token' });
  // The Navidrome-kind server authenticates with an OpenSubsonic API key ({url, api_key}).
  const sub = createFakeSubsonic({ catalogue, user: 'nav', password: 'nav-pw', apiKey: 'nav-api-key' });
  const started: StartedFake[] = [];
  let peers: FakePeers;
  let db: TestDatabase;
  let svc: PlaylistService;
  let peersUrl: string;
  let jfConn: ServerConnection;
  let subConn: ServerConnection;
  const events: TaskUpdatedEvent[] = [];

  const canonical = (i: number) => `fp_4${createHash('sha256').update(`song-${i}`).digest('hex').slice(0, 50)}`;
  const group = (i: number) => i % 3;
  const onNavi = (i: number) => i % 4 !== 0;
  const jfId = (i: number) => jf.idOf(`syn-${i}`);
  const subId = (i: number) => sub.idOf(`syn-${i}`);
  const range = (n: number) => Array.from({ length: n }, (_, i) => i);
  const GROUP_NAMES = ['Fast_Major_High', 'Slow_Minor_Low', 'Upbeat_Major_Medium'];
  /** Songs of the instant playlist written to Navi by the first test. */
  const ROAD_MIX = [1, 2, 3, 5, 6, 9];

  const headers = (role: 'admin' | 'user', serverId?: string) =>
    signIdentity({ sub: role === 'admin' ? 'api-token' : 'user-1', username: role, role, via: role === 'admin' ? 'bearer' : 'cookie', serverId }, SECRET);
  const sql = async (text: string, params: unknown[] = []) => {
    const c = new Client({ connectionString: db.url });
    await c.connect();
    try {
      return (await c.query(text, params)).rows;
    } finally {
      await c.end();
    }
  };
  const waitFor = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000) => {
    const end = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const finalEvent = async (taskId: string) => {
    await waitFor(`final event of ${taskId}`, () => events.some((e) => e.taskId === taskId && e.finishedAt !== undefined));
    return events.filter((e) => e.taskId === taskId).at(-1)!;
  };
  const ours = <T extends { name: string }>(list: T[]): T[] => list.filter((p) => p.name.endsWith('_automatic') && !['Roadtrip_automatic', 'Evening_automatic'].includes(p.name));
  /** Every song id sent to the fake Navidrome in playlist writes. */
  const idsSentToNavi = () =>
    sub.requests
      .filter((r) => /\/rest\/(createPlaylist|updatePlaylist)(\.view)?$/.test(r.path))
      .flatMap((r) => [r.query.songId, r.query.songIdToAdd].flat().filter((v): v is string => typeof v === 'string'));

  beforeAll(async () => {
    const jfUrl = (await jf.start().then((s) => (started.push(s), s))).url;
    const subUrl = (await sub.start().then((s) => (started.push(s), s))).url;
    jfConn = { type: 'jellyfin', creds: { url: jfUrl, user_id: jf.userId, token: 'jf-token' } };
    subConn = { type: 'navidrome', creds: { url: subUrl, api_key: 'nav-api-key' } };
    // Registry order puts the default last, so "default first" is visible in the run's order.
    const servers: ServerInfo[] = [
      { id: 'srv-bad', name: 'Broken', type: 'jellyfin', isDefault: false, connection: { type: 'jellyfin', creds: { url: jfUrl, user_id: jf.userId, token: 'wrong-token' } } },
      { id: 'srv-nav', name: 'Navi', type: 'navidrome', isDefault: false, connection: subConn },
      { id: 'srv-jf', name: 'Jelly', type: 'jellyfin', isDefault: true, connection: jfConn },
      { id: 'srv-tiny', name: 'Tiny', type: 'navidrome', isDefault: false, connection: subConn },
    ];
    const descriptors = [
      { tempo: 150, key: 'A', scale: 'major', energy: 0.9 },
      { tempo: 70, key: 'D', scale: 'minor', energy: 0.35 },
      { tempo: 125, key: 'G', scale: 'major', energy: 0.6 },
    ];
    const songs: FakeSong[] = range(38).map((i) => {
      const g = i === 36 || i === 37 ? 0 : group(i);
      const embedding = new Float32Array(200);
      for (let t = 0; t < 200; t++) embedding[t] = (t >= g * 20 && t < g * 20 + 20 ? 1 : 0) + 0.05 * Math.sin(i * 997 + t * 31);
      const mappings =
        i === 37
          ? [{ serverId: 'srv-gone', providerId: 'gone-37' }]
          : [
              { serverId: 'srv-jf', providerId: jfId(i) },
              { serverId: 'srv-bad', providerId: jfId(i) },
              ...(onNavi(i) && i < 36 ? [{ serverId: 'srv-nav', providerId: subId(i) }] : []),
              ...(i === 35 ? [{ serverId: 'srv-tiny', providerId: subId(i) }] : []),
            ];
      const d = descriptors[g]!;
      return {
        itemId: canonical(i),
        embedding,
        embedderVersion: i === 36 ? 'old-embedder' : 'dsp-v1',
        title: `Synthetic Song ${i}`,
        artist: catalogue.byId(`syn-${i}`)!.artist,
        tempo: d.tempo + (i % 5),
        key: d.key,
        scale: d.scale,
        energy: d.energy,
        mappings,
      };
    });
    peers = new FakePeers(SECRET, servers, songs);
    peersUrl = await peers.start();
    db = await createTestDatabase('polyphony_playlist_api');
    svc = buildPlaylist(loadPlaylistConfig({ DATABASE_URL: db.url, INTERNAL_SECRET: SECRET, LOG_LEVEL: 'error' }), {
      migrateOnStart: true,
      peers: () => ({ registry: peersUrl, catalogue: peersUrl, analysis: peersUrl, index: peersUrl, playlist: peersUrl }),
      clientFactory: (conn) => createMediaServerClient(conn, { retries: 0, timeoutMs: 10_000 }),
      clustering: { progressIntervalMs: 0 },
    });
    await svc.start();
    await svc.runtime.bus.consume({ queue: 'test.task-updates', bindings: [RoutingKeys.taskUpdated], schema: TaskUpdatedEvent, handler: async (e) => void events.push(e) });
  });

  afterAll(async () => {
    await svc?.stop();
    await db?.drop();
    await peers?.close();
    for (const s of started) await s.close();
  });

  describe('POST /api/create_playlist', () => {
    it('When canonical ids and the selected server\'s own ids are sent, then they are translated to its ids; tracks missing there and ids of another server are dropped and counted, never sent', async () => {
      const trackIds = [canonical(1), canonical(2), { item_id: canonical(3) }, subId(5), { item_id: subId(6) }, canonical(0), canonical(4), jfId(7), 'no-such-id', canonical(9), canonical(1)];
      const res = await request(svc.http).post('/api/create_playlist').set(headers('user', 'srv-nav')).send({ playlist_name: 'Road Mix', track_ids: trackIds }).expect(201);

      expect(res.body).toMatchObject({ playlist_name: 'Road Mix_instant', server_id: 'srv-nav', mapped: 6, skipped: 4, unavailable: 4, unavailable_ids: [canonical(0), canonical(4), jfId(7), 'no-such-id'] });
      const expected = ROAD_MIX.map(subId);
      const onServer = sub.playlists();
      expect(onServer).toHaveLength(1);
      expect(onServer[0]).toMatchObject({ id: res.body.playlist_id, name: 'Road Mix_instant', trackIds: expected });
      const sent = idsSentToNavi();
      expect(sent.length).toBeGreaterThan(0);
      // API-key authentication: every call carries apiKey and no user/password/token.
      expect(sub.requests.every((r) => r.query.apiKey === 'nav-api-key' && r.query.u === undefined && r.query.p === undefined && r.query.t === undefined)).toBe(true);
      expect(sent.every((id) => range(36).filter(onNavi).map(subId).includes(id))).toBe(true);
      expect(jf.playlists()).toHaveLength(0);
      const rows = await sql(`SELECT server_id, provider_playlist_id, name, kind, track_count FROM playlist.playlists`);
      expect(rows).toEqual([{ server_id: 'srv-nav', provider_playlist_id: res.body.playlist_id, name: 'Road Mix_instant', kind: 'instant', track_count: 6 }]);
    });

    it('When item_ids (alias) are canonical ids for the default server, then every track is written there', async () => {
      const res = await request(svc.http).post('/api/create_playlist').set(headers('user', 'srv-jf')).send({ playlist_name: 'Canon', item_ids: [canonical(10), canonical(11)] }).expect(201);
      expect(res.body).toMatchObject({ mapped: 2, skipped: 0, unavailable_ids: [] });
      expect(jf.playlists()).toEqual([expect.objectContaining({ id: res.body.playlist_id, name: 'Canon_instant', trackIds: [jfId(10), jfId(11)] })]);
    });

    it('When no track is on the selected server, then 400 and nothing is written anywhere', async () => {
      const before = { sub: sub.playlists().length, rows: (await sql(`SELECT count(*)::int AS n FROM playlist.playlists`))[0].n };
      const res = await request(svc.http).post('/api/create_playlist').set(headers('user', 'srv-nav')).send({ playlist_name: 'Nothing', track_ids: [jfId(0), jfId(4), canonical(37)] }).expect(400);
      expect(res.body.error).toMatch(/None of the 3 track\(s\) is available on server "Navi"/);
      expect(sub.playlists().length).toBe(before.sub);
      expect((await sql(`SELECT count(*)::int AS n FROM playlist.playlists`))[0].n).toBe(before.rows);
    });

    it('When the body is malformed or no server is configured, then it is a 4xx with a clear message', async () => {
      const cases: Array<[object, RegExp]> = [
        [{ track_ids: [jfId(1)] }, /playlist_name/],
        [{ playlist_name: 'X' }, /track_ids/],
        [{ playlist_name: 'X', track_ids: [] }, /track_ids/],
        [{ playlist_name: 'X', track_ids: 'a,b' }, /track_ids/],
        [{ playlist_name: 'X', track_ids: [{ id: jfId(1) }] }, /track_ids/],
      ];
      for (const [body, message] of cases) {
        const res = await request(svc.http).post('/api/create_playlist').set(headers('user', 'srv-nav')).send(body).expect(400);
        expect(res.body.error).toMatch(message);
      }
      const noServer = await request(svc.http).post('/api/create_playlist').set(headers('user')).send({ playlist_name: 'X', track_ids: [jfId(1)] }).expect(400);
      expect(noServer.body.error).toMatch(/No media server/);
      await request(svc.http).post('/api/create_playlist').set(headers('user', 'srv-deleted')).send({ playlist_name: 'X', track_ids: [jfId(1)] }).expect(400);
      await request(svc.http).post('/api/create_playlist').send({ playlist_name: 'X', track_ids: [jfId(1)] }).expect(401);
    });

    it('When the media server refuses, then 502 and nothing is recorded', async () => {
      const before = (await sql(`SELECT count(*)::int AS n FROM playlist.playlists`))[0].n;
      const res = await request(svc.http).post('/api/create_playlist').set(headers('user', 'srv-bad')).send({ playlist_name: 'Fails', track_ids: [canonical(1)] }).expect(502);
      expect(res.body.error).toMatch(/Broken/);
      expect((await sql(`SELECT count(*)::int AS n FROM playlist.playlists`))[0].n).toBe(before);
      expect(jf.playlists().some((p) => p.name === 'Fails_instant')).toBe(false);
    });
  });

  describe('GET /api/playlists', () => {
    it('When playlists were written, then they are listed per server (default first) with that server\'s ids and titles, also when the catalogue lookup is unavailable', async () => {
      const res = await request(svc.http).get('/api/playlists').set(headers('user', 'srv-jf')).expect(200);
      expect(res.body.multi_server).toBe(true);
      expect(res.body.servers.map((s: { server_id: string }) => s.server_id)).toEqual(['srv-jf', 'srv-bad', 'srv-nav', 'srv-tiny']);
      expect(res.body.servers[0]).toMatchObject({ server_name: 'Jelly', is_default: true });
      const navi = res.body.servers[2].playlists;
      expect(Object.keys(navi)).toEqual(['Road Mix_instant']);
      expect(navi['Road Mix_instant'][0]).toEqual({ item_id: subId(1), title: 'Synthetic Song 1', author: catalogue.byId('syn-1')!.artist });
      expect(navi['Road Mix_instant'].map((t: { item_id: string }) => t.item_id)).toEqual(ROAD_MIX.map(subId));
      expect(res.body.servers[1].playlists).toEqual({});

      peers.lookupAvailable = false;
      try {
        const degraded = await request(svc.http).get('/api/playlists').set(headers('user')).expect(200);
        expect(degraded.body.servers[2].playlists['Road Mix_instant'][0]).toEqual({ item_id: subId(1), title: 'Synthetic Song 1', author: catalogue.byId('syn-1')!.artist });
      } finally {
        peers.lookupAvailable = true;
      }
    });
  });

  describe('clustering', () => {
    let userJf: MediaServerClient;
    let firstRunIds: string[] = [];
    const userPlaylists: Record<string, { id: string; trackIds: string[] }> = {};

    beforeAll(async () => {
      userJf = createMediaServerClient(jfConn);
      const userSub = createMediaServerClient(subConn);
      const fav = await userJf.createPlaylist('My Favourites', [jfId(0), jfId(1)]);
      const road = await userJf.createPlaylist('Roadtrip_automatic', [jfId(2)]);
      const evening = await userSub.createPlaylist('Evening_automatic', [subId(1)]);
      userPlaylists[fav.id] = { id: fav.id, trackIds: [jfId(0), jfId(1)] };
      userPlaylists[road.id] = { id: road.id, trackIds: [jfId(2)] };
      userPlaylists[evening.id] = { id: evening.id, trackIds: [subId(1)] };
    });

    const userPlaylistsIntact = () => {
      const all = [...jf.playlists(), ...sub.playlists()];
      for (const p of Object.values(userPlaylists)) expect(all.find((x) => x.id === p.id)?.trackIds).toEqual(p.trackIds);
      expect(sub.playlists().find((p) => p.name === 'Road Mix_instant')?.trackIds).toEqual(ROAD_MIX.map(subId));
      expect(jf.playlists().find((p) => p.name === 'Canon_instant')?.trackIds).toEqual([jfId(10), jfId(11)]);
    };

    it('When clustering runs, then each server gets its own availability-scoped playlists in its own ids, default first, and a failing server is isolated and reported', async () => {
      const res = await request(svc.http).post('/api/clustering/start').set(headers('admin')).send({ num_clusters: 3 }).expect(202);
      expect(res.body).toEqual({ task_id: expect.stringMatching(/^[0-9a-f-]{36}$/), task_type: 'main_clustering', status: 'NEW' });
      await svc.clustering.idle();
      const last = await finalEvent(res.body.task_id);

      const expectedMembers = (g: number, on: (i: number) => boolean, id: (i: number) => string) => range(36).filter((i) => group(i) === g && on(i)).map(id).sort();
      const jfAuto = ours(jf.playlists());
      expect(jfAuto.map((p) => p.name).sort()).toEqual(GROUP_NAMES.map((n) => `${n}_automatic`).sort());
      for (const [g, name] of GROUP_NAMES.entries()) {
        expect([...jfAuto.find((p) => p.name === `${name}_automatic`)!.trackIds].sort()).toEqual(expectedMembers(g, () => true, jfId));
      }
      const subAuto = ours(sub.playlists());
      expect(subAuto).toHaveLength(3);
      for (const [g, name] of GROUP_NAMES.entries()) {
        expect([...subAuto.find((p) => p.name === `${name}_automatic`)!.trackIds].sort()).toEqual(expectedMembers(g, onNavi, subId));
      }
      userPlaylistsIntact();

      expect(last.state).toBe('SUCCESS');
      expect(last.type).toBe('clustering');
      expect(last.owner).toBe('playlist');
      expect(last.servers.map((s) => [s.serverId, s.status])).toEqual([
        ['srv-jf', 'done'],
        ['srv-bad', 'failed'],
        ['srv-nav', 'done'],
        ['srv-tiny', 'skipped'],
      ]);
      expect(last.servers[1]!.error).toMatch(/401|credential|unauthori/i);
      const reports = last.details.clustering as Array<Record<string, unknown>>;
      expect(reports[0]).toMatchObject({ serverId: 'srv-jf', songs: 36, songsIgnored: 1, clusters: 3, playlistsCreated: 3, tracksWritten: 36, tracksUnavailable: 0 });
      expect(reports[2]).toMatchObject({ serverId: 'srv-nav', songs: 27, playlistsCreated: 3, tracksWritten: 27 });
      expect(reports[3]).toMatchObject({ serverId: 'srv-tiny', status: 'skipped', songs: 1, clusters: 0, playlistsCreated: 0, playlistsDeleted: 0 });
      const started = ['Jelly', 'Broken', 'Navi'].map((n) => last.log.findIndex((l) => l.includes(`server ${n}: started`)));
      expect(started.every((i) => i >= 0)).toBe(true);
      expect([...started].sort((a, b) => a - b)).toEqual(started);
      const seqs = events.filter((e) => e.taskId === res.body.task_id).map((e) => e.seq);
      expect(seqs.length).toBeGreaterThan(3);
      for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!);
      firstRunIds = jfAuto.map((p) => p.id);
    });

    it('When clustering runs again, then only our previous automatic playlists are replaced; user playlists (even named *_automatic) and instant playlists stay', async () => {
      const res = await request(svc.http).post('/api/clustering/start').set(headers('admin')).send({ k: 3 }).expect(202);
      await svc.clustering.idle();
      expect((await finalEvent(res.body.task_id)).state).toBe('SUCCESS');
      const jfAuto = ours(jf.playlists());
      expect(jfAuto).toHaveLength(3);
      expect(jfAuto.some((p) => firstRunIds.includes(p.id))).toBe(false);
      expect(ours(sub.playlists())).toHaveLength(3);
      userPlaylistsIntact();
      const rows = await sql(`SELECT server_id, kind, count(*)::int AS n FROM playlist.playlists GROUP BY 1, 2 ORDER BY 1, 2`);
      expect(rows).toEqual([
        { server_id: 'srv-jf', kind: 'automatic', n: 3 },
        { server_id: 'srv-jf', kind: 'instant', n: 1 },
        { server_id: 'srv-nav', kind: 'automatic', n: 3 },
        { server_id: 'srv-nav', kind: 'instant', n: 1 },
      ]);
    });

    it('When a run is live, then a second start is 409; a cancel stops it as REVOKED and deletes nothing', async () => {
      const before = ours(jf.playlists()).map((p) => p.id).sort();
      peers.hold();
      let taskId = '';
      try {
        const res = await request(svc.http).post('/api/clustering/start').set(headers('admin')).send({}).expect(202);
        taskId = res.body.task_id;
        const second = await request(svc.http).post('/api/clustering/start').set(headers('admin')).send({}).expect(409);
        expect(second.body.code).toBe('task_already_running');
        await svc.runtime.bus.publish(RoutingKeys.taskCancelRequested, { taskId, type: 'clustering' } satisfies TaskCancelRequestedEvent);
        await waitFor('cancel flag', async () => (await svc.runs.find(taskId))?.cancelRequested === true);
      } finally {
        peers.release();
      }
      await svc.clustering.idle();
      const last = await finalEvent(taskId);
      expect(last.state).toBe('REVOKED');
      expect(ours(jf.playlists()).map((p) => p.id).sort()).toEqual(before);
      userPlaylistsIntact();
    });

    it('When the body is {} or carries the reference parameters, then it starts (2xx); caps and top-N are honoured and names stay unique', async () => {
      const empty = await request(svc.http).post('/api/clustering/start').set(headers('admin')).send({}).expect(202);
      await svc.clustering.idle();
      expect((await finalEvent(empty.body.task_id)).state).toBe('SUCCESS');
      const auto = ours(jf.playlists());
      // k = round(sqrt(36 / 2)) = 4 over three groups: one group splits, and its halves still get distinct names.
      expect(auto.length).toBeGreaterThanOrEqual(3);
      expect(new Set(auto.map((p) => p.name.toLowerCase())).size).toBe(auto.length);
      expect(auto.reduce((n, p) => n + p.trackIds.length, 0)).toBe(36);

      const reference = { clustering_method: 'kmeans', num_clusters_min: 2, num_clusters_max: 3, enable_clustering_embeddings: true, ai_model_provider: 'NONE', max_songs_per_playlist: 5, top_n_playlists: 2 };
      const res = await request(svc.http).post('/api/clustering/start').set(headers('admin')).send(reference).expect(202);
      await svc.clustering.idle();
      expect((await finalEvent(res.body.task_id)).state).toBe('SUCCESS');
      const capped = ours(jf.playlists());
      expect(capped).toHaveLength(2);
      expect(capped.every((p) => p.trackIds.length === 5)).toBe(true);
      userPlaylistsIntact();
    });

    it('When clustering input is out of range or the caller is not admin, then 4xx and no run starts', async () => {
      for (const body of [{ num_clusters: 1 }, { k: 500 }, { max_songs_per_playlist: 0 }, { num_clusters: 'many' }, { num_clusters_min: 9, num_clusters_max: 3 }]) {
        await request(svc.http).post('/api/clustering/start').set(headers('admin')).send(body).expect(400);
      }
      await request(svc.http).post('/api/clustering/start').set(headers('user')).send({}).expect(403);
      await request(svc.http).post('/api/clustering/start').send({}).expect(401);
      expect(await svc.runs.live()).toBeUndefined();
    });

    it('When the coordinating replica stops mid-run, then it hands its lease back and another replica takes the run over, resumes after the servers already done and ends SUCCESS', async () => {
      const svc2 = buildPlaylist(loadPlaylistConfig({ DATABASE_URL: db.url, INTERNAL_SECRET: SECRET, LOG_LEVEL: 'error' }), {
        peers: () => ({ registry: peersUrl, catalogue: peersUrl, analysis: peersUrl, index: peersUrl, playlist: peersUrl }),
        clientFactory: (conn) => createMediaServerClient(conn, { retries: 0, timeoutMs: 10_000 }),
        clustering: { progressIntervalMs: 0, scanMs: 100 },
      });
      await svc2.start();
      const snapshots = () => peers.requests.filter((r) => r.path.startsWith('/internal/snapshot/tracks')).length;
      try {
        peers.hold();
        const res = await request(svc.http).post('/api/clustering/start').set(headers('admin')).send({ k: 3 }).expect(202);
        const taskId = res.body.task_id as string;
        const reports = async () => ((await svc.runs.find(taskId))?.details.clustering ?? []) as Array<{ serverName: string; status: string }>;
        // Let the default server (Jelly) through, then hold the next server's catalogue page and stop replica 1.
        let passed = 0;
        await waitFor('Jelly done', async () => {
          if (snapshots() > passed) {
            passed = snapshots();
            peers.release();
            peers.hold();
          }
          return (await reports()).find((r) => r.serverName === 'Jelly')?.status === 'done';
        });
        await waitFor('next server waiting for its page', () => snapshots() > passed);
        const jellyPlaylists = ours(jf.playlists()).map((p) => p.id).sort();
        const stopping = svc.clustering.shutdown();
        peers.release();
        await stopping;
        // Replica 1 coordinates nothing any more; the run is still live (handed back, not ended).
        expect(svc.clustering.host.active).toEqual([]);
        expect((await svc.runs.find(taskId))!.state).toBe('RUNNING');
        // Replica 2's takeover scan claims it (lease generation 2) and finishes it.
        await waitFor('takeover', async () => ((await svc2.runs.find(taskId))?.leaseGeneration ?? 0) >= 2);
        await svc2.clustering.idle();
        const done = (await svc2.runs.find(taskId))!;
        expect(done).toMatchObject({ state: 'SUCCESS', progress: 100, leaseGeneration: 2 });
        expect(done.log.some((l) => l.includes('resumed by playlist-clustering@'))).toBe(true);
        expect(done.log.filter((l) => l.includes('server Jelly: started'))).toHaveLength(1);
        expect(Object.fromEntries((done.details.clustering as Array<{ serverName: string; status: string }>).map((r) => [r.serverName, r.status]))).toEqual({ Jelly: 'done', Broken: 'failed', Navi: 'done', Tiny: 'skipped' });
        // Jelly was not clustered again: its playlists are the ones written before the handover.
        expect(ours(jf.playlists()).map((p) => p.id).sort()).toEqual(jellyPlaylists);
        expect(ours(sub.playlists())).toHaveLength(3);
      } finally {
        peers.release();
        await svc2.stop();
      }
    });
  });

  it('When two Album of the Week runs write the one playlist of a server at once, then one playlist of that name is left there and recorded', async () => {
    const internal = signIdentity({ sub: 'index', username: 'index', role: 'admin', via: 'internal' }, SECRET);
    const write = (songs: number[]) =>
      request(svc.http).post('/internal/playlists/radio').set(internal).send({ serverId: 'srv-nav', name: 'Album of the Week', ids: songs.map(canonical), kind: 'album_of_the_week' }).expect(200);
    // Overlapping (a scheduled firing and a direct run): each deletes what it finds, then creates; unserialised both created one.
    const [a, b] = await Promise.all([write([1, 2, 3, 5]), write([6, 7, 9, 10])]);
    expect([a.body.written, b.body.written]).toEqual([4, 4]);
    const onServer = sub.playlists().filter((p) => p.name === 'Album of the Week');
    expect(onServer).toHaveLength(1);
    // The later of the two (their order of arrival is not fixed) is the one left.
    expect([[1, 2, 3, 5].map(subId), [6, 7, 9, 10].map(subId)]).toContainEqual(onServer[0]!.trackIds);
    expect([a.body.playlistId, b.body.playlistId]).toContain(onServer[0]!.id);
    expect(await sql(`SELECT provider_playlist_id FROM playlist.playlists WHERE kind = 'album_of_the_week'`)).toEqual([{ provider_playlist_id: onServer[0]!.id }]);
  });

  it('When a server is deleted from the registry, then our records of it are forgotten', async () => {
    expect((await sql(`SELECT count(*)::int AS n FROM playlist.playlists WHERE server_id = 'srv-nav'`))[0].n).toBeGreaterThan(0);
    await svc.runtime.bus.publish(RoutingKeys.serverDeleted, { serverId: 'srv-nav' } satisfies ServerDeletedEvent);
    await waitFor('records of srv-nav gone', async () => (await sql(`SELECT count(*)::int AS n FROM playlist.playlists WHERE server_id = 'srv-nav'`))[0].n === 0);
    const res = await request(svc.http).get('/api/playlists').set(headers('user')).expect(200);
    expect(res.body.servers.find((s: { server_id: string }) => s.server_id === 'srv-nav').playlists).toEqual({});
    expect(Object.keys(res.body.servers[0].playlists).length).toBeGreaterThan(0);
  });
});
