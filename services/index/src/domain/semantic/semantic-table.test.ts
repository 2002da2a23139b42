/**
 * SemanticTable keeps the tag probabilities as the catalogue's bytes (b / 255) and the other features as float32:
 * every value it reads must be the one the earlier all-float32 table held (tags/255 rounded to float32, other
 * features clamped to [0, 1], NaN for untagged rows), so text-search scores are unchanged.
 */
import { OTHER_FEATURE_LABELS } from '@polyphony/contracts';
import { mulberry32 as rng } from '@polyphony/vectors';
import type { Generation } from '../generation';
import { SemanticTable, type SemanticRowSource } from './semantic-table';
import { FEATURE_COLUMNS, OTHER_OFFSET } from './vocabulary';

describe('SemanticTable storage', () => {
  it('When rows are tagged, untagged or malformed, then every column reads what the all-float32 table held', () => {
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
    const table = SemanticTable.build(gen, rows);
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
    expect(table.byteLength()).toBe(n * (OTHER_OFFSET + 4 * (FEATURE_COLUMNS - OTHER_OFFSET) + 4 + 4 + 1));
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
    const whole = SemanticTable.build(gen, rows);
    const paged = await SemanticTable.buildFromPages(gen, pages());
    expect(paged.taggedCount).toBe(whole.taggedCount);
    for (let r = 0; r < n; r++) for (let c = 0; c < FEATURE_COLUMNS; c++) expect(Object.is(paged.raw(r, c), whole.raw(r, c))).toBe(true);
    expect([...paged.low]).toEqual([...whole.low]);
    expect([...paged.high]).toEqual([...whole.high]);
    expect([...paged.moods.keys()]).toEqual([...whole.moods.keys()]);
    for (const [mood, m] of whole.moods) expect([...paged.moods.get(mood)!.vector]).toEqual([...m.vector]);
  });
});
