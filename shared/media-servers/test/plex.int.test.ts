/**
 * PlexClient against the spec-faithful fake Plex Media Server (testkit), and the PIN linking
 * helpers against the fake plex.tv: MediaContainer JSON, container paging, ms durations, epoch
 * times, `server://` playlist URIs in batches of 100, lyric streams.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createFakePlex,
  createFakePlexTv,
  syntheticCatalogue,
  wesnothTracks,
  type FakePlex,
  type FakePlexTv,
  type StartedFake,
} from '@polyphony/testkit';
import { BadCredentialsError, NotFoundError, UnreachableError } from '../src/errors';
import { createMediaServerClient } from '../src/factory';
import { checkPin, createPin } from '../src/plex-pin';
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

describe('PlexClient against the fake Plex Media Server', () => {
  const wesnoth = wesnothTracks();
  const synthetic = syntheticCatalogue(2345);
  let fake: FakePlex;
  let server: StartedFake;
  let bigFake: FakePlex;
  let bigServer: StartedFake;

  const conn = (f: FakePlex, s: StartedFake, over: Partial<ServerConnection> = {}): ServerConnection => ({ type: 'plex', creds: { url: s.url, token: f.token }, ...over });
  const client = (over: Partial<ServerConnection> = {}): MediaServerClient => createMediaServerClient(conn(fake, server, over), TEST_CLIENT_OPTIONS);
  const bigClient = (over: Partial<ServerConnection> = {}): MediaServerClient => createMediaServerClient(conn(bigFake, bigServer, over), TEST_CLIENT_OPTIONS);

  const pair = useFakePair((catalogue) => createFakePlex({ catalogue }), wesnoth, synthetic);
  beforeAll(() => {
    ({ fake, server, bigFake, bigServer } = pair.current);
  });

  it('When the token is right, then testConnection is ok with the artist sections and absolute paths', async () => {
    fake.core.clearRequests();
    const r = await client().testConnection();
    expect(r.ok).toBe(true);
    expect(r.version).toBe(fake.version);
    expect(r.libraries).toEqual([
      { id: '1', name: 'Music', path: '/srv/music/music' },
      { id: '2', name: 'Extras', path: '/srv/music/extras' },
    ]);
    expect(r.sampleTrackCount).toBe(39);
    expect(r.pathsLookAbsolute).toBe(true);
    const authed = fake.requests.filter((q) => q.path !== '/identity');
    expect(authed.every((q) => q.headers['x-plex-token'] === fake.token && String(q.headers.accept).includes('application/json'))).toBe(true);
  });

  it('When the token is wrong, then the 401 (HTML body) becomes bad_credentials', async () => {
    const bad = client({ creds: { url: server.url, token: 'wrong' } });
    const r = await bad.testConnection();
    expect(r.ok).toBe(false);
    expect(r.errorKind).toBe('bad_credentials');
    await expect(bad.listLibraries()).rejects.toBeInstanceOf(BadCredentialsError);
  });

  it('When nothing listens at the URL, then testConnection reports unreachable', async () => {
    const url = await closedUrl();
    const r = await client({ creds: { url, token: fake.token } }).testConnection();
    expect(r.ok).toBe(false);
    expect(r.errorKind).toBe('unreachable');
    await expect(client({ creds: { url, token: fake.token } }).listLibraries()).rejects.toBeInstanceOf(UnreachableError);
  });

  it('When the catalogue is enumerated, then ms become seconds, epoch becomes ISO and the track artist is right', async () => {
    const { items } = await collectPages(client().iterateTracks());
    expect(items).toHaveLength(41);
    const byId = new Map(items.map((t) => [t.id, t]));
    for (const t of wesnoth) {
      // duration is whole milliseconds on Plex
      expectTrack(byId.get(fake.idOf(t)), t, { path: t.path, durationTolerance: 0.0005 + 1e-9, lastPlayed: true, albumArtist: true });
    }
  });

  it('When there are more tracks than one page, then the container start advances by 1000 until totalSize', async () => {
    bigFake.core.clearRequests();
    const { items, pages } = await collectPages(bigClient({ musicLibraries: [bigFake.sectionKeyOf('lib-syn-1')] }).iterateTracks());
    const expected = synthetic.indicesIn(['lib-syn-1']).map((i) => bigFake.idOf(synthetic.trackAt(i)));
    expect(expected.length).toBeGreaterThan(1000);
    expect(items.map((t) => t.id).sort()).toEqual([...expected].sort());
    expect(pages).toBe(2);
    const listings = bigFake.requests.filter((q) => q.path === '/library/sections/1/all');
    expect(listings.map((q) => q.headers['x-plex-container-start'])).toEqual(['0', '1000']);
    expect(listings.every((q) => q.headers['x-plex-container-size'] === '1000' && q.query.type === '10')).toBe(true);
  });

  it('When no section filter is set, then every music section is enumerated and the movie section is skipped', async () => {
    bigFake.core.clearRequests();
    const { items } = await collectPages(bigClient().iterateTracks());
    expect(items).toHaveLength(2345);
    expect(new Set(items.map((t) => t.id)).size).toBe(2345);
    expect(bigFake.requests.some((q) => q.path === `/library/sections/${bigFake.movieSectionKey}/all`)).toBe(false);
  });

  it('When the server fails mid-enumeration, then the iteration throws instead of ending early', async () => {
    bigFake.failAfterPages(1);
    const { yielded, error } = await drainUntilError(bigClient({ musicLibraries: ['1'] }).iterateTracks());
    expect(yielded).toBe(1000);
    expect(error).toBeInstanceOf(UnreachableError);
  });

  it('When a track is downloaded, then the part key is resolved and the original bytes are written', async () => {
    fake.core.clearRequests();
    const { dir, cleanup } = await tempDir();
    try {
      const t = wesnoth.byId('wes-vengeful');
      if (!t) throw new Error('fixture missing');
      const dest = join(dir, 'song.ogg');
      const n = await client().downloadTrack(fake.idOf(t), dest);
      const [got, want] = await Promise.all([readFile(dest), readFile(t.audioFile)]);
      expect(n).toBe(want.length);
      expect(got.equals(want)).toBe(true);
      const part = fake.requests.find((q) => q.path.startsWith('/library/parts/'));
      expect(part?.query.download).toBe('1');
    } finally {
      await cleanup();
    }
  });

  it('When a playlist exceeds one batch, then it is created and extended with server:// URIs of at most 100 ids', async () => {
    bigFake.core.clearRequests();
    const ids = Array.from({ length: 250 }, (_, i) => bigFake.idOf(synthetic.trackAt((i * 13) % synthetic.size)));
    const c = bigClient();
    const pl = await c.createPlaylist('Big mix', ids);
    expect(pl.trackCount).toBe(250);
    expect(bigFake.playlists().find((p) => p.id === pl.id)?.trackIds).toEqual(ids);
    const writes = bigFake.requests.filter((q) => q.path === '/playlists' && q.method === 'POST').concat(bigFake.requests.filter((q) => q.method === 'PUT'));
    expect(writes).toHaveLength(3);
    for (const w of writes) {
      const uri = String(w.query.uri);
      expect(uri.startsWith(`server://${bigFake.machineIdentifier}/com.plexapp.plugins.library/library/metadata/`)).toBe(true);
      expect(uri.slice(uri.lastIndexOf('/') + 1).split(',').length).toBeLessThanOrEqual(100);
    }
    expect(await c.listPlaylists()).toContainEqual({ id: pl.id, name: 'Big mix', trackCount: 250 });
    await c.deletePlaylist(pl.id);
    expect(bigFake.playlists()).toHaveLength(0);
  });

  it('When artists are listed, then the album artists of the music sections come back', async () => {
    const artists = await client().listArtists();
    expect(new Set(artists.map((a) => a.name))).toEqual(new Set([...wesnoth].map((t) => t.albumArtist)));
  });

  it('When history is asked, then played tracks come newest first with lastViewedAt as ISO', async () => {
    const history = await client().getListeningHistory(10);
    const expected = recentlyPlayed(wesnoth, 10);
    expect(history.map((t) => t.id)).toEqual(expected.map((t) => fake.idOf(t)));
    expect(history.map((t) => t.lastPlayed)).toEqual(expected.map((t) => t.lastPlayed));
  });

  it('When a track has a lyric stream, then its text is fetched; otherwise undefined', async () => {
    const withLyrics = wesnoth.update('wes-love-theme', { lyrics: 'First line of the song\nSecond line' });
    const c = client();
    await expect(c.getLyrics(fake.idOf(withLyrics))).resolves.toBe('First line of the song\nSecond line');
    await expect(c.getLyrics(fake.idOf('wes-battle'))).resolves.toBeUndefined();
  });
});

describe('Plex PIN linking against the fake plex.tv', () => {
  let tv: FakePlexTv;
  let server: StartedFake;
  beforeAll(async () => {
    tv = createFakePlexTv({ accountToken: 'account-token-123' });
    server = await tv.start();
  });
  afterAll(() => server.close());

  it('When the PIN is created and later approved, then polling returns the token only after approval', async () => {
    const pin = await createPin('client-abc', server.url);
    expect(pin.code).toMatch(/^[A-Z0-9]{4}$/);
    expect(pin.linkUrl).toBe(`${server.url}/link`);
    expect(pin.expiresIn).toBe(900);
    const created = tv.requests.find((q) => q.method === 'POST');
    expect(created?.status).toBe(201);
    expect(created?.headers['x-plex-client-identifier']).toBe('client-abc');

    await expect(checkPin(pin.id, 'client-abc', server.url)).resolves.toEqual({ expiresAt: expect.any(String) });
    tv.approve(Number(pin.id));
    const linked = await checkPin(pin.id, 'client-abc', server.url);
    expect(linked.token).toBe('account-token-123');
  });

  it('When another client identifier polls, then plex.tv does not know the PIN', async () => {
    const pin = await createPin('client-one', server.url);
    await expect(checkPin(pin.id, 'client-two', server.url, { retries: 0 })).rejects.toBeInstanceOf(NotFoundError);
  });
});
