import request from 'supertest';
import { ArrayCatalogue, createFakeJellyfin, startSupysonic, wesnothTracks, WESNOTH_MUSIC_DIR, type FakeTrack, type StartedFake, type StartedSupysonic, type TestDatabase } from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { API_TOKEN, startTestStack } from './helpers';
import { syntheticSong, transcodeAll } from './media';

/**
 * The product's main job, end to end: supysonic (a real Subsonic server from Debian) serving the 41
 * Wesnoth tracks is registered as a `navidrome` server through the gateway and analyzed; then a
 * second server of another kind (fake Jellyfin) serving mp3 transcodes of the same files plus three
 * songs of its own is added, and the second run maps the transcodes to the existing songs without new
 * score rows and analyzes only the three new ones.
 */
describe('analysis end to end (supysonic + fake Jellyfin, full stack)', () => {
  jest.setTimeout(20 * 60_000);
  let supysonic: StartedSupysonic;
  let jellyfin: StartedFake;
  let stack: Stack;
  let db: TestDatabase;
  let url: string;
  const auth = { Authorization: `Bearer ${API_TOKEN}` };

  const sql = (text: string, params: unknown[] = []) => db.query(text, params);

  async function runAnalysis(): Promise<Record<string, unknown>> {
    const start = await request(url).post('/api/analysis/start').set(auth).send({}).expect(202);
    const taskId = start.body.task_id as string;
    expect(start.body).toMatchObject({ task_type: 'main_analysis', status: 'NEW' });
    await request(url).post('/api/analysis/start').set(auth).send({}).expect(409);
    const deadline = Date.now() + 15 * 60_000;
    for (;;) {
      const status = await request(url).get(`/api/status/${taskId}`).set(auth);
      if (status.status === 200 && ['SUCCESS', 'FAIL', 'REVOKED'].includes(status.body.state)) return status.body;
      if (Date.now() > deadline) throw new Error(`analysis did not finish: ${JSON.stringify(status.body)}`);
      await new Promise((r) => setTimeout(r, 2000));
    }
  }

  beforeAll(async () => {
    supysonic = await startSupysonic({ musicDir: WESNOTH_MUSIC_DIR, user: 'alice', password: 'alice-pass' });
    ({ stack, db, url } = await startTestStack());
  });
  afterAll(async () => {
    await stack?.stop();
    await db?.drop();
    await supysonic?.close();
    await jellyfin?.close();
  });

  it('When supysonic is registered and analyzed, then all 41 tracks are analyzed, mapped once, and similar songs answer', async () => {
    const created = await request(url).post('/api/servers').set(auth).send({ name: 'Supysonic', server_type: 'navidrome', creds: { url: supysonic.url, user: 'alice', password: 'alice-pass' } }).expect(201);
    expect(created.body.is_default).toBe(true);
    expect(created.body.creds.password).toBe('__unchanged__');
    // Index builds so far (the start-up build of the empty index): the sequence of index.builds.generation.
    const builds = async () => Number((await sql(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM "index".builds_generation_seq`))[0].n);
    const settled = Date.now() + 60_000;
    while ((await builds()) === 0 || Number((await sql(`SELECT count(*)::int AS n FROM "index".builds WHERE state = 'building'`))[0].n) > 0) {
      if (Date.now() > settled) throw new Error('the start-up index build did not finish');
      await new Promise((r) => setTimeout(r, 250));
    }
    const buildsBefore = await builds();
    const status = await runAnalysis();
    expect(status.state).toBe('SUCCESS');
    const servers = (status.details as { servers: Array<Record<string, number>> }).servers;
    expect(servers[0]).toMatchObject({ seen: 41, analyzed: 41, failed: 0 });
    const [{ n: scores }] = await sql(`SELECT count(*)::int AS n FROM catalogue.score`);
    const [{ n: maps }] = await sql(`SELECT count(*)::int AS n FROM catalogue.track_server_map WHERE server_id = $1`, [created.body.id]);
    expect(scores).toBe(41);
    expect(maps).toBe(41);

    // The index is rebuilt at the end of the run (asynchronously, via the bus): wait for it.
    const mapped: Array<{ provider_id: string }> = await sql(`SELECT provider_id FROM catalogue.track_server_map WHERE server_id = $1`, [created.body.id]);
    const deadline = Date.now() + 120_000;
    let first;
    do {
      first = await request(url).get(`/api/similar_tracks?item_id=${encodeURIComponent(mapped[0]!.provider_id)}&n=5`).set(auth);
      if (first.status === 200) break;
      await new Promise((r) => setTimeout(r, 1000));
    } while (Date.now() < deadline);
    // A first full run builds the index exactly once, at its end: the songs its tracks completed on the empty index
    // requested no build of their own (the live library asks GET /internal/analysis/run), not even after the run
    // (they are in that generation). Waited past the live library's debounce and two of its rechecks.
    await new Promise((r) => setTimeout(r, 25_000));
    expect(await builds()).toBe(buildsBefore + 1);
    for (const { provider_id } of mapped) {
      const res = await request(url).get(`/api/similar_tracks?item_id=${encodeURIComponent(provider_id)}&n=5`).set(auth).expect(200);
      expect(Array.isArray(res.body)).toBe(true);
      expect(res.body.length).toBeGreaterThan(0);
      const ids = new Set(mapped.map((m) => m.provider_id));
      for (const row of res.body) {
        expect(ids.has(row.item_id)).toBe(true);
        expect(typeof row.distance).toBe('number');
        expect(row.item_id).not.toBe(provider_id);
      }
    }
  });

  it('When the features are called through the gateway on the analyzed music, then each answers in the server\'s own ids', async () => {
    const mapped: Array<{ provider_id: string }> = await sql(`SELECT provider_id FROM catalogue.track_server_map ORDER BY provider_id`);
    const ids = new Set(mapped.map((m) => m.provider_id));
    const [a, b] = [mapped[0]!.provider_id, mapped[mapped.length - 1]!.provider_id];
    const path = await request(url).get(`/api/find_path?start_song_id=${a}&end_song_id=${b}&max_steps=8&count=25`).set(auth).expect(200);
    expect(path.body.path[0].item_id).toBe(a);
    expect(path.body.path.at(-1).item_id).toBe(b);
    expect(typeof path.body.total_distance).toBe('number');
    const alchemy = await request(url).post('/api/alchemy').set(auth).send({ items: [{ id: a, op: 'ADD', type: 'song' }, { id: b, op: 'SUBTRACT', type: 'song' }], n: 5 }).expect(200);
    expect(alchemy.body.results.length).toBeGreaterThan(0);
    for (const r of alchemy.body.results) expect(ids.has(r.item_id)).toBe(true);
    const search = await request(url).get('/api/search_tracks?title=battle').set(auth).expect(200);
    expect(search.body.length).toBeGreaterThan(0);
    for (const r of search.body) expect(ids.has(r.item_id)).toBe(true);
    const artists = await request(url).get('/api/similar_artists?artist=Wesnoth&n=3').set(auth);
    expect([200, 404]).toContain(artists.status);
    const map = await request(url).get('/api/map?percent=100').set(auth).expect(200);
    expect(map.body.items).toHaveLength(41);
    const sync = await request(url).get('/api/sync?limit=100').set(auth).expect(200);
    expect(sync.body.provider_type).toBe('navidrome');
    expect(sync.body.tracks.map((t: { id: string }) => t.id).sort()).toEqual([...ids].sort());
    const score = await request(url).get(`/external/get_score?id=${a}`).set(auth).expect(200);
    expect(JSON.stringify(score.body)).toContain(a);
    expect(JSON.stringify(score.body)).not.toMatch(/"fp_\d/);
    await request(url).get('/api/sonic_fingerprint/generate?n=5').set(auth).expect(200);
    const created = await request(url).post('/api/create_playlist').set(auth).send({ playlist_name: 'E2E mix', track_ids: [a, b, 'not-on-this-server'] }).expect(201);
    expect(created.body).toMatchObject({ mapped: 2, unavailable: 1 });
  });

  it('When a second server with mp3 transcodes plus 3 own songs is analyzed, then the transcodes map to existing songs and only 3 are new', async () => {
    const wes = wesnothTracks();
    const originals = [...wes];
    const mp3s = await transcodeAll(originals.map((t) => t.audioFile), 'mp3');
    const own = await Promise.all(([0, 1, 2] as const).map((v) => syntheticSong(v)));
    const tracks: FakeTrack[] = originals.map((t, i) => ({ ...t, audioFile: mp3s[i]!, path: t.path.replace(/\.ogg$/, '.mp3') }));
    own.forEach((file, i) =>
      tracks.push({ ...originals[0]!, id: `own-${i}`, title: `Own Song ${i}`, artist: 'Local Band', artistId: 'ar-local', album: 'Own', albumId: 'al-own', albumArtist: 'Local Band', albumArtistId: 'ar-local', audioFile: file, path: `/srv/music/music/Local Band/Own/own-${i}.ogg`, durationSeconds: 40 }),
    );
    const fake = createFakeJellyfin({ catalogue: new ArrayCatalogue(wes.libraries, tracks), token: 'jf-token' });
    jellyfin = await fake.start();
    const created = await request(url).post('/api/servers').set(auth).send({ name: 'Jelly', server_type: 'jellyfin', creds: { url: jellyfin.url, user_id: fake.userId, token: 'jf-token' } }).expect(201);
    expect(created.body.is_default).toBe(false);
    const before = (await sql(`SELECT count(*)::int AS n FROM catalogue.score`))[0].n;
    const status = await runAnalysis();
    expect(status.state).toBe('SUCCESS');
    const servers = (status.details as { servers: Array<Record<string, unknown>> }).servers;
    const jelly = servers.find((s) => s.serverId === created.body.id)!;
    // Saving the server enqueued an alignment sweep, which may already have mapped transcodes by
    // metadata (no download); the analysis maps the rest by audio. Either way no new song appears.
    expect(jelly).toMatchObject({ seen: 44, analyzed: 3, failed: 0 });
    expect(Number(jelly.skippedMapped) + Number(jelly.mappedExisting)).toBe(41);
    const supy = servers.find((s) => s.serverId !== created.body.id)!;
    expect(supy).toMatchObject({ seen: 41, skippedMapped: 41, analyzed: 0 });
    const after = (await sql(`SELECT count(*)::int AS n FROM catalogue.score`))[0].n;
    expect(after - before).toBe(3);
    // Each transcode shares its original's canonical id.
    const pairs = await sql(
      `SELECT count(DISTINCT a.item_id)::int AS n FROM catalogue.track_server_map a JOIN catalogue.track_server_map b ON a.item_id = b.item_id AND a.server_id <> b.server_id WHERE a.server_id = $1`,
      [created.body.id],
    );
    expect(pairs[0].n).toBe(41);
    // ...and each to the right song: both files of every shared song have the same base name.
    const wrong = await sql(
      `SELECT a.file_path AS a, b.file_path AS b FROM catalogue.track_server_map a JOIN catalogue.track_server_map b ON a.item_id = b.item_id AND a.server_id <> b.server_id
        WHERE a.server_id = $1 AND regexp_replace(a.file_path, '^.*/|\\.[^.]*$', '', 'g') <> regexp_replace(b.file_path, '^.*/|\\.[^.]*$', '', 'g')`,
      [created.body.id],
    );
    expect(wrong).toEqual([]);
  });
});
