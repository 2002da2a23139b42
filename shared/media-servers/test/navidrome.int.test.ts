/**
 * NavidromeClient against the spec-faithful fake Navidrome (testkit): Subsonic envelopes, token
 * auth, HTTP-200 errors, whole-second durations, fake relative paths, repeated-parameter playlist
 * writes in batches of 40.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createFakeSubsonic,
  syntheticCatalogue,
  wesnothTracks,
  type FakeSubsonic,
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

describe('NavidromeClient against the fake Navidrome', () => {
  const wesnoth = wesnothTracks();
  const synthetic = syntheticCatalogue(1234);
  let fake: FakeSubsonic;
  let server: StartedFake;
  let bigFake: FakeSubsonic;
  let bigServer: StartedFake;

  const conn = (s: StartedFake, over: Partial<ServerConnection> = {}): ServerConnection => ({
    type: 'navidrome',
    creds: { url: s.url, user: 'alice', password: 'sesame' },
    ...over,
  });
  const client = (over: Partial<ServerConnection> = {}): MediaServerClient => createMediaServerClient(conn(server, over), TEST_CLIENT_OPTIONS);
  const bigClient = (over: Partial<ServerConnection> = {}): MediaServerClient => createMediaServerClient(conn(bigServer, over), TEST_CLIENT_OPTIONS);

  const pair = useFakePair((catalogue) => createFakeSubsonic({ catalogue }), wesnoth, synthetic);
  beforeAll(() => {
    ({ fake, server, bigFake, bigServer } = pair.current);
  });
  afterEach(() => {
    fake.enableDownloads = true;
  });

  it('When the credentials are right, then testConnection is ok and every call uses salted-token auth', async () => {
    fake.core.clearRequests();
    const r = await client().testConnection();
    expect(r.ok).toBe(true);
    expect(r.serverName).toBe('navidrome');
    expect(r.libraries).toEqual([
      { id: '1', name: 'Music' },
      { id: '2', name: 'Extras' },
    ]);
    expect(r.sampleTrackCount).toBe(41);
    // Navidrome reports fake relative paths unless "Report real path" is on.
    expect(r.pathsLookAbsolute).toBe(false);
    expect(fake.requests.length).toBeGreaterThan(0);
    for (const q of fake.requests) {
      expect(q.query.p).toBeUndefined();
      const salt = String(q.query.s);
      expect(salt.length).toBeGreaterThanOrEqual(6);
      expect(q.query.t).toBe(createHash('md5').update(`sesame${salt}`).digest('hex'));
      expect(q.query.f).toBe('json');
    }
    expect(new Set(fake.requests.map((q) => q.query.s)).size).toBe(fake.requests.length);
  });

  it('When the server reports real paths, then pathsLookAbsolute is true', async () => {
    const real = createFakeSubsonic({ catalogue: wesnoth, reportRealPath: true });
    const s = await real.start();
    try {
      const r = await createMediaServerClient(conn(s), TEST_CLIENT_OPTIONS).testConnection();
      expect(r.pathsLookAbsolute).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('When the password is wrong, then the HTTP-200 failed envelope (code 40) becomes BadCredentialsError', async () => {
    const bad = client({ creds: { url: server.url, user: 'alice', password: 'nope' } });
    const r = await bad.testConnection();
    expect(r.ok).toBe(false);
    expect(r.errorKind).toBe('bad_credentials');
    await expect(bad.listLibraries()).rejects.toBeInstanceOf(BadCredentialsError);
  });

  it('When nothing listens at the URL, then testConnection reports unreachable', async () => {
    const url = await closedUrl();
    const r = await client({ creds: { url, user: 'alice', password: 'sesame' } }).testConnection();
    expect(r.ok).toBe(false);
    expect(r.errorKind).toBe('unreachable');
    await expect(client({ creds: { url, user: 'alice', password: 'sesame' } }).listLibraries()).rejects.toBeInstanceOf(UnreachableError);
  });

  it('When the catalogue is enumerated, then every song arrives with whole-second durations and play data', async () => {
    const { items } = await collectPages(client().iterateTracks());
    expect(items).toHaveLength(41);
    const byId = new Map(items.map((t) => [t.id, t]));
    for (const t of wesnoth) {
      const got = byId.get(fake.idOf(t));
      expectTrack(got, t, { path: fake.fakePath(t), durationTolerance: 1, lastPlayed: true, albumArtist: true });
      expect(Number.isInteger(got?.durationSeconds)).toBe(true);
    }
  });

  it('When there are more songs than one page, then songOffset advances by 500 until a short page', async () => {
    bigFake.core.clearRequests();
    const { items, pages } = await collectPages(bigClient().iterateTracks());
    expect(items).toHaveLength(1234);
    expect(new Set(items.map((t) => t.id)).size).toBe(1234);
    expect(pages).toBe(3);
    const searches = bigFake.requests.filter((q) => q.path === '/rest/search3.view');
    expect(searches.map((q) => q.query.songOffset)).toEqual(['0', '500', '1000']);
    expect(searches.every((q) => q.query.query === '' && q.query.songCount === '500')).toBe(true);
  });

  it('When a music folder filter is set, then only that folder is enumerated (musicFolderId)', async () => {
    const { items } = await collectPages(bigClient({ musicLibraries: [String(bigFake.folderIdOf('lib-syn-2'))] }).iterateTracks());
    const expected = synthetic.indicesIn(['lib-syn-2']).map((i) => bigFake.idOf(synthetic.trackAt(i)));
    expect(items.map((t) => t.id).sort()).toEqual([...expected].sort());
  });

  it('When the server fails mid-enumeration, then the iteration throws instead of ending early', async () => {
    bigFake.failAfterPages(1);
    const { yielded, error } = await drainUntilError(bigClient().iterateTracks());
    expect(yielded).toBe(500);
    expect(error).toBeInstanceOf(UnreachableError);
  });

  it('When a song is downloaded, then the file holds the original bytes', async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const t = wesnoth.byId('wes-northerners');
      if (!t) throw new Error('fixture missing');
      const dest = join(dir, 'song.ogg');
      const n = await client().downloadTrack(fake.idOf(t), dest);
      const [got, want] = await Promise.all([readFile(dest), readFile(t.audioFile)]);
      expect(n).toBe(want.length);
      expect(got.equals(want)).toBe(true);
    } finally {
      await cleanup();
    }
  });

  it('When downloads are disabled (error 50), then the original comes from stream?format=raw', async () => {
    fake.enableDownloads = false;
    fake.core.clearRequests();
    const { dir, cleanup } = await tempDir();
    try {
      const t = wesnoth.byId('wes-sad');
      if (!t) throw new Error('fixture missing');
      const dest = join(dir, 'song.ogg');
      await client().downloadTrack(fake.idOf(t), dest);
      expect((await readFile(dest)).equals(await readFile(t.audioFile))).toBe(true);
      expect(fake.requests.map((q) => q.path)).toEqual(['/rest/download.view', '/rest/stream.view']);
      expect(fake.requests[1]?.query.format).toBe('raw');
    } finally {
      await cleanup();
    }
  });

  it('When a playlist exceeds one batch, then it is written 40 songs per request, listed and deleted', async () => {
    bigFake.core.clearRequests();
    const ids = Array.from({ length: 250 }, (_, i) => bigFake.idOf(synthetic.trackAt((i * 11) % synthetic.size)));
    const c = bigClient();
    const pl = await c.createPlaylist('Big mix', ids);
    expect(pl.trackCount).toBe(250);
    expect(bigFake.playlists().find((p) => p.id === pl.id)?.trackIds).toEqual(ids);
    const writes = bigFake.requests.filter((q) => /^\/rest\/(create|update)Playlist\.view$/.test(q.path));
    expect(writes).toHaveLength(7);
    for (const w of writes) {
      const key = w.path.includes('create') ? 'songId' : 'songIdToAdd';
      const sent = ([] as string[]).concat(w.query[key] ?? []);
      expect(sent.length).toBeGreaterThan(0);
      expect(sent.length).toBeLessThanOrEqual(40);
    }
    expect(await c.listPlaylists()).toContainEqual({ id: pl.id, name: 'Big mix', trackCount: 250 });
    await c.deletePlaylist(pl.id);
    expect(bigFake.playlists()).toHaveLength(0);
    expect((await c.listPlaylists()).some((p) => p.id === pl.id)).toBe(false);
  });

  it('When artists are listed, then the alphabetical index is flattened', async () => {
    const artists = await client().listArtists();
    expect(new Set(artists.map((a) => a.name))).toEqual(new Set([...wesnoth].flatMap((t) => [t.artist, t.albumArtist])));
    expect(artists).toHaveLength(new Set(artists.map((a) => a.id)).size);
  });

  it('When history is asked, then recently played songs come newest first with `played` as lastPlayed', async () => {
    const history = await client().getListeningHistory(10);
    const expected = recentlyPlayed(wesnoth, 10);
    expect(history.map((t) => t.id)).toEqual(expected.map((t) => fake.idOf(t)));
    expect(history.map((t) => t.lastPlayed)).toEqual(expected.map((t) => t.lastPlayed));
  });

  it('When a song has lyrics, then getLyricsBySongId gives them as plain text; otherwise undefined', async () => {
    const withLyrics = wesnoth.update('wes-love-theme', { lyrics: 'First line of the song\nSecond line' });
    const c = client();
    await expect(c.getLyrics(fake.idOf(withLyrics))).resolves.toBe('First line of the song\nSecond line');
    await expect(c.getLyrics(fake.idOf('wes-battle'))).resolves.toBeUndefined();
  });
});
