import 'reflect-metadata';
import { Client } from 'pg';
import { createBus, createLogger, type Bus } from '@polyphony/platform';
import { createTestDatabase, type TestDatabase, FakePeers, syntheticLearned, syntheticSongs, toSnapshotTrack } from '@polyphony/testkit';
import { FEATURE_COLUMNS } from '../src/semantic/vocabulary';
import * as columnFill from '../src/semantic/column-fill';
import { buildIndex, loadIndexConfig, type IndexService } from '../src';
import type { Generation } from '../src/core/generation';
import type { RebuildOutcome } from '../src/generation/build-run';
import { TrackRepository } from '../src/core/track.repository';

/**
 * The delta snapshot (issue 35, generation/snapshot-delta.ts): a rebuild reads only the songs the catalogue's change
 * feed lists since the serving generation's mark. Equivalence: two index services on their own databases build the
 * same catalogue; after songs are added, changed, re-mapped, re-tagged and removed, one rebuilds from the delta and
 * the other from the full snapshot (the feed switched off for it), and both generations and catalogue copies are
 * compared value by value. A mark from a reset catalogue gives a full snapshot. The delta base is stored with the
 * generation (index.builds feed_*): a new index service on the same database (a restart, or a replica that did not
 * build the serving generation) takes it up and rebuilds from the delta. The delta build's provider-id maps, carried
 * from the serving generation's (MapFollower.carry), equal a full load of the new generation's. Real PostgreSQL (testkit).
 */
const SONGS = 1000;
const PER_ARTIST = 10;
const songs = (n: number) => [...syntheticSongs(n, { songsPerArtist: PER_ARTIST, songsPerAlbum: 5, seed: 17 })];

let peers: FakePeers;
let peersUrl: Promise<string> | undefined;
let bus: Bus;
const dbs: TestDatabase[] = [];
const svcs: IndexService[] = [];

function addSongs(from: number, to: number): void {
  songs(to).forEach((s, i) => {
    if (i < from) return;
    // Every other song carries MusiCNN tags (the text search's columns); the rest are untagged.
    const { mappings: _m, ...song } = toSnapshotTrack(s, [], i % 2 === 0 ? syntheticLearned(i) : undefined);
    peers.addSong(song);
    peers.map('srv-a', s.itemId, `p-${i}`, `ar-${s.artist}`);
    if (i % 3 === 0) peers.map('srv-b', s.itemId, `b-${i}`, `br-${s.artist}`);
  });
}

/** An index service on a new database `name`, or on `db` (e.g. a second service on another's database). */
async function start(name: string, url: string, db?: TestDatabase): Promise<IndexService> {
  if (!db) {
    db = await createTestDatabase(name);
    dbs.push(db);
  }
  const svc = buildIndex(loadIndexConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'error', INDEX_VECTOR_MODE: 'int8', INDEX_BUILD_WORKERS: '0', INDEX_BUILD_REUSE_MAX_CHANGED: '0.05' }), {
    logger: createLogger({ service: name, level: 'error' }),
    bus,
    peers: () => ({ registry: url, catalogue: url, analysis: url, index: url, playlist: url }),
    migrateOnStart: true,
    rebuildOnStart: false,
    clientFactory: () => {
      throw new Error('no media server calls in this test');
    },
  });
  await svc.start();
  svcs.push(svc);
  return svc;
}

beforeAll(async () => {
  peers = new FakePeers();
  for (const id of ['srv-a', 'srv-b']) peers.addServer({ id, name: id, type: 'navidrome', isDefault: id === 'srv-a', connection: { type: 'navidrome', creds: { url: 'http://127.0.0.1:9', user: 'u', password: 'p' } } });
  addSongs(0, SONGS);
  bus = createBus({});
}, 120_000);

afterAll(async () => {
  for (const s of svcs) await s.stop();
  await bus.close();
  await peers.stop();
  for (const d of dbs) await d.drop();
});

