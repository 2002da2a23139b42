import { mulberry32 } from '@polyphony/vectors';
import { RowOffsets } from './row-offsets';

/** Deterministic generator for the randomised comparisons. */
const rng = mulberry32;

function expectSame(o: RowOffsets, model: Map<number, number>): void {
  for (let row = 0; row < o.size; row++) if (o.get(row) !== (model.get(row) ?? 0)) throw new Error(`row ${row}: ${o.get(row)} != ${model.get(row) ?? 0}`);
  expect(o.valued).toBe(model.size);
  const seen = new Map<number, number>();
  o.forEach((row, v) => seen.set(row, v));
  expect(seen).toEqual(model);
}

describe('RowOffsets', () => {
  it('When random rows are set, changed and removed while few are valued (sparse table), then every read matches a Map', () => {
    const rand = rng(3);
    const o = new RowOffsets(10_000);
    const model = new Map<number, number>();
    // Rows drawn from 600 (many share a home slot in the small tables), values 0 (remove) .. 5.
    for (let step = 0; step < 20_000; step++) {
      const row = Math.floor(rand() * 600) * 16;
      const v = Math.floor(rand() * 6);
      o.set(row, v);
      if (v === 0) model.delete(row);
      else model.set(row, v);
      if (step % 2000 === 1999) expectSame(o, model);
    }
    expect(o.isDense).toBe(false);
    expect(o.bytes).toBeLessThanOrEqual(16 * 1024); // ~500 valued rows: 2,048 slots x 8 bytes; a dense array would be 40,000 bytes
  });

  it('When rows whose probe runs overlap are removed (backward shift), then the rest stay reachable', () => {
    const o = new RowOffsets(100_000);
    const model = new Map<number, number>();
    // At 16 slots the home is the top 4 bits of row * 0x9e3779b1: collect 7 rows of one home and 1 of the next.
    const homeOf = (row: number) => Math.imul(row, 0x9e3779b1) >>> 28;
    const same = Array.from({ length: 5000 }, (_, r) => r).filter((r) => homeOf(r) === 5).slice(0, 5);
    const next = Array.from({ length: 5000 }, (_, r) => r).filter((r) => homeOf(r) === 6).slice(0, 2);
    for (const row of [...same, ...next]) {
      o.set(row, row + 1);
      model.set(row, row + 1);
    }
    for (const row of [same[0]!, same[2]!, next[0]!]) {
      o.set(row, 0);
      model.delete(row);
      for (const [r, v] of model) expect(o.get(r)).toBe(v);
      expect(o.get(row)).toBe(0);
    }
    expect(o.valued).toBe(model.size);
  });

  it('When more than 1/4 of the rows get a value, then it turns dense with the same content; grownTo copies both forms', () => {
    const o = new RowOffsets(1000);
    for (let r = 0; r < 250; r++) o.set(r * 4, r + 1);
    expect(o.isDense).toBe(false);
    const sparseCopy = o.grownTo(5000);
    o.set(1, 7);
    expect(o.isDense).toBe(true);
    expect(o.bytes).toBe(4000);
    for (let r = 0; r < 250; r++) expect(o.get(r * 4)).toBe(r + 1);
    expect(o.get(1)).toBe(7);
    expect(o.valued).toBe(251);
    o.set(1, 0);
    expect(o.valued).toBe(250);
    expect(sparseCopy.get(996)).toBe(250);
    expect(sparseCopy.get(4999)).toBe(0);
    expect(sparseCopy.valued).toBe(250);
    const denseCopy = o.grownTo(2000);
    expect(denseCopy.get(996)).toBe(250);
    expect(denseCopy.get(1999)).toBe(0);
  });
});
