/**
 * LyrionClient against the spec-faithful fake LMS (testkit): JSON-RPC `slim.request`, `file://`
 * URLs, float durations, 0-100 ratings, path-prefix library filter, optional Basic auth, closed
 * sockets for bad commands, and both playlist-writing modes (connected player or `playlists edit`).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createFakeLyrion,
  syntheticCatalogue,
  wesnothTracks,
  type FakeLyrion,
  type StartedFake,
} from '@polyphony/testkit';
import { BadCredentialsError, UnreachableError } from '../src/errors';
import { createMediaServerClient } from '../src/factory';
import type { ClientOptions } from '../src/options';
import type { MediaServerClient, ServerConnection } from '../src/types';
import {
  TEST_CLIENT_OPTIONS,
  closedUrl,
  collectPages,
  drainUntilError,
  expectTrack,
  mostPlayed,
  tempDir,
  useFakePair,
} from './helpers';

describe('LyrionClient against the fake Lyrion Music Server', () => {
  const wesnoth = wesnothTracks();
  const synthetic = syntheticCatalogue(1234);
  let fake: FakeLyrion;
  let server: StartedFake;
  let bigFake: FakeLyrion;
  let bigServer: StartedFake;

  const conn = (s: StartedFake, over: Partial<ServerConnection> = {}): ServerConnection => ({ type: 'lyrion', creds: { url: s.url }, ...over });
  const client = (over: Partial<ServerConnection> = {}, opts: ClientOptions = {}): MediaServerClient =>
    createMediaServerClient(conn(server, over), { ...TEST_CLIENT_OPTIONS, ...opts });
  const bigClient = (over: Partial<ServerConnection> = {}, opts: ClientOptions = {}): MediaServerClient =>
    createMediaServerClient(conn(bigServer, over), { ...TEST_CLIENT_OPTIONS, ...opts });

  const pair = useFakePair((catalogue) => createFakeLyrion({ catalogue }), wesnoth, synthetic);
  beforeAll(() => {
    ({ fake, server, bigFake, bigServer } = pair.current);
  });
  afterEach(() => {
    bigFake.players = [];
  });

  it('When the server answers, then testConnection is ok with the media folders and absolute paths', async () => {
    const r = await client().testConnection();
    expect(r.ok).toBe(true);
    expect(r.version).toBe('9.0.2');
    expect(r.libraries.map((l) => l.id)).toEqual(['/srv/music/music', '/srv/music/extras']);
    expect(r.sampleTrackCount).toBe(41);
    expect(r.pathsLookAbsolute).toBe(true);
    const rpc = fake.commands()[0];
    expect(rpc?.cmd[0]).toBe('serverstatus');
  });

  describe('with password protection on', () => {
    let guarded: FakeLyrion;
    let guardedServer: StartedFake;
    beforeAll(async () => {
      guarded = createFakeLyrion({ catalogue: wesnoth, user: 'admin', password: 'hunter2' });
      guardedServer = await guarded.start();
    });
    afterAll(() => guardedServer.close());

    it('When the Basic credentials are right, then calls succeed', async () => {
      const libs = await client({ creds: { url: guardedServer.url, user: 'admin', password: 'hunter2' } }).listLibraries();
      expect(libs).toHaveLength(2);
    });

    it('When the Basic credentials are wrong or missing, then 401 becomes bad_credentials', async () => {
      const wrong = client({ creds: { url: guardedServer.url, user: 'admin', password: 'wrong' } });
      const r = await wrong.testConnection();
      expect(r.ok).toBe(false);
      expect(r.errorKind).toBe('bad_credentials');
      await expect(client({ creds: { url: guardedServer.url } }).listLibraries()).rejects.toBeInstanceOf(BadCredentialsError);
    });

    it('When a track is downloaded, then Basic auth is sent there too', async () => {
      const { dir, cleanup } = await tempDir();
      try {
        const t = wesnoth.byId('wes-defeat');
        if (!t) throw new Error('fixture missing');
        await client({ creds: { url: guardedServer.url, user: 'admin', password: 'hunter2' } }).downloadTrack(String(guarded.idOf(t)), join(dir, 'x.ogg'));
        expect((await readFile(join(dir, 'x.ogg'))).equals(await readFile(t.audioFile))).toBe(true);
      } finally {
        await cleanup();
      }
    });
  });

  it('When nothing listens at the URL, then testConnection reports unreachable', async () => {
    const url = await closedUrl();
    const r = await client({ creds: { url } }).testConnection();
    expect(r.ok).toBe(false);
    expect(r.errorKind).toBe('unreachable');
    await expect(client({ creds: { url } }).listLibraries()).rejects.toBeInstanceOf(UnreachableError);
  });

  it('When the catalogue is enumerated, then file:// URLs are decoded to paths and ratings divided by 20', async () => {
    const { items } = await collectPages(client().iterateTracks());
    expect(items).toHaveLength(41);
    const byId = new Map(items.map((t) => [t.id, t]));
    for (const t of wesnoth) {
      expectTrack(byId.get(String(fake.idOf(t))), t, { path: t.path, durationTolerance: 1e-6, lastPlayed: false, albumArtist: true });
    }
  });

  it('When LMS sends numbers as strings, then the enumeration is the same', async () => {
    const stringy = createFakeLyrion({ catalogue: wesnoth, stringNumbers: true });
    const s = await stringy.start();
    try {
      const c = createMediaServerClient(conn(s), TEST_CLIENT_OPTIONS);
      const { items } = await collectPages(c.iterateTracks());
      const byId = new Map(items.map((t) => [t.id, t]));
      for (const t of wesnoth) {
        expectTrack(byId.get(String(stringy.idOf(t))), t, { path: t.path, durationTolerance: 1e-6, lastPlayed: false, albumArtist: true });
      }
    } finally {
      await s.close();
    }
  });

  it('When there are more tracks than one page, then titles pages by 500 until start >= count', async () => {
    bigFake.core.clearRequests();
    const { items, pages } = await collectPages(bigClient().iterateTracks());
    expect(items).toHaveLength(1234);
    expect(new Set(items.map((t) => t.id)).size).toBe(1234);
    expect(pages).toBe(3);
    const titles = bigFake.commands().filter((c) => c.cmd[0] === 'titles');
    expect(titles.map((c) => [c.cmd[1], c.cmd[2]])).toEqual([
      [0, 500],
      [500, 500],
      [1000, 500],
    ]);
  });

  it('When a path filter is set, then only tracks under that folder are returned', async () => {
    const lib = synthetic.libraries[1];
    if (!lib) throw new Error('fixture missing');
    const { items } = await collectPages(bigClient({ musicLibraries: [lib.path] }).iterateTracks());
    const expected = synthetic.indicesIn([lib.id]).map((i) => String(i + 1));
    expect(items.map((t) => t.id).sort()).toEqual([...expected].sort());
    expect(items.every((t) => t.path?.startsWith(`${lib.path}/`))).toBe(true);
  });

  it('When the server fails mid-enumeration (HTTP 500 or a dropped connection), then the iteration throws', async () => {
    bigFake.failAfterPages(1);
    const first = await drainUntilError(bigClient().iterateTracks());
    expect(first.yielded).toBe(500);
    expect(first.error).toBeInstanceOf(UnreachableError);

    bigFake.failMode = 'close';
    bigFake.failAfterPages(2);
    try {
      const second = await drainUntilError(bigClient().iterateTracks());
      expect(second.yielded).toBe(1000);
      expect(second.error).toBeInstanceOf(UnreachableError);
    } finally {
      bigFake.failMode = 'status500';
    }
  });

  it('When a track is downloaded, then the file holds the original bytes', async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const t = wesnoth.byId('wes-journeys-end');
      if (!t) throw new Error('fixture missing');
      const dest = join(dir, 'song.ogg');
      const n = await client().downloadTrack(String(fake.idOf(t)), dest);
      const [got, want] = await Promise.all([readFile(dest), readFile(t.audioFile)]);
      expect(n).toBe(want.length);
      expect(got.equals(want)).toBe(true);
    } finally {
      await cleanup();
    }
  });

  it('When no player is connected, then the playlist is filled one url per `playlists edit`, listed and deleted', async () => {
    bigFake.core.clearRequests();
    const ids = Array.from({ length: 120 }, (_, i) => String(((i * 7) % synthetic.size) + 1));
    const c = bigClient();
    const pl = await c.createPlaylist('Edit mix', ids);
    expect(pl.trackCount).toBe(120);
    expect(bigFake.playlists().find((p) => String(p.id) === pl.id)?.trackIds.map(String)).toEqual(ids);
    const edits = bigFake.commands().filter((x) => x.cmd[0] === 'playlists' && x.cmd[1] === 'edit');
    expect(edits).toHaveLength(120);
    expect(edits.every((x) => x.cmd.filter((w) => String(w).startsWith('url:')).length === 1)).toBe(true);
    expect(await c.listPlaylists()).toContainEqual({ id: pl.id, name: 'Edit mix' });
    await c.deletePlaylist(pl.id);
    expect(bigFake.playlists()).toHaveLength(0);
  });

  it('When a player is connected but the default mode is used, then the player queue is left alone', async () => {
    bigFake.players = [{ playerid: 'aa:bb:cc:dd:ee:ff', name: 'Kitchen' }];
    bigFake.core.clearRequests();
    const ids = Array.from({ length: 60 }, (_, i) => String(i + 1));
    const c = bigClient();
    const pl = await c.createPlaylist('Default mix', ids);
    expect(bigFake.playlists().find((p) => String(p.id) === pl.id)?.trackIds.map(String)).toEqual(ids);
    expect(bigFake.commands().some((x) => x.player !== '' || x.cmd[0] === 'playlistcontrol')).toBe(false);
    expect(bigFake.queueOf('aa:bb:cc:dd:ee:ff')).toEqual([]);
    await c.deletePlaylist(pl.id);
  });

  it('When player mode is chosen and a player is connected, then tracks go through playlistcontrol in batches of at most 50 and are saved', async () => {
    bigFake.players = [{ playerid: 'aa:bb:cc:dd:ee:ff', name: 'Kitchen' }];
    bigFake.core.clearRequests();
    const ids = Array.from({ length: 230 }, (_, i) => String(((i * 11) % synthetic.size) + 1));
    const c = bigClient({}, { lyrionPlaylistMode: 'player' });
    const pl = await c.createPlaylist('Player mix', ids);
    const stored = bigFake.playlists().find((p) => String(p.id) === pl.id);
    expect(stored?.name).toBe('Player mix');
    expect(stored?.trackIds.map(String)).toEqual(ids);
    const adds = bigFake.commands().filter((x) => x.cmd[0] === 'playlistcontrol' && x.cmd[1] === 'cmd:add');
    expect(adds).toHaveLength(5);
    for (const a of adds) {
      expect(a.player).toBe('aa:bb:cc:dd:ee:ff');
      const n = String(a.cmd.find((w) => String(w).startsWith('track_id:'))).slice('track_id:'.length).split(',').length;
      expect(n).toBeLessThanOrEqual(50);
    }
    expect(bigFake.playlists().filter((p) => p.name === 'Player mix')).toHaveLength(1);
    await c.deletePlaylist(pl.id);
    expect(bigFake.playlists()).toHaveLength(0);
  });

  it('When artists are listed, then every artist comes back once', async () => {
    const artists = await client().listArtists();
    expect(new Set(artists.map((a) => a.name))).toEqual(new Set([...wesnoth].flatMap((t) => [t.artist, t.albumArtist])));
    expect(artists).toHaveLength(new Set(artists.map((a) => a.id)).size);
  });

  it('When history is asked, then the most played tracks come first (LMS has no last-played time)', async () => {
    const history = await client().getListeningHistory(10);
    const expected = mostPlayed(wesnoth, 10);
    expect(history.map((t) => t.id)).toEqual(expected.map((t) => String(fake.idOf(t))));
    expect(history.every((t) => t.lastPlayed === undefined)).toBe(true);
    const sqlSorts = fake.commands().filter((x) => x.cmd.some((w) => String(w).startsWith('sort:sql=')));
    expect(sqlSorts.length).toBeGreaterThan(0);
  });

  it('When a track has lyrics, then songinfo tags:w gives them; otherwise undefined', async () => {
    const withLyrics = wesnoth.update('wes-love-theme', { lyrics: 'First line of the song\nSecond line' });
    const c = client();
    await expect(c.getLyrics(String(fake.idOf(withLyrics)))).resolves.toBe('First line of the song\nSecond line');
    await expect(c.getLyrics(String(fake.idOf('wes-battle')))).resolves.toBeUndefined();
  });
});