async function build(svc: IndexService): Promise<{ gen: Generation; outcome: RebuildOutcome }> {
  await svc.rebuild.request('test');
  await svc.rebuild.idle();
  const outcome = svc.rebuild.lastOutcome;
  if (!outcome || svc.rebuild.lastError) throw new Error(`build failed: ${svc.rebuild.lastError}`);
  return { gen: svc.state.current(), outcome };
}

const b64 = (x: Float32Array | Int32Array | Uint8Array) => Buffer.from(x.buffer, x.byteOffset, x.byteLength).toString('base64');

/** Everything a generation answers from, in comparable form. */
function describeGeneration(g: Generation) {
  const rows = [];
  const parts = g.index.parts();
  const q = parts.quantised!;
  const cs = q.quantiser.codeSize;
  for (let r = 0; r < g.index.size; r++) {
    const id = g.index.idOf(r);
    const s = parts.slotOfRow[r]! * cs;
    rows.push({ id, vector: b64(g.index.getVector(r)), cell: g.index.cellOf(r), code: b64(q.codes.subarray(s, s + cs)), xy: [g.coords[2 * r], g.coords[2 * r + 1]], meta: g.meta.get(r, id), artist: g.artists.artistOfRow[r] });
  }
  const artists = Array.from({ length: g.artists.count }, (_, a) => {
    const x = g.artists.record(a);
    return [x.key, b64(x.weights), b64(x.means), b64(x.variances), b64(x.songRows)];
  });
  const links = [...g.links.entries()].map((e) => `${e.serverId}|${e.key}|${e.providerId}`).sort();
  return { size: g.index.size, nlist: g.index.nlist, centroids: b64(parts.centroids), quantiser: JSON.stringify(q.quantiser.toParams()), pca: g.pca ? b64(g.pca.axes) : null, rows, artists, links, embedder: g.embedderVersion };
}

/** The text search's table of a generation (every row's columns, tagged flags, tempo, energy, column ranges). */
async function describeSemantic(svc: IndexService, g: Generation) {
  const t = await svc.semantic.table(g);
  const rows = [];
  for (let r = 0; r < t.size; r++) rows.push([g.index.idOf(r), t.tagged[r], Array.from({ length: FEATURE_COLUMNS }, (_, c) => t.raw(r, c))]);
  return { size: t.size, taggedCount: t.taggedCount, low: b64(t.low), high: b64(t.high), tempo: b64(t.tempoColumn()), energy: b64(t.energyColumn()), rows };
}

/** The catalogue copy (`index.tracks`) without the build marks. */
async function copyRows(db: TestDatabase): Promise<unknown[]> {
  const c = new Client({ connectionString: db.url });
  await c.connect();
  try {
    return (await c.query(`SELECT to_jsonb(t) - 'seen_build' - 'updated_at' AS row FROM "index".tracks t ORDER BY item_id COLLATE "C"`)).rows.map((r: { row: unknown }) => r.row);
  } finally {
    await c.end();
  }
}

/**
 * The maps of `g` (carried by a delta build) answer exactly as the maps `MapFollower.load` reads for the same index from
 * the catalogue: every provider id the log ever named on every server, every row's output and availability, the counts.
 */
