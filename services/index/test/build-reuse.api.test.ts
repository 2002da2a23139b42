import 'reflect-metadata';
import { createBus, createLogger, type Bus } from '@polyphony/platform';
import { createTestDatabase, type TestDatabase, FakePeers, syntheticSongs, toSnapshotTrack } from '@polyphony/testkit';
import { defaultNlist } from '@polyphony/vector-engine';
import { buildIndex, loadIndexConfig, type IndexService } from '../src';
import { ArtistModel } from '../src/artists/artist-model';
import type { Generation } from '../src/core/generation';
import type { RebuildOutcome } from '../src/generation/build-run';
import { LIVE_DRIFT_REASON } from '../src/generation/live/drift';
import { RequestScope } from '../src/core/scope';
import { BALL_COMPACT_MIN_ROWS, BALL_DIM, buildPoincareBall, type PoincareBall } from '../src/hyperbolic/ball';

/**
 * Generation reuse (issue 35, generation/reuse.ts): a build after a small catalogue change keeps the serving
 * generation's PCA basis, IVF centroids and the cells of unchanged songs, the map positions of unchanged songs and
 * the mixtures of unchanged artists, the Poincaré ball's basis and the ball rows of unchanged songs, and what it
 * keeps is what fitting with that basis gives (the artists are fitted again here without reuse and compared
 * bitwise; the ball is compared with a second instance's load of the stored generation). Over the threshold the build lays out and fits everything. Real PostgreSQL (testkit).
 */
const SONGS = 1000;
const PER_ARTIST = 10;

let db: TestDatabase;
let peers: FakePeers;
let bus: Bus;
let svc: IndexService;

function addSongs(from: number, to: number): void {
  let i = 0;
  for (const s of syntheticSongs(to, { songsPerArtist: PER_ARTIST, songsPerAlbum: 5, seed: 11 })) {
    if (i >= from) {
      const { mappings: _m, ...song } = toSnapshotTrack(s, []);
      peers.addSong(song);
      peers.map('srv-a', s.itemId, `p-${i}`, `ar-${s.artist}`);
    }
    i++;
  }
}

let peersUrl = '';

/** The index service on the test database, configured as the one under test (`replica` = a second instance that only loads). */
function startService(name: string): IndexService {
  return buildIndex(loadIndexConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'error', INDEX_VECTOR_MODE: 'int8', INDEX_BUILD_WORKERS: '0', INDEX_BUILD_REUSE_MAX_CHANGED: '0.05', INDEX_BUILD_REUSE_MAX_DRIFT: '0.04' }), {
    logger: createLogger({ service: name, level: 'error' }),
    bus,
    peers: () => ({ registry: peersUrl, catalogue: peersUrl, analysis: peersUrl, index: peersUrl, playlist: peersUrl }),
    migrateOnStart: true,
    rebuildOnStart: false,
    clientFactory: () => {
      throw new Error('no media server calls in this test');
    },
  });
}

/** A second instance that loads the live generation from the database (a replica's start). */
async function startReplica(): Promise<IndexService> {
  const replica = startService('index-reuse-replica');
  await replica.start();
  return replica;
}

beforeAll(async () => {
  peers = new FakePeers();
  peers.addServer({ id: 'srv-a', name: 'A', type: 'navidrome', isDefault: true, connection: { type: 'navidrome', creds: { url: 'http://127.0.0.1:9', user: 'u', password: 'p' } } });
  addSongs(0, SONGS);
  peersUrl = await peers.start();
  db = await createTestDatabase('index_reuse');
  bus = createBus({});
  svc = startService('index-reuse-test');
  await svc.start();
}, 120_000);

afterAll(async () => {
  await svc.stop();
  await bus.close();
  await peers.stop();
  await db.drop();
});

async function build(reason = 'test'): Promise<{ gen: Generation; outcome: RebuildOutcome }> {
  await svc.rebuild.request(reason);
  await svc.rebuild.idle();
  const outcome = svc.rebuild.lastOutcome;
  if (!outcome || svc.rebuild.lastError) throw new Error(`build failed: ${svc.rebuild.lastError}`);
  return { gen: svc.state.current(), outcome };
}

