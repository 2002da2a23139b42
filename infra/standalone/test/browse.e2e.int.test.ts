import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { startSupysonic, WESNOTH_MUSIC_DIR, type StartedSupysonic } from '@polyphony/testkit';
import { API_TOKEN, loginCookie, useTestStack, waitFor, waitForTask } from './helpers';

/**
 * Browse (issue 32) on a catalogue analysed from real servers: two supysonic servers ("Supysonic", the default,
 * and "Second") each serve a folder of three Wesnoth songs (victory and elf-land on both, revelation on Supysonic
 * only, defeat2 on Second only), a second file of victory (`copies/victory-copy.ogg`: a real duplicate), a corrupt
 * Ogg file supysonic lists as "Defeat" (the real file's header pages and last page around random bytes: ffmpeg
 * decodes no sample of it) and a 0.4 s tone made with ffmpeg (too short to analyse). One analysis run walks both
 * servers; then GET /api/dashboard/browse is asked per server (each in its own ids), for the whole catalogue, and
 * after Second is deleted (defeat2 becomes an orphan).
 * A second run must not download the two excluded files again (their metadata did not change).
 */
describe('browse songs, duplicates, orphans and unanalyzable files (two supysonic servers, real analysis)', () => {
  jest.setTimeout(10 * 60_000);
  const bearer = { Authorization: `Bearer ${API_TOKEN}` };
  const ONLY: Record<string, string> = { Supysonic: 'revelation', Second: 'defeat2' };
  const root = mkdtempSync(join(tmpdir(), 'browse-music-'));
  const servers: Record<string, StartedSupysonic> = {};
  /** provider ids per server name: path -> id. */
  const ids: Record<string, Record<string, string>> = {};

  beforeAll(async () => {
    const folder = (name: string) => join(root, name);
    for (const [name, only] of Object.entries(ONLY)) {
      mkdirSync(join(folder(name), 'copies'), { recursive: true });
      for (const s of ['victory', 'elf-land', only]) copyFileSync(join(WESNOTH_MUSIC_DIR, `${s}.ogg`), join(folder(name), `${s}.ogg`));
      copyFileSync(join(WESNOTH_MUSIC_DIR, 'victory.ogg'), join(folder(name), 'copies', 'victory-copy.ogg'));
    }
    // Corrupt: defeat.ogg's identification/comment/setup pages (first 4646 bytes) and its last page (so the tags and
    // the length still read) around 150 kB of seeded random bytes with no Ogg page marker: no audio packet decodes.
    const real = readFileSync(join(WESNOTH_MUSIC_DIR, 'defeat.ogg'));
    let seed = 7;
    const noise = Buffer.from(Array.from({ length: 150_000 }, () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 0xff));
    const garbage = Buffer.from(noise.toString('latin1').replaceAll('OggS', 'OggX'), 'latin1');
    const broken = Buffer.concat([real.subarray(0, 4646), garbage, real.subarray(real.lastIndexOf('OggS'))]);
    execFileSync('ffmpeg', ['-nostdin', '-v', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=0.4', '-c:a', 'libvorbis', '-metadata', 'title=Short blip', '-metadata', 'artist=Test Tones', '-metadata', 'album=Blips', join(root, 'short.ogg')]);
    for (const name of Object.keys(ONLY)) {
      writeFileSync(join(folder(name), 'broken.ogg'), broken);
      copyFileSync(join(root, 'short.ogg'), join(folder(name), 'short.ogg'));
    }
    servers.Supysonic = await startSupysonic({ musicDir: folder('Supysonic'), user: 'alice', password: 'alice-pass' });
    servers.Second = await startSupysonic({ musicDir: folder('Second'), user: 'bob', password: 'bob-pass' });
    for (const [name, s] of Object.entries(servers)) {
      const q = `u=${s === servers.Supysonic ? 'alice&p=alice-pass' : 'bob&p=bob-pass'}&v=1.16.1&c=t&f=json`;
      const found = (await (await fetch(`${s.url}/rest/search3.view?${q}&query=&songCount=50`)).json()) as { 'subsonic-response': { searchResult3: { song: Array<{ id: string; path: string }> } } };
      ids[name] = Object.fromEntries(found['subsonic-response'].searchResult3.song.map((x) => [x.path, x.id]));
      expect(Object.keys(ids[name]!).sort()).toEqual(['broken.ogg', 'copies/victory-copy.ogg', 'elf-land.ogg', `${ONLY[name]}.ogg`, 'short.ogg', 'victory.ogg'].sort());
    }
  });
  const app = useTestStack();
  let userCookie: string;
  let firstRun: string;
  beforeAll(async () => {
    await request(app.url).post('/api/servers').set(bearer).send({ name: 'Supysonic', server_type: 'navidrome', creds: { url: servers.Supysonic!.url, user: 'alice', password: 'alice-pass' } }).expect(201);
    await request(app.url).post('/api/servers').set(bearer).send({ name: 'Second', server_type: 'navidrome', creds: { url: servers.Second!.url, user: 'bob', password: 'bob-pass' } }).expect(201);
    await request(app.url).post('/api/users').set(bearer).send({ username: 'listener', password: 'listener-pw-1', role: 'user' }).expect(201);
    userCookie = await loginCookie(app.url, 'listener', 'listener-pw-1');
    const start = await request(app.url).post('/api/analysis/start').set(bearer).send({}).expect(202);
    firstRun = start.body.task_id;
    expect((await waitForTask(app.url, firstRun, { timeoutMs: 8 * 60_000 })).state).toBe('SUCCESS');
  });
  afterAll(async () => {
    for (const s of Object.values(servers)) await s.close();
    rmSync(root, { recursive: true, force: true });
  });

  const browse = (query: string, headers: Record<string, string> = bearer) => request(app.url).get(`/api/dashboard/browse?${query}`).set(headers);

  it.each(['Supysonic', 'Second'])('When %s is browsed, then its songs, its duplicate file and its unanalyzable files are listed in its own ids', async (name) => {
    const own = ids[name]!;
    const songs = (await browse(`kind=songs&server=${name}`, { Cookie: userCookie }).expect(200)).body;
    expect(songs).toMatchObject({ kind: 'songs', filter: 'all', page: 1, page_size: 100, has_more: false, capped: false, server: name, total: 3 });
    const victoryIds = [own['victory.ogg'], own['copies/victory-copy.ogg']].sort();
    expect(songs.results.map((r: { item_id: string }) => r.item_id).sort()).toEqual([victoryIds[0], own['elf-land.ogg'], own[`${ONLY[name]}.ogg`]].sort());
    const victory = songs.results.find((r: { title: string }) => r.title === 'Victory');
    expect(victory).toMatchObject({ item_id: victoryIds[0], author: 'Timothy Pinkham', copies: 2, servers: 1 });
    expect(victory.duration).toBeGreaterThan(4);

    const dups = (await browse(`kind=songs&filter=duplicates&server=${name}`).expect(200)).body;
    expect(dups).toMatchObject({ filter: 'duplicates', total: 1, server: name });
    expect(dups.results[0]).toMatchObject({ title: 'Victory', copies: 2 });
    expect(dups.results[0].files).toEqual(
      [
        { item_id: own['victory.ogg'], path: expect.stringMatching(/victory\.ogg$/) },
        { item_id: own['copies/victory-copy.ogg'], path: expect.stringMatching(/copies\/victory-copy\.ogg$/) },
      ].sort((a, b) => (a.item_id! < b.item_id! ? -1 : 1)),
    );
    const unique = (await browse(`filter=unique&server=${name}`).expect(200)).body;
    expect(unique.results.map((r: { title: string }) => r.title).sort()).toEqual(songs.results.filter((r: { copies: number }) => r.copies === 1).map((r: { title: string }) => r.title).sort());
    expect(unique.total).toBe(2);

    const bad = (await browse(`kind=unanalyzable&server=${name}`).expect(200)).body;
    expect(bad).toMatchObject({ kind: 'unanalyzable', total: 2, server: name, has_more: false });
    const byId = Object.fromEntries(bad.results.map((r: { item_id: string }) => [r.item_id, r]));
    expect(byId[own['broken.ogg']!]).toMatchObject({ server: name, title: 'Defeat', author: 'Timothy Pinkham', path: expect.stringMatching(/broken\.ogg$/), reason_code: 'undecodable', reason: 'Could not decode the audio' });
    expect(byId[own['short.ogg']!]).toMatchObject({ server: name, title: 'Short blip', author: 'Test Tones', album: 'Blips', reason_code: 'too_short', reason: 'Too short to analyse (under 1 second of audio)' });
    expect(byId[own['short.ogg']!].detail).toMatch(/too short/);
    expect((await browse(`kind=unanalyzable&server=${name}&q=BLIP`).expect(200)).body.results.map((r: { item_id: string }) => r.item_id)).toEqual([own['short.ogg']]);
  });

  it('When the whole catalogue is browsed, then songs carry canonical ids and their copies on every server; artists and albums group them; search and paging answer', async () => {
    const all = (await browse('kind=songs').expect(200)).body;
    expect(all).toMatchObject({ server: null, total: 4 });
    const everyProviderId = new Set(Object.values(ids).flatMap((m) => Object.values(m)));
    for (const r of all.results) expect(everyProviderId.has(r.item_id)).toBe(false);
    expect(all.results.find((r: { title: string }) => r.title === 'Victory')).toMatchObject({ copies: 4, servers: 2 });
    const artists = (await browse('kind=artists').expect(200)).body;
    // One row per artist of the four songs, in name order.
    expect(artists.results.reduce((n: number, a: { songs: number }) => n + a.songs, 0)).toBe(4);
    expect(artists.results.map((a: { artist: string }) => a.artist)).toEqual([...new Set<string>(all.results.map((r: { author: string }) => r.author))].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1)));
    expect(artists.results.find((a: { artist: string }) => a.artist === 'Timothy Pinkham')).toMatchObject({ songs: 1, albums: expect.any(Number) });
    const albums = (await browse('kind=albums&server=Supysonic').expect(200)).body;
    expect(albums.results.reduce((n: number, a: { songs: number }) => n + a.songs, 0)).toBe(3);
    const elf = all.results.find((r: { item_id: string; title: string }) => r.title !== 'Victory' && all.results.filter((x: { title: string }) => x.title === r.title).length === 1);
    const upper = (await browse(`q=${encodeURIComponent(elf.title.toUpperCase())}`).expect(200)).body;
    expect(upper.results.map((r: { item_id: string }) => r.item_id)).toContain(elf.item_id);
    expect((await browse('q=%25').expect(200)).body.total).toBe(0);
    expect((await browse('page=2').expect(200)).body).toMatchObject({ page: 2, total: 4, has_more: false, results: [] });
    const bad = (await browse('kind=unanalyzable').expect(200)).body;
    expect(bad).toMatchObject({ server: null, total: 4 });
    expect(new Set(bad.results.map((r: { server: string }) => r.server))).toEqual(new Set(['Supysonic', 'Second']));
  });

  it('When browse is asked wrongly, then it answers a 400 in the error envelope', async () => {
    for (const q of ['filter=duplicates', 'kind=songs&filter=duplicates', 'server=Nope', 'kind=playlists', 'filter=some', 'page=0', 'page=x']) {
      const res = await browse(q).expect(400);
      expect(res.body).toMatchObject({ error: expect.any(String), code: expect.any(String), request_id: expect.any(String) });
    }
    expect((await browse('filter=duplicates').expect(400)).body.error).toMatch(/needs server/);
    await request(app.url).get('/api/dashboard/browse').expect(401);
  });

  it('When analysis runs again, then the excluded files are not downloaded again (their title, artist and duration did not change)', async () => {
    const before = await app.sql<{ server_id: string; provider_id: string; created_at: Date }>(`SELECT server_id, provider_id, created_at FROM analysis.exclusions ORDER BY 1, 2`);
    expect(before).toHaveLength(4);
    const start = await request(app.url).post('/api/analysis/start').set(bearer).send({}).expect(202);
    expect((await waitForTask(app.url, start.body.task_id, { timeoutMs: 5 * 60_000 })).state).toBe('SUCCESS');
    const tried = await app.sql(`SELECT provider_id FROM analysis.run_tracks WHERE run_id = $1 AND provider_id = ANY($2)`, [start.body.task_id, before.map((b) => b.provider_id)]);
    expect(tried).toEqual([]);
    expect(await app.sql(`SELECT server_id, provider_id, created_at FROM analysis.exclusions ORDER BY 1, 2`)).toEqual(before);
  });

  it('When a server is deleted, then the song held only there is an orphan, browsed with its canonical id', async () => {
    const list = (await request(app.url).get('/api/servers').set(bearer).expect(200)).body.servers as Array<{ id: string; name: string }>;
    expect((await browse('filter=orphan').expect(200)).body.total).toBe(0);
    const second = (await browse('kind=songs&server=Second').expect(200)).body.results as Array<{ item_id: string; title: string }>;
    const onlyThere = second.find((r) => r.item_id === ids.Second![`${ONLY.Second}.ogg`])!;
    const canonical = (await browse('kind=songs').expect(200)).body.results.find((r: { title: string }) => r.title === onlyThere.title);
    await request(app.url).delete(`/api/servers/${list.find((s) => s.name === 'Second')!.id}`).set(bearer).expect((r) => expect([200, 204]).toContain(r.status));
    const orphans = await waitFor('the orphan', async () => {
      const body = (await browse('filter=orphan&server=Supysonic').expect(200)).body;
      return body.total === 1 && body.results.length === 1 ? body : undefined;
    });
    expect(orphans.results).toEqual([{ ...canonical, copies: 0, servers: 0 }]);
    expect((await browse('kind=songs&server=Supysonic').expect(200)).body.total).toBe(3);
  });
});