async function expectMapsOfFullLoad(svc: IndexService, g: Generation): Promise<void> {
  await svc.maps.catchUp(g.maps);
  const loaded = await svc.maps.load(g.index);
  const servers = [...peers.servers.keys()];
  const ids = [...new Set(peers.log.map(([, s, p]) => `${s}\u0000${p}`))].map((k) => k.split('\u0000') as [string, string]);
  expect(ids.length).toBeGreaterThan(1000);
  for (const [s, p] of ids) if (g.maps.rowOfProvider(s, p) !== loaded.rowOfProvider(s, p)) throw new Error(`${s} ${p}: row ${g.maps.rowOfProvider(s, p)}, loaded ${loaded.rowOfProvider(s, p)}`);
  for (const s of servers) {
    for (let r = 0; r < g.index.size; r++) if (g.maps.providerOf(s, r) !== loaded.providerOf(s, r)) throw new Error(`${s} row ${r}: ${g.maps.providerOf(s, r)}, loaded ${loaded.providerOf(s, r)}`);
    expect(Array.from(g.maps.mask(s).toRows())).toEqual(Array.from(loaded.mask(s).toRows()));
  }
  const byServer = (x: Generation['maps']) => x.summary().filter((e) => e.mappings > 0).sort((a, b) => (a.serverId < b.serverId ? -1 : 1));
  expect(byServer(g.maps)).toEqual(byServer(loaded));
  expect(g.maps.seq).toBe(loaded.seq);
}

