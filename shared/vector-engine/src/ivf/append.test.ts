/**
 * Appending rows to a built generation (issue 35 live library): old rows keep their numbers, vectors and cells; new
 * rows go to the cell of their nearest centroid, are found by search (float and int8, encoded with the existing
 * quantiser), and the generation they were appended to is left as it was.
 */
import { SyntheticMixture } from '@polyphony/testkit';
import { dot } from '@polyphony/vectors';
import { appendRows } from './append';
import { IvfDuplicateIdError, IvfInputError } from './errors';
import { buildIvfIndex, type VectorBatch } from './ivf-build';
import type { IvfIndex } from './ivf-index';
import { quantiseIndex } from './quantised-store';

const DIM = 32;
const BASE = 3000;
const ADDED = 400;

function points(count: number, streamSeed: number, prefix: string): { ids: string[]; vectors: Float32Array } {
  const ids: string[] = [];
  const vectors = new Float32Array(count * DIM);
  let at = 0;
  for (const b of new SyntheticMixture({ dim: DIM, clusters: 40, intrinsicDim: 6, seed: 5 }).batches(count, 1000, streamSeed)) {
    ids.push(...b.ids.map((id) => `${prefix}${id}`));
    vectors.set(b.vectors, at);
    at += b.vectors.length;
  }
  return { ids, vectors };
}

