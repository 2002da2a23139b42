import 'reflect-metadata';
import { type MediaServerClient, type ProviderTrack, createMediaServerClient } from '@polyphony/media-servers';
import { createBus, createLogger, signIdentity, type Bus } from '@polyphony/platform';
import { ArrayCatalogue, createFakeJellyfin, createTestDatabase, type FakeJellyfin, type FakeTrack, type StartedFake, type TestDatabase, FakePeers, syntheticItemId, syntheticSongs, toSnapshotTrack, type SyntheticSong } from '@polyphony/testkit';
import { buildIndex, loadIndexConfig, type IndexService } from '../src';

/** Sizes of the test catalogue. */
export const ARTISTS = 100;
export const SONGS_PER_ARTIST = 12;
export const SONGS_PER_ALBUM = 6;
export const BASE_SONGS = ARTISTS * SONGS_PER_ARTIST;
/** Cover band: songs 1200..1211, near-copies of Artist 5's songs. */
export const COVER_BAND = 'The Twins';
export const COVER_START = BASE_SONGS;
/** "Café Noir" by "Beyoncé". */
export const ACCENTED = BASE_SONGS + SONGS_PER_ARTIST;
/** A second copy of "Song 10" by "Artist 0" (another canonical id). */
export const DUPLICATE = ACCENTED + 1;
export const TOTAL_SONGS = DUPLICATE + 1;
/** Artist 7's first 8 songs (84-91) have a listening history on the Jellyfin server. */
export const HISTORY_ARTIST = 7;
export const HISTORY_SONGS = 8;

export const JELLY = 'srv-jelly';
export const NAVI = 'srv-navi';
export const LYRION = 'srv-lyrion';

export const SECRET = 'index-test-internal-secret-0123456789abcdef';

/** Navidrome holds every song except those of artists 50-59. */
export function onNavidrome(i: number): boolean {
  const a = Math.floor(i / SONGS_PER_ARTIST);
  return !(i < BASE_SONGS && a >= 50 && a < 60);
}
/** Lyrion holds every 100th base song (1%: songs 0, 100, ..., 1100, each of another artist). */
export function onLyrion(i: number): boolean {
  return i < BASE_SONGS && i % 100 === 0;
}
export const naviId = (i: number) => `nd-${i}`;
export const lyrionId = (i: number) => String(100000 + i);

export interface Fixture {
  db: TestDatabase;
  peers: FakePeers;
  peersUrl: string;
  jellyfin: FakeJellyfin;
  jellyfinStarted: StartedFake;
  bus: Bus;
  svc: IndexService;
  songs: SyntheticSong[];
  /** Raw vectors by canonical id. */
  vectors: Map<string, Float32Array>;
  /** Jellyfin provider id of song i. */
  jellyId(i: number): string;
  /** Signed identity headers for a server (null = no server configured). */
  as(serverId: string | null, role?: 'admin' | 'user'): Record<string, string>;
  /** Another service instance on the same database and peers; `env` adds settings (e.g. `INDEX_VECTOR_MODE`). */
  build(options?: { rebuildOnStart?: boolean; env?: Record<string, string> }): IndexService;
  close(): Promise<void>;
}

/** Lyrion history stub: the plugin sends no credentials, the server's stored ones are used. */
export class StubHistoryClient {
  constructor(private readonly history: ProviderTrack[]) {}
  getListeningHistory(limit: number): Promise<ProviderTrack[]> {
    return Promise.resolve(this.history.slice(0, limit));
  }
}

/**
 * Builds the test world: synthetic catalogue on three servers, fake peers, fake Jellyfin, real PostgreSQL, in-process bus.
 * `env`: index settings of every service the fixture builds (`build`'s own `env` on top).
 */