test('a rebuild from the change feed gives the generation and catalogue copy a full snapshot gives; a reset catalogue gives a full snapshot', async () => {
  const url = await (peersUrl ??= peers.start());
  const [a, b] = [await start('index_delta_a', url), await start('index_delta_b', url)];
  const [a1, b1] = [await build(a), await build(b)];
  expect(a1.outcome.delta).toBeUndefined();
  expect(a1.outcome.fullReason).toMatch(/no delta base/);
  // The two services start from the same generation (deterministic build of the same catalogue).
  expect(describeGeneration(a1.gen)).toEqual(describeGeneration(b1.gen));

  // Changes on every path: 20 new songs; a vector changed; a title changed (metadata only); a song re-mapped to
  // another provider artist on srv-b (links) and one unmapped from srv-a; two songs removed.
  addSongs(SONGS, SONGS + 20);
  const all = songs(SONGS);
  const moved = songs(1)[0]!;
  const other = [...syntheticSongs(1, { songsPerArtist: PER_ARTIST, songsPerAlbum: 5, seed: 99 })][0]!;
  const { mappings: _n, ...movedSong } = toSnapshotTrack({ ...moved, vector: other.vector }, []);
  peers.addSong(movedSong);
  const { mappings: _m, ...retitled } = toSnapshotTrack({ ...all[42]!, title: 'A new title' }, [], syntheticLearned(42));
  peers.addSong(retitled);
  // Re-tagged (new tag values) and newly tagged songs: text-search columns of changed rows.
  const { mappings: _t, ...retagged } = toSnapshotTrack(all[44]!, [], syntheticLearned(44, 123));
  peers.addSong(retagged);
  const { mappings: _u, ...tagged } = toSnapshotTrack(all[45]!, [], syntheticLearned(45));
  peers.addSong(tagged);
  peers.map('srv-b', all[30]!.itemId, 'b-30', 'br-someone-else');
  peers.unmap('srv-a', all[31]!.itemId);
  peers.removeSong(all[500]!.itemId);
  peers.removeSong(all[501]!.itemId);

  const carried = jest.spyOn(columnFill, 'carriedFill');
  // Mappings logged during the build, after the changed songs were read by id and followed by the serving maps at once:
  // a changed song (42, its row read by id) and a kept one (100) move to other provider ids on srv-a (same artist ids).
  const writeCopy = TrackRepository.prototype.upsertSnapshot;
  const midBuild = jest.spyOn(TrackRepository.prototype, 'upsertSnapshot').mockImplementationOnce(async function (this: TrackRepository, ...args) {
    peers.map('srv-a', all[42]!.itemId, 'p-42-moved', `ar-${all[42]!.artist}`);
    peers.map('srv-a', all[100]!.itemId, 'p-100-moved', `ar-${all[100]!.artist}`);
    await a.maps.catchUp(a.state.current().maps);
    expect(a.state.current().maps.seq).toBe(peers.seq);
    return writeCopy.apply(this, args);
  });
  const a2 = await build(a);
  expect(midBuild).toHaveBeenCalled();
  midBuild.mockRestore();
  // 28 songs listed (20 new, 8 changed); every other row kept unless its stored vector is not a normalisation fixed point (re-read).
  const d2 = a2.outcome.delta!;
  expect(d2).toMatchObject({ listed: 28, removed: 2 });
  expect(d2.kept + (d2.reread - d2.listed)).toBe(SONGS - 8);
  // The text-search table of the delta build was carried from the serving generation's (not read from index.tracks).
  expect(carried).toHaveBeenCalledTimes(1);
  carried.mockRestore();
  expect(a2.outcome.reuse).toMatchObject({ matchedInSnapshot: true, cellsKept: true });
  expect(a2.gen.index.size).toBe(SONGS + 20 - 2);
  // The maps were carried from the serving generation's (the first build loaded them) and equal a full load.
  expect(a1.outcome.activateMs['maps.loaded']).toBeGreaterThan(0);
  expect(a2.outcome.activateMs['maps.carried']).toBeGreaterThan(0);
  expect(a2.outcome.activateMs['maps.loaded']).toBeUndefined();
  const rowOfSong = (i: number) => a2.gen.index.rowOf(all[i]!.itemId);
  expect([a2.gen.maps.rowOfProvider('srv-a', 'p-42-moved'), a2.gen.maps.rowOfProvider('srv-a', 'p-42')]).toEqual([rowOfSong(42), -1]);
  expect([a2.gen.maps.rowOfProvider('srv-a', 'p-100-moved'), a2.gen.maps.rowOfProvider('srv-a', 'p-100')]).toEqual([rowOfSong(100), -1]);
  expect([a2.gen.maps.rowOfProvider('srv-a', 'p-31'), a2.gen.maps.rowOfProvider('srv-a', 'p-500'), a2.gen.maps.rowOfProvider('srv-b', 'b-30')]).toEqual([-1, -1, rowOfSong(30)]);
  expect(a2.gen.maps.rowOfProvider('srv-a', `p-${SONGS + 3}`)).toBe(a2.gen.index.rowOf(songs(SONGS + 4)[SONGS + 3]!.itemId));
  await expectMapsOfFullLoad(a, a2.gen);
  peers.changeFeed = false;
  const b2 = await build(b);
  peers.changeFeed = true;
  expect(b2.outcome.delta).toBeUndefined();
  expect(b2.outcome.reuse).toMatchObject({ matchedInSnapshot: true, cellsKept: true });

  const [da, db2] = [describeGeneration(a2.gen), describeGeneration(b2.gen)];
  expect(da.rows.map((r) => r.id)).toEqual(db2.rows.map((r) => r.id));
  expect(da).toEqual(db2);
  expect(da.rows.find((r) => r.id === all[42]!.itemId)!.meta!.title).toBe('A new title');
  expect(da.rows.some((r) => r.id === all[500]!.itemId)).toBe(false);
  expect(await copyRows(dbs[0]!)).toEqual(await copyRows(dbs[1]!));
  expect(a2.outcome.deletedTracks).toBe(2);
  // Text search: the carried table equals the one the full snapshot's pages filled, row by row.
  const [sa, sb] = [await describeSemantic(a, a2.gen), await describeSemantic(b, b2.gen)];
  expect(sa.taggedCount).toBeGreaterThan(400);
  expect(sa).toEqual(sb);

  // A catalogue reset (a new change-log identity): the next build reads the full snapshot, and the one after that a delta again.
  peers.changeFeedCatalogue = 'a-reset-catalogue';
  addSongs(SONGS + 20, SONGS + 21);
  const a3 = await build(a);
  expect(a3.outcome.delta).toBeUndefined();
  expect(a3.outcome.fullReason).toBe('change feed: other-catalogue');
  addSongs(SONGS + 21, SONGS + 22);
  const a4 = await build(a);
  const d4 = a4.outcome.delta!;
  expect(d4).toMatchObject({ listed: 1, removed: 0 });
  expect(d4.kept + (d4.reread - 1)).toBe(SONGS + 19);
  expect(a4.gen.index.size).toBe(SONGS + 20);
}, 300_000);

