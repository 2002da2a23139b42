import 'reflect-metadata';
import type { SnapshotTrackBytes } from '@polyphony/contracts';
import { createTestDatabase, migratedDataSource, syntheticSongs, toSnapshotTrack, type SyntheticSong, type TestDatabase } from '@polyphony/testkit';
import type { DataSource } from 'typeorm';
import { indexMigrations } from './migrations';
import { TrackRepository } from './track.repository';

/**
 * index.tracks under a build and a live-library batch at once (real PostgreSQL): the CI of 2026-12-04 saw songs
 * lose their metadata (album durations null, /api/track 404) after an analysis run, because a live-library batch of
 * the serving generation N rewrote rows the end-of-run build N+1 had just written, marking them N again, so the
 * activation of N+1 deleted them.
 */
/** A snapshot row as the binary page carries it (vector bytes instead of base64). */
function row(song: SyntheticSong): SnapshotTrackBytes {
  const { embedding, ...rest } = toSnapshotTrack(song, []);
  return { ...rest, vector: Buffer.from(embedding, 'base64') };
}

describe('index track copy (PostgreSQL)', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: TrackRepository;

  beforeAll(async () => {
    db = await createTestDatabase('index_tracks');
    ds = await migratedDataSource(db, 'index', indexMigrations);
    repo = new TrackRepository(ds);
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('When a batch of an older build lands after a newer build wrote the same songs, then the newer rows and their mark stay', async () => {
    const [a, b] = [...syntheticSongs(2, { seed: 3 })].map(row);
    await repo.upsertSnapshot([{ ...a!, durationSeconds: 200 }, { ...b!, durationSeconds: 180 }], 8);
    // The live library of generation 7 writes song a (an older read of it) and a new song c.
    const [c] = [...syntheticSongs(1, { seed: 4 })].map((s) => row({ ...s, itemId: 'zz-new' }));
    const written = await repo.upsertSnapshot([{ ...a!, durationSeconds: null, title: 'stale title' }, c!], 7);
    expect(written.written).toBe(2);
    const rows = await db.query<{ item_id: string; duration: number | null; title: string; seen_build: string }>(`SELECT item_id, duration, title, seen_build FROM "index".tracks ORDER BY item_id COLLATE "C"`);
    expect(rows.map((r) => [r.item_id, r.duration, r.title, Number(r.seen_build)])).toEqual(
      [
        [a!.itemId, 200, a!.title, 8],
        [b!.itemId, 180, b!.title, 8],
        ['zz-new', c!.durationSeconds, c!.title, 7],
      ].sort((x, y) => (String(x[0]) < String(y[0]) ? -1 : 1)),
    );
    // A newer (or the same) build still overwrites.
    await repo.upsertSnapshot([{ ...a!, durationSeconds: 201 }], 8);
    await repo.upsertSnapshot([{ ...b!, durationSeconds: 181 }], 9);
    expect(await db.count(`SELECT duration FROM "index".tracks WHERE item_id = $1`, [a!.itemId])).toBe(201);
    expect(await db.query(`SELECT duration, seen_build::int AS b FROM "index".tracks WHERE item_id = $1`, [b!.itemId])).toEqual([{ duration: 181, b: 9 }]);
  });
});
