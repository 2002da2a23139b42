import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { createMediaServerClient } from '@polyphony/media-servers';
import { signIdentity } from '@polyphony/platform';
import { ArrayCatalogue, createFakePlex, createFakeSubsonic, createTestDatabase, wesnothTracks, type StartedFake, type TestDatabase } from '@polyphony/testkit';
import { buildPlaylist, loadPlaylistConfig, type PlaylistService } from '../src';
import type { ServerInfo } from '../src/domain/ports';
import { FakePeers, type FakeSong } from './fake-peers';

/**
 * Portable playlists and households at the playlist service (supertest on buildPlaylist, real PostgreSQL, a
 * fake registry + catalogue, and the project's protocol-faithful fake Plex and fake Subsonic over four real
 * Wesnoth files). The M3U8 export of a playlist written with a user's own Plex account round-trips through
 * Plex's playlist import (`POST /playlists/upload`: the server reads the file from its own disk and matches
 * entries by file path); "add to queue" uses Subsonic savePlayQueue and Plex playQueues.
 */
describe('portable playlists: M3U8/JSON export and add to queue (fake Plex and Subsonic)', () => {
  const SECRET = 'portable-api-test-internal-secret-0123456789';
  const wes = wesnothTracks();
  const four = [...wes].slice(0, 4);
  const cat = new ArrayCatalogue(wes.libraries, four);
  const plex = createFakePlex({ catalogue: cat, token: 'plex-token' });
  const sub = createFakeSubsonic({ catalogue: cat, user: 'house', password: 'house-pw' });
  const started: StartedFake[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'portable-'));
  let peers: FakePeers;
  let db: TestDatabase;
  let svc: PlaylistService;

  const as = (sub: string, serverId: string, role: 'user' | 'admin' = 'user') =>
    signIdentity({ sub, username: sub, role, via: sub === 'api-token' ? 'bearer' : 'cookie', serverId }, SECRET);
  const item = (i: number) => `item-${i}`;
  /** supertest keeps an `audio/*` answer unread: collect it as UTF-8 text into `body`. */
  const asText = (res: request.Response, cb: (err: Error | null, body: string) => void) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => (text += c));
    res.on('end', () => cb(null, text));
  };

  beforeAll(async () => {
    const plexUrl = (await plex.start().then((s) => (started.push(s), s))).url;
    const subUrl = (await sub.start().then((s) => (started.push(s), s))).url;
    const servers: ServerInfo[] = [
      { id: 'srv-plex', name: 'Plex', type: 'plex', isDefault: true, connection: { type: 'plex', creds: { url: plexUrl, token: 'plex-token' } } },
      { id: 'srv-nav', name: 'Navi', type: 'navidrome', isDefault: false, connection: { type: 'navidrome', creds: { url: subUrl, user: 'house', password: 'house-pw' } } },
    ];
    const songs: FakeSong[] = four.map((t, i) => ({
      itemId: item(i),
      embedding: new Float32Array(200).fill(i + 1),
      embedderVersion: 'dsp-v1',
      title: t.title,
      artist: t.artist,
      tempo: 100,
      key: 'C',
      scale: 'major',
      energy: 0.5,
      mappings: [
        { serverId: 'srv-plex', providerId: plex.idOf(t), filePath: t.path },
        // Song 3 is not on the Subsonic server.
        ...(i < 3 ? [{ serverId: 'srv-nav', providerId: sub.idOf(t) }] : []),
      ],
    }));
    peers = new FakePeers(SECRET, servers, songs);
    // user-1 linked her own accounts (the fakes accept one token / one user: the point is whose connection is used).
    peers.userAccounts.set('user-1:srv-plex', { url: plexUrl, token: 'plex-token' });
    peers.userAccounts.set('user-1:srv-nav', { url: subUrl, user: 'house', password: 'house-pw' });
    const peersUrl = await peers.start();
    db = await createTestDatabase('polyphony_portable_api');
    svc = buildPlaylist(loadPlaylistConfig({ DATABASE_URL: db.url, INTERNAL_SECRET: SECRET, LOG_LEVEL: 'error' }), {
      migrateOnStart: true,
      peers: () => ({ registry: peersUrl, catalogue: peersUrl, analysis: peersUrl, index: peersUrl, playlist: peersUrl }),
      clientFactory: (conn) => createMediaServerClient(conn, { retries: 0, timeoutMs: 10_000 }),
    });
    await svc.start();
  });
  afterAll(async () => {
    await svc?.stop();
    await db?.drop();
    await peers?.close();
    for (const s of started) await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("When a user's playlist on Plex is exported as M3U8 with paths, then Plex's own playlist import of that file gives the same songs in the same order", async () => {
    const created = await request(svc.http).post('/api/create_playlist').set(as('user-1', 'srv-plex')).send({ playlist_name: 'Round trip', track_ids: [item(2), item(0), item(3)] }).expect(201);
    expect(created.body).toMatchObject({ account: 'user', mapped: 3 });
    const res = await request(svc.http).post('/api/playlists/export').set(as('user-1', 'srv-plex')).send({ playlist: 'Round trip', format: 'm3u8', locations: 'path' }).buffer(true).parse(asText).expect(200);
    expect(res.headers['content-type']).toMatch(/^audio\/x-mpegurl; charset=utf-8/);
    const text = res.body as string;
    expect(text.split('\n').filter((l) => l && !l.startsWith('#'))).toEqual([four[2]!.path, four[0]!.path, four[3]!.path]);
    expect(text).toContain(`#EXTINF:-1,${four[2]!.artist} - ${four[2]!.title}`);

    // Plex imports a playlist file from its own disk: write it where "the server" (the fake, this process) reads it.
    const file = join(dir, 'Round trip export.m3u8');
    writeFileSync(file, text);
    const section = plex.sectionKeyOf(four[0]!.library);
    const upload = await fetch(`${started[0]!.url}/playlists/upload?sectionID=${section}&path=${encodeURIComponent(file)}&X-Plex-Token=plex-token`, { method: 'POST' });
    expect(upload.status).toBe(200);
    const imported = plex.playlists().find((p) => p.title === 'Round trip export');
    const written = plex.playlists().find((p) => p.title === 'Round trip_instant');
    expect(imported?.trackIds).toEqual([plex.idOf(four[2]!), plex.idOf(four[0]!), plex.idOf(four[3]!)]);
    expect(imported?.trackIds).toEqual(written?.trackIds);
  });

  it('When a result list is exported from a server without paths, then stream URLs on its address carry no credential; JSON lists the songs not on it', async () => {
    const res = await request(svc.http).post('/api/playlists/export').set(as('user-2', 'srv-nav')).send({ track_ids: [item(0), item(3), 'no-such-song'], format: 'json', name: 'Evening\nhack' }).expect(200);
    expect(res.body).toMatchObject({ name: 'Evening\nhack', server_type: 'navidrome', credentials_embedded: false, unavailable_ids: [item(3), 'no-such-song'] });
    expect(res.body.tracks).toHaveLength(1);
    const url = new URL(res.body.tracks[0].stream_url);
    expect(url.pathname).toBe('/rest/stream');
    expect(url.searchParams.get('id')).toBe(sub.idOf(four[0]!));
    for (const k of ['u', 'p', 't', 's', 'apiKey']) expect(url.searchParams.has(k)).toBe(false);
    expect(JSON.stringify(res.body)).not.toContain('house-pw');
    // M3U8: the name cannot inject a line.
    const m3u = await request(svc.http).post('/api/playlists/export').set(as('user-2', 'srv-nav')).send({ track_ids: [item(0)], name: 'Evening\n#EXTINF:1,x\nfile:///etc/passwd' }).buffer(true).parse(asText).expect(200);
    const lines = (m3u.body as string).split('\n');
    expect(lines).toHaveLength(5);
    expect(lines.slice(0, 3)).toEqual(['#EXTM3U', '#PLAYLIST:Evening #EXTINF:1,x file:///etc/passwd', `#EXTINF:-1,${four[0]!.artist} - ${four[0]!.title}`]);
    expect(lines[3]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/rest\/stream\?id=/);
    // Another user's private playlist is not exportable, nor listed.
    await request(svc.http).post('/api/playlists/export').set(as('user-2', 'srv-plex')).send({ playlist: 'Round trip' }).expect(404);
    // Alchemy's playlist items (internal, with the asking user): the owner's, found; another user's, or nobody's, 404.
    const internal = signIdentity({ sub: 'index', username: 'index', role: 'admin', via: 'internal' }, SECRET);
    const tracksOf = (userId?: string) => request(svc.http).get('/internal/playlists/tracks').query({ serverId: 'srv-plex', playlist: 'Round trip', ...(userId ? { userId } : {}) }).set(internal);
    expect((await tracksOf('user-1').expect(200)).body).toEqual({ name: 'Round trip_instant', itemIds: [item(2), item(0), item(3)] });
    await tracksOf('user-2').expect(404);
    await tracksOf().expect(404);
    const listed = await request(svc.http).get('/api/playlists').set(as('user-2', 'srv-plex')).expect(200);
    expect(Object.keys(listed.body.servers.find((s: { server_id: string }) => s.server_id === 'srv-plex').playlists)).toEqual([]);
  });

  it('When songs are added to the queue, then Subsonic gets savePlayQueue and Plex a new play queue; a user without an own account is refused, an admin uses the server account', async () => {
    const nav = await request(svc.http).post('/api/queue').set(as('user-1', 'srv-nav')).send({ track_ids: [item(1), item(0), item(3)] }).expect(200);
    expect(nav.body).toEqual({ server_id: 'srv-nav', server_type: 'navidrome', method: 'savePlayQueue', account: 'user', queued: 2, unavailable: 1, queue_id: null });
    expect(sub.playQueue).toEqual({ trackIds: [sub.idOf(four[1]!), sub.idOf(four[0]!)], current: sub.idOf(four[1]!) });

    const px = await request(svc.http).post('/api/queue').set(as('user-1', 'srv-plex')).send({ track_ids: [item(3), item(2)] }).expect(200);
    expect(px.body).toMatchObject({ method: 'play_queues', account: 'user', queued: 2, queue_id: expect.any(String) });
    expect(plex.playQueues.get(px.body.queue_id)).toEqual([plex.idOf(four[3]!), plex.idOf(four[2]!)]);

    expect((await request(svc.http).post('/api/queue').set(as('user-2', 'srv-nav')).send({ track_ids: [item(0)] }).expect(400)).body.code).toBe('own_account_required');
    expect((await request(svc.http).post('/api/queue').set(as('api-token', 'srv-nav', 'admin')).send({ track_ids: [item(2)] }).expect(200)).body).toMatchObject({ account: 'server', queued: 1 });
    expect((await request(svc.http).post('/api/queue').set(as('user-1', 'srv-nav')).send({ track_ids: [item(3)] }).expect(400)).body.error).toMatch(/None of the 1 track/);
    await request(svc.http).post('/api/queue').set(as('user-1', 'srv-nav')).send({ track_ids: [] }).expect(400);
  });
});
