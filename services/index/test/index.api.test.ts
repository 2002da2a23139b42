import { randomUUID } from 'node:crypto';
import { LeaseLostError } from '@polyphony/platform';
import { BuildQueueRepository } from '../src/generation/build-queue.repository';
import { GenerationRepository } from '../src/generation/generation.repository';
import type { TrackRepository } from '../src/core/track.repository';
import { RepointService } from '../src/generation/repoint.service';
import { ItemIdRenameStore } from '../src/generation/item-id-rename.repository';
import type { IndexService } from '../src';
import request from 'supertest';
import { cosineDistance } from '@polyphony/vectors';
import { RoutingKeys, TaskUpdatedEvent, IndexRebuilt, buildOpenApiDocument, type TrackRowDto } from '@polyphony/contracts';
import { syntheticItemId } from '@polyphony/testkit';
import {
  ACCENTED,
  ARTISTS,
  BASE_SONGS,
  COVER_BAND,
  DUPLICATE,
  HISTORY_ARTIST,
  HISTORY_SONGS,
  JELLY,
  LYRION,
  NAVI,
  SONGS_PER_ARTIST,
  TOTAL_SONGS,
  lyrionId,
  naviId,
  onLyrion,
  onNavidrome,
  setupFixture,
  type Fixture,
} from './fixtures';

let f: Fixture;
let jellyIds: Set<string>;
let naviIds: Set<string>;
let lyrionIds: Set<string>;

// The fixture builds a 1,214-song generation (UMAP layout included): over 120 s measured at load 30 on the 2 shared cores.
beforeAll(async () => {
  // Full-snapshot builds (generation reuse off): these cases count snapshot pages and fail them; the delta builds of
  // reuse (on by default) have their own suites (snapshot-delta.api, snapshot-feed.api, build-reuse.api).
  f = await setupFixture({ env: { INDEX_BUILD_REUSE_MAX_CHANGED: '0' } });
  jellyIds = new Set([...f.peers.servers.get(JELLY)!.tracks.values()]);
  naviIds = new Set([...f.peers.servers.get(NAVI)!.tracks.values()]);
  lyrionIds = new Set([...f.peers.servers.get(LYRION)!.tracks.values()]);
}, 300_000);

afterAll(async () => {
  await f?.close();
});

const get = (path: string, server: string | null = JELLY, role: 'admin' | 'user' = 'user') => request(f.svc.http).get(path).set(f.as(server, role));
const post = (path: string, body: unknown, server: string | null = JELLY, role: 'admin' | 'user' = 'user') => request(f.svc.http).post(path).set(f.as(server, role)).send(body as object);

/** Canonical index of a song from a server's provider id. */
function songIndexOf(serverId: string, providerId: string): number {
  const c = f.peers.canonicalOf(serverId, providerId);
  if (!c) throw new Error(`${providerId} is not on ${serverId}`);
  return parseInt(c.slice(4), 16);
}

function expectRowTypes(rows: TrackRowDto[]): void {
  for (const r of rows) {
    expect(typeof r.item_id).toBe('string');
    expect(typeof r.distance).toBe('number');
    expect(Number.isFinite(r.distance)).toBe(true);
    expect(r.item_id.startsWith('fp_')).toBe(false);
    expect(r.title === null || typeof r.title === 'string').toBe(true);
    expect(r.author === null || typeof r.author === 'string').toBe(true);
  }
}

describe('index build and persistence', () => {
  it('When the service starts without a stored generation, then it builds one from the catalogue snapshot', async () => {
    const res = await get('/api/index/status');
    expect(res.status).toBe(200);
    expect(res.body.generation).toBeGreaterThanOrEqual(1);
    expect(res.body.items).toBe(TOTAL_SONGS);
    expect(res.body.nlist).toBe(Math.round(8 * Math.sqrt(TOTAL_SONGS)));
    expect(res.body.building).toBe(false);
  });

  it('When a second instance starts on the same database, then it loads the live generation without rebuilding', async () => {
    const snapshotsBefore = f.peers.calls.snapshot;
    const second = f.build({ rebuildOnStart: true });
    try {
      await second.start();
      expect(second.rebuild.busy).toBe(false);
      expect(f.peers.calls.snapshot).toBe(snapshotsBefore);
      expect(second.state.current().generation).toBe(f.svc.state.current().generation);
      // Default vector mode int8: the codes the build stored with the generation are loaded, not recomputed.
      expect(second.rebuild.lastLoad?.storedCodes).toBe(true);
      const codes = (svc: IndexService) => Buffer.from(svc.state.current().index.parts().quantised!.codes);
      expect(codes(second).equals(codes(f.svc))).toBe(true);
      const seed = f.jellyId(42);
      const a = await request(f.svc.http).get(`/api/similar_tracks?item_id=${seed}&n=15`).set(f.as(JELLY));
      const b = await request(second.http).get(`/api/similar_tracks?item_id=${seed}&n=15`).set(f.as(JELLY));
      expect(b.status).toBe(200);
      expect(b.body).toEqual(a.body);
      const artists = await request(second.http).get('/api/similar_artists?artist=Artist%205&n=3').set(f.as(JELLY));
      expect(artists.body[0].artist).toBe(COVER_BAND);
      const map = await request(second.http).get('/api/map?n=5').set(f.as(JELLY));
      expect(map.body).toEqual((await get('/api/map?n=5')).body);
    } finally {
      await second.stop();
    }
  });
  it('When a replica in pq mode builds, then it stores PQ and int8 codes, and replicas of either mode load them and answer as that build does', async () => {
    const codes = (svc: IndexService) => Buffer.from(svc.state.current().index.parts().quantised!.codes);
    const seed = f.jellyId(42);
    const similar = async (svc: IndexService) => (await request(svc.http).get(`/api/similar_tracks?item_id=${seed}&n=15`).set(f.as(JELLY))).body as TrackRowDto[];
    const int8Before = codes(f.svc);
    const int8Answer = await similar(f.svc);
    const before = f.svc.state.current().generation;
    const builder = f.build({ rebuildOnStart: false, env: { INDEX_VECTOR_MODE: 'pq' } });
    const loader = f.build({ rebuildOnStart: false, env: { INDEX_VECTOR_MODE: 'pq' } });
    try {
      await builder.start();
      await builder.rebuild.request('pq build');
      await builder.rebuild.idle();
      expect(builder.rebuild.lastError).toBeUndefined();
      const gen = builder.state.current().generation;
      expect(gen).toBeGreaterThan(before);
      expect(builder.state.current().index.parts().quantised!.quantiser.kind).toBe('pq');
      // A PQ replica starting now places the stored PQ codes: same codes, same answers as the builder.
      await loader.start();
      expect(loader.state.current().generation).toBe(gen);
      expect(loader.rebuild.lastLoad?.storedCodes).toBe(true);
      expect(codes(loader).equals(codes(builder))).toBe(true);
      const pqAnswer = await similar(builder);
      expect(pqAnswer).toHaveLength(15);
      expect(await similar(loader)).toEqual(pqAnswer);
      // The int8 replica follows the bus event and loads the int8 codes the PQ build stored: the build is
      // deterministic, so they are the codes (and answers) of the int8 build of the same catalogue.
      for (let i = 0; i < 100 && f.svc.state.current().generation !== gen; i++) await new Promise((r) => setTimeout(r, 100));
      expect(f.svc.state.current().generation).toBe(gen);
      expect(f.svc.rebuild.lastLoad?.storedCodes).toBe(true);
      expect(codes(f.svc).equals(int8Before)).toBe(true);
      expect(await similar(f.svc)).toEqual(int8Answer);
    } finally {
      await loader.stop();
      await builder.stop();
    }
  }, 300_000);
});