/** Stops `svc` (its database stays) and forgets it. */
async function stop(svc: IndexService): Promise<void> {
  svcs.splice(svcs.indexOf(svc), 1);
  await svc.stop();
}

/** Runs `sql` on `db`. */
async function exec(db: TestDatabase, sql: string): Promise<void> {
  const c = new Client({ connectionString: db.url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

test('a new index service on the same database rebuilds from the delta base stored with the serving generation; without the stored mark it reads the full snapshot', async () => {
  const url = await (peersUrl ??= peers.start());
  // The catalogue as the first test left it; c builds on its own database, f on another (its full-snapshot twin).
  const c1 = await start('index_delta_c', url);
  const dbC = dbs[dbs.length - 1]!;
  const f = await start('index_delta_f', url);
  const dbF = dbs[dbs.length - 1]!;
  const [g1, f1] = [await build(c1), await build(f)];
  expect(describeGeneration(g1.gen)).toEqual(describeGeneration(f1.gen));
  await stop(c1);

  // While c is down: 3 new songs, a vector changed, a title changed, a song re-mapped on srv-b, a song removed.
  const size = g1.gen.index.size;
  const before = songs(SONGS);
  addSongs(SONGS + 22, SONGS + 25);
  const other = [...syntheticSongs(2, { songsPerArtist: PER_ARTIST, songsPerAlbum: 5, seed: 123 })][1]!;
  const { mappings: _v, ...revectored } = toSnapshotTrack({ ...before[7]!, vector: other.vector }, []);
  peers.addSong(revectored);
  const { mappings: _t, ...retitled } = toSnapshotTrack({ ...before[8]!, title: 'Retitled while the index was down' }, []);
  peers.addSong(retitled);
  peers.map('srv-b', before[9]!.itemId, 'b-9', 'br-another-artist');
  peers.removeSong(before[600]!.itemId);

  // A new service on c's database serves the generation c built (loaded on start) and holds no delta base in memory.
  const c2 = await start('index_delta_c', url, dbC);
  expect(c2.state.current().generation).toBe(g1.gen.generation);
  const g2 = await build(c2);
  expect(g2.outcome.fullReason).toBeUndefined();
  expect(g2.outcome.delta).toMatchObject({ listed: 7, removed: 1 });
  expect(g2.gen.index.size).toBe(size + 3 - 1);
  expect(g2.outcome.activateMs['maps.carried']).toBeGreaterThan(0);
  await expectMapsOfFullLoad(c2, g2.gen);
  peers.changeFeed = false;
  const f2 = await build(f);
  peers.changeFeed = true;
  expect(f2.outcome.delta).toBeUndefined();
  const [dc, df] = [describeGeneration(g2.gen), describeGeneration(f2.gen)];
  expect(dc.rows.map((r) => r.id)).toEqual(df.rows.map((r) => r.id));
  expect(dc).toEqual(df);
  expect(dc.rows.find((r) => r.id === before[8]!.itemId)!.meta!.title).toBe('Retitled while the index was down');
  expect(await copyRows(dbC)).toEqual(await copyRows(dbF));
  await stop(c2);

  // The same restart without the stored mark (a generation built before the columns): the full snapshot.
  addSongs(SONGS + 25, SONGS + 26);
  await exec(dbC, `UPDATE "index".builds SET feed_mark = NULL WHERE state = 'live'`);
  const c3 = await start('index_delta_c', url, dbC);
  const g3 = await build(c3);
  expect(g3.outcome.delta).toBeUndefined();
  expect(g3.outcome.fullReason).toMatch(/no delta base/);
  expect(g3.gen.index.size).toBe(size + 3);
}, 300_000);