describe('appendRows', () => {
  jest.setTimeout(300_000);
  let base: IvfIndex;
  const add = points(ADDED, 2, 'new_');

  beforeAll(async () => {
    const p = points(BASE, 1, '');
    const batches: VectorBatch[] = [{ ids: p.ids, vectors: p.vectors }];
    base = (await buildIvfIndex(batches, { expectedCount: BASE, nlist: 32, dim: DIM })).index;
  });

  it('When rows are appended to a float generation, then old rows are unchanged, new rows sit in their nearest cell and are found', () => {
    const next = appendRows(base, add.ids, add.vectors);
    expect(next.size).toBe(BASE + ADDED);
    expect(next.generation).toBe(base.generation);
    expect(base.size).toBe(BASE);
    for (const r of [0, 1, 777, BASE - 1]) {
      expect(next.idOf(r)).toBe(base.idOf(r));
      expect([...next.getVector(r)]).toEqual([...base.getVector(r)]);
      expect(next.cellOf(r)).toBe(base.cellOf(r));
    }
    const sizesBefore = base.cellSizes();
    const sizesAfter = next.cellSizes();
    let grown = 0;
    for (let c = 0; c < base.nlist; c++) grown += sizesAfter[c]! - sizesBefore[c]!;
    expect(grown).toBe(ADDED);
    for (let i = 0; i < ADDED; i += 37) {
      const row = next.rowOf(add.ids[i]!);
      expect(row).toBe(BASE + i);
      const v = next.getVector(row);
      let best = -1;
      let bestScore = -Infinity;
      for (let c = 0; c < next.nlist; c++) {
        const s = dot(next.centroid(c), 0, v, 0, DIM);
        if (s > bestScore) [best, bestScore] = [c, s];
      }
      expect(next.cellOf(row)).toBe(best);
      expect(next.search(add.vectors.subarray(i * DIM, (i + 1) * DIM), { k: 1 })[0]!.row).toBe(row);
    }
    // The old generation still answers without the new rows.
    expect(base.rowOf(add.ids[0]!)).toBe(-1);
    expect(appendRows(base, [], new Float32Array(0))).toBe(base);
  });

  it('When rows are appended to an int8 generation, then they are encoded with its quantiser and found by search', async () => {
    const q = await quantiseIndex(base, { mode: 'int8' });
    const next = appendRows(q, add.ids, add.vectors);
    expect(next.mode).toBe('int8');
    expect(next.size).toBe(BASE + ADDED);
    expect(next.parts().quantised!.quantiser).toBe(q.parts().quantised!.quantiser);
    for (const r of [0, BASE - 1]) expect([...next.getVector(r)]).toEqual([...q.getVector(r)]);
    let found = 0;
    for (let i = 0; i < ADDED; i += 20) if (next.search(add.vectors.subarray(i * DIM, (i + 1) * DIM), { k: 1 })[0]!.row === BASE + i) found++;
    expect(found).toBe(20);
    expect(q.search(add.vectors.subarray(0, DIM), { k: 1 })[0]!.row).toBeLessThan(BASE);
  });

  it('When rows are appended to an int8 generation re-ranked from its codes, then the appended one still re-ranks from its codes and finds them', async () => {
    const q = await quantiseIndex(base, { mode: 'int8', rerank: 'codes' });
    const next = appendRows(q, add.ids, add.vectors);
    expect(q.codesServeQueries).toBe(true);
    expect(next.codesServeQueries).toBe(true);
    const readRow = jest.spyOn(next.parts().quantised!.file, 'readRow');
    let found = 0;
    for (let i = 0; i < ADDED; i += 20) if (next.searchByRow(BASE + i, { k: 5 }).length === 5 && next.search(add.vectors.subarray(i * DIM, (i + 1) * DIM), { k: 1 })[0]!.row === BASE + i) found++;
    expect(found).toBe(20);
    expect(readRow).not.toHaveBeenCalled();
    readRow.mockRestore();
  });

  it('When rows are appended to a pq generation twice, then its vector file grows in place (no copy) and every generation reads its own rows', async () => {
    const q = await quantiseIndex(base, { mode: 'pq', pqM: 8 });
    const half = ADDED / 2;
    const first = { ids: add.ids.slice(0, half), vectors: add.vectors.subarray(0, half * DIM) };
    const second = { ids: add.ids.slice(half), vectors: add.vectors.subarray(half * DIM) };
    const readRows = jest.spyOn(q.parts().quantised!.file, 'readRows');
    const a = appendRows(q, first.ids, first.vectors);
    // No row of the old file was read back to copy it; the grown file is the same descriptor.
    expect(readRows).not.toHaveBeenCalled();
    expect(a.parts().quantised!.file.descriptor).toBe(q.parts().quantised!.file.descriptor);
    const b = appendRows(a, second.ids, second.vectors);
    expect(b.parts().quantised!.file.descriptor).toBe(q.parts().quantised!.file.descriptor);
    expect(b.size).toBe(BASE + ADDED);
    for (const r of [0, BASE - 1]) expect([...b.getVector(r)]).toEqual([...q.getVector(r)]);
    expect([...b.getVector(BASE)]).toEqual([...a.getVector(BASE)]);
    // Another append from the first grown generation (its file already grew past it) copies, leaving b's rows intact.
    const other = points(5, 3, 'other_');
    const c = appendRows(a, other.ids, other.vectors);
    expect(c.parts().quantised!.file.descriptor).not.toBe(q.parts().quantised!.file.descriptor);
    expect([...b.getVector(BASE + half)]).not.toEqual([...c.getVector(BASE + half)]);
    const unit = (v: Float32Array) => Array.from(v, (x) => x / Math.hypot(...v));
    b.getVector(BASE + half).forEach((x, d) => expect(x).toBeCloseTo(unit(second.vectors.subarray(0, DIM))[d]!, 5));
    c.getVector(BASE + half).forEach((x, d) => expect(x).toBeCloseTo(unit(other.vectors.subarray(0, DIM))[d]!, 5));
    // The old generation still reads its rows and refuses rows it never had.
    expect([...q.getVector(BASE - 1)]).toEqual([...b.getVector(BASE - 1)]);
    expect(() => q.getVector(BASE)).toThrow();
    readRows.mockRestore();
  });

  it('When an id is already a row, repeats, or a vector is zero, then the append is refused', () => {
    expect(() => appendRows(base, [base.idOf(3)], add.vectors.subarray(0, DIM))).toThrow(IvfDuplicateIdError);
    expect(() => appendRows(base, ['x', 'x'], add.vectors.subarray(0, 2 * DIM))).toThrow(IvfDuplicateIdError);
    expect(() => appendRows(base, ['z'], new Float32Array(DIM))).toThrow(IvfInputError);
    expect(() => appendRows(base, ['z'], new Float32Array(DIM + 1))).toThrow(IvfInputError);
  });
});