describe('GET /api/similar_tracks', () => {
  it('When asked by a Jellyfin id, then it answers n rows of Jellyfin ids, nearest first, without the seed', async () => {
    const seed = f.jellyId(45);
    const res = await get(`/api/similar_tracks?item_id=${seed}&n=10`);
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    const rows = res.body as TrackRowDto[];
    expect(rows).toHaveLength(10);
    expectRowTypes(rows);
    for (const r of rows) expect(jellyIds.has(r.item_id)).toBe(true);
    expect(rows.map((r) => r.item_id)).not.toContain(seed);
    const d = rows.map((r) => r.distance);
    expect([...d].sort((x, y) => x - y)).toEqual(d);
    // Distances are the true cosine distances of the stored vectors.
    const seedVec = f.vectors.get(syntheticItemId(45))!;
    for (const r of rows) expect(r.distance).toBeCloseTo(cosineDistance(seedVec, f.vectors.get(syntheticItemId(songIndexOf(JELLY, r.item_id)))!), 4);
  });

  it('When max_songs_per_artist is left at its default, then no artist appears more than 3 times', async () => {
    const res = await get(`/api/similar_tracks?item_id=${f.jellyId(45)}&n=30`);
    const counts = new Map<string, number>();
    for (const r of res.body as TrackRowDto[]) counts.set(r.author!, (counts.get(r.author!) ?? 0) + 1);
    expect(Math.max(...counts.values())).toBeLessThanOrEqual(3);
    const unlimited = await get(`/api/similar_tracks?item_id=${f.jellyId(45)}&n=30&max_songs_per_artist=0`);
    const top = (unlimited.body as TrackRowDto[]).filter((r) => r.author === `Artist ${Math.floor(45 / SONGS_PER_ARTIST)}`).length;
    expect(top).toBeGreaterThan(3);
  });

  it('When eliminate_duplicates is on, then a second copy of a song (same title and artist) is dropped', async () => {
    const seed = f.jellyId(11); // Song 11, album-mate of Song 10 and its duplicate
    const on = (await get(`/api/similar_tracks?item_id=${seed}&n=25&max_songs_per_artist=0`)).body as TrackRowDto[];
    const off = (await get(`/api/similar_tracks?item_id=${seed}&n=25&max_songs_per_artist=0&eliminate_duplicates=false`)).body as TrackRowDto[];
    const copies = (rows: TrackRowDto[]) => rows.filter((r) => r.title === 'Song 10' && r.author === 'Artist 0').length;
    expect(copies(off)).toBe(2);
    expect(copies(on)).toBe(1);
    expect(off.map((r) => r.item_id)).toContain(f.jellyId(DUPLICATE));
  });

  it('jellyfin.similar_by_title: when asked by title and artist, then the seed is found by its folded names', async () => {
    const byTitle = await get('/api/similar_tracks?n=10&title=song%2045&artist=ARTIST%203');
    const byId = await get(`/api/similar_tracks?n=10&item_id=${f.jellyId(45)}`);
    expect(byTitle.status).toBe(200);
    expect(byTitle.body).toEqual(byId.body);
  });

  it('When the seed is unknown, then it answers 404 with an error', async () => {
    const res = await get('/api/similar_tracks?item_id=ffffffffffffffffffffffffffffffff&n=10');
    expect(res.status).toBe(404);
    expect(res.body.error).toMatch(/not found/i);
    const byName = await get('/api/similar_tracks?title=nope&artist=nobody');
    expect(byName.status).toBe(404);
  });

  it('When n is out of range or not a number, or no seed is given, then it answers 400', async () => {
    for (const q of ['n=0', 'n=1001', 'n=abc', 'n=2.5']) {
      const res = await get(`/api/similar_tracks?item_id=${f.jellyId(1)}&${q}`);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
    }
    expect((await get('/api/similar_tracks?n=5')).status).toBe(400);
    expect((await get('/api/similar_tracks?title=Song%201')).status).toBe(400);
  });

  it('When the Navidrome server is selected, then results carry only Navidrome ids of songs it holds', async () => {
    // Seed from artist 49, whose neighbours include artists 50-59 that Navidrome does not hold.
    const res = await get(`/api/similar_tracks?item_id=${naviId(49 * SONGS_PER_ARTIST + 3)}&n=100&max_songs_per_artist=0`, NAVI);
    expect(res.status).toBe(200);
    const rows = res.body as TrackRowDto[];
    expect(rows).toHaveLength(100);
    for (const r of rows) {
      expect(naviIds.has(r.item_id)).toBe(true);
      expect(jellyIds.has(r.item_id)).toBe(false);
      expect(onNavidrome(songIndexOf(NAVI, r.item_id))).toBe(true);
    }
  });

  it('When the sparse Lyrion server (1% of the songs) is selected, then it still gets k results, all its own ids', async () => {
    const res = await get(`/api/similar_tracks?item_id=${lyrionId(500)}&n=10`, LYRION);
    expect(res.status).toBe(200);
    const rows = res.body as TrackRowDto[];
    expect(rows).toHaveLength(10);
    for (const r of rows) {
      expect(r.item_id).toMatch(/^\d+$/);
      expect(lyrionIds.has(r.item_id)).toBe(true);
    }
    // All 11 other Lyrion songs when asking for more than exist.
    const all = await get(`/api/similar_tracks?item_id=${lyrionId(500)}&n=50`, LYRION);
    expect(all.body).toHaveLength(11);
  });

  it('When a canonical id is given, then it is accepted and results are still the server ids', async () => {
    const res = await get(`/api/similar_tracks?item_id=${syntheticItemId(300)}&n=5`, LYRION);
    expect(res.status).toBe(200);
    for (const r of res.body as TrackRowDto[]) expect(lyrionIds.has(r.item_id)).toBe(true);
  });

  it('When no media server is configured, then nothing is available and the answer is an empty array', async () => {
    const res = await get(`/api/similar_tracks?item_id=${syntheticItemId(300)}&n=5`, null);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  it('When unknown parameters (server, radius_similarity, foo) are sent, then they are ignored', async () => {
    const res = await get(`/api/similar_tracks?item_id=${f.jellyId(3)}&n=5&server=Kitchen&radius_similarity=true&foo=bar`);
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(5);
    for (const r of res.body as TrackRowDto[]) expect(jellyIds.has(r.item_id)).toBe(true);
  });
});

describe('plugin calls (plugin-calls.md)', () => {
  it('jellyfin.instant_mix: GET /api/similar_tracks?n=199&item_id=<32-hex> answers an array of 199 GUID strings', async () => {
    const res = await get(`/api/similar_tracks?n=199&item_id=${f.jellyId(77)}`);
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(199);
    for (const r of res.body as TrackRowDto[]) expect(r.item_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('jellyfin.similar_tracks: n=10&item_id&eliminate_duplicates=true', async () => {
    const res = await get(`/api/similar_tracks?n=10&item_id=${f.jellyId(78)}&eliminate_duplicates=true`);
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(10);
    expectRowTypes(res.body);
  });

  it('jellyfin.fingerprint_task: GET /api/sonic_fingerprint/generate?jellyfin_user_identifier=<username> answers rows with numeric distances, seeds first', async () => {
    // Plugins call with the API token (admin-equivalent): a user name is looked up with the stored token.
    const res = await get(`/api/sonic_fingerprint/generate?jellyfin_user_identifier=${f.jellyfin.userName}`, JELLY, 'admin');
    expect(res.status).toBe(200);
    // A non-admin may not probe media-server user names with the stored credentials.
    expect((await get(`/api/sonic_fingerprint/generate?jellyfin_user_identifier=${f.jellyfin.userName}`)).status).toBe(403);
    const rows = res.body as TrackRowDto[];
    expect(rows.length).toBe(100);
    expectRowTypes(rows);
    const historyIds = new Set(Array.from({ length: HISTORY_SONGS }, (_, j) => f.jellyId(HISTORY_ARTIST * SONGS_PER_ARTIST + j)));
    const head = rows.slice(0, HISTORY_SONGS);
    for (const r of head) {
      expect(historyIds.has(r.item_id)).toBe(true);
      expect(r.distance).toBe(0);
    }
    // The rest of the artist is the nearest to the fingerprint.
    const next = rows.slice(HISTORY_SONGS, SONGS_PER_ARTIST);
    expect(next).toHaveLength(SONGS_PER_ARTIST - HISTORY_SONGS);
    expect(next.every((r) => r.author === `Artist ${HISTORY_ARTIST}`)).toBe(true);
    for (const r of rows) expect(r.item_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('jellyfin.fingerprint: jellyfin_user_identifier + jellyfin_token + n, also as POST; an unknown user is 404', async () => {
    const res = await get(`/api/sonic_fingerprint/generate?jellyfin_user_identifier=${f.jellyfin.userName}&jellyfin_token=${f.jellyfin.token}&n=12`);
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(12);
    const viaPost = await post('/api/sonic_fingerprint/generate', { n: 12, jellyfin_user_identifier: f.jellyfin.userId });
    expect(viaPost.status).toBe(200);
    expect(viaPost.body).toEqual(res.body);
    const unknown = await get('/api/sonic_fingerprint/generate?jellyfin_user_identifier=mallory', JELLY, 'admin');
    expect(unknown.status).toBe(404);
  });

  it('lyrion.similar_tracks: item_id=<lms id>&n=25&eliminate_duplicates=true answers digit ids only', async () => {
    const res = await get(`/api/similar_tracks?item_id=${lyrionId(700)}&n=25&eliminate_duplicates=true`, LYRION);
    expect(res.status).toBe(200);
    // Lyrion holds 12 songs: all 11 others come back, each a digit string of a Lyrion track.
    expect(res.body).toHaveLength(11);
    for (const r of res.body as TrackRowDto[]) {
      expect(r.item_id).toMatch(/^\d+$/);
      expect(lyrionIds.has(r.item_id)).toBe(true);
      expect(typeof r.author).toBe('string');
    }
  });

  it('lyrion.fingerprint: GET /api/sonic_fingerprint/generate?n=25 without credentials uses the stored ones; digit ids', async () => {
    const res = await get('/api/sonic_fingerprint/generate?n=10', LYRION);
    expect(res.status).toBe(200);
    const rows = res.body as TrackRowDto[];
    expect(rows).toHaveLength(10);
    expect(rows.slice(0, 3).map((r) => r.item_id)).toEqual([lyrionId(0), lyrionId(100), lyrionId(200)]);
    for (const r of rows) expect(r.item_id).toMatch(/^\d+$/);
  });

  it('jellyfin.search_tracks: legacy title= and artist= params', async () => {
    const res = await get('/api/search_tracks?title=Song%20141&artist=Artist%2011');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([{ item_id: f.jellyId(141), title: 'Song 141', author: 'Artist 11', album: 'Album 23', album_artist: 'Artist 11' }]);
  });

  it('lyrion.search_tracks: artist=<name> lists only that server\'s songs of the artist', async () => {
    // Lyrion holds Song 100 (Artist 8), Song 800 (Artist 66), Song 1000 (Artist 83) and Song 500 (Album 83), among others.
    const res = await get('/api/search_tracks?artist=Artist%208', LYRION);
    expect(res.status).toBe(200);
    expect(res.body[0]).toEqual({ item_id: lyrionId(100), title: 'Song 100', author: 'Artist 8', album: 'Album 16', album_artist: 'Artist 8' });
    // Every hit has a word starting with "8" (word-prefix match), and all are Lyrion ids.
    for (const r of res.body) {
      expect(lyrionIds.has(r.item_id)).toBe(true);
      expect(`${r.title} ${r.author} ${r.album}`).toMatch(/(^|\s)8/);
    }
    expect(res.body.map((r: { title: string }) => r.title)).toEqual(['Song 100', 'Song 800', 'Song 1000', 'Song 500']);
  });

  it('jellyfin.similar_artists and jellyfin.similar_artists_by_id: artist=<name> or artist_id=<jellyfin artist id>', async () => {
    const byName = await get('/api/similar_artists?n=10&artist=Artist%205&ef_search=100');
    expect(byName.status).toBe(200);
    expect(byName.body).toHaveLength(10);
    expect(byName.body[0].artist).toBe(COVER_BAND);
    const jellyArtistId = f.jellyfin.artistIdOf('cat-artist-5');
    expect(byName.body.find((a: { artist: string }) => a.artist === 'Artist 5')).toBeUndefined();
    const byId = await get(`/api/similar_artists?n=10&artist_id=${jellyArtistId}`);
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual(byName.body);
    for (const a of byName.body) {
      expect(typeof a.artist).toBe('string');
      expect(typeof a.divergence).toBe('number');
      expect(a.artist_id === null || typeof a.artist_id === 'string').toBe(true);
    }
    expect(byName.body[0].artist_id).toBe(f.jellyfin.artistIdOf('cat-artist-100'));
  });

  it('navidrome.similar_artists: artist=<Navidrome artist id>&include_component_matches=false&n=10, exactly 200, provider artist ids', async () => {
    const res = await get('/api/similar_artists?artist=ar-nd-5&include_component_matches=false&n=10', NAVI);
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(10);
    expect(res.body[0]).toEqual({ artist: COVER_BAND, artist_id: 'ar-nd-100', divergence: expect.any(Number) });
    for (const a of res.body) {
      expect(a.artist_id).toMatch(/^ar-nd-\d+$/);
      // Artists 50-59 have no song on Navidrome.
      const n = Number(a.artist_id.slice(6));
      expect(n < 50 || n >= 60).toBe(true);
    }
  });

  it('navidrome.artist_radio: include_component_matches=true gives representative songs under Navidrome track ids', async () => {
    const res = await get('/api/similar_artists?artist=ar-nd-5&include_component_matches=true&n=5', NAVI);
    expect(res.status).toBe(200);
    const first = res.body[0];
    expect(first.component_matches.length).toBeGreaterThan(0);
    let songs = 0;
    for (const a of res.body) {
      for (const m of a.component_matches) {
        for (const s of [...m.artist1_representative_songs, ...m.artist2_representative_songs]) {
          expect(typeof s.item_id).toBe('string');
          expect(naviIds.has(s.item_id)).toBe(true);
          expect(typeof s.title).toBe('string');
          songs++;
        }
      }
    }
    expect(songs).toBeGreaterThan(5);
    // The cover band's representative songs are covers; artist 1's are Artist 5's songs.
    for (const m of first.component_matches) {
      for (const s of m.artist1_representative_songs) expect(Math.floor(songIndexOf(NAVI, s.item_id) / SONGS_PER_ARTIST)).toBe(5);
      for (const s of m.artist2_representative_songs) expect(s.title).toMatch(/^Cover /);
    }
  });

  it('navidrome.similar_tracks: eliminate_duplicates=true&item_id&n&radius_similarity=true, exactly 200, array with album strings', async () => {
    const res = await get(`/api/similar_tracks?eliminate_duplicates=true&item_id=${naviId(33)}&n=20&radius_similarity=true`, NAVI);
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(20);
    for (const r of res.body) {
      expect(typeof r.album).toBe('string');
      expect(r.distance).toBeGreaterThanOrEqual(0);
      expect(r.distance).toBeLessThanOrEqual(2);
    }
  });

  it('navidrome.find_path: count=25&end_song_id&max_steps=25&mood_pct=100&path_fix_size=false&start_song_id', async () => {
    const res = await get(`/api/find_path?count=25&end_song_id=${naviId(900)}&max_steps=25&mood_pct=100&path_fix_size=false&start_song_id=${naviId(20)}`, NAVI);
    expect(res.status).toBe(200);
    const path = res.body.path as TrackRowDto[];
    expect(path.length).toBeGreaterThan(10);
    expect(path.length).toBeLessThanOrEqual(25);
    expect(path[0]!.item_id).toBe(naviId(20));
    expect(path[path.length - 1]!.item_id).toBe(naviId(900));
    expect(new Set(path.map((r) => r.item_id)).size).toBe(path.length);
    for (const r of path) {
      expect(naviIds.has(r.item_id)).toBe(true);
      expect(typeof r.album).toBe('string');
      expect(typeof r.distance).toBe('number');
    }
    const sum = path.reduce((s, r) => s + r.distance, 0);
    expect(res.body.total_distance).toBeCloseTo(sum, 4);
  });

  it('jellyfin+lyrion.find_path: start_song_id, end_song_id, max_steps=12', async () => {
    const res = await get(`/api/find_path?start_song_id=${lyrionId(0)}&end_song_id=${lyrionId(1100)}&max_steps=12`, LYRION);
    expect(res.status).toBe(200);
    const path = res.body.path as TrackRowDto[];
    expect(path.length).toBeGreaterThanOrEqual(2);
    expect(path.length).toBeLessThanOrEqual(12);
    for (const r of path) expect(lyrionIds.has(r.item_id)).toBe(true);
    expect(path[0]!.item_id).toBe(lyrionId(0));
    expect(path[path.length - 1]!.item_id).toBe(lyrionId(1100));
  });

  it('jellyfin.max_distance: {max_distance:number, farthest_item_id}', async () => {
    const res = await get(`/api/max_distance?item_id=${f.jellyId(900)}`);
    expect(res.status).toBe(200);
    // Beyoncé's song is the negation of song 900: distance 2.
    expect(res.body).toEqual({ max_distance: expect.any(Number), farthest_item_id: f.jellyId(ACCENTED) });
    expect(res.body.max_distance).toBeCloseTo(2, 4);
  });

  it('lyrion.alchemy_add_sub and lyrion.alchemy_blend: {items:[{id,op,type:"song"}], n} answers {results:[rows]}', async () => {
    const items = [0, 100, 200].map((i) => ({ id: lyrionId(i), op: 'ADD', type: 'song' }));
    const res = await post('/api/alchemy', { items, n: 5 }, LYRION);
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body.results)).toBe(true);
    expect(res.body.results).toHaveLength(5);
    for (const r of res.body.results) {
      expect(r.item_id).toMatch(/^\d+$/);
      expect(items.map((i) => i.id)).not.toContain(r.item_id);
    }
    const sub = await post('/api/alchemy', { items: [...items, { id: lyrionId(300), op: 'SUBTRACT', type: 'song' }], n: 5 }, LYRION);
    expect(sub.status).toBe(200);
  });
});

describe('POST /api/alchemy', () => {
  it('When songs are added and one subtracted, then results avoid the subtracted neighbourhood and exclude the seeds', async () => {
    const items = [40, 41, 42].map((i) => ({ id: f.jellyId(i), op: 'ADD', type: 'song' }));
    const subIndex = 43;
    const res = await post('/api/alchemy', { items: [...items, { id: f.jellyId(subIndex), op: 'subtract' }], n: 10, temperature: 0, subtract_distance: 0.3 });
    expect(res.status).toBe(200);
    const results = res.body.results as TrackRowDto[];
    expect(results).toHaveLength(10);
    const subVec = f.vectors.get(syntheticItemId(subIndex))!;
    for (const r of results) {
      const i = songIndexOf(JELLY, r.item_id);
      expect([40, 41, 42]).not.toContain(i);
      expect(cosineDistance(subVec, f.vectors.get(syntheticItemId(i))!)).toBeGreaterThanOrEqual(0.3 - 1e-6);
    }
    expect(res.body.filtered_out.length).toBeGreaterThan(0);
    for (const r of res.body.filtered_out as TrackRowDto[]) expect(cosineDistance(subVec, f.vectors.get(syntheticItemId(songIndexOf(JELLY, r.item_id)))!)).toBeLessThan(0.3 + 1e-6);
    expect(res.body.add_points).toHaveLength(3);
    expect(res.body.sub_points).toHaveLength(1);
    expect(res.body.centroid_2d).toHaveLength(2);
  });

  it('When temperature is 0, then results are the deterministic top n; with a seed, sampling is reproducible', async () => {
    const items = [{ id: f.jellyId(60), op: 'ADD', type: 'song' }];
    const a = await post('/api/alchemy', { items, n: 8, temperature: 0 });
    const b = await post('/api/alchemy', { items, n: 8, temperature: 0 });
    expect(a.body.results).toEqual(b.body.results);
    const similar = await get(`/api/similar_tracks?item_id=${f.jellyId(60)}&n=8&eliminate_duplicates=false&max_songs_per_artist=0`);
    expect((a.body.results as TrackRowDto[]).map((r) => r.item_id)).toEqual((similar.body as TrackRowDto[]).map((r) => r.item_id));
    const s1 = await post('/api/alchemy', { items, n: 8, temperature: 0.05, seed: 42 });
    const s2 = await post('/api/alchemy', { items, n: 8, temperature: 0.05, seed: 42 });
    expect(s1.body.results).toEqual(s2.body.results);
  });

  it('When an artist is added, then results come from around that artist', async () => {
    const res = await post('/api/alchemy', { items: [{ id: 'Artist 9', op: 'ADD', type: 'artist' }], n: 10, temperature: 0 });
    expect(res.status).toBe(200);
    expect((res.body.results as TrackRowDto[]).filter((r) => r.author === 'Artist 9').length).toBeGreaterThanOrEqual(8);
    expect(res.body.add_points[0]).toMatchObject({ item_id: 'Artist 9', type: 'artist', title: 'Artist 9' });
  });

  it('When ids are unknown, then they are listed as unresolved; with no known ADD item the answer is 404', async () => {
    const mixed = await post('/api/alchemy', { items: [{ id: f.jellyId(5), op: 'ADD' }, { id: 'nope', op: 'ADD' }], n: 3 });
    expect(mixed.status).toBe(200);
    expect(mixed.body.unresolved).toEqual(['nope']);
    const none = await post('/api/alchemy', { items: [{ id: 'nope', op: 'ADD' }], n: 3 });
    expect(none.status).toBe(404);
  });

  it('When the body is malformed, empty or only subtracts, then it answers 400', async () => {
    expect((await post('/api/alchemy', {})).status).toBe(400);
    expect((await post('/api/alchemy', { items: [{ id: 'x', op: 'MULTIPLY' }] })).status).toBe(400);
    expect((await post('/api/alchemy', { items: [{ id: f.jellyId(5), op: 'ADD' }], n: 0 })).status).toBe(400);
    expect((await post('/api/alchemy', { items: [{ id: f.jellyId(5), op: 'SUBTRACT' }] })).status).toBe(400);
    const raw = await request(f.svc.http).post('/api/alchemy').set(f.as(JELLY)).set('content-type', 'application/json; charset=utf-8').send('{"items": [');
    expect(raw.status).toBe(400);
    const empty = await request(f.svc.http).post('/api/alchemy').set(f.as(JELLY));
    expect(empty.status).toBe(400);
  });
});

describe('GET /api/similar_artists', () => {
  it('When the artist id is newer than the index build, then the catalogue\'s artist links resolve it', async () => {
    const song = 6 * SONGS_PER_ARTIST + 2;
    f.peers.map(NAVI, syntheticItemId(song), naviId(song), 'ar-nd-new6');
    const res = await get('/api/similar_artists?artist=ar-nd-new6&n=3', NAVI);
    expect(res.status).toBe(200);
    const byName = await get('/api/similar_artists?artist=Artist%206&n=3', NAVI);
    expect(res.body).toEqual(byName.body);
    expect((await get('/api/similar_artists?artist=ar-nd-unknown&n=3', NAVI)).status).toBe(404);
  });

  it('When the artist is unknown, then it answers 404; n out of range or no artist is 400', async () => {
    expect((await get('/api/similar_artists?artist=Nobody')).status).toBe(404);
    expect((await get('/api/similar_artists?artist=Artist%201&n=0')).status).toBe(400);
    expect((await get('/api/similar_artists')).status).toBe(400);
  });

  it('When the sparse server is selected, then only artists with songs there are listed, with their Lyrion ids', async () => {
    const res = await get('/api/similar_artists?artist=Artist%205&n=50', LYRION);
    expect(res.status).toBe(200);
    const lyrionArtists = new Set(Array.from({ length: ARTISTS }, (_, a) => a).filter((a) => Array.from({ length: SONGS_PER_ARTIST }, (_, j) => a * SONGS_PER_ARTIST + j).some(onLyrion)));
    expect(res.body.length).toBeGreaterThan(0);
    for (const a of res.body) {
      expect(lyrionArtists.has(Number(a.artist.split(' ')[1]))).toBe(true);
      expect(a.artist_id).toBe(a.artist.split(' ')[1]);
    }
  });
});

describe('POST /api/album_creation/generate', () => {
  const artistOf = (serverId: string, providerId: string) => f.songs.find((x) => x.itemId === f.peers.canonicalOf(serverId, providerId))!.artist;

  it('When a song seeds an album, then it is 12 tracks of the selected server in sequence, with roles, stats and the artist caps', async () => {
    const seed = f.jellyId(40);
    const res = await post('/api/album_creation/generate', { seed_type: 'song', item_id: seed });
    expect(res.status).toBe(200);
    const album = res.body as { seed: { type: string; label: string }; suggested_name: string; tracks: Array<{ item_id: string; slot: number; role: string; author: string }>; stats: Record<string, number | string> };
    expect(album.seed).toEqual({ type: 'song', label: 'Song 40 - Artist 3' });
    expect(album.suggested_name).toBe('Around Song 40');
    expect(album.tracks).toHaveLength(12);
    expect(album.tracks.map((t) => t.slot)).toEqual([...Array(12).keys()].map((i) => i + 1));
    expect(album.tracks.map((t) => t.role)).toEqual(['opener', 'single', 'single', ...Array(8).fill('track'), 'closer']);
    for (const t of album.tracks) expect(jellyIds.has(t.item_id)).toBe(true);
    expect(album.tracks.map((t) => t.item_id)).toContain(seed);
    expect(new Set(album.tracks.map((t) => t.item_id)).size).toBe(12);
    // At most 4 (a third) of the seed's artist, at most 2 of any other.
    const counts = new Map<string, number>();
    for (const t of album.tracks) counts.set(artistOf(JELLY, t.item_id), (counts.get(artistOf(JELLY, t.item_id)) ?? 0) + 1);
    for (const [artist, n] of counts) expect(n).toBeLessThanOrEqual(artist === 'Artist 3' ? 4 : 2);
    expect(album.stats).toMatchObject({ tracks: 12, artists: counts.size, opener_style: 'bang' });
    expect(album.stats.target_cohesion as number).toBeLessThanOrEqual(0.86);
  });

  it('When another server is selected, then the album holds only its songs in its ids; length is honoured', async () => {
    const seed = naviId([...Array(200).keys()].find((i) => onNavidrome(i))!);
    const res = await post('/api/album_creation/generate', { seed_type: 'song', item_id: seed, length: 5 }, NAVI);
    expect(res.status).toBe(200);
    expect(res.body.tracks).toHaveLength(5);
    for (const t of res.body.tracks as Array<{ item_id: string }>) expect(naviIds.has(t.item_id)).toBe(true);
  });

  it('When the seed is bad, then 400 says why; a text seed without learned tags is 503', async () => {
    expect((await post('/api/album_creation/generate', { seed_type: 'song', item_id: 'nope' })).status).toBe(400);
    expect((await post('/api/album_creation/generate', { seed_type: 'song' })).status).toBe(400);
    expect((await post('/api/album_creation/generate', { seed_type: 'song', item_id: f.jellyId(40), length: 2 })).status).toBe(400);
    expect((await post('/api/album_creation/generate', { seed_type: 'vibes', query: 'calm piano' })).status).toBe(400);
    // A song of another server is not a seed here.
    const offNavi = [...Array(BASE_SONGS).keys()].find((i) => !onNavidrome(i))!;
    const notHere = await post('/api/album_creation/generate', { seed_type: 'song', item_id: syntheticItemId(offNavi) }, NAVI);
    expect(notHere.status).toBe(400);
    expect(notHere.body.error).toMatch(/not on the selected server/);
    const words = await post('/api/album_creation/generate', { seed_type: 'text', query: 'calm piano' });
    expect(words.status).toBe(503);
    expect(words.body.code).toBe('tags_unavailable');
  });
});

describe('search', () => {
  it('When the query has other accents and case, then it still matches (accent- and case-insensitive)', async () => {
    const res = await get('/api/search_tracks?search_query=cafe%20NOIR%20beyonce');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([{ item_id: f.jellyId(ACCENTED), title: 'Café Noir', author: 'Beyoncé', album: 'Été Brûlant', album_artist: 'Beyoncé' }]);
    const ext = await get('/external/search?search_query=%C3%89T%C3%89%20brulant');
    expect(ext.body).toEqual(res.body);
  });

  it('When several songs match, then they are ranked by title 3 / artist 2 / album 1 per token, and paging works', async () => {
    const res = await get('/api/search_tracks?search_query=song%2012&limit=100');
    expect(res.status).toBe(200);
    const rows = res.body as Array<{ title: string; author: string; album: string }>;
    // Every song where both tokens start a word: Song 12, Artist 12's songs, Song 120-129, Albums 12 and 120-129.
    const expected = f.songs.filter((x) => ['song', '12'].every((t) => ` ${x.title} ${x.artist} ${x.album}`.toLowerCase().includes(` ${t}`)));
    expect(rows).toHaveLength(expected.length);
    const scores = rows.map((r) => searchScore(['song', '12'], r));
    for (let i = 1; i < scores.length; i++) expect(scores[i]!).toBeLessThanOrEqual(scores[i - 1]!);
    expect(rows[0]!.title).toBe('Song 12');
    expect(rows.slice(1, 1 + SONGS_PER_ARTIST).every((r) => r.author === 'Artist 12')).toBe(true);
    const page2 = await get('/api/search_tracks?search_query=song%2012&start=5&end=10');
    expect(page2.body).toEqual(res.body.slice(5, 10));
    const byAlbum = await get('/api/search_tracks?search_query=album%2031&limit=100');
    expect(byAlbum.body[0].title).toBe('Song 31');
    const albumScores = (byAlbum.body as Array<{ title: string; author: string; album: string }>).map((r) => searchScore(['album', '31'], r));
    for (let i = 1; i < albumScores.length; i++) expect(albumScores[i]!).toBeLessThanOrEqual(albumScores[i - 1]!);
  });

  it('When paging parameters are out of range, then it answers 400; an empty query answers []', async () => {
    expect((await get('/api/search_tracks?search_query=song&limit=501')).status).toBe(400);
    expect((await get('/api/search_tracks?search_query=song&start=10&end=5')).status).toBe(400);
    expect((await get('/api/search_tracks')).body).toEqual([]);
  });
});

describe('GET /api/map', () => {
  it('When asked for 50 %, then it answers the server\'s songs with 2-D coordinates under its ids', async () => {
    const full = await get('/api/map?percent=100', NAVI);
    expect(full.status).toBe(200);
    expect(full.body.projection).toBe('umap');
    expect(full.body.items).toHaveLength(naviIds.size);
    const half = await get('/api/map?percent=50', NAVI);
    expect(half.body.items.length).toBeGreaterThan(naviIds.size * 0.4);
    expect(half.body.items.length).toBeLessThan(naviIds.size * 0.6);
    for (const it of half.body.items) {
      expect(naviIds.has(it.item_id)).toBe(true);
      expect(it.embedding_2d).toHaveLength(2);
      for (const c of it.embedding_2d) expect(Math.abs(c)).toBeLessThan(1.5);
    }
    const ten = await get('/api/map?n=10', LYRION);
    expect(ten.body.items).toHaveLength(10);
    expect((await get('/api/map?percent=33')).status).toBe(400);
  });

  it('When the projection is built, then songs of one artist lie closer together than random songs', async () => {
    const res = await get('/api/map', JELLY);
    const byId = new Map((res.body.items as Array<{ item_id: string; embedding_2d: [number, number] }>).map((i) => [i.item_id, i.embedding_2d]));
    const dist = (a: [number, number], b: [number, number]) => Math.hypot(a[0] - b[0], a[1] - b[1]);
    let within = 0;
    let across = 0;
    for (let a = 0; a < 20; a++) {
      within += dist(byId.get(f.jellyId(a * SONGS_PER_ARTIST))!, byId.get(f.jellyId(a * SONGS_PER_ARTIST + 1))!);
      across += dist(byId.get(f.jellyId(a * SONGS_PER_ARTIST))!, byId.get(f.jellyId(((a + 7) % ARTISTS) * SONGS_PER_ARTIST))!);
    }
    expect(within).toBeLessThan(across);
  });
});

describe('GET /api/sync and /external/*', () => {
  it('When paging through a server, then every track it holds comes exactly once under its own id', async () => {
    const seen: string[] = [];
    let next: string | null = null;
    let pages = 0;
    do {
      const res: request.Response = await get(`/api/sync?limit=300${next ? `&next_page=${next}` : ''}`, NAVI);
      expect(res.status).toBe(200);
      expect(res.body.provider_type).toBe('navidrome');
      expect(res.body.total_tracks).toBe(naviIds.size);
      seen.push(...(res.body.tracks as Array<{ id: string }>).map((t) => t.id));
      next = res.body.next_page;
      expect(res.body.has_more).toBe(next !== null);
      pages++;
    } while (next);
    expect(pages).toBe(Math.ceil(naviIds.size / 300));
    expect(seen.length).toBe(naviIds.size);
    expect(new Set(seen)).toEqual(naviIds);
  });

  it('When ids are given, then known ones come back under the caller\'s id with full rows; others are omitted', async () => {
    const res = await get(`/api/sync?ids=${lyrionId(100)},${lyrionId(200)},${lyrionId(101)},${f.jellyId(300)}`, LYRION);
    expect(res.status).toBe(200);
    expect(res.body.tracks.map((t: { id: string }) => t.id)).toEqual([lyrionId(100), lyrionId(200)]);
    const t = res.body.tracks[0];
    expect(t).toMatchObject({ title: 'Song 100', artist: 'Artist 8', album: 'Album 16', tempo: 120, key: 'C', scale: 'major' });
    expect(typeof t.fp).toBe('string');
    const emb = new Float32Array(new Uint8Array(Buffer.from(t.embedding, 'base64')).buffer);
    expect(Array.from(emb)).toEqual(Array.from(f.vectors.get(syntheticItemId(100))!));
    const indexOnly = await get(`/api/sync?fields=index&ids=${lyrionId(100)}`, LYRION);
    expect(indexOnly.body.tracks).toEqual([{ id: lyrionId(100), fp: t.fp }]);
    expect((await get('/api/sync?limit=1001', LYRION)).status).toBe(400);
  });

  it('When get_score and get_embedding are asked by the server id, then they echo it; another server\'s id is 404', async () => {
    const score = await get(`/external/get_score?id=${lyrionId(200)}`, LYRION);
    expect(score.status).toBe(200);
    expect(score.body).toMatchObject({ item_id: lyrionId(200), title: 'Song 200', author: 'Artist 16', album: 'Album 33' });
    const emb = await get(`/external/get_embedding?id=${lyrionId(200)}`, LYRION);
    expect(emb.body.item_id).toBe(lyrionId(200));
    expect(emb.body.embedding).toHaveLength(200);
    expect(emb.body.embedding[3]).toBeCloseTo(f.vectors.get(syntheticItemId(200))![3]!, 5);
    expect((await get(`/external/get_score?id=${f.jellyId(200)}`, LYRION)).status).toBe(404);
    expect((await get(`/external/get_embedding?id=${syntheticItemId(201)}`, LYRION)).status).toBe(404);
    const track = await get(`/api/track?item_id=${syntheticItemId(200)}`, LYRION);
    expect(track.body.item_id).toBe(lyrionId(200));
    expect((await get('/external/get_score')).status).toBe(400);
  });
});

describe('hyperbolic exploration (/api/hyperbolic/*)', () => {
  const norm = (v: number[]) => Math.hypot(...v);
  /** Poincaré distance, written out here (arcosh form) as the oracle of the answers. */
  const dist = (x: number[], y: number[]) => Math.acosh(1 + (2 * x.reduce((s, v, i) => s + (v - y[i]!) ** 2, 0)) / ((1 - norm(x) ** 2) * (1 - norm(y) ** 2)));
  const pointOf = async (id: string, server: string) => (await get(`/external/get_embedding?id=${encodeURIComponent(id)}`, server)).body as { poincare_embedding: number[]; hyperbolic_radius: number };

  it('When get_embedding is asked, then it adds the song\'s ball point and radius (norm < 1)', async () => {
    const e = await pointOf(lyrionId(200), LYRION);
    expect(e.poincare_embedding).toHaveLength(16);
    expect(norm(e.poincare_embedding)).toBeCloseTo(e.hyperbolic_radius, 5);
    expect(e.hyperbolic_radius).toBeGreaterThanOrEqual(0);
    expect(e.hyperbolic_radius).toBeLessThan(1);
  });

  it('When similar songs are asked on a server, then they are that server\'s songs at the Poincaré distance get_embedding implies', async () => {
    const seed = naviId(3);
    const res = await post('/api/hyperbolic/similar', { item_id: seed, limit: 20 }, NAVI);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ mode: 'similar', seed_item_id: seed, radial_spread: 0.5, count: 20 });
    expect(res.body.results).toHaveLength(20);
    const ids = res.body.results.map((r: { item_id: string }) => r.item_id) as string[];
    expect(ids.every((id) => naviIds.has(id))).toBe(true);
    expect(ids).not.toContain(seed);
    const s = await pointOf(seed, NAVI);
    expect(res.body.seed_radius).toBeCloseTo(s.hyperbolic_radius, 5);
    for (const r of res.body.results.slice(0, 3)) {
      const p = await pointOf(r.item_id, NAVI);
      expect(r.distance).toBeCloseTo(dist(s.poincare_embedding, p.poincare_embedding), 3);
      expect(r.hyperbolic_radius).toBeCloseTo(p.hyperbolic_radius, 5);
      expect(Math.hypot(...(r.disc as number[]))).toBeCloseTo(r.hyperbolic_radius, 4);
    }
    // With the largest spread the ranking is (almost) the plain distance: the first is the nearest of them all.
    const free = await post('/api/hyperbolic/similar', { item_id: seed, limit: 20, radial_spread: 0.99 }, NAVI);
    const d = free.body.results.map((r: { distance: number }) => r.distance) as number[];
    expect(d[0]).toBe(Math.min(...d));
  });

  it('When roots or niche songs are asked, then they lie nearer the centre or farther out than the seed', async () => {
    const seed = naviId(30);
    const roots = await post('/api/hyperbolic/similar', { item_id: seed, mode: 'roots', limit: 15, radial_spread: 0.6 }, NAVI);
    const niche = await post('/api/hyperbolic/similar', { item_id: seed, mode: 'niche', limit: 15 }, NAVI);
    expect(roots.status).toBe(200);
    expect(niche.status).toBe(200);
    const r0 = roots.body.seed_radius as number;
    expect(roots.body.results.length + niche.body.results.length).toBeGreaterThan(0);
    for (const r of roots.body.results) expect(r.hyperbolic_radius).toBeLessThan(r0);
    for (const r of niche.body.results) expect(r.hyperbolic_radius).toBeGreaterThan(r0);
    // Diving deeper (larger spread) finds roots nearer the centre on average.
    const shallow = await post('/api/hyperbolic/similar', { item_id: seed, mode: 'roots', limit: 15, radial_spread: 0 }, NAVI);
    const mean = (xs: Array<{ hyperbolic_radius: number }>) => xs.reduce((a, x) => a + x.hyperbolic_radius, 0) / Math.max(1, xs.length);
    if (roots.body.results.length && shallow.body.results.length) expect(mean(roots.body.results)).toBeLessThanOrEqual(mean(shallow.body.results));
  });

  it('When the seed is unknown, on another server, or the body is out of range, then 404 / 400 in the error envelope', async () => {
    expect((await post('/api/hyperbolic/similar', { item_id: 'no-such-song' }, NAVI)).status).toBe(404);
    // Song 600 (artist 50) is not on Navidrome; its Jellyfin id is unknown there.
    const other = await post('/api/hyperbolic/similar', { item_id: syntheticItemId(600) }, NAVI);
    expect(other.status).toBe(404);
    expect(other.body).toMatchObject({ code: 'not_found' });
    expect((await post('/api/hyperbolic/similar', { item_id: naviId(3), mode: 'sideways' }, NAVI)).status).toBe(400);
    expect((await post('/api/hyperbolic/similar', { item_id: naviId(3), radial_spread: 1 }, NAVI)).body.code).toBe('validation_failed');
  });

  it('When a journey is asked, then it goes from start to end through the server\'s songs along the sampled path', async () => {
    const [a, b] = [lyrionId(0), lyrionId(1100)];
    const res = await post('/api/hyperbolic/journey', { start_item_id: a, end_item_id: b, length: 5 }, LYRION);
    expect(res.status).toBe(200);
    const songs = res.body.results as Array<{ item_id: string; step: number; t: number; is_endpoint: boolean; distance: number }>;
    expect(songs).toHaveLength(5);
    expect(songs[0]).toMatchObject({ item_id: a, step: 0, t: 0, is_endpoint: true, distance: 0 });
    expect(songs[4]).toMatchObject({ item_id: b, step: 4, t: 1, is_endpoint: true });
    expect(songs.slice(1, 4).every((s) => !s.is_endpoint && lyrionIds.has(s.item_id))).toBe(true);
    expect(new Set(songs.map((s) => s.item_id)).size).toBe(5);
    expect(songs.map((s) => s.t)).toEqual([0, 0.25, 0.5, 0.75, 1]);
    const [pa, pb] = [await pointOf(a, LYRION), await pointOf(b, LYRION)];
    expect(res.body.geodesic_length).toBeCloseTo(dist(pa.poincare_embedding, pb.poincare_embedding), 3);
    expect(res.body.start_radius).toBeCloseTo(pa.hyperbolic_radius, 5);
    expect(res.body.path).toHaveLength(33);
    expect(res.body.path[0].radius).toBeCloseTo(pa.hyperbolic_radius, 4);
    // Diving towards the centre: a longer path whose apex lies nearer the centre.
    const dive = await post('/api/hyperbolic/journey', { start_item_id: a, end_item_id: b, length: 5, ancestry_dive: 0.9 }, LYRION);
    expect(dive.body.apex.radius).toBeLessThan(res.body.apex.radius + 1e-9);
    expect(dive.body.geodesic_length).toBeGreaterThanOrEqual(res.body.geodesic_length - 1e-6);
    const same = await post('/api/hyperbolic/journey', { start_item_id: a, end_item_id: a }, LYRION);
    expect(same.status).toBe(400);
    expect(same.body.error).toMatch(/same song/);
    expect((await post('/api/hyperbolic/journey', { start_item_id: a, end_item_id: b, length: 2 }, LYRION)).status).toBe(400);
  });

  it('When the tree is walked from the root, then every level counts the server\'s songs and the leaves are its ids', async () => {
    const root = await get('/api/hyperbolic/tree', LYRION);
    expect(root.status).toBe(200);
    expect(root.body.node).toMatchObject({ id: 'root', type: 'folder', parent_id: null, children_count: lyrionIds.size });
    let node = root.body.node;
    const seen = new Set<string>();
    // root -> mood -> genre -> cluster: follow every first folder down to the songs.
    for (let depth = 0; depth < 3; depth++) {
      const child = node.items[0];
      expect(child.type).toBe('folder');
      const res = await get(`/api/hyperbolic/tree?node_id=${encodeURIComponent(child.id)}`, LYRION);
      expect(res.status).toBe(200);
      expect(res.body.node.children_count).toBe(child.children_count);
      expect(res.body.node.parent_id).toBe(node.id);
      node = res.body.node;
    }
    for (const t of node.items) {
      expect(t.type).toBe('track');
      expect(lyrionIds.has(t.id)).toBe(true);
      seen.add(t.id);
    }
    expect(seen.size).toBe(node.children_count);
    const radii = node.items.map((t: { hyperbolic_radius: number }) => t.hyperbolic_radius) as number[];
    expect(radii).toEqual([...radii].sort((x, y) => x - y));
    expect((await get('/api/hyperbolic/tree?node_id=mood%3A%25E0%25A4%25A', LYRION)).status).toBe(400);
    const bad = await get('/api/hyperbolic/tree?node_id=genre:nothing:here', LYRION);
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('validation_failed');
  });

  it('When warmup, its status, cache_status and points are asked, then they describe the live generation for the server', async () => {
    const gen = f.svc.state.current().generation;
    const warm = await post('/api/hyperbolic/warmup', {}, LYRION);
    expect(warm.body).toMatchObject({ status: 'ready', generation: gen, songs: TOTAL_SONGS, dim: 16, error: null });
    expect((await get('/api/hyperbolic/warmup/status', LYRION)).body).toEqual(warm.body);
    const cache = await get('/api/hyperbolic/cache_status', LYRION);
    expect(cache.body).toMatchObject({ generation: gen, ready: true, songs: TOTAL_SONGS, available: lyrionIds.size, dim: 16 });
    // float32 ball below BALL_COMPACT_MIN_ROWS: 16 coordinates + radius + squared norm a song (the 2-D disc is computed on demand).
    expect(cache.body.memory_bytes).toBe(TOTAL_SONGS * (16 + 1 + 1) * 4);
    const pts = await get('/api/hyperbolic/points', LYRION);
    expect(pts.body.count).toBe(lyrionIds.size);
    expect(new Set(pts.body.items.map((p: { item_id: string }) => p.item_id))).toEqual(lyrionIds);
    const few = await get('/api/hyperbolic/points?n=5', NAVI);
    expect(few.body).toMatchObject({ count: 5, total: naviIds.size });
  });
});

describe('availability and rebuilds', () => {
  it('When a mapping is removed or added in the catalogue, then the next query after its event reflects it: no rebuild, no catalogue call per query', async () => {
    const generation = f.svc.state.current().generation;
    const snapshots = f.peers.calls.snapshot;
    const perQuery = () => f.peers.calls.resolveInput + f.peers.calls.mapOutput + f.peers.calls.availability + f.peers.calls.availabilityVersion;
    const perQueryBefore = perQuery();
    const seedRes = await get(`/api/similar_tracks?item_id=${lyrionId(0)}&n=3`, LYRION);
    const victim = (seedRes.body as TrackRowDto[])[0]!.item_id;
    const canonical = f.peers.canonicalOf(LYRION, victim)!;
    f.peers.unmap(LYRION, canonical);
    await f.bus.publish(RoutingKeys.mappingsLogged, { reason: 'test', serverId: LYRION });
    await waitFor(async () => f.svc.state.current().maps.seq === f.peers.seq);
    const after = await get(`/api/similar_tracks?item_id=${lyrionId(0)}&n=50`, LYRION);
    expect(after.body).toHaveLength(10);
    expect((after.body as TrackRowDto[]).map((r) => r.item_id)).not.toContain(victim);
    expect((await get(`/api/similar_tracks?item_id=${victim}&n=3`, LYRION)).status).toBe(404);
    // Added back (catalogue.mapping.changed.v1 also triggers the catch-up).
    f.peers.map(LYRION, canonical, victim);
    await f.bus.publish(RoutingKeys.mappingChanged, { reason: 'all servers' });
    await waitFor(async () => f.svc.state.current().maps.seq === f.peers.seq);
    const again = await get(`/api/similar_tracks?item_id=${lyrionId(0)}&n=50`, LYRION);
    expect(again.body).toHaveLength(11);
    expect((again.body as TrackRowDto[]).map((r) => r.item_id)).toContain(victim);
    expect((await get(`/api/similar_tracks?item_id=${victim}&n=3`, LYRION)).status).toBe(200);
    expect(f.svc.state.current().generation).toBe(generation);
    expect(f.peers.calls.snapshot).toBe(snapshots);
    expect(perQuery()).toBe(perQueryBefore);
    expect(perQueryBefore).toBe(0);
  });

  it('When the mapping log was pruned past the replica, then it reloads every mapping and stays correct', async () => {
    const canonical = syntheticItemId(300);
    f.peers.unmap(LYRION, canonical);
    f.peers.map(LYRION, canonical, 'lyr-new-300');
    f.peers.prunedThrough = f.peers.seq;
    f.peers.log.length = 0;
    const rowsBefore = f.peers.calls.mappingRows;
    await f.bus.publish(RoutingKeys.mappingsLogged, { reason: 'test' });
    await waitFor(async () => f.peers.calls.mappingRows > rowsBefore && f.svc.state.current().maps.seq === f.peers.seq);
    const res = await get(`/api/similar_tracks?item_id=lyr-new-300&n=3`, LYRION);
    expect(res.status).toBe(200);
    expect((await get('/api/index/status')).body).toMatchObject({ map_seq: f.peers.seq });
    f.peers.map(LYRION, canonical, lyrionId(300));
    await f.bus.publish(RoutingKeys.mappingsLogged, { reason: 'test' });
    await waitFor(async () => f.svc.state.current().maps.seq === f.peers.seq);
  });

  it('When a rebuild is requested on the bus, then queries keep working during it and the new generation reflects the catalogue', async () => {
    const completed: Array<{ generation: number; items: number; taskId?: string }> = [];
    const tasks: Array<{ state: string; type: string }> = [];
    const h1 = await f.bus.consume({ queue: 'test.index-completed', bindings: [RoutingKeys.indexRebuilt], schema: IndexRebuilt, handler: async (e) => void completed.push(e) });
    const h2 = await f.bus.consume({ queue: 'test.index-tasks', bindings: [RoutingKeys.taskUpdated], schema: TaskUpdatedEvent, handler: async (e) => void tasks.push(e) });
    const genBefore = f.svc.state.current().generation;
    // One song leaves the catalogue, one arrives (a copy of song 2 under a new id, on Jellyfin).
    const gone = syntheticItemId(1199);
    const goneJelly = f.jellyId(1199);
    f.peers.removeSong(gone);
    const newId = syntheticItemId(5000);
    const src = [...f.peers.songs.values()].find((s) => s.itemId === syntheticItemId(2))!;
    f.peers.addSong({ ...src, itemId: newId, title: 'Brand New' });
    f.peers.map(JELLY, newId, 'a'.repeat(32));
    await f.bus.publish(RoutingKeys.indexRebuildRequested, { reason: 'analysis finished', taskId: 'analysis-task-1' });
    await waitFor(() => f.svc.rebuild.busy);
    const during = await get(`/api/similar_tracks?item_id=${f.jellyId(45)}&n=10`);
    expect(during.status).toBe(200);
    expect(during.body).toHaveLength(10);
    // Generous: the build (UMAP layout included) competes with the other suites for two cores in CI.
    await waitFor(() => completed.some((c) => c.taskId === 'analysis-task-1'), 150_000);
    expect(f.svc.state.current().generation).toBeGreaterThan(genBefore);
    expect(completed.find((c) => c.taskId === 'analysis-task-1')!.items).toBe(TOTAL_SONGS);
    expect((await get(`/api/similar_tracks?item_id=${goneJelly}`)).status).toBe(404);
    const fresh = await get(`/api/similar_tracks?item_id=${'a'.repeat(32)}&n=3&eliminate_duplicates=false&max_songs_per_artist=0`);
    expect(fresh.status).toBe(200);
    expect((fresh.body as TrackRowDto[])[0]!.item_id).toBe(f.jellyId(2));
    const search = await get('/api/search_tracks?search_query=brand%20new');
    expect(search.body.map((r: { item_id: string }) => r.item_id)).toEqual(['a'.repeat(32)]);
    await waitFor(() => tasks.some((t) => t.state === 'SUCCESS'));
    expect(tasks.every((t) => t.type === 'index_build')).toBe(true);
    expect(tasks[0]!.state).toBe('RUNNING');
    await h1.stop();
    await h2.stop();
  }, 200_000);

  it('When the relabel map renames ids one to one, then the live generation is repointed in place (same generation, no rebuild)', async () => {
    const live = f.svc.state.current();
    const gen = live.generation;
    const olds = [0, 1, 2].map((r) => live.index.idOf(r));
    const renamed = olds.map((id) => `${id}-renamed`);
    const snapshotsBefore = f.peers.calls.snapshot;
    const make = (from: string[], to: string[]) =>
      new RepointService(new ItemIdRenameStore(f.svc.runtime.ds), f.svc.rebuild, async () => ({ entries: from.map((oldId, i) => ({ oldId, newId: to[i]!, kind: 'relabel' as const })), next: null }), f.svc.runtime.logger);
    expect(await make(olds, renamed).repoint(4)).toEqual({ outcome: 'repointed', renamed: 3 });
    const now = f.svc.state.current();
    expect(now.generation).toBe(gen);
    expect(f.peers.calls.snapshot).toBe(snapshotsBefore);
    for (const [i, id] of renamed.entries()) {
      expect(now.index.rowOf(id)).toBeGreaterThanOrEqual(0);
      expect(now.index.rowOf(olds[i]!)).toBe(-1);
    }
    const rows = await f.svc.runtime.ds.query(`SELECT count(*)::int AS n FROM "index".tracks WHERE item_id = ANY($1)`, [renamed]);
    expect(rows[0].n).toBe(3);
    // A map that merges two songs cannot be repointed: the caller rebuilds instead.
    const merge = new RepointService(new ItemIdRenameStore(f.svc.runtime.ds), f.svc.rebuild, async () => ({ entries: [{ oldId: renamed[0]!, newId: 'x', kind: 'merge' as const }], next: null }), f.svc.runtime.logger);
    expect((await merge.repoint(4)).outcome).toBe('rebuild');
    expect(await make(renamed, olds).repoint(4)).toEqual({ outcome: 'repointed', renamed: 3 });
    expect(f.svc.state.current().index.rowOf(olds[0]!)).toBeGreaterThanOrEqual(0);
  }, 60_000);

  it('When the catalogue relabels its ids and the map cannot be read, then the index rebuilds from the relabelled snapshot', async () => {
    const gen = f.svc.state.current().generation;
    const before = f.peers.calls.snapshot;
    await f.bus.publish(RoutingKeys.idsRelabelled, { toVersion: 4, relabelled: 3, merged: 0, unsignable: 0, detachedMappings: 0 });
    await waitFor(() => f.peers.calls.snapshot > before);
    await f.svc.rebuild.idle();
    expect(f.svc.state.current().generation).toBeGreaterThan(gen);
  }, 60_000);

  it('When the catalogue cannot be read during a rebuild, then the build fails on the task board and the previous generation stays live', async () => {
    const tasks: Array<{ state: string; message: string }> = [];
    const h = await f.bus.consume({ queue: 'test.index-tasks-fail', bindings: [RoutingKeys.taskUpdated], schema: TaskUpdatedEvent, handler: async (e) => void tasks.push(e) });
    const gen = f.svc.state.current().generation;
    f.peers.failSnapshot = true;
    try {
      const res = await post('/api/index/rebuild', {}, JELLY, 'admin');
      expect(res.status).toBe(202);
      await f.svc.rebuild.idle();
      await waitFor(() => tasks.some((t) => t.state === 'FAIL'));
      expect(tasks.find((t) => t.state === 'FAIL')!.message).toMatch(/catalogue database unavailable/);
      expect(f.svc.state.current().generation).toBe(gen);
      expect((await get(`/api/similar_tracks?item_id=${f.jellyId(45)}&n=5`)).body).toHaveLength(5);
      expect((await get('/api/index/status')).body).toMatchObject({ generation: gen, building: false });
    } finally {
      f.peers.failSnapshot = false;
      await h.stop();
    }
  });

  it('When rebuilds are requested through the API while one runs, then they are coalesced into one follow-up build; non-admins are refused', async () => {
    expect((await post('/api/index/rebuild', {}, JELLY, 'user')).status).toBe(403);
    const snapshotsBefore = f.peers.calls.snapshot;
    const first = await post('/api/index/rebuild', {}, JELLY, 'admin');
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ task_type: 'index_build', coalesced: false });
    const second = await request(f.svc.http).post('/api/index/rebuild').set(f.as(JELLY, 'admin'));
    const third = await post('/api/index/rebuild', {}, JELLY, 'admin');
    expect(second.status).toBe(202);
    expect(second.body.coalesced).toBe(true);
    expect(third.body.task_id).toBe(second.body.task_id);
    expect(third.body.task_id).not.toBe(first.body.task_id);
    const gen = f.svc.state.current().generation;
    await f.svc.rebuild.idle();
    expect(f.svc.state.current().generation).toBeGreaterThan(gen);
    // At most two builds read the snapshot (page size 400 in the fixture): the running one and one follow-up;
    // the follow-up is skipped when the running build had not yet started (taken the build lock) when the
    // later requests came: its snapshot then already covers them.
    expect([1, 2].map((builds) => builds * Math.ceil(TOTAL_SONGS / 400))).toContain(f.peers.calls.snapshot - snapshotsBefore);
  }, 90_000);

  it('When two replicas are asked to rebuild at the same time, then only one builds (one build queue on the task host) and both serve its generation', async () => {
    const second = f.build({ rebuildOnStart: false });
    try {
      await second.start();
      await f.svc.rebuild.idle();
      const gen = f.svc.state.current().generation;
      const snapshotsBefore = f.peers.calls.snapshot;
      const [a, b] = await Promise.all([
        request(f.svc.http).post('/api/index/rebuild').set(f.as(JELLY, 'admin')).send({}),
        request(second.http).post('/api/index/rebuild').set(f.as(JELLY, 'admin')).send({}),
      ]);
      expect(a.status).toBe(202);
      expect(b.status).toBe(202);
      await Promise.all([f.svc.rebuild.idle(), second.rebuild.idle()]);
      for (let i = 0; i < 100 && second.state.current().generation !== f.svc.state.current().generation; i++) await new Promise((r) => setTimeout(r, 100));
      // One snapshot read = one build; the other replica's request joined the queue and was covered by that build.
      expect(f.peers.calls.snapshot - snapshotsBefore).toBe(Math.ceil(TOTAL_SONGS / 400));
      const now = f.svc.state.current().generation;
      expect(now).toBeGreaterThan(gen);
      expect(second.state.current().generation).toBe(now);
      expect(f.svc.rebuild.lastError).toBeUndefined();
      expect(second.rebuild.lastError).toBeUndefined();
      // A request made while the other replica builds is served by a follow-up build after it, never in parallel.
      const before2 = f.peers.calls.snapshot;
      await f.svc.rebuild.request('first');
      await new Promise((r) => setTimeout(r, 50));
      const running = f.svc.rebuild.busy;
      await second.rebuild.request('second, while the first replica builds');
      await Promise.all([f.svc.rebuild.idle(), second.rebuild.idle()]);
      if (running) expect(f.peers.calls.snapshot - before2).toBeLessThanOrEqual(2 * Math.ceil(TOTAL_SONGS / 400));
      // The replica that did not build last loads the published generation from the bus event.
      for (let i = 0; i < 100 && second.state.current().generation !== f.svc.state.current().generation; i++) await new Promise((r) => setTimeout(r, 100));
      expect(second.state.current().generation).toBe(f.svc.state.current().generation);
      // Default vector mode int8: the codes the build stored with the generation are loaded, not recomputed.
      expect(second.rebuild.lastLoad?.storedCodes).toBe(true);
      const codes = (svc: IndexService) => Buffer.from(svc.state.current().index.parts().quantised!.codes);
      expect(codes(second).equals(codes(f.svc))).toBe(true);
    } finally {
      await second.stop();
    }
  }, 120_000);

  /** The build run's row (index.build_runs). */
  const buildRun = async (id: string) => (await f.svc.runtime.ds.query(`SELECT state, lease_generation, log, details FROM "index".build_runs WHERE id = $1`, [id]))[0] as { state: string; lease_generation: number; log: string[]; details: Record<string, unknown> };

  it('When the replica building the index stops mid-build, then another replica takes the build run over, builds again and the run ends SUCCESS', async () => {
    const second = f.build({ rebuildOnStart: false });
    let release = () => {};
    try {
      await second.start();
      await f.svc.rebuild.idle();
      const gen = f.svc.state.current().generation;
      f.peers.holdSnapshot = new Promise<void>((r) => (release = r));
      const held = new Promise<void>((r) => (f.peers.onSnapshotHeld = r));
      const { taskId } = await second.rebuild.request('takeover test');
      await held;
      expect(second.rebuild.runningTaskId).toBe(taskId);
      const abandoned = (await buildRun(taskId)).details.generation as number;
      expect(abandoned).toBeGreaterThan(gen);
      // SIGTERM of the building replica: its build stops and hands the lease back (rebuild.stop aborts at once).
      const stopping = second.rebuild.stop();
      f.peers.holdSnapshot = undefined;
      release();
      await stopping;
      expect((await buildRun(taskId)).state).toBe('RUNNING');
      // The other replica's claim scan (every 5 s) takes the run over and builds again from the start.
      await waitFor(async () => (await buildRun(taskId)).state !== 'RUNNING', 540_000);
      const row = await buildRun(taskId);
      expect(row.state).toBe('SUCCESS');
      expect(row.lease_generation).toBe(2);
      expect(row.log.some((l) => /resumed by index-build@/.test(l))).toBe(true);
      expect(row.details.generation).toBeGreaterThan(abandoned);
      expect(f.svc.state.current().generation).toBe(row.details.generation);
      const live = await f.svc.runtime.ds.query(`SELECT generation, task_id FROM "index".builds WHERE state = 'live'`);
      expect(live).toEqual([{ generation: String(row.details.generation), task_id: taskId }]);
      expect((await get(`/api/similar_tracks?item_id=${f.jellyId(45)}&n=5`)).body).toHaveLength(5);
    } finally {
      f.peers.holdSnapshot = undefined;
      f.peers.onSnapshotHeld = undefined;
      release();
      await second.stop();
    }
  }, 600_000);

  it('When an index build is cancelled from the task board mid-build, then the run ends REVOKED, its generation is marked failed and the previous one stays live', async () => {
    const tasks: TaskUpdatedEvent[] = [];
    const h = await f.bus.consume({ queue: 'test.index-tasks-cancel', bindings: [RoutingKeys.taskUpdated], schema: TaskUpdatedEvent, handler: async (e) => void tasks.push(e) });
    let release = () => {};
    try {
      await f.svc.rebuild.idle();
      const gen = f.svc.state.current().generation;
      f.peers.holdSnapshot = new Promise<void>((r) => (release = r));
      const held = new Promise<void>((r) => (f.peers.onSnapshotHeld = r));
      const { taskId } = await f.svc.rebuild.request('cancel test');
      await held;
      await f.bus.publish(RoutingKeys.taskCancelRequested, { taskId, type: 'index_build' });
      await waitFor(async () => (await buildRun(taskId)).state === 'REVOKED');
      f.peers.holdSnapshot = undefined;
      release();
      await f.svc.rebuild.idle();
      const abandoned = (await buildRun(taskId)).details.generation;
      expect((await f.svc.runtime.ds.query(`SELECT state FROM "index".builds WHERE generation = $1`, [abandoned]))[0]).toEqual({ state: 'failed' });
      expect(f.svc.state.current().generation).toBe(gen);
      await waitFor(() => tasks.some((t) => t.taskId === taskId && t.state === 'REVOKED'));
      expect(tasks.some((t) => t.taskId === taskId && t.state === 'SUCCESS')).toBe(false);
      expect((await get('/api/index/status')).body).toMatchObject({ generation: gen, building: false });
    } finally {
      f.peers.holdSnapshot = undefined;
      f.peers.onSnapshotHeld = undefined;
      release();
      await h.stop();
    }
  }, 600_000);

  it('When a build run was taken over, then the previous coordinator cannot activate its generation (fenced by the lease)', async () => {
    const ds = f.svc.runtime.ds;
    await f.svc.rebuild.idle();
    const gen = f.svc.state.current().generation;
    const runId = randomUUID();
    // The run as another replica holds it after a takeover (lease generation 2, live lease: no replica claims it).
    await ds.query(
      `INSERT INTO "index".build_runs (id, state, message, lease_owner, lease_generation, lease_expires_at) VALUES ($1, 'RUNNING', 'building', 'replica-b', 2, now() + interval '60 seconds')`,
      [runId],
    );
    const generations = new GenerationRepository(ds, {} as TrackRepository);
    const stale = await generations.createBuild(runId, 'fencing test');
    try {
      await expect(generations.activate(stale, null, { runId, owner: 'replica-a', generation: 1 })).rejects.toBeInstanceOf(LeaseLostError);
      expect((await ds.query(`SELECT generation FROM "index".builds WHERE state = 'live'`))[0].generation).toBe(String(gen));
      expect((await ds.query(`SELECT state FROM "index".builds WHERE generation = $1`, [stale]))[0].state).toBe('building');
      // A cancelled run cannot activate either, even under its own lease.
      await new BuildQueueRepository(ds).cancel(runId);
      await expect(generations.activate(stale, null, { runId, owner: 'replica-b', generation: 2 })).rejects.toBeInstanceOf(LeaseLostError);
    } finally {
      await ds.query(`UPDATE "index".build_runs SET state = 'REVOKED', lease_owner = NULL, lease_expires_at = NULL WHERE id = $1 AND state IN ('NEW','RUNNING')`, [runId]);
      await generations.markFailed(stale, 'fencing test');
    }
  });
});

describe('contract', () => {
  it('When the OpenAPI document is generated, then every index route is in it', () => {
    const doc = buildOpenApiDocument('test');
    for (const p of ['/api/similar_tracks', '/api/find_path', '/api/alchemy', '/api/similar_artists', '/api/sonic_fingerprint/generate', '/api/search_tracks', '/external/search', '/api/map', '/api/sync', '/external/get_score', '/external/get_embedding', '/api/track', '/api/max_distance', '/api/index/rebuild', '/api/index/status']) {
      expect(doc.paths[p]).toBeDefined();
    }
  });

  it('When a request arrives without the gateway signature, then it is refused', async () => {
    const res = await request(f.svc.http).get(`/api/similar_tracks?item_id=${f.jellyId(1)}`);
    expect(res.status).toBe(401);
  });
});

/** The ranking rule of TrackRepository.search, recomputed from a result row. */
function searchScore(tokens: string[], r: { title: string; author: string; album: string }): number {
  let score = 0;
  for (const t of tokens) {
    for (const [text, w] of [[r.title, 3], [r.author, 2], [r.album, 1]] as const) {
      const words = text.toLowerCase().split(' ');
      if (words.includes(t)) score += w;
      else if (words.some((x) => x.startsWith(t))) score += w / 2;
    }
  }
  return score;
}

async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const start = Date.now();
  while (!(await cond())) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
