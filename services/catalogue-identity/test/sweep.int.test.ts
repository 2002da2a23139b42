/**
 * Sweeps and alignments end to end inside the catalogue service: real PostgreSQL, the in-process bus,
 * fake media servers of every kind over HTTP (testkit), the registry and index faked over HTTP.
 * Matching tiers with ties and ambiguity, the metadata refresh, pruning and its guards, cancel, and the
 * save-during-a-sweep rule.
 */
import { statSync } from 'node:fs';
import { RoutingKeys, ServerCountedEvent, type TaskCancelRequestedEvent } from '@polyphony/contracts';
import { InMemoryBus } from '@polyphony/platform';
import { ArrayCatalogue, wesnothFiles, createTestDatabase, createFakeEmby, createFakeJellyfin, createFakeLyrion, createFakePlex, createFakeSubsonic, type FakeTrack, type StartedFake } from '@polyphony/testkit';
import type { SweepHooks } from '../src';
import { AUDIO_FILE, Board, FakePeers, LIBRARIES, downloadRequests, fakeTrack, mappingsOf, quickClients, requestSweep, resetCatalogue, seedSongs, startBatchCatalogue, stopBatchCatalogue } from './batch-helpers';
import { startCatalogue, type StartedCatalogue } from './helpers';

describe('sweeps and alignment (PostgreSQL, fake media servers)', () => {
  jest.setTimeout(120_000);
  const bus = new InMemoryBus();
  const board = new Board();
  const peers = new FakePeers(board);
  const counted: ServerCountedEvent[] = [];
  const fakes: StartedFake[] = [];
  let c: StartedCatalogue;
  let afterChunk: SweepHooks['afterChunk'];

  beforeAll(async () => {
    await board.attach(bus);
    await bus.consume({ queue: 'test.counted', bindings: [RoutingKeys.serverCounted], schema: ServerCountedEvent, handler: async (e) => void counted.push(e) });
    await peers.start();
    c = await startBatchCatalogue(bus, peers, {}, () => afterChunk);
  });
  afterAll(() => stopBatchCatalogue(c, peers, fakes));
  beforeEach(async () => {
    afterChunk = undefined;
    counted.length = 0;
    peers.servers = [];
    await resetCatalogue(c);
  });

  async function jellyfin(tracks: FakeTrack[], serverId = 'jf', isDefault = false, musicLibraries?: string[]) {
    const fake = createFakeJellyfin({ catalogue: new ArrayCatalogue(LIBRARIES, tracks) });
    const started = await fake.start();
    fakes.push(started);
    const info = { id: serverId, name: `Jellyfin ${serverId}`, type: 'jellyfin' as const, isDefault, connection: { type: 'jellyfin' as const, creds: { url: started.url, user_id: fake.userId, token: fake.token }, musicLibraries } };
    return { fake, started, info };
  }

  async function sweep(serverId?: string, over: { fullRefresh?: boolean } = {}) {
    const taskId = await requestSweep(bus, { serverId, ...over });
    return board.waitFor(taskId);
  }

  it('When a server is swept, then each tier maps its songs in order, ties break on (disc, track), and ambiguous or unmatched songs stay unmapped', async () => {
    await seedSongs(c, [
      { id: 'path-1', title: 'Path Song', originPath: '/mnt/music/music/Band/Album/Path Song.flac' },
      { id: 'tail-1', title: 'Tail Song', originPath: '/home/alice/Collection/Band/Album/Tail Song.flac' },
      { id: 'exact-1', title: 'Exact Song' },
      { id: 'norm-1', title: 'Norm Song', artist: 'The Band' },
      { id: 'none-1', title: 'Nothing Like It' },
      { id: 'twin-1', title: 'Twin' },
      { id: 'intro-2', title: 'Intro', album: 'Double', originPath: '/old/lib/Double/2-01 Intro.mp3' },
      { id: 'dup-a', title: 'Dup' },
      { id: 'dup-b', title: 'Dup' },
      { id: 'echo-3', title: 'Echo', album: 'Echoes', originPath: '/old/x/1-03 Echo.mp3' },
      { id: 'echo-4', title: 'Echo', album: 'Echoes', originPath: '/old/x/1-04 Echo.mp3' },
    ]);
    const tracks = [
      fakeTrack('b-path', { title: 'Path Song Renamed', path: '/srv/music/music/Band/Album/Path Song.flac' }),
      fakeTrack('b-tail', { title: 'Tail Song Renamed', path: '/srv/music/music/Band/Album/Tail Song.flac' }),
      fakeTrack('b-exact', { title: 'Exact Song', path: '/srv/music/music/Band/Album/x-exact.flac' }),
      fakeTrack('b-norm', { title: 'Norm Song (Remastered 2011)', path: '/srv/music/music/Band/Album/x-norm.flac' }),
      fakeTrack('b-twin-a', { title: 'Twin', path: '/srv/music/music/Band/Album/Twin A.flac' }),
      fakeTrack('b-twin-b', { title: 'Twin', path: '/srv/music/music/Band/Album/Twin B.flac' }),
      fakeTrack('b-intro-1', { title: 'Intro', album: 'Double', path: '/srv/music/music/Band/Double/1-01 Intro.flac' }),
      fakeTrack('b-intro-2', { title: 'Intro', album: 'Double', path: '/srv/music/music/Band/Double/2-01 Intro.flac' }),
      fakeTrack('b-dup', { title: 'Dup', path: '/srv/music/music/Band/Album/x-dup.flac' }),
      fakeTrack('b-echo', { title: 'Echo', album: 'Echoes', path: '/srv/music/music/Band/Echoes/1-04 Echo.flac' }),
      fakeTrack('b-only', { title: 'Only On B', path: '/srv/music/music/Band/Album/Only On B.flac' }),
    ];
    const { fake, info } = await jellyfin(tracks);
    peers.servers = [info];
    const done = await sweep('jf');
    expect(done).toMatchObject({ state: 'SUCCESS', type: 'sweep', owner: 'catalogue', progress: 100 });
    const got = await mappingsOf(c, 'jf');
    const byProvider = (id: string) => got.get(fake.idOf(id));
    expect(byProvider('b-path')).toMatchObject({ itemId: 'path-1', tier: 'path' });
    expect(byProvider('b-tail')).toMatchObject({ itemId: 'tail-1', tier: 'tail' });
    expect(byProvider('b-exact')).toMatchObject({ itemId: 'exact-1', tier: 'exact_meta' });
    expect(byProvider('b-norm')).toMatchObject({ itemId: 'norm-1', tier: 'norm_meta' });
    expect(byProvider('b-intro-2')).toMatchObject({ itemId: 'intro-2', tier: 'exact_meta' });
    expect(byProvider('b-echo')).toMatchObject({ itemId: 'echo-4', tier: 'exact_meta' });
    // Never guessed: two remote Twins, two local Dups, the unmatched song, the remote-only track.
    for (const id of ['b-twin-a', 'b-twin-b', 'b-intro-1', 'b-dup', 'b-only']) expect(byProvider(id)).toBeUndefined();
    expect(got.size).toBe(6);
    expect([...got.values()].map((m) => m.itemId)).not.toEqual(expect.arrayContaining(['none-1']));
    // Mapping rows carry the server's own path; nothing was downloaded.
    expect(byProvider('b-exact')?.filePath).toBe('/srv/music/music/Band/Album/x-exact.flac');
    expect(downloadRequests(fake.requests)).toEqual([]);
    const details = done.details as { per_server: Array<Record<string, unknown>> };
    expect(details.per_server[0]).toMatchObject({ fetched: 11, matched: 6, byTier: { path: 1, tail: 1, exact_meta: 3, norm_meta: 1 } });
    expect(counted).toContainEqual({ serverId: 'jf', trackCount: 11, matchedCount: 6 });
  });

  it('When a server is swept, then each mapping records the library its file was listed in, a refresh fills rows without one, and the per-library availability answers by library (issue 34)', async () => {
    await seedSongs(c, [
      { id: 'lib-a', title: 'In Music' },
      { id: 'lib-b', title: 'In Extras' },
      { id: 'lib-c', title: 'Also In Music' },
    ]);
    const { fake, info } = await jellyfin([
      fakeTrack('m-a', { title: 'In Music' }),
      fakeTrack('x-b', { title: 'In Extras', library: 'lib-extras' }),
      fakeTrack('m-c', { title: 'Also In Music' }),
    ]);
    peers.servers = [info];
    expect(await sweep('jf')).toMatchObject({ state: 'SUCCESS' });
    const libraryOf = async () => new Map((await c.sql<{ provider_id: string; library_id: string | null }>(`SELECT provider_id, library_id FROM catalogue.track_server_map WHERE server_id = 'jf'`)).map((r) => [r.provider_id, r.library_id]));
    const music = fake.viewIdOf('lib-music');
    const extras = fake.viewIdOf('lib-extras');
    expect(await libraryOf()).toEqual(new Map([[fake.idOf('m-a'), music], [fake.idOf('x-b'), extras], [fake.idOf('m-c'), music]]));
    // Rows written before the column existed have none: the next sweep's refresh records it (never a guess before).
    await c.sql(`UPDATE catalogue.track_server_map SET library_id = NULL, updated_at = now() - interval '1 hour' WHERE server_id = 'jf'`);
    const before = (await c.post('/internal/availability/jf/libraries', { libraryIds: [music] }).expect(200)).body;
    expect(before).toEqual({ serverId: 'jf', itemIds: [], unknownLibrary: 3 });
    expect(await sweep('jf')).toMatchObject({ state: 'SUCCESS' });
    expect((await libraryOf()).get(fake.idOf('x-b'))).toBe(extras);
    expect((await c.post('/internal/availability/jf/libraries', { libraryIds: [music] }).expect(200)).body).toEqual({ serverId: 'jf', itemIds: ['lib-a', 'lib-c'], unknownLibrary: 0 });
    expect((await c.post('/internal/availability/jf/libraries', { libraryIds: [music, extras, 'gone'] }).expect(200)).body.itemIds).toEqual(['lib-a', 'lib-b', 'lib-c']);
    await c.post('/internal/availability/jf/libraries', { libraryIds: [''] }).expect(400);
  });

  it('When a Subsonic server is swept, then each mapping records the file stamp the listing gives; a refresh fills a missing one and keeps a different one (issue 35: left for the re-analysis of a changed file)', async () => {
    await seedSongs(c, [{ id: 'st-a', title: 'Stamped A' }, { id: 'st-b', title: 'Stamped B' }]);
    const subsonic = createFakeSubsonic({ catalogue: new ArrayCatalogue(LIBRARIES, [fakeTrack('sa', { title: 'Stamped A' }), fakeTrack('sb', { title: 'Stamped B' })]) });
    const s = await subsonic.start();
    fakes.push(s);
    peers.servers = [{ id: 'navi', name: 'Navidrome', type: 'navidrome', isDefault: false, connection: { type: 'navidrome', creds: { url: s.url, user: subsonic.user, password: subsonic.password } } }];
    expect(await sweep('navi')).toMatchObject({ state: 'SUCCESS' });
    const stamps = async () => new Map((await c.sql<{ item_id: string; file_stamp: string | null }>(`SELECT item_id, file_stamp FROM catalogue.track_server_map WHERE server_id = 'navi'`)).map((r) => [r.item_id, r.file_stamp]));
    const first = await stamps();
    expect([...first.keys()].sort()).toEqual(['st-a', 'st-b']);
    for (const v of first.values()) expect(v).toMatch(/^size:[1-9]\d*$/);
    await c.sql(`UPDATE catalogue.track_server_map SET file_stamp = CASE item_id WHEN 'st-a' THEN NULL ELSE 'size:1' END, updated_at = now() - interval '1 hour' WHERE server_id = 'navi'`);
    expect(await sweep('navi')).toMatchObject({ state: 'SUCCESS' });
    expect(await stamps()).toEqual(new Map([['st-a', first.get('st-a')!], ['st-b', 'size:1']]));
  });

  it('When the removal check lists a server whose file was replaced in place (issue 35), then it names that file changed, fills missing stamps and changes no mapping', async () => {
    await seedSongs(c, [{ id: 'ch-a', title: 'Changed A' }, { id: 'ch-b', title: 'Changed B' }, { id: 'ch-c', title: 'Changed C' }]);
    const catalogue = new ArrayCatalogue(LIBRARIES, [fakeTrack('ca', { title: 'Changed A' }), fakeTrack('cb', { title: 'Changed B' }), fakeTrack('cc', { title: 'Changed C' })]);
    const { fake, info } = await jellyfin([...catalogue]);
    peers.servers = [info];
    expect(await sweep('jf')).toMatchObject({ state: 'SUCCESS' });
    const stamps = async () => new Map((await c.sql<{ item_id: string; file_stamp: string | null }>(`SELECT item_id, file_stamp FROM catalogue.track_server_map WHERE server_id = 'jf'`)).map((r) => [r.item_id, r.file_stamp]));
    const before = await stamps();
    expect(before).toEqual(new Map(['ch-a', 'ch-b', 'ch-c'].map((id) => [id, `size:${statSync(AUDIO_FILE).size}`])));
    const other = wesnothFiles().find((f) => statSync(f).size !== statSync(AUDIO_FILE).size)!;
    fake.catalogue.update('cb', { audioFile: other });
    await c.sql(`UPDATE catalogue.track_server_map SET file_stamp = NULL WHERE server_id = 'jf' AND item_id = 'ch-c'`);
    const mapsBefore = await mappingsOf(c, 'jf');
    const res = (await c.post('/internal/removals/jf', {}).expect(200)).body;
    expect(res).toMatchObject({ fetched: 3, pruned: 0, refused: false, unmappedTotal: 0, changedTotal: 1, stampsFilled: 1 });
    expect(res.changed).toEqual([expect.objectContaining({ id: fake.idOf('cb'), title: 'Changed B', fileStamp: `size:${statSync(other).size}` })]);
    // The changed file keeps its stored stamp (its re-analysis writes the new one); the missing one was filled.
    expect(await stamps()).toEqual(new Map([['ch-a', before.get('ch-a')!], ['ch-b', before.get('ch-b')!], ['ch-c', before.get('ch-c')!]]));
    expect(await mappingsOf(c, 'jf')).toEqual(mapsBefore);
    // A second check names it again (nothing was re-analysed) and fills nothing more.
    expect((await c.post('/internal/removals/jf', {}).expect(200)).body).toMatchObject({ changedTotal: 1, stampsFilled: 0 });
  });

  it('When one alignment covers servers of every kind, then each is mapped from its own listing, default first, without any download', async () => {
    const songs = ['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo One', 'Foxtrot'];
    await seedSongs(c, songs.map((title, i) => ({ id: `s-${i}`, title, originPath: `/mnt/music/music/Band/Album/${title}.flac` })));
    const catalogue = new ArrayCatalogue(LIBRARIES, songs.map((title, i) => fakeTrack(`t-${i}`, { title, trackNumber: i + 1, discNumber: 1 })));
    const emby = createFakeEmby({ catalogue });
    const subsonic = createFakeSubsonic({ catalogue });
    const lyrion = createFakeLyrion({ catalogue });
    const plex = createFakePlex({ catalogue });
    const [e, s, l, p] = await Promise.all([emby.start(), subsonic.start(), lyrion.start(), plex.start()]);
    fakes.push(e, s, l, p);
    peers.servers = [
      { id: 'emby', name: 'Emby', type: 'emby', isDefault: false, connection: { type: 'emby', creds: { url: e.url, user_id: emby.userId, token: emby.token } } },
      { id: 'navi', name: 'Navidrome', type: 'navidrome', isDefault: false, connection: { type: 'navidrome', creds: { url: s.url, user: subsonic.user, password: subsonic.password } } },
      { id: 'lms', name: 'Lyrion', type: 'lyrion', isDefault: false, connection: { type: 'lyrion', creds: { url: l.url } } },
      { id: 'plex', name: 'Plex', type: 'plex', isDefault: true, connection: { type: 'plex', creds: { url: p.url, token: plex.token } } },
    ];
    const done = await sweep(undefined);
    expect(done).toMatchObject({ state: 'SUCCESS', type: 'alignment' });
    const servers = (done.details as { per_server: Array<{ serverId: string; matched: number; byTier: Record<string, number> }> }).per_server;
    expect(servers.map((x) => x.serverId)).toEqual(['plex', 'emby', 'navi', 'lms']);
    for (const id of ['emby', 'navi', 'lms', 'plex']) {
      const got = await mappingsOf(c, id);
      expect([id, [...got.values()].map((m) => m.itemId).sort()]).toEqual([id, songs.map((_, i) => `s-${i}`)]);
    }
    // Absolute paths match on the path tier; Navidrome's default (relative, renamed) paths fall back to metadata.
    expect(servers.find((x) => x.serverId === 'emby')?.byTier.path).toBe(6);
    expect(servers.find((x) => x.serverId === 'navi')?.byTier.exact_meta).toBe(6);
    for (const f of [emby, subsonic, lyrion, plex]) expect(downloadRequests(f.requests)).toEqual([]);
    for (const id of ['emby', 'navi', 'lms', 'plex']) expect(counted).toContainEqual({ serverId: id, trackCount: 6, matchedCount: 6 });
  });

  it('When the library moved to another mount prefix, then the songs still match on the path tier', async () => {
    await seedSongs(c, [
      { id: 'm-1', title: 'Local Title 1', filePath: 'file:///mnt/media/music/Artist/Record/01%20First.flac' },
      { id: 'm-2', title: 'Local Title 2', originPath: 'D:\\Music\\Artist\\Record\\02 Second.flac' },
    ]);
    const { fake, info } = await jellyfin([
      fakeTrack('x1', { title: 'Server Title 1', path: '/volume1/music/Artist/Record/01 First.flac' }),
      fakeTrack('x2', { title: 'Server Title 2', path: '/data/music/Artist/Record/02 Second.flac' }),
    ]);
    peers.servers = [info];
    expect((await sweep('jf')).state).toBe('SUCCESS');
    const got = await mappingsOf(c, 'jf');
    expect(got.get(fake.idOf('x1'))).toMatchObject({ itemId: 'm-1', tier: 'path' });
    expect(got.get(fake.idOf('x2'))).toMatchObject({ itemId: 'm-2', tier: 'path' });
  });

  it('When songs already have copies on two servers, then a third server holding the same files under other paths maps every one of them (one song with many mappings is one candidate per key)', async () => {
    const titles = Array.from({ length: 8 }, (_, i) => `Three Way ${i}`);
    await seedSongs(c, titles.map((title, i) => ({ id: `tw-${i}`, title, album: 'Wesnoth', originPath: `/usr/share/games/wesnoth/1.16/data/core/music/${title}.ogg` })));
    // Server B already holds copies of half of them (transcodes, another layout and file name).
    await c.sql(
      `INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id, file_path, match_tier) SELECT 'b', 'b-' || id, id, p, 'analysis' FROM unnest($1::text[], $2::text[]) AS t(id, p)`,
      [titles.slice(0, 4).map((_, i) => `tw-${i}`), titles.slice(0, 4).map((t) => `/transcoded/wesnoth/core/${t}.mp3`)],
    );
    // Server C: the same files as A under other paths (neither the full path nor the last three components agree).
    const { fake, info } = await jellyfin(titles.map((title, i) => fakeTrack(`c-${i}`, { title, album: 'Wesnoth', path: `/srv/other/${title}.ogg` })), 'c');
    peers.servers = [info];
    expect((await sweep('c')).state).toBe('SUCCESS');
    const got = await mappingsOf(c, 'c');
    for (let i = 0; i < titles.length; i++) expect([i, got.get(fake.idOf(`c-${i}`))?.itemId]).toEqual([i, `tw-${i}`]);
    expect(got.size).toBe(titles.length);
    // Copies of one song on several servers never make it ambiguous; two different songs sharing a key do.
    await resetCatalogue(c);
    await seedSongs(c, [
      { id: 'same-1', title: 'Shared Key', album: 'Wesnoth', originPath: '/a/x/y/one.ogg' },
      { id: 'same-2', title: 'Shared Key', album: 'Wesnoth', originPath: '/a/x/y/two.ogg' },
    ]);
    const amb = await jellyfin([fakeTrack('c-amb', { title: 'Shared Key', album: 'Wesnoth', path: '/srv/other/three.ogg' })], 'c2');
    peers.servers = [amb.info];
    expect((await sweep('c2')).state).toBe('SUCCESS');
    expect((await mappingsOf(c, 'c2')).size).toBe(0);
  });

  it('When 20 of 41 songs of server A already have a copy on server B, then a Subsonic server C holding A\'s files under other paths maps all 41 (tail tier and metadata tier alike)', async () => {
    // Issue 12 breakage 6 as reported: A holds 41 songs; B holds copies of 20 of them (another layout,
    // transcoded); C holds A's files under another mount: 21 keep A's last three path components (tail
    // tier), 20 were renamed (metadata tier). Each tier has 10 songs with a copy on B.
    const n = 41;
    const title = (i: number) => `Crossroads ${String(i).padStart(2, '0')}`;
    const aPath = (i: number) => `/data/a-library/Wesnoth/Core Music/${String(i).padStart(2, '0')} ${title(i)}.ogg`;
    const tailTier = (i: number) => i < 21;
    const onB = (i: number) => i % 21 < 10; // 0-9 (tail tier) and 21-30 (metadata tier): 20 songs
    await seedSongs(c, Array.from({ length: n }, (_, i) => ({ id: `x-${i}`, title: title(i), artist: 'Wesnoth Team', album: 'Core Music', originPath: aPath(i) })));
    const copies = Array.from({ length: n }, (_, i) => i).filter(onB);
    expect(copies).toHaveLength(20);
    await c.sql(
      `INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id, file_path, match_tier) SELECT 'b', 'b-' || id, id, p, 'analysis' FROM unnest($1::text[], $2::text[]) AS t(id, p)`,
      [copies.map((i) => `x-${i}`), copies.map((i) => `/volume1/transcodes/wesnoth-team/core-music/${title(i)}.mp3`)],
    );
    const tracks = Array.from({ length: n }, (_, i) =>
      fakeTrack(`c-${i}`, {
        title: title(i),
        artist: 'Wesnoth Team',
        album: 'Core Music',
        path: tailTier(i) ? `/srv/mirror-of-a/Wesnoth/Core Music/${String(i).padStart(2, '0')} ${title(i)}.ogg` : `/srv/renamed/track-${i}.ogg`,
      }),
    );
    const subsonic = createFakeSubsonic({ catalogue: new ArrayCatalogue(LIBRARIES, tracks), reportRealPath: true });
    const started = await subsonic.start();
    fakes.push(started);
    peers.servers = [{ id: 'c3', name: 'Server C', type: 'navidrome', isDefault: false, connection: { type: 'navidrome', creds: { url: started.url, user: subsonic.user, password: subsonic.password } } }];
    const done = await sweep('c3');
    expect(done.state).toBe('SUCCESS');
    const got = await mappingsOf(c, 'c3');
    const wrong = tracks.map((t, i) => [i, got.get(subsonic.idOf(t))?.itemId]).filter(([i, item]) => item !== `x-${i as number}`);
    expect(wrong).toEqual([]);
    expect(got.size).toBe(n);
    const tiers = new Map<string, number>();
    for (const m of got.values()) tiers.set(m.tier, (tiers.get(m.tier) ?? 0) + 1);
    expect(Object.fromEntries(tiers)).toEqual({ tail: 21, exact_meta: 20 });
    // Songs with a copy on B were matched in both tiers.
    expect(copies.filter((i) => got.get(subsonic.idOf(`c-${i}`))?.tier === 'tail')).toHaveLength(10);
    expect(copies.filter((i) => got.get(subsonic.idOf(`c-${i}`))?.tier === 'exact_meta')).toHaveLength(10);
    expect(counted).toContainEqual({ serverId: 'c3', trackCount: n, matchedCount: n });
  });

  it('When 20 of 41 songs of the default server A have tagless copies on B, then an alignment refreshes their metadata from A only, and C holding A\'s tagged files under another folder maps all 41', async () => {
    // Issue 30 as reported with three supysonic servers: A (default) holds 41 tagged songs at music/<name>.ogg;
    // B holds tagless MP3 transcodes of 20 of them (supysonic names them from the file: album
    // "[non-album tracks]", artist "[unknown]") and its analysis merged them into A's songs; C holds A's files,
    // tags intact, under music/library/wesnoth/<name>.ogg. The alignment C's save enqueues sweeps A, B, C in
    // turn: B's refresh used to write its album over the 20 shared songs, so their (title, artist, album) key
    // matched none of C's files and C's sweep mapped only 21.
    const n = 41;
    const stem = (i: number) => `theme-${String(i).padStart(2, '0')}`;
    const title = (i: number) => `Wesnoth Theme ${i}`;
    const tagged = (id: string, i: number, path: string) => fakeTrack(id, { title: title(i), artist: 'Doug Kaufman', albumArtist: 'Doug Kaufman', album: 'The Battle for Wesnoth OST', path });
    const aTracks = Array.from({ length: n }, (_, i) => tagged(`a-${i}`, i, `music/${stem(i)}.ogg`));
    const bTracks = Array.from({ length: 20 }, (_, i) => fakeTrack(`b-${i}`, { title: `${stem(i)}.mp3`, artist: '[unknown]', albumArtist: '[unknown]', album: '[non-album tracks]', path: `music/${stem(i)}.mp3` }));
    const bOwn = Array.from({ length: 3 }, (_, i) => fakeTrack(`own-${i}`, { title: `own-${i}.ogg`, artist: '[unknown]', albumArtist: '[unknown]', album: '[non-album tracks]', path: `music/own-${i}.ogg` }));
    const cTracks = Array.from({ length: n }, (_, i) => tagged(`c-${i}`, i, `music/library/wesnoth/${stem(i)}.ogg`));
    const subsonics = [aTracks, [...bTracks, ...bOwn], cTracks].map((tracks) => createFakeSubsonic({ catalogue: new ArrayCatalogue(LIBRARIES, tracks), reportRealPath: true }));
    const [sa, sb, sc] = await Promise.all(subsonics.map((f) => f.start()));
    fakes.push(sa!, sb!, sc!);
    const [fa, fb, fc] = subsonics as [ReturnType<typeof createFakeSubsonic>, ReturnType<typeof createFakeSubsonic>, ReturnType<typeof createFakeSubsonic>];
    // The state after A's and B's analyses: A's songs (source A), B's 20 copies mapped to them, B's 3 own songs.
    await c.sql(
      `INSERT INTO catalogue.score (item_id, title, artist, album, album_artist, file_path, duration_seconds, embedder_version, source_server_id)
       SELECT id, t, 'Doug Kaufman', 'The Battle for Wesnoth OST', 'Doug Kaufman', p, 200, 'test-v1', 'a' FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, t, p)`,
      [aTracks.map((_, i) => `w-${i}`), aTracks.map((_, i) => title(i)), aTracks.map((t) => t.path)],
    );
    await c.sql(
      `INSERT INTO catalogue.score (item_id, title, artist, album, album_artist, file_path, duration_seconds, embedder_version, source_server_id)
       SELECT id, t, '[unknown]', '[non-album tracks]', '[unknown]', p, 200, 'test-v1', 'b' FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, t, p)`,
      [bOwn.map((_, i) => `own-${i}`), bOwn.map((t) => t.title), bOwn.map((t) => t.path)],
    );
    const map = async (server: string, rows: Array<[string, string, string]>) =>
      c.sql(
        `INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id, file_path, match_tier) SELECT $1, pid, id, p, 'analysis' FROM unnest($2::text[], $3::text[], $4::text[]) AS u(pid, id, p)`,
        [server, rows.map((r) => r[0]), rows.map((r) => r[1]), rows.map((r) => r[2])],
      );
    await map('a', aTracks.map((t, i) => [fa.idOf(t), `w-${i}`, t.path]));
    await map('b', [...bTracks.map((t, i): [string, string, string] => [fb.idOf(t), `w-${i}`, t.path]), ...bOwn.map((t, i): [string, string, string] => [fb.idOf(t), `own-${i}`, t.path])]);
    const subsonicInfo = (id: string, name: string, started: StartedFake, fake: ReturnType<typeof createFakeSubsonic>, isDefault: boolean) => ({
      id,
      name,
      type: 'navidrome' as const,
      isDefault,
      connection: { type: 'navidrome' as const, creds: { url: started.url, user: fake.user, password: fake.password } },
    });
    peers.servers = [subsonicInfo('a', 'A', sa!, fa, true), subsonicInfo('b', 'B', sb!, fb, false), subsonicInfo('c', 'C', sc!, fc, false)];
    const done = await sweep(undefined);
    expect(done).toMatchObject({ state: 'SUCCESS', type: 'alignment' });
    const reports = (done.details as { per_server: Array<Record<string, unknown>> }).per_server;
    expect(reports.map((r) => r.serverId)).toEqual(['a', 'b', 'c']);
    expect(reports[2]).toMatchObject({ fetched: n, matched: n, ambiguous: 0 });
    const got = await mappingsOf(c, 'c');
    const wrong = cTracks.map((t, i) => [i, got.get(fc.idOf(t))?.itemId]).filter(([i, item]) => item !== `w-${i as number}`);
    expect(wrong).toEqual([]);
    // The shared songs keep the default server's metadata; B's own songs take B's (their source server).
    const albums = await c.sql<{ album: string; n: number }>(`SELECT album, count(*)::int AS n FROM catalogue.score GROUP BY album ORDER BY n`);
    expect(albums).toEqual([
      { album: '[non-album tracks]', n: 3 },
      { album: 'The Battle for Wesnoth OST', n: n },
    ]);
    // A sweep of B alone (no default in its task) still leaves the songs A holds alone.
    expect((await sweep('b')).state).toBe('SUCCESS');
    expect((await c.sql<{ n: number }>(`SELECT count(*)::int AS n FROM catalogue.score WHERE album = '[non-album tracks]'`))[0]!.n).toBe(3);
  });

  it('When songs are mapped on a server, then album, album artist, year, rating and durations are refreshed from it, the file path only from the default server, and its artist links are upserted', async () => {
    await seedSongs(c, [
      { id: 'r-1', title: 'Refresh One', album: 'Album', filePath: '/old/path/one.flac', durationSeconds: null },
      { id: 'r-2', title: 'Refresh Two', album: 'Album', filePath: '/old/path/two.flac', durationSeconds: 150 },
    ]);
    const tracks = [
      fakeTrack('f1', { title: 'Refresh One', albumArtist: 'Various', year: 1999, rating: 5, durationSeconds: 123.5 }),
      fakeTrack('f2', { title: 'Refresh Two', albumArtist: 'Various', year: 1999, rating: 3, durationSeconds: 150.5 }),
    ];
    const other = await jellyfin(tracks, 'other', false);
    peers.servers = [other.info];
    expect((await sweep('other')).state).toBe('SUCCESS');
    let rows = await c.sql<{ item_id: string; album_artist: string; year: number; rating: number; file_path: string; duration_seconds: number | null }>(
      `SELECT item_id, album_artist, year, rating, file_path, duration_seconds FROM catalogue.score ORDER BY item_id`,
    );
    expect(rows).toEqual([
      { item_id: 'r-1', album_artist: 'Various', year: 1999, rating: 5, file_path: '/old/path/one.flac', duration_seconds: 123.5 },
      { item_id: 'r-2', album_artist: 'Various', year: 1999, rating: 3, file_path: '/old/path/two.flac', duration_seconds: 150 },
    ]);
    const artists = await c.sql<{ artist_name: string }>(`SELECT artist_name FROM catalogue.artist_server_map WHERE server_id = 'other'`);
    expect(artists.map((a) => a.artist_name)).toContain('Band');

    const def = await jellyfin(tracks.map((t) => ({ ...t, rating: 1 })), 'default', true);
    peers.servers = [other.info, def.info];
    expect((await sweep('default')).state).toBe('SUCCESS');
    rows = await c.sql(`SELECT item_id, album_artist, year, rating, file_path, duration_seconds FROM catalogue.score ORDER BY item_id`);
    expect(rows.map((r) => [r.item_id, r.rating, r.file_path])).toEqual([
      ['r-1', 1, tracks[0]!.path],
      ['r-2', 1, tracks[1]!.path],
    ]);
  });

  describe('pruning', () => {
    const ten = () => Array.from({ length: 10 }, (_, i) => fakeTrack(`p${i}`, { title: `Prune ${i}`, library: i < 6 ? 'lib-music' : 'lib-extras' }));

    async function mappedTen() {
      await seedSongs(c, Array.from({ length: 10 }, (_, i) => ({ id: `ps-${i}`, title: `Prune ${i}` })));
      const jf = await jellyfin(ten());
      peers.servers = [jf.info];
      expect((await sweep('jf')).state).toBe('SUCCESS');
      expect((await mappingsOf(c, 'jf')).size).toBe(10);
      return jf;
    }

    it('When the fetch fails part-way, then the server is reported, nothing is pruned and nothing changes', async () => {
      const jf = await mappedTen();
      jf.fake.failAfterPages(0);
      const done = await sweep('jf');
      jf.fake.failAfterPages(null);
      expect(done.state).toBe('FAIL');
      const s = (done.details as { per_server: Array<Record<string, unknown>> }).per_server[0]!;
      expect(s).toMatchObject({ status: 'failed', pruned: 0 });
      expect(String(s.error)).toMatch(/500|fail/i);
      expect((await mappingsOf(c, 'jf')).size).toBe(10);
    });

    it('When a library is filtered out, then its mappings are pruned only when the fetch holds at least half the stored mappings', async () => {
      const jf = await mappedTen();
      // Only "Extras" (4 of 10 stored): looks partial -> refused.
      peers.servers = [{ ...jf.info, connection: { ...jf.info.connection, musicLibraries: [jf.fake.viewIdOf('lib-extras')] } }];
      let done = await sweep('jf');
      expect((done.details as { per_server: Array<Record<string, unknown>> }).per_server[0]).toMatchObject({ fetched: 4, pruned: 0, pruneSkipped: 'partial_fetch' });
      expect((await mappingsOf(c, 'jf')).size).toBe(10);
      // Only "Music" (6 of 10): complete enough -> the 4 Extras rows go, the songs stay.
      peers.servers = [{ ...jf.info, connection: { ...jf.info.connection, musicLibraries: [jf.fake.viewIdOf('lib-music')] } }];
      done = await sweep('jf');
      expect((done.details as { per_server: Array<Record<string, unknown>> }).per_server[0]).toMatchObject({ fetched: 6, pruned: 4 });
      const left = await mappingsOf(c, 'jf');
      expect([...left.values()].map((m) => m.itemId).sort()).toEqual(['ps-0', 'ps-1', 'ps-2', 'ps-3', 'ps-4', 'ps-5']);
      expect((await c.sql(`SELECT 1 FROM catalogue.score`)).length).toBe(10);
      expect(counted).toContainEqual({ serverId: 'jf', trackCount: 6, matchedCount: 6 });
    });

    it('When tracks are gone from the server, then a full refresh prunes them and a sweep without full refresh does not', async () => {
      const jf = await mappedTen();
      const smaller = await jellyfin(ten().slice(0, 7), 'jf');
      peers.servers = [smaller.info];
      let done = await sweep('jf', { fullRefresh: false });
      expect((done.details as { per_server: Array<Record<string, unknown>> }).per_server[0]).toMatchObject({ pruned: 0, pruneSkipped: 'not_full_refresh' });
      expect((await mappingsOf(c, 'jf')).size).toBe(10);
      done = await sweep('jf');
      expect((done.details as { per_server: Array<Record<string, unknown>> }).per_server[0]).toMatchObject({ pruned: 3 });
      expect([...(await mappingsOf(c, 'jf')).keys()].sort()).toEqual(ten().slice(0, 7).map((t) => jf.fake.idOf(t.id)).sort());
    });
  });

  describe('cancel and save', () => {
    async function tenMatching() {
      await seedSongs(c, Array.from({ length: 10 }, (_, i) => ({ id: `cs-${i}`, title: `Cancel ${i}` })));
      const jf = await jellyfin(Array.from({ length: 10 }, (_, i) => fakeTrack(`c${i}`, { title: `Cancel ${i}` })));
      peers.servers = [jf.info];
      return jf;
    }
    const waitForFlag = async (taskId: string) => {
      for (let i = 0; i < 500; i++) {
        const r = await c.sql<{ cancel_requested: boolean }>(`SELECT cancel_requested FROM catalogue.batch_task WHERE id = $1`, [taskId]);
        if (r[0]?.cancel_requested) return;
        await new Promise((res) => setTimeout(res, 10));
      }
      throw new Error('cancel flag never set');
    };

    it('When a sweep is cancelled mid-way, then it ends REVOKED and keeps the matches written so far', async () => {
      await tenMatching();
      let taskId = '';
      afterChunk = async (info) => {
        if (info.chunk !== 2) return;
        await bus.publish(RoutingKeys.taskCancelRequested, { taskId, type: 'sweep' } satisfies TaskCancelRequestedEvent);
        await waitForFlag(taskId);
      };
      taskId = await requestSweep(bus, { serverId: 'jf' });
      const done = await board.waitFor(taskId);
      expect(done.state).toBe('REVOKED');
      expect(done.message).toMatch(/kept/);
      expect((await mappingsOf(c, 'jf')).size).toBe(6);
      afterChunk = undefined;
      const again = await sweep('jf');
      expect((again.details as { per_server: Array<Record<string, unknown>> }).per_server[0]).toMatchObject({ matched: 4, storedMappings: 6 });
      expect((await mappingsOf(c, 'jf')).size).toBe(10);
    });

    it('When a sweep hits a transient fault (database connection refused) mid-way, then it is not failed: it is handed back, resumed after a backoff and ends SUCCESS with every match', async () => {
      await tenMatching();
      let thrown = 0;
      afterChunk = async (info) => {
        if (info.chunk !== 2 || thrown > 0) return;
        thrown++;
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      };
      const taskId = await requestSweep(bus, { serverId: 'jf' });
      const done = await board.waitFor(taskId);
      expect(thrown).toBe(1);
      expect(done.state).toBe('SUCCESS');
      expect(board.history.filter((e) => e.taskId === taskId).map((e) => e.state)).not.toContain('FAIL');
      expect(board.history.some((e) => e.taskId === taskId && /again/i.test(e.message ?? ''))).toBe(true);
      expect((await mappingsOf(c, 'jf')).size).toBe(10);
    });

    it('When a server is saved during a sweep, then the running sweep is cancelled keeping its matches, queued ones are revoked, and one alignment runs', async () => {
      await tenMatching();
      let first = '';
      let queued = '';
      let save = '';
      afterChunk = async (info) => {
        if (info.taskId !== first || info.chunk !== 1) return;
        queued = await requestSweep(bus, { serverId: 'jf' });
        await board.waitFor(queued, ['NEW']);
        save = await requestSweep(bus, { cancelRunning: true });
        await waitForFlag(first);
      };
      first = await requestSweep(bus, { serverId: 'jf' });
      // The save ends the running sweep at once (REVOKED); its runner then records the matches it kept.
      const cancelled = await board.waitFor(first, ['SUCCESS', 'FAIL', 'REVOKED'], 30_000, (t) => t.state !== 'REVOKED' || 'matched' in t.details);
      expect(cancelled.state).toBe('REVOKED');
      expect((cancelled.details as { matched: number }).matched).toBe(3);
      expect((await board.waitFor(queued)).state).toBe('REVOKED');
      const aligned = await board.waitFor(save);
      expect(aligned).toMatchObject({ state: 'SUCCESS', type: 'alignment' });
      // The 3 kept matches were not written again: the alignment added the other 7.
      expect((aligned.details as { per_server: Array<Record<string, unknown>> }).per_server[0]).toMatchObject({ storedMappings: 3, matched: 7 });
      expect((await mappingsOf(c, 'jf')).size).toBe(10);
    });

    it('When a task is cancelled while its runner is stuck elsewhere (live lease, no progress), then it ends REVOKED at once and the lane is free again', async () => {
      await c.sql(
        `INSERT INTO catalogue.batch_task (id, type, state, started_at, lease_owner, lease_generation, lease_expires_at) VALUES ('stuck', 'alignment', 'RUNNING', now(), 'stuck-process', 1, now() + interval '1 hour')`,
      );
      await bus.publish(RoutingKeys.taskCancelRequested, { taskId: 'stuck', type: 'alignment' } satisfies TaskCancelRequestedEvent);
      expect(await board.waitFor('stuck', ['REVOKED'], 5000)).toMatchObject({ state: 'REVOKED', message: expect.stringMatching(/kept/) });
      expect((await c.sql<{ owner: string | null }>(`SELECT lease_owner AS owner FROM catalogue.batch_task WHERE id = 'stuck'`))[0]).toEqual({ owner: null });
      // The stuck runner can no longer write: its fenced snapshot is refused.
      await expect(c.svc.batchTasks.snapshot({ runId: 'stuck', owner: 'stuck-process', generation: 1 }, { progress: 50, message: 'late' })).rejects.toThrow(/lease of run stuck lost/);
      // A new task runs at once.
      await tenMatching();
      expect((await sweep('jf')).state).toBe('SUCCESS');
    });

    it('When alignments are requested while one is queued, then they are coalesced into it and every requester sees its outcome', async () => {
      await tenMatching();
      let first = '';
      const extra: string[] = [];
      afterChunk = async (info) => {
        if (info.taskId !== first || info.chunk !== 1) return;
        for (const over of [{}, {}, { serverId: 'jf' }]) {
          const id = await requestSweep(bus, over);
          extra.push(id);
          await board.waitFor(id, ['NEW']);
        }
      };
      first = await requestSweep(bus, { serverId: 'jf' });
      expect((await board.waitFor(first)).state).toBe('SUCCESS');
      for (const id of extra) expect((await board.waitFor(id)).state).toBe('SUCCESS');
      const rows = await c.sql<{ id: string; type: string; aliases: string[] }>(`SELECT id, type, aliases FROM catalogue.batch_task ORDER BY created_at`);
      expect(rows).toEqual([
        { id: first, type: 'sweep', aliases: [] },
        { id: extra[0], type: 'alignment', aliases: [extra[1], extra[2]] },
      ]);
      expect((board.tasks.get(extra[1]!)?.details as { coalescedInto?: string }).coalescedInto).toBe(extra[0]);
    });
  });

  describe('restarts', () => {
    it('When the service stops during a sweep, then it hands the lease back and another process takes the sweep over and finishes it; a task left running by a dead process is taken over too', async () => {
      const db = await createTestDatabase('catalogue_restart');
      const rBus = new InMemoryBus();
      const rBoard = new Board();
      await rBoard.attach(rBus);
      const jf = await jellyfin(Array.from({ length: 9 }, (_, i) => fakeTrack(`r${i}`, { title: `Restart ${i}` })));
      peers.servers = [jf.info];
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let reached!: () => void;
      const atChunk = new Promise<void>((r) => (reached = r));
      const env = { SWEEP_CHUNK_SIZE: '3', TASK_PROGRESS_INTERVAL_MS: '0', BATCH_RECHECK_MS: '100' };
      const base = { peers: () => peers.peers(), clientFactory: quickClients };
      const one = await startCatalogue(env, db, rBus, { ...base, sweepHooks: { afterChunk: async () => { reached(); await held; } } });
      let two: StartedCatalogue | undefined;
      try {
        await seedSongs(one, Array.from({ length: 9 }, (_, i) => ({ id: `rs-${i}`, title: `Restart ${i}` })));
        const taskId = await requestSweep(rBus, { serverId: 'jf' });
        await atChunk;
        const stopping = one.stop();
        release();
        await stopping;
        // Handed back: still RUNNING (not ended, not re-queued), no lease holder, lease expired.
        const row = await one.sql<{ state: string; cancel_requested: boolean; lease_owner: string | null; lease_generation: number; expired: boolean }>(
          `SELECT state, cancel_requested, lease_owner, lease_generation, lease_expires_at < now() AS expired FROM catalogue.batch_task WHERE id = $1`,
          [taskId],
        );
        expect(row[0]).toEqual({ state: 'RUNNING', cancel_requested: false, lease_owner: null, lease_generation: 1, expired: true });
        expect((await one.sql(`SELECT 1 FROM catalogue.track_server_map WHERE server_id = 'jf'`)).length).toBe(3);
        two = await startCatalogue(env, db, rBus, base);
        const done = await rBoard.waitFor(taskId, ['SUCCESS', 'FAIL', 'REVOKED']);
        expect(done.state).toBe('SUCCESS');
        expect((done.details as { per_server: Array<Record<string, unknown>> }).per_server[0]).toMatchObject({ storedMappings: 3, matched: 6 });
        expect((await two.sql<{ g: number }>(`SELECT lease_generation AS g FROM catalogue.batch_task WHERE id = $1`, [taskId]))[0]!.g).toBe(2);
        // A task some process left RUNNING when it died (its lease ran out): the re-check takes it over.
        await two.sql(
          `INSERT INTO catalogue.batch_task (id, type, state, started_at, lease_owner, lease_generation, lease_expires_at) VALUES ('ghost', 'alignment', 'RUNNING', now() - interval '1 hour', 'dead-process', 1, now() - interval '1 second')`,
        );
        const ghost = await rBoard.waitFor('ghost', ['SUCCESS', 'FAIL', 'REVOKED']);
        expect(ghost.state).toBe('SUCCESS');
        expect((await two.sql<{ g: number; owner: string | null }>(`SELECT lease_generation AS g, lease_owner AS owner FROM catalogue.batch_task WHERE id = 'ghost'`))[0]).toEqual({ g: 2, owner: null });
      } finally {
        await two?.stop();
        await one.stop();
        await db.drop();
      }
    });
  });
});
