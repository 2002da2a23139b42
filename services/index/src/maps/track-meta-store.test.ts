import fc from 'fast-check';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TrackMetaStore, float4Value, loadTrackMeta, type TrackMetaFields } from './track-meta-store';
import type { TrackMeta } from '../core/track.repository';

const meta = (title: string, extra: Partial<TrackMetaFields> = {}): TrackMetaFields => ({
  title,
  artist: 'Artist 1',
  album: 'Album 1',
  albumArtist: null,
  moodVector: 'rock:0.51,pop:0.22',
  otherFeatures: null,
  tempo: 120.53,
  energy: null,
  ...extra,
});

describe('TrackMetaStore', () => {
  test('resizedTo: grows, keeps the rows, and shrinks only over empty rows', () => {
    const s = new TrackMetaStore(8);
    s.set(0, meta('a'));
    s.set(3, meta('b'));
    const small = s.resizedTo(4);
    expect(small.size).toBe(4);
    expect(small.count).toBe(2);
    expect(small.get(3, 'x')?.title).toBe('b');
    expect(s.resizedTo(8)).toBe(s);
    expect(small.resizedTo(6).get(0, 'y')?.title).toBe('a');
    expect(() => s.resizedTo(3)).toThrow(RangeError);
  });

  test('float4Value: the shortest decimal of the float32 value (what PostgreSQL prints for real)', () => {
    expect(float4Value(null)).toBeNull();
    expect(float4Value(undefined)).toBeNull();
    expect(float4Value(120)).toBe(120);
    expect(float4Value(0.1)).toBe(0.1);
    // Printed by the PostgreSQL 15 of this machine: SELECT (1/3001.0)::real -> 0.00033322227; SELECT 60.1234567::real -> 60.123455
    expect(float4Value(1 / 3001)).toBe(0.00033322227);
    expect(float4Value(60.1234567)).toBe(60.123455);
    expect(Math.fround(float4Value(-12.345678901)!)).toBe(Math.fround(-12.345678901));
  });

  it('When rows are set, replaced and removed, then get returns exactly the latest values (nulls, unicode, numbers kept)', () => {
    const s = new TrackMetaStore(4);
    s.set(0, meta('Été – «naïve» 東京'));
    s.set(2, meta('B', { album: null, moodVector: null, otherFeatures: 'danceable:0.1,sad:0.9', tempo: null, energy: 0.0731 }));
    expect(s.count).toBe(2);
    expect(s.get(0, 'c-0')).toEqual({ itemId: 'c-0', title: 'Été – «naïve» 東京', artist: 'Artist 1', album: 'Album 1', albumArtist: null, moodVector: 'rock:0.51,pop:0.22', otherFeatures: null, tempo: 120.53, energy: null });
    expect(s.get(2, 'c-2')).toMatchObject({ album: null, moodVector: null, otherFeatures: 'danceable:0.1,sad:0.9', tempo: null, energy: 0.0731 });
    expect(s.get(1, 'c-1')).toBeUndefined();
    s.set(0, meta('Renamed', { artist: 'Artist 2' }));
    expect(s.get(0, 'c-0')).toMatchObject({ title: 'Renamed', artist: 'Artist 2' });
    expect(s.count).toBe(2);
    s.remove(2);
    s.remove(2); // idempotent
    expect(s.get(2, 'c-2')).toBeUndefined();
    expect(s.has(2)).toBe(false);
    expect(s.count).toBe(1);
    s.set(-1, meta('x'));
    s.set(4, meta('x'));
    expect(s.count).toBe(1);
  });

  it('When rows carry reference mood_vector / other_features strings, then they read back identically and cost ~30 bytes instead of ~150', () => {
    const mood = 'female vocalists:0.900,rock:0.512,80s:0.301,Hip-Hop:0.010,sad:0.000';
    const other = 'danceable:0.364,aggressive:0.363,happy:0.888,party:0.551,relaxed:0.037,sad:1.000';
    const rows = 120_000;
    const s = new TrackMetaStore(rows);
    for (let r = 0; r < rows; r++) s.set(r, meta(`S${r}`, { moodVector: mood, otherFeatures: other }));
    s.set(7, meta('odd', { moodVector: 'rock:0.51,pop:0.22', otherFeatures: '' }));
    expect(s.get(3, 'c')).toMatchObject({ moodVector: mood, otherFeatures: other });
    expect(s.get(7, 'c')).toMatchObject({ moodVector: 'rock:0.51,pop:0.22', otherFeatures: '' });
    // Records of ~7 B title + 16 B artist and album + 31 B of compact moods + 8 B tempo + lengths and flags (as text, ~160 B more).
    expect(s.logBytes).toBeLessThanOrEqual(rows * 76);
    // In memory: 4 B a row of positions plus the records' 1 MiB chunks.
    expect(s.bytes).toBe(rows * 4 + Math.ceil(s.logBytes / (1 << 20)) * (1 << 20));
  });

  it('When an empty title or artist is stored, then it reads back as an empty string, not as a missing row', () => {
    const s = new TrackMetaStore(1);
    s.set(0, meta('', { artist: '' }));
    expect(s.get(0, 'a')).toMatchObject({ title: '', artist: '' });
  });

  it('When loaded from pages, then ids outside the generation are skipped and 20 000 rows cost 4 bytes each in memory once on disk, reading back what the in-memory store holds', async () => {
    const ids = Array.from({ length: 20_000 }, (_, i) => `id-${String(i).padStart(6, '0')}`);
    const rowOf = new Map(ids.map((id, i) => [id, i]));
    const index = { size: ids.length, rowOf: (id: string) => rowOf.get(id) ?? -1 };
    // Some titles longer than the 256-byte read window (a second read).
    const page = (from: number, to: number): TrackMeta[] =>
      ids.slice(from, to).map((itemId, i) => ({ itemId, ...meta(`Song ${from + i}${(from + i) % 97 === 0 ? ' ✓'.repeat(200) : ''}`, { artist: `Artist ${(from + i) % 50}`, album: `Album ${(from + i) % 500}` }) }));
    const source = {
      async *streamMetadata() {
        yield page(0, 10_000);
        yield [...page(10_000, 20_000), { itemId: 'not-in-generation', ...meta('ghost') }];
      },
    };
    const store = await loadTrackMeta(index, source);
    expect(store.count).toBe(20_000);
    expect(store.onDisk).toBe(false);
    expect(store.get(12_345, ids[12_345]!)).toMatchObject({ title: 'Song 12345', artist: 'Artist 45', album: 'Album 345' });
    const dir = mkdtempSync(join(tmpdir(), 'meta-store-'));
    try {
      // Spilled part-way through the load (budget 300 kB), and from the first row (budget 0).
      for (const residentMaxBytes of [300_000, 0]) {
        const disk = await loadTrackMeta(index, source, { dir, residentMaxBytes });
        expect(disk.onDisk).toBe(true);
        expect(disk.count).toBe(20_000);
        for (let row = 0; row < ids.length; row++) expect(disk.get(row, ids[row]!)).toEqual(store.get(row, ids[row]!));
        expect(disk.reads).toBeGreaterThan(10_000); // a read a row from the file; the unflushed tail (< 1 MiB) is read from the write buffer
        // 4 B of position a row plus the 1 MiB write buffer; the records (~1.4 MB) are in the (unlinked) file.
        expect(disk.bytes).toBe(20_000 * 4 + (1 << 20));
        expect(disk.logBytes).toBe(store.logBytes);
        // Later changes append to the file.
        disk.set(7, meta('Changed', { tempo: null, energy: -3.25 }));
        disk.remove(8);
        expect(disk.get(7, 'x')).toMatchObject({ title: 'Changed', tempo: null, energy: -3.25 });
        expect(disk.get(8, 'x')).toBeUndefined();
        disk.close();
        expect(() => disk.get(7, 'x')).toThrow(/closed/);
      }
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('TrackMetaStore.copyRows (record bytes copied in runs, the delta snapshot\'s kept rows)', () => {
  /** Row r's metadata: varied strings (some longer than the 256-byte read window, row 1234's ~330 KB over the 256 KiB copy span), nulls, compact moods. */
  const long = 'x'.repeat(70_000);
  const rowMeta = (r: number): TrackMetaFields =>
    meta(r === 1234 ? long : `Song ${r}${r % 97 === 0 ? ' ✓'.repeat(200) : ''}`, {
      artist: r % 11 === 0 ? '' : `Artist ${r % 50} 東京`,
      album: r % 7 === 0 ? null : r === 1234 ? long : `Album ${r % 500}`,
      albumArtist: r === 1234 || r === 4321 ? long : null,
      moodVector: r === 1234 ? long : r % 3 === 0 ? null : 'female vocalists:0.900,rock:0.512',
      otherFeatures: r % 5 === 0 ? 'danceable:0.364,aggressive:0.363,happy:0.888,party:0.551,relaxed:0.037,sad:1.000' : null,
      tempo: r % 4 === 0 ? null : 60 + r / 8,
      energy: r % 6 === 0 ? null : r / 1000,
    });
  const rows = 12_000;
  const id = (r: number) => `id-${r}`;

  it.each([
    ['in memory', undefined, undefined],
    ['on disk (source and copy)', 0, 0],
    ['source spilled part-way, copy in memory', 200_000, undefined],
    ['source in memory, copy spilled part-way', undefined, 150_000],
  ])('%s: copied rows read back as the source rows, as set(get()) writes them (same log bytes), with their artists', (_name, fromBudget, toBudget) => {
    const from = new TrackMetaStore(rows, fromBudget === undefined ? {} : { residentMaxBytes: fromBudget });
    // Row 77 set twice in a row: a dead record between rows 76 and 77 (a gap inside a run of increasing records).
    for (let r = 0; r < rows; r++) {
      if (r === 77) from.set(r, rowMeta(100_000));
      if (r % 1000 !== 500) from.set(r, rowMeta(r));
    }
    // Replaced records: rows 20 and 3000 now lie after every other record in the log (runs broken there).
    from.set(20, rowMeta(20_000));
    from.set(3000, rowMeta(30_000));
    from.remove(2500);
    // The records cross the log's 1 MiB memory chunks (and file write blocks).
    expect(from.logBytes).toBeGreaterThan(1 << 20);
    // The new store: rows [0, 2) set one by one, then the copies in runs (the last one to the end), with a set in between.
    const runs: Array<[number, number, number]> = [
      [0, 2, 2400],
      [2400, 2404, 10],
      [2410, 2420, rows - 2410],
    ];
    const copy = new TrackMetaStore(rows + 10, toBudget === undefined ? {} : { residentMaxBytes: toBudget });
    const model = new TrackMetaStore(rows + 10);
    for (const s of [copy, model]) {
      s.set(0, rowMeta(-1));
      s.set(1, rowMeta(-2));
      s.set(2412, rowMeta(-3)); // overwritten by the last run (replaced)
    }
    const artists: string[] = [];
    for (const [f, t, n] of runs) {
      copy.copyRows(from, f, t, n, artists);
      for (let k = 0; k < n; k++) {
        const m = from.get(f + k, 'x');
        if (m) {
          const { itemId: _i, ...fields } = m;
          model.set(t + k, fields);
        } else model.remove(t + k);
      }
      if (t === 2404) for (const s of [copy, model]) s.set(2404 + 3, rowMeta(-4)); // replaced within a copied run
    }
    expect(copy.count).toBe(model.count);
    expect(copy.logBytes).toBe(model.logBytes);
    // (Rows compared as JSON and only the differing row numbers reported: jest's diff of 12,000 rows would take minutes.)
    const differing: number[] = [];
    for (let r = 0; r < rows + 10; r++) if (JSON.stringify(copy.get(r, id(r))) !== JSON.stringify(model.get(r, id(r)))) differing.push(r);
    expect(differing.slice(0, 10)).toEqual([]);
    const want: string[] = [];
    for (const [f, , n] of runs) for (let k = 0; k < n; k++) want.push(from.get(f + k, 'x')?.artist ?? '');
    expect(artists.length).toBe(want.length);
    expect(artists.findIndex((a, i) => a !== want[i])).toBe(-1);
    expect(copy.onDisk).toBe(toBudget !== undefined);
    expect(from.onDisk).toBe(fromBudget !== undefined);
    if (fromBudget === 0) {
      // One read per run of increasing records (~200 KiB each), not one a row.
      const reads = from.reads;
      copy.copyRows(from, 0, 0, rows);
      expect(from.reads - reads).toBeLessThan(30);
    }
    for (const s of [from, copy, model]) s.close();
  });

  it('refuses row ranges outside either store, and overlapping ranges in one store', () => {
    const s = new TrackMetaStore(10);
    const t = new TrackMetaStore(5);
    for (let r = 0; r < 10; r++) s.set(r, rowMeta(r));
    expect(() => t.copyRows(s, 6, 0, 5)).toThrow(RangeError);
    expect(() => t.copyRows(s, 0, 1, 5)).toThrow(RangeError);
    expect(() => t.copyRows(s, -1, 0, 2)).toThrow(RangeError);
    expect(() => s.copyRows(s, 0, 3, 5)).toThrow(RangeError);
    s.copyRows(s, 0, 5, 5);
    expect(s.get(7, 'a')).toEqual(s.get(2, 'a'));
    t.copyRows(s, 5, 0, 0);
    expect(t.count).toBe(0);
  });
});

describe('TrackMetaStore against a plain Map model (fast-check)', () => {
  const text = fc.option(fc.string({ unit: 'binary', maxLength: 12 }), { nil: null });
  const num = fc.option(fc.oneof(fc.double({ noNaN: true }), fc.integer({ min: -300, max: 300 })), { nil: null });
  const fields = fc.record({ title: fc.string({ maxLength: 10 }), artist: fc.string({ maxLength: 6 }), album: text, albumArtist: text, moodVector: text, otherFeatures: text, tempo: num, energy: num });
  const op = fc.oneof(fc.record({ row: fc.integer({ min: -1, max: 9 }), set: fields }), fc.record({ row: fc.integer({ min: -1, max: 9 }), set: fc.constant(undefined) }));

  it('every sequence of set/remove reads back exactly what the model holds (full record and title/artist), in memory and on disk', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), fc.constantFrom(undefined, 0, 200), (ops, residentMaxBytes) => {
        const store = new TrackMetaStore(9, residentMaxBytes === undefined ? {} : { residentMaxBytes });
        const model = new Map<number, TrackMetaFields>();
        for (const o of ops) {
          if (o.set) store.set(o.row, o.set);
          else store.remove(o.row);
          if (o.row < 0 || o.row >= 9) continue;
          if (o.set) model.set(o.row, o.set);
          else model.delete(o.row);
        }
        expect(store.count).toBe(model.size);
        for (let row = 0; row < 9; row++) {
          const want = model.get(row);
          expect(store.has(row)).toBe(want !== undefined);
          expect(store.get(row, `id-${row}`)).toEqual(want ? { itemId: `id-${row}`, ...want, tempo: want.tempo ?? null, energy: want.energy ?? null } : undefined);
          // The filters' partial read sees the same title and artist as the full record.
          expect(store.titleArtist(row)).toEqual(want ? { title: want.title, artist: want.artist } : undefined);
        }
        store.close();
      }),
      { numRuns: 300 },
    );
  });
});