export async function setupFixture(fixture: { env?: Record<string, string> } = {}): Promise<Fixture> {
  const songs: SyntheticSong[] = [...syntheticSongs(BASE_SONGS, { songsPerArtist: SONGS_PER_ARTIST, songsPerAlbum: SONGS_PER_ALBUM, seed: 11 })];
  // Cover band: Artist 5's songs with a small perturbation.
  for (let j = 0; j < SONGS_PER_ARTIST; j++) {
    const src = songs[5 * SONGS_PER_ARTIST + j]!;
    const v = Float32Array.from(src.vector, (x, d) => x + 0.05 * Math.sin(7 * d + j));
    songs.push({ ...src, itemId: syntheticItemId(COVER_START + j), title: `Cover ${j}`, artist: COVER_BAND, albumArtist: COVER_BAND, album: 'Twin Covers', vector: v });
  }
  songs.push({ ...songs[900]!, itemId: syntheticItemId(ACCENTED), title: 'Café Noir', artist: 'Beyoncé', albumArtist: 'Beyoncé', album: 'Été Brûlant', vector: Float32Array.from(songs[900]!.vector, (x) => -x) });
  songs.push({ ...songs[10]!, itemId: syntheticItemId(DUPLICATE), vector: Float32Array.from(songs[10]!.vector, (x, d) => x + (d % 2 ? 1e-3 : -1e-3)) });

  const artistIndexOf = (s: SyntheticSong) => (s.artist === COVER_BAND ? 100 : s.artist === 'Beyoncé' ? 101 : Number(s.artist.split(' ')[1]));
  const fakeTracks: FakeTrack[] = songs.map((s, i) => {
    const a = artistIndexOf(s);
    const played = a === HISTORY_ARTIST && i - HISTORY_ARTIST * SONGS_PER_ARTIST < HISTORY_SONGS;
    return {
      id: s.itemId,
      title: s.title,
      artist: s.artist,
      artistId: `cat-artist-${a}`,
      album: s.album,
      albumId: `cat-album-${s.album}`,
      albumArtist: s.albumArtist,
      albumArtistId: `cat-artist-${a}`,
      durationSeconds: s.durationSeconds,
      path: `/music/${s.artist}/${s.album}/${s.title}.ogg`,
      audioFile: '/dev/null',
      library: 'lib-1',
      playCount: played ? 3 : 0,
      lastPlayed: played ? new Date(Date.now() - (i % 10) * 86_400_000).toISOString() : undefined,
      addedAt: '2024-01-01T00:00:00.000Z',
    };
  });
  const jellyfin = createFakeJellyfin({ catalogue: new ArrayCatalogue([{ id: 'lib-1', name: 'Music', path: '/music' }], fakeTracks), withMoviesView: false });
  const jellyfinStarted = await jellyfin.start();

  const peers = new FakePeers();
  peers.addServer({ id: JELLY, name: 'Living room', type: 'jellyfin', isDefault: true, connection: { type: 'jellyfin', creds: { url: jellyfinStarted.url, user_id: '0'.repeat(32), token: jellyfin.token } } });
  peers.addServer({ id: NAVI, name: 'Navidrome', type: 'navidrome', isDefault: false, connection: { type: 'navidrome', creds: { url: 'http://127.0.0.1:9', user: 'u', password: 'p' } } });
  peers.addServer({ id: LYRION, name: 'Kitchen', type: 'lyrion', isDefault: false, connection: { type: 'lyrion', creds: { url: 'http://127.0.0.1:9' } } });
  const vectors = new Map<string, Float32Array>();
  songs.forEach((s, i) => {
    const { mappings: _unused, ...song } = toSnapshotTrack(s, []);
    peers.addSong(song);
    vectors.set(s.itemId, s.vector);
    const a = artistIndexOf(s);
    peers.map(JELLY, s.itemId, jellyfin.idOf(s.itemId), jellyfin.artistIdOf(`cat-artist-${a}`));
    if (onNavidrome(i)) peers.map(NAVI, s.itemId, naviId(i), `ar-nd-${a}`);
    if (onLyrion(i)) peers.map(LYRION, s.itemId, lyrionId(i), String(a));
  });
  const peersUrl = await peers.start();
  const db = await createTestDatabase('index_api');
  const bus = createBus({});
  const logger = createLogger({ service: 'index-test', level: process.env.LOG_LEVEL ?? 'error' });
  const lyrionHistory: ProviderTrack[] = [0, 100, 200].map((i) => ({ id: lyrionId(i), title: songs[i]!.title, artist: songs[i]!.artist, lastPlayed: new Date().toISOString() }));
  const clientFactory = (conn: Parameters<typeof createMediaServerClient>[0]): MediaServerClient =>
    conn.type === 'lyrion' ? (new StubHistoryClient(lyrionHistory) as unknown as MediaServerClient) : createMediaServerClient(conn);
  const built: IndexService[] = [];
  const build = (options: { rebuildOnStart?: boolean; env?: Record<string, string> } = {}) => {
    const svc = buildIndex(loadIndexConfig({ DATABASE_URL: db.url, INTERNAL_SECRET: SECRET, LOG_LEVEL: 'error', ...fixture.env, ...options.env }), {
      logger,
      bus,
      peers: () => ({ registry: peersUrl, catalogue: peersUrl, analysis: peersUrl, index: peersUrl, playlist: peersUrl }),
      migrateOnStart: true,
      rebuild: { snapshotPageSize: 400, vectorBatchSize: 300, cellFlushBytes: 64 * 1024 },
      rebuildOnStart: options.rebuildOnStart ?? true,
      clientFactory,
    });
    built.push(svc);
    return svc;
  };
  const svc = build();
  await svc.start();
  await svc.rebuild.idle();
  return {
    db,
    peers,
    peersUrl,
    jellyfin,
    jellyfinStarted,
    bus,
    svc,
    songs,
    vectors,
    jellyId: (i) => jellyfin.idOf(songs[i]!.itemId),
    as: (serverId, role = 'user') => signIdentity({ sub: 'u-1', username: 'tester', role, via: 'bearer', ...(serverId ? { serverId } : {}) }, SECRET),
    build,
    async close() {
      for (const s of built) await s.stop();
      await bus.close();
      await peers.stop();
      await jellyfinStarted.close();
      await db.drop();
    },
  };
}
