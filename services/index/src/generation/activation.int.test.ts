import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import type { SnapshotTrackBytes } from '@polyphony/contracts';
import { createTestDatabase, migratedDataSource, syntheticSongs, toSnapshotTrack, type SyntheticSong, type TestDatabase } from '@polyphony/testkit';
import type { DataSource } from 'typeorm';
import { indexMigrations } from '../core/migrations';
import { TrackRepository } from '../core/track.repository';
import { BuildQueueRepository } from './build-queue.repository';
import { GenerationRepository } from './generation.repository';

/**
 * The activation of a generation and the build queue's covering check, on real PostgreSQL (issue 29):
 * - the activation of generation N deletes only OLDER builds' rows: catalogue-copy rows a newer build already marked,
 *   and that newer build's own row, stay (marks never go down);
 * - a request carries `since` (the newest change it is about; the live library passes its last song's arrival): a
 *   build that started after it covers the run even when the request itself is made later. Counted from the request's
 *   own time, two replicas each asking for an empty index's first build built twice.
 */
function row(song: SyntheticSong): SnapshotTrackBytes {
  const { embedding, ...rest } = toSnapshotTrack(song, []);
  return { ...rest, vector: Buffer.from(embedding, 'base64') };
}

describe('index activation and build queue (PostgreSQL)', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let tracks: TrackRepository;
  let generations: GenerationRepository;
  let queue: BuildQueueRepository;
  /** The database's clock (the builds' `created_at` is written by it). */
  const dbNow = async (): Promise<Date> => ((await ds.query(`SELECT clock_timestamp() AS t`)) as Array<{ t: Date }>)[0]!.t;
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

  beforeAll(async () => {
    db = await createTestDatabase('index_activation');
    ds = await migratedDataSource(db, 'index', indexMigrations);
    tracks = new TrackRepository(ds);
    generations = new GenerationRepository(ds, tracks);
    queue = new BuildQueueRepository(ds);
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  beforeEach(async () => {
    await ds.query(`DELETE FROM "index".build_runs`);
    await ds.query(`DELETE FROM "index".builds`);
    await ds.query(`DELETE FROM "index".tracks`);
  });

  it('When generation N activates while a newer build has marked rows, then only rows and (after the swap) builds older than N are deleted', async () => {
    const [a, b, c, d] = [...syntheticSongs(4, { seed: 11 })].map(row);
    const g1 = await generations.createBuild('t1', 'first');
    await tracks.upsertSnapshot([a!, b!], g1);
    await generations.activate(g1, null);
    const g2 = await generations.createBuild('t2', 'second');
    const g3 = await generations.createBuild('t3', 'third, started while the second still runs');
    // g2's snapshot saw b and c (a vanished from the catalogue); g3's has already re-marked c and added d.
    await tracks.upsertSnapshot([b!, c!], g2);
    await tracks.upsertSnapshot([c!, d!], g3);
    const deleted = await generations.activate(g2, null);
    expect(deleted).toBe(1);
    const rows: Array<{ item_id: string; seen: number }> = await ds.query(`SELECT item_id, seen_build::int AS seen FROM "index".tracks ORDER BY seen_build, item_id COLLATE "C"`);
    expect(rows).toEqual([
      { item_id: b!.itemId, seen: g2 },
      ...[c!, d!].map((t) => ({ item_id: t.itemId, seen: g3 })).sort((x, y) => (Buffer.compare(Buffer.from(x.item_id), Buffer.from(y.item_id)))),
    ]);
    const builds = async () => ((await ds.query(`SELECT generation, state FROM "index".builds ORDER BY generation`)) as Array<{ generation: string; state: string }>).map((r) => [Number(r.generation), r.state]);
    // The older build is retired by the activation and deleted after it (once the new one is served).
    expect(await builds()).toEqual([
      [g1, 'retired'],
      [g2, 'live'],
      [g3, 'building'],
    ]);
    expect(await generations.dropOlderBuilds(g2)).toBe(1);
    expect(await generations.dropOlderBuilds(g2)).toBe(0);
    expect(await builds()).toEqual([
      [g2, 'live'],
      [g3, 'building'],
    ]);
  });

  it('When a request carries the arrival of its songs, then a build that started after the arrival covers it although the request came later', async () => {
    const arrived = await dbNow();
    await pause(20);
    // Another replica's build starts (its snapshot reads the songs) and goes live.
    const g = await generations.createBuild('other', 'live library: first songs of an empty index');
    await generations.activate(g, null);
    await pause(20);
    // This replica's request, made after that build went live, about the same songs.
    const covered = await queue.request(randomUUID(), 'live library: first songs of an empty index', undefined, arrived);
    expect(covered.coalesced).toBe(false);
    expect(await queue.coveringGeneration(covered.run.id)).toBe(g);
    await ds.query(`DELETE FROM "index".build_runs`);
    // Counted from the request itself (no since) it is not covered: this is what built twice.
    const uncovered = await queue.request(randomUUID(), 'live library: first songs of an empty index');
    expect(await queue.coveringGeneration(uncovered.run.id)).toBeUndefined();
  });

  it('When requests join a queued build, then its requested_at is the latest since of them and never moves back', async () => {
    const early = await dbNow();
    await pause(20);
    const first = await queue.request(randomUUID(), 'songs arrived', 'task-1');
    const after = await dbNow();
    // A later request about older changes joins the queued build without moving its requested_at back.
    const joined = await queue.request(randomUUID(), 'older songs', 'task-2', early);
    expect(joined.run.id).toBe(first.run.id);
    expect(joined.coalesced).toBe(true);
    expect(joined.run.details).toMatchObject({ reasons: ['songs arrived', 'older songs'], requesters: ['task-1', 'task-2'] });
    const at = async (): Promise<Date> => ((await ds.query(`SELECT requested_at FROM "index".build_runs WHERE id = $1`, [first.run.id])) as Array<{ requested_at: Date }>)[0]!.requested_at;
    const kept = await at();
    expect(kept.getTime()).toBeGreaterThan(early.getTime());
    expect(kept.getTime()).toBeLessThanOrEqual(after.getTime());
    // A build that started between the first request and the join does not cover the run (the first request is newer).
    const g = await generations.createBuild('x', 'between');
    await ds.query(`UPDATE "index".builds SET created_at = $2 WHERE generation = $1`, [g, new Date(kept.getTime() - 5)]);
    await generations.activate(g, null);
    expect(await queue.coveringGeneration(first.run.id)).toBeUndefined();
    // A newer request moves it forward.
    await pause(20);
    await queue.request(randomUUID(), 'new songs');
    expect((await at()).getTime()).toBeGreaterThan(kept.getTime());
  });
});
