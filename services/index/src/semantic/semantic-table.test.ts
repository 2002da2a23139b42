/**
 * SemanticTable keeps the tag probabilities as the catalogue's bytes (b / 255) and the other features as float32:
 * every value it reads must be the one the earlier all-float32 table held (tags/255 rounded to float32, other
 * features clamped to [0, 1], NaN for untagged rows), so text-search scores are unchanged.
 */
import { OTHER_FEATURE_LABELS } from '@polyphony/contracts';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mulberry32 as rng } from '@polyphony/vectors';
import type { Generation } from '../core/generation';
import { ColumnFill } from './column-fill';
import { SemanticTable, type SemanticRowSource } from './semantic-table';
import { FEATURE_COLUMNS, OTHER_OFFSET } from './vocabulary';

describe('SemanticTable storage', () => {
  it('When rows are tagged, untagged or malformed, then every column reads what the all-float32 table held', async () => {
    const rand = rng(42);
    const n = 300;
    const dim = 8;
    const rows: SemanticRowSource[] = [];
    const reference: Float32Array[] = [];
    for (let i = 0; i < n; i++) {
      const ref = new Float32Array(FEATURE_COLUMNS).fill(Number.NaN);
      let tags: Buffer | null = null;
      let other: number[] | null = null;
      if (i % 7 === 3) {
        tags = null; // untagged
      } else if (i % 29 === 5) {
        tags = Buffer.alloc(OTHER_OFFSET - 1, 9); // wrong length: untagged
      } else {
        tags = Buffer.from(Array.from({ length: OTHER_OFFSET }, () => Math.floor(rand() * 256)));
        other = Array.from({ length: OTHER_FEATURE_LABELS.length }, () => rand() * 1.4 - 0.2); // some outside [0, 1]
        for (let c = 0; c < OTHER_OFFSET; c++) ref[c] = tags[c]! / 255;
        for (let c = 0; c < FEATURE_COLUMNS - OTHER_OFFSET; c++) ref[OTHER_OFFSET + c] = Math.max(0, Math.min(1, other[c] ?? 0));
      }
      rows.push({ itemId: `id${i}`, tags, other, tempo: 60 + i, energy: -20 + (i % 10) });
      reference.push(ref);
    }
    const vectors = Array.from({ length: n }, () => Float32Array.from({ length: dim }, () => rand() - 0.5));
    const gen = {
      generation: 1,
      index: { size: n, rowOf: (id: string) => Number(id.slice(2)), getVector: (r: number) => vectors[r]! },
    } as unknown as Generation;
    const table = await SemanticTable.build(gen, rows);
    let tagged = 0;
    for (let r = 0; r < n; r++) {
      if (!Number.isNaN(reference[r]![0]!)) tagged++;
      for (let c = 0; c < FEATURE_COLUMNS; c++) {
        expect(Object.is(table.raw(r, c), reference[r]![c]!)).toBe(true);
      }
    }
    expect(table.taggedCount).toBe(tagged);
    // moodsCoverage sums the same float32 values in the same order.
    const coverage = OTHER_FEATURE_LABELS.map((label, i) => {
      let sum = 0;
      for (let r = 0; r < n; r++) if (!Number.isNaN(reference[r]![0]!)) sum += reference[r]![OTHER_OFFSET + i]!;
      return { label, score: Math.round((sum / tagged) * 1000) / 1000 };
    });
    expect(table.moodsCoverage()).toEqual(coverage);
    // 100 tag bytes + 6 float32 other features + tempo, energy (float32) + 1 flag byte per row.
    expect(table.columnBytes()).toBe(n * (OTHER_OFFSET + 4 * (FEATURE_COLUMNS - OTHER_OFFSET) + 4 + 4 + 1));
    // Column by column (what a text query reads) the same values, normalised as `norm` does.
    for (let c = 0; c < FEATURE_COLUMNS; c++) {
      const score = table.normColumn(c);
      for (let r = 0; r < n; r++) expect(Object.is(score(r), table.norm(r, c))).toBe(true);
    }
    expect([...table.tempoColumn()]).toEqual(rows.map((r) => r.tempo));
    expect([...table.energyColumn()]).toEqual(rows.map((r) => r.energy));
  });

  it('When rows arrive in pages, then the table equals the one built from all rows at once', async () => {
    const rand = rng(7);
    const n = 120;
    const rows: SemanticRowSource[] = Array.from({ length: n }, (_, i) => ({
      itemId: `id${i}`,
      tags: i % 5 === 0 ? null : Buffer.from(Array.from({ length: OTHER_OFFSET }, () => Math.floor(rand() * 256))),
      other: Array.from({ length: OTHER_FEATURE_LABELS.length }, () => rand()),
      tempo: 80 + i,
      energy: -10 - (i % 4),
    }));
    const vectors = Array.from({ length: n }, () => Float32Array.from({ length: 8 }, () => rand() - 0.5));
    const gen = { generation: 2, index: { size: n, rowOf: (id: string) => Number(id.slice(2)), getVector: (r: number) => vectors[r]! } } as unknown as Generation;
    async function* pages(): AsyncGenerator<SemanticRowSource[]> {
      for (let i = 0; i < n; i += 17) yield rows.slice(i, i + 17);
    }
    const whole = await SemanticTable.build(gen, rows);
    const paged = await SemanticTable.buildFromPages(gen, pages());
    expect(paged.taggedCount).toBe(whole.taggedCount);
    for (let r = 0; r < n; r++) for (let c = 0; c < FEATURE_COLUMNS; c++) expect(Object.is(paged.raw(r, c), whole.raw(r, c))).toBe(true);
    expect([...paged.low]).toEqual([...whole.low]);
    expect([...paged.high]).toEqual([...whole.high]);
    expect([...paged.moods.keys()]).toEqual([...whole.moods.keys()]);
    for (const [mood, m] of whole.moods) expect([...paged.moods.get(mood)!.vector]).toEqual([...m.vector]);

    // Built in slices (here 0 ms: a yield at every column and pass), other callbacks run between them and the table
    // is the same (a build's prepare and a replica's load build it while queries are answered).
    let ticks = 0;
    let building = true;
    const tick = () => {
      if (!building) return;
      ticks++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const fill = new ColumnFill(n, (id) => gen.index.rowOf(id));
    fill.add(rows);
    const sliced = await SemanticTable.of(gen, fill, {}, 0);
    building = false;
    expect(ticks).toBeGreaterThan(FEATURE_COLUMNS);
    for (let r = 0; r < n; r++) for (let c = 0; c < FEATURE_COLUMNS; c++) expect(Object.is(sliced.raw(r, c), whole.raw(r, c))).toBe(true);
    expect([[...sliced.low], [...sliced.high], sliced.energyRange, sliced.moodsCoverage(), [...sliced.concepts.keys()]]).toEqual([[...whole.low], [...whole.high], whole.energyRange, whole.moodsCoverage(), [...whole.concepts.keys()]]);
    for (let c = 0; c < FEATURE_COLUMNS; c++) expect(sliced.posting(c)).toEqual(whole.posting(c));
  });

  it('When the columns outgrow the memory budget, then they live in a file and every value, score, percentile, mood and coverage equals the in-memory table', async () => {
    const rand = rng(11);
    const n = 5_000;
    const rows: SemanticRowSource[] = Array.from({ length: n }, (_, i) => ({
      itemId: `id${i}`,
      tags: i % 9 === 0 ? null : Buffer.from(Array.from({ length: OTHER_OFFSET }, () => Math.floor(rand() * 256))),
      other: Array.from({ length: OTHER_FEATURE_LABELS.length }, () => rand()),
      tempo: i % 13 === 0 ? null : 60 + rand() * 120,
      energy: i % 17 === 0 ? null : -30 + rand() * 25,
    }));
    const vectors = Array.from({ length: n }, () => Float32Array.from({ length: 8 }, () => rand() - 0.5));
    const gen = { generation: 3, index: { size: n, rowOf: (id: string) => Number(id.slice(2)), getVector: (r: number) => vectors[r]! } } as unknown as Generation;
    const memory = await SemanticTable.build(gen, rows);
    const dir = mkdtempSync(join(tmpdir(), 'semantic-table-'));
    try {
      async function* pages(): AsyncGenerator<SemanticRowSource[]> {
        for (let i = 0; i < n; i += 1000) yield rows.slice(i, i + 1000);
      }
      // Spilled part-way (the first 200 kB of columns were in memory) and from the start.
      for (const residentMaxBytes of [200_000, 0]) {
        const disk = await SemanticTable.buildFromPages(gen, pages(), { dir, residentMaxBytes });
        expect(disk.onDisk).toBe(true);
        expect(memory.onDisk).toBe(false);
        // In memory: the tagged flags, the 1 MiB write buffer and the postings; the 132 B a row of columns are in the file.
        expect(disk.postingBytes).toBeGreaterThan(0);
        expect(disk.byteLength()).toBe(n + (1 << 20) + disk.postingBytes);
        expect(disk.columnBytes()).toBe(memory.columnBytes());
        expect(disk.taggedCount).toBe(memory.taggedCount);
        expect([...disk.low]).toEqual([...memory.low]);
        expect([...disk.high]).toEqual([...memory.high]);
        expect(disk.energyRange).toEqual(memory.energyRange);
        expect(disk.moodsCoverage()).toEqual(memory.moodsCoverage());
        expect([...disk.moods.keys()]).toEqual([...memory.moods.keys()]);
        for (const [mood, m] of memory.moods) {
          const d = disk.moods.get(mood)!;
          expect(d.clusters.map((c) => [c.songs, c.topTags, [...c.vector]])).toEqual(m.clusters.map((c) => [c.songs, c.topTags, [...c.vector]]));
        }
        for (let c = 0; c < FEATURE_COLUMNS; c++) {
          const a = disk.normColumn(c);
          const b = memory.normColumn(c);
          for (let r = 0; r < n; r++) if (!Object.is(a(r), b(r))) throw new Error(`column ${c} row ${r}: ${a(r)} != ${b(r)}`);
        }
        for (const r of [0, 1, 9, 4_999]) for (const c of [0, 57, OTHER_OFFSET + 2]) expect(Object.is(disk.raw(r, c), memory.raw(r, c))).toBe(true);
        expect([...disk.tempoColumn()]).toEqual([...memory.tempoColumn()]);
        expect([...disk.energyColumn()]).toEqual([...memory.energyColumn()]);
        disk.close();
        expect(() => disk.normColumn(0)).toThrow(/closed/);
      }
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
