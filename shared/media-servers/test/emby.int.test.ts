/**
 * EmbyClient against the spec-faithful fake Emby (testkit): 41 real Wesnoth tracks for
 * metadata, downloads and lyrics; a 1,234-track synthetic catalogue for paging, the library filter
 * and playlists larger than one batch.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createFakeEmby,
  syntheticCatalogue,
  wesnothTracks,
  type FakeEmby,
  type StartedFake,
} from '@polyphony/testkit';
import { BadCredentialsError, UnreachableError } from '../src/errors';
import { createMediaServerClient } from '../src/factory';
import type { MediaServerClient, ServerConnection } from '../src/types';
import {
  TEST_CLIENT_OPTIONS,
  closedUrl,
  collectPages,
  drainUntilError,
  expectTrack,
  recentlyPlayed,
  tempDir,
  useFakePair,
} from './helpers';

describe('EmbyClient against the fake Emby', () => {
  const wesnoth = wesnothTracks();
  const synthetic = syntheticCatalogue(1234);
  let fake: FakeEmby;
  let server: StartedFake;
  let bigFake: FakeEmby;
  let bigServer: StartedFake;

  const conn = (f: FakeEmby, s: StartedFake, over: Partial<ServerConnection> = {}): ServerConnection => ({
    type: 'emby',
    creds: { url: s.url, user_id: f.userId, token: f.token },
    ...over,
  });
  const client = (over: Partial<ServerConnection> = {}): MediaServerClient => createMediaServerClient(conn(fake, server, over), TEST_CLIENT_OPTIONS);
  const bigClient = (over: Partial<ServerConnection> = {}): MediaServerClient => createMediaServerClient(conn(bigFake, bigServer, over), TEST_CLIENT_OPTIONS);

  const pair = useFakePair((catalogue) => createFakeEmby({ catalogue }), wesnoth, synthetic);
  beforeAll(() => {
    ({ fake, server, bigFake, bigServer } = pair.current);
  });

  it('When the credentials are right, then testConnection is ok with both music libraries and absolute paths', async () => {
    const r = await client().testConnection();
    expect(r.ok).toBe(true);
    expect(r.serverName).toBe('Fake Emby');
    expect(r.version).toBe('4.8.11.0');
    expect(r.libraries.map((l) => l.id).sort()).toEqual([fake.viewIdOf('lib-music'), fake.viewIdOf('lib-extras')].sort());
    expect(r.sampleTrackCount).toBe(41);
    expect(r.pathsLookAbsolute).toBe(true);
    const itemQueries = fake.requests.filter((q) => q.path === `/emby/Users/${fake.userId}/Items`);
    expect(itemQueries.length).toBeGreaterThan(0);
    expect(itemQueries.every((q) => q.headers['x-emby-token'] === fake.token)).toBe(true);
  });

  it('When the token is wrong, then testConnection reports bad_credentials and calls throw BadCredentialsError', async () => {
    const bad = client({ creds: { url: server.url, user_id: fake.userId, token: 'wrong-token' } });
    const r = await bad.testConnection();
    expect(r.ok).toBe(false);
    expect(r.errorKind).toBe('bad_credentials');
    await expect(bad.listLibraries()).rejects.toBeInstanceOf(BadCredentialsError);
  });

  it('When nothing listens at the URL, then testConnection reports unreachable', async () => {
    const url = await closedUrl();
    const r = await client({ creds: { url, user_id: fake.userId, token: fake.token } }).testConnection();
    expect(r.ok).toBe(false);
    expect(r.errorKind).toBe('unreachable');
    await expect(client({ creds: { url, user_id: fake.userId, token: fake.token } }).listLibraries()).rejects.toBeInstanceOf(UnreachableError);
  });

  it('When libraries are listed, then only the music views come back (Movies is dropped), with their locations', async () => {
    const libs = await client().listLibraries();
    expect(libs).toEqual([
      { id: fake.viewIdOf('lib-music'), name: 'Music', path: '/srv/music/music' },
      { id: fake.viewIdOf('lib-extras'), name: 'Extras', path: '/srv/music/extras' },
    ]);
  });

  it('When the user is not an admin, then libraries come from the user views', async () => {
    const nonAdmin = createFakeEmby({ catalogue: wesnoth, admin: false });
    const s = await nonAdmin.start();
    try {
      const c = createMediaServerClient(conn(nonAdmin, s), TEST_CLIENT_OPTIONS);
      const libs = await c.listLibraries();
      expect(libs.map((l) => l.id)).toEqual([nonAdmin.viewIdOf('lib-music'), nonAdmin.viewIdOf('lib-extras')]);
      expect(nonAdmin.requests.find((q) => q.path === '/emby/Library/VirtualFolders')?.status).toBe(403);
    } finally {
      await s.close();
    }
  });

  it('When the catalogue is enumerated, then every track arrives with ticks converted to seconds and user data', async () => {
    const { items } = await collectPages(client().iterateTracks());
    expect(items).toHaveLength(41);
    expect(new Set(items.map((t) => t.id)).size).toBe(41);
    const byId = new Map(items.map((t) => [t.id, t]));
    for (const t of wesnoth) {
      expectTrack(byId.get(fake.idOf(t)), t, { path: t.path, durationTolerance: 1e-6, lastPlayed: true, albumArtist: true });
    }
    expect(items.every((t) => /^\d+$/.test(t.id))).toBe(true);
  });

  it('When there are more tracks than one page, then StartIndex advances by 500 until TotalRecordCount', async () => {
    bigFake.core.clearRequests();
    const { items, pages } = await collectPages(bigClient().iterateTracks());
    expect(items).toHaveLength(1234);
    expect(new Set(items.map((t) => t.id)).size).toBe(1234);
    expect(pages).toBe(3);
    const starts = bigFake.requests.filter((q) => q.path === `/emby/Users/${bigFake.userId}/Items`).map((q) => q.query.StartIndex);
    expect(starts).toEqual(['0', '500', '1000']);
  });

  it('When a library filter is set, then only that library is enumerated (ParentId)', async () => {
    const lib = 'lib-syn-2';
    const { items } = await collectPages(bigClient({ musicLibraries: [bigFake.viewIdOf(lib)] }).iterateTracks());
    const expected = synthetic.indicesIn([lib]).map((i) => bigFake.trackId(i));
    expect(items.map((t) => t.id).sort()).toEqual([...expected].sort());
    expect(expected.length).toBeGreaterThan(500);
  });

  it('When the server fails mid-enumeration, then the iteration throws instead of ending early', async () => {
    bigFake.failAfterPages(1);
    const { yielded, error } = await drainUntilError(bigClient().iterateTracks());
    expect(yielded).toBe(500);
    expect(error).toBeInstanceOf(UnreachableError);
  });

  it('When a track is downloaded, then the file holds the original bytes', async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const t = wesnoth.byId('wes-knolls');
      if (!t) throw new Error('fixture missing');
      const dest = join(dir, 'knolls.ogg');
      const n = await client().downloadTrack(fake.idOf(t), dest);
      const [got, want] = await Promise.all([readFile(dest), readFile(t.audioFile)]);
      expect(n).toBe(want.length);
      expect(got.equals(want)).toBe(true);
    } finally {
      await cleanup();
    }
  });

  it('When a playlist exceeds one batch, then it is created in batches of at most 100, listed and deleted', async () => {
    bigFake.core.clearRequests();
    const ids = Array.from({ length: 250 }, (_, i) => bigFake.trackId((i * 7) % synthetic.size));
    const c = bigClient();
    const pl = await c.createPlaylist('Big mix', ids);
    expect(pl.trackCount).toBe(250);
    const stored = bigFake.playlists().find((p) => p.id === pl.id);
    expect(stored?.trackIds).toEqual(ids);
    const writes = bigFake.requests.filter((q) => q.method === 'POST' && q.path.startsWith('/emby/Playlists'));
    expect(writes).toHaveLength(3);
    for (const w of writes) {
      const sent = String(w.query.Ids).split(',').length;
      expect(sent).toBeLessThanOrEqual(100);
      expect(w.status).toBeLessThan(300);
    }
    const listed = await c.listPlaylists();
    expect(listed).toContainEqual({ id: pl.id, name: 'Big mix', trackCount: 250 });
    await c.deletePlaylist(pl.id);
    expect(bigFake.playlists().some((p) => p.id === pl.id)).toBe(false);
    expect((await c.listPlaylists()).some((p) => p.id === pl.id)).toBe(false);
  });

  it('When artists are listed, then the album artists come back (/Artists/AlbumArtists)', async () => {
    const artists = await client().listArtists();
    expect(new Set(artists.map((a) => a.name))).toEqual(new Set([...wesnoth].map((t) => t.albumArtist)));
  });

  it('When history is asked, then played tracks come newest first with their last-played time', async () => {
    const history = await client().getListeningHistory(10);
    const expected = recentlyPlayed(wesnoth, 10);
    expect(history.map((t) => t.id)).toEqual(expected.map((t) => fake.idOf(t)));
    expect(history.map((t) => t.lastPlayed)).toEqual(expected.map((t) => t.lastPlayed));
  });

  it('When a track has lyrics, then /emby/Audio/{id}/Lyrics gives them as plain text; otherwise undefined', async () => {
    const withLyrics = wesnoth.update('wes-love-theme', { lyrics: 'First line of the song\nSecond line' });
    const c = client();
    await expect(c.getLyrics(fake.idOf(withLyrics))).resolves.toBe('First line of the song\nSecond line');
    await expect(c.getLyrics(fake.idOf('wes-battle'))).resolves.toBeUndefined();
  });

  it('When the URL already ends in /emby, then the client still reaches the server', async () => {
    const libs = await client({ creds: { url: `${server.url}/emby`, user_id: fake.userId, token: fake.token } }).listLibraries();
    expect(libs).toHaveLength(2);
  });
});