/** The stored reuse lineage of a generation (`index.builds`). */
async function storedLineage(generation: number): Promise<{ trained: number | null; placed: number }> {
  const rows: Array<{ trained: number | null; placed: number }> = await svc.runtime.ds.query(`SELECT lineage_trained_rows AS trained, lineage_placed_rows AS placed FROM "index".builds WHERE generation = $1`, [generation]);
  return rows[0]!;
}

const bytes = (x: ArrayBufferView) => Buffer.from(x.buffer, x.byteOffset, x.byteLength).toString('base64');

test('a small change keeps basis, positions and mixtures of what did not change; a large one rebuilds them', async () => {
  const first = await build();
  expect(first.outcome.reuse).toBeUndefined();
  // The first build is its lineage's root.
  expect(await storedLineage(first.gen.generation)).toEqual({ trained: SONGS, placed: 0 });
  const g1 = first.gen;
  expect(g1.mapMethod).toBe('umap');

  // 25 new songs (3 new artists), one song of artist 0 with a new vector, one song of artist 1 removed: 26 changed
  // rows and 2 of generation 1's gone (the removed one, the changed one's old vector) of 1024 rows, under 5 %.
  addSongs(SONGS, SONGS + 25);
  const artist0 = [...syntheticSongs(1, { songsPerArtist: PER_ARTIST, songsPerAlbum: 5, seed: 11 })][0]!;
  const moved = [...syntheticSongs(1, { songsPerArtist: PER_ARTIST, songsPerAlbum: 5, seed: 99 })][0]!;
  const { mappings: _m, ...changedSong } = toSnapshotTrack({ ...artist0, vector: moved.vector }, []);
  peers.addSong(changedSong);
  const removedId = [...syntheticSongs(PER_ARTIST + 1, { songsPerArtist: PER_ARTIST, songsPerAlbum: 5, seed: 11 })][PER_ARTIST]!.itemId;
  peers.removeSong(removedId);

  const second = await build();
  const g2 = second.gen;
  expect(g2.index.size).toBe(SONGS + 25 - 1);
  // Matched while the snapshot streamed; the IVF build kept generation 1's cells and placed only the 26 changed rows.
  // int8: generation 1's quantiser kept, only the 26 changed rows encoded.
  expect(second.outcome.reuse).toMatchObject({ changed: 26, removed: 2, map: true, matchedInSnapshot: true, cellsKept: true, cellsPlaced: 26, codesEncoded: 26 });
  // The lineage carries on: generation 1's 1000 trained rows, 28 placed without training since (stored and in memory).
  expect(second.outcome.reuse!.lineage).toEqual({ trainedRows: SONGS, placedRows: 28 });
  expect(await storedLineage(g2.generation)).toEqual({ trained: SONGS, placed: 28 });
  expect(g2.lineage).toEqual({ trainedRows: SONGS, placedRows: 28 });
  // Artist 0 (a changed song), artist 1 (a removed song) and the 3 new ones (songs 1000-1024) are fitted.
  expect(second.outcome.reuse!.artistsFitted).toBe(5);
  expect(second.outcome.reuse!.artistsKept).toBe(g2.artists.count - 5);

  // The basis is generation 1's; every unchanged song keeps its position; changed ones are placed inside the frame.
  expect(bytes(g2.pca!.axes)).toBe(bytes(g1.pca!.axes));
  expect(bytes(g2.pca!.variance)).toBe(bytes(g1.pca!.variance));
  let kept = 0;
  for (let r = 0; r < g2.index.size; r++) {
    const id = g2.index.idOf(r);
    const p = g1.index.rowOf(id);
    const unchanged = p >= 0 && id !== artist0.itemId;
    if (unchanged) {
      kept++;
      expect([g2.coords[2 * r], g2.coords[2 * r + 1]]).toEqual([g1.coords[2 * p], g1.coords[2 * p + 1]]);
    } else {
      expect(Math.abs(g2.coords[2 * r]!)).toBeLessThanOrEqual(1.0001);
      expect(Math.abs(g2.coords[2 * r + 1]!)).toBeLessThanOrEqual(1.0001);
    }
  }
  expect(kept).toBe(SONGS - 2);

  // Kept cells: generation 1's centroids; every unchanged song in its generation-1 cell; every changed one in the cell
  // of its nearest centroid (highest dot product, ties to the lower cell: the live library's rule).
  expect(g2.index.nlist).toBe(g1.index.nlist);
  const c1 = g1.index.parts().centroids;
  expect(bytes(g2.index.parts().centroids)).toBe(bytes(c1));
  const dim = g1.index.dim;
  const [q1, q2] = [g1.index.parts(), g2.index.parts()];
  expect(q2.quantised!.quantiser.toParams()).toEqual(q1.quantised!.quantiser.toParams());
  const cs = q1.quantised!.quantiser.codeSize;
  let placed = 0;
  for (let r = 0; r < g2.index.size; r++) {
    const id = g2.index.idOf(r);
    const p = g1.index.rowOf(id);
    if (p >= 0 && id !== artist0.itemId) {
      expect(g2.index.cellOf(r)).toBe(g1.index.cellOf(p));
      // ... and its int8 code is generation 1's, byte for byte.
      const [s1, s2] = [q1.slotOfRow[p]! * cs, q2.slotOfRow[r]! * cs];
      expect(Buffer.from(q2.quantised!.codes.subarray(s2, s2 + cs)).equals(Buffer.from(q1.quantised!.codes.subarray(s1, s1 + cs)))).toBe(true);
      continue;
    }
    placed++;
    const v = g2.index.getVector(r);
    let best = 0;
    let bestScore = -Infinity;
    for (let c = 0; c < g1.index.nlist; c++) {
      let d = 0;
      for (let i = 0; i < dim; i++) d += c1[c * dim + i]! * v[i]!;
      if (d > bestScore) [best, bestScore] = [c, d];
    }
    // float64 sums in another order than the kernel's: equal up to a near-tie
    const got = g2.index.cellOf(r);
    if (got !== best) {
      let dg = 0;
      for (let i = 0; i < dim; i++) dg += c1[got * dim + i]! * v[i]!;
      expect(bestScore - dg).toBeLessThan(1e-9);
    }
  }
  expect(placed).toBe(26);

  // Kept mixtures are exactly what a fit of this generation's rows with the same basis gives.
  const refit = await ArtistModel.fit(g2.index, g2.artists.artistOfRow, g2.artists.keys, g2.artists.names, g2.pca!.variance);
  expect(refit.count).toBe(g2.artists.count);
  for (let a = 0; a < refit.count; a++) {
    const x = refit.record(a);
    const y = g2.artists.record(a);
    expect([y.key, bytes(y.weights), bytes(y.means), bytes(y.variances), bytes(y.songRows), bytes(y.componentSizes)]).toEqual([
      x.key,
      bytes(x.weights),
      bytes(x.means),
      bytes(x.variances),
      bytes(x.songRows),
      bytes(x.componentSizes),
    ]);
  }

  // Similar songs of a generation that kept parts answer from its own rows (an unchanged song finds its artist).
  const seedRow = g2.index.rowOf(g1.index.idOf(5 * PER_ARTIST));
  const hits = g2.index.search(g2.index.getVector(seedRow), { k: 5, exclude: [seedRow] });
  expect(hits.length).toBe(5);

  // The Poincaré ball: generation 1's basis carried over and stored; the rows of unchanged songs copied from generation
  // 1's ball; the ball is exactly the one a fresh activation of the stored generation lays out (a second instance
  // loading it), and exactly the one projecting every row with that basis.
  expect(second.outcome.reuse!.ballKept).toBe(true);
  expect(g2.ballBasis).toBe(g1.ballBasis);
  const ball2 = await svc.hyperbolic.ball(g2);
  expect(ball2.reused).toBe(SONGS - 2);
  const projected = await buildPoincareBall(g2.index, undefined, BALL_DIM, BALL_COMPACT_MIN_ROWS, g2.ballBasis);
  expectSameBall(ball2, projected);
  const replica = await startReplica();
  try {
    const loaded = replica.state.current();
    expect(loaded.generation).toBe(g2.generation);
    expect(bytes(loaded.ballBasis!.axes)).toBe(bytes(g1.ballBasis!.axes));
    const ballR = await replica.hyperbolic.ball(loaded);
    expect(ballR.reused).toBe(0);
    expectSameBall(ballR, ball2);
    // ... so the hyperbolic answers are the same: a seed's nearest songs, their distances and radii.
    const body = { item_id: 'p-3', limit: 10 };
    const [a, b] = await Promise.all([svc.hyperbolic.similar(new RequestScope(g2, 'srv-a', svc.features.scopeDeps), body), replica.hyperbolic.similar(new RequestScope(loaded, 'srv-a', replica.features.scopeDeps), body)]);
    expect(a.results.length).toBe(10);
    expect(b).toEqual(a);
  } finally {
    await replica.stop();
  }

  // Cumulative bound (INDEX_BUILD_REUSE_MAX_DRIFT 0.04 here): 20 new songs are 1.9 % of the build, under the per-build
  // 5 %, but 28 + 20 rows placed since the 1000-row root pass 4 %: everything is trained and laid out again, and the
  // build is the new root.
  addSongs(SONGS + 25, SONGS + 45);
  const cumulative = await build();
  expect(cumulative.outcome.reuse).toMatchObject({ changed: 20, removed: 0, map: false, artistsKept: 0, cellsKept: false, cellsPlaced: 0, lineage: { trainedRows: SONGS + 44, placedRows: 0 } });
  expect(bytes(cumulative.gen.pca!.axes)).not.toBe(bytes(g2.pca!.axes));
  expect(await storedLineage(cumulative.gen.generation)).toEqual({ trained: SONGS + 44, placed: 0 });

  // A build the live library requested for measured drift keeps nothing either, however small the change.
  addSongs(SONGS + 45, SONGS + 50);
  const drift = await build(`${LIVE_DRIFT_REASON}: probe recall@10 0.850 < 0.9`);
  expect(drift.outcome.reuse).toMatchObject({ changed: 5, removed: 0, map: false, cellsKept: false, lineage: { trainedRows: SONGS + 49, placedRows: 0 } });
  // ... while the same small change without that reason keeps (lineage from the drift build's root).
  addSongs(SONGS + 50, SONGS + 52);
  const small = await build();
  expect(small.outcome.reuse).toMatchObject({ changed: 2, removed: 0, map: true, cellsKept: true, lineage: { trainedRows: SONGS + 49, placedRows: 2 } });

  // Over the threshold (200 new songs, ~16 %): everything is laid out and fitted again.
  addSongs(SONGS + 52, SONGS + 252);
  const third = await build();
  expect(third.outcome.reuse).toMatchObject({ changed: 200, removed: 0, map: false, artistsKept: 0, cellsKept: false, cellsPlaced: 0 });
  expect(third.gen.index.nlist).toBe(defaultNlist(SONGS + 251));
  expect(bytes(third.gen.pca!.axes)).not.toBe(bytes(small.gen.pca!.axes));
  // ... and the ball's basis is fitted from the new rows: the ball is the one built without a basis.
  expect(third.outcome.reuse!.ballKept).toBeUndefined();
  const ball3 = await svc.hyperbolic.ball(third.gen);
  expect(ball3.reused).toBe(0);
  expectSameBall(ball3, await buildPoincareBall(third.gen.index));
}, 300_000);

/** Every stored value of two balls is the same (points, radius, squared norms, scale, rim). */
function expectSameBall(a: PoincareBall, b: PoincareBall): void {
  expect([a.size, a.dim, a.pointScale, a.maxRadius, a.scale, a.explainedVariance]).toEqual([b.size, b.dim, b.pointScale, b.maxRadius, b.scale, b.explainedVariance]);
  expect(bytes(a.points)).toBe(bytes(b.points));
  expect(a.radius ? bytes(a.radius) : undefined).toBe(b.radius ? bytes(b.radius) : undefined);
  expect(a.norm2 ? bytes(a.norm2) : undefined).toBe(b.norm2 ? bytes(b.norm2) : undefined);
}
