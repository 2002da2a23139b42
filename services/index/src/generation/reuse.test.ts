import { buildIvfIndex, quantiseIndex, type IvfIndex } from '@polyphony/vector-engine';
import { mulberry32 } from '@polyphony/vectors';
import { emptyGeneration, type Generation } from '../core/generation';
import { GenerationReuse, RowMatcher } from './reuse';

const DIM = 200;

function vectors(n: number, seed: number): Float32Array {
  const rnd = mulberry32(seed);
  return Float32Array.from({ length: n * DIM }, () => rnd() - 0.5);
}

/** A serving generation over `ids` (ids in byte order, as a build numbers rows) with a PCA basis stub. */
async function serving(ids: string[], v: Float32Array, quantised: boolean): Promise<Generation> {
  let index: IvfIndex = (await buildIvfIndex([{ ids, vectors: v }], { dim: DIM })).index;
  // residentMaxBytes 0: the exact vectors are read from the file, as at 1M.
  if (quantised) index = await quantiseIndex(index, { mode: 'int8', residentMaxBytes: 0 });
  const pca = { axes: new Float32Array(2 * DIM), variance: new Float32Array(DIM).fill(1), mean: new Float32Array(DIM) } as unknown as Generation['pca'];
  return { ...emptyGeneration(DIM), generation: 1, index, pca, embedderVersion: 'v1' };
}

describe('RowMatcher (rows matched with the serving generation while the snapshot streams)', () => {
  test.each([false, true])('quantised serving generation: %s; same id and bitwise-same vector = unchanged, anything else changed, unmatched serving rows removed', async (quantised) => {
    const n = 3000;
    const ids = Array.from({ length: n }, (_, i) => `id-${String(i).padStart(5, '0')}`);
    const v = vectors(n, 3);
    const prev = await serving(ids, v, quantised);
    // New snapshot: row 10 removed, row 20's vector changed (same id), a new id between 29 and 30, the rest unchanged;
    // pages of 700 rows.
    const newIds: string[] = [];
    const newVec: number[] = [];
    const other = vectors(2, 9);
    for (let i = 0; i < n; i++) {
      if (i === 10) continue;
      newIds.push(ids[i]!);
      newVec.push(...(i === 20 ? other.subarray(0, DIM) : v.subarray(i * DIM, (i + 1) * DIM)));
      if (i === 29) {
        newIds.push('id-00029x');
        newVec.push(...other.subarray(DIM));
      }
    }
    const all = Float32Array.from(newVec);
    const m = new RowMatcher(prev, 100);
    for (let at = 0; at < newIds.length; at += 700) {
      const to = Math.min(newIds.length, at + 700);
      m.add(newIds.slice(at, to), all.subarray(at * DIM, to * DIM));
    }
    expect(m.failure).toBeUndefined();
    expect([m.count, m.changed, m.kept]).toEqual([n, 2, n - 2]);
    for (let r = 0; r < newIds.length; r++) {
      const id = newIds[r]!;
      const want = id === 'id-00020' || id === 'id-00029x' ? -1 : prev.index.rowOf(id);
      expect(m.prevRowOfNew[r]).toBe(want);
      if (want >= 0) expect(m.newRowOfPrev[want]).toBe(r);
    }
    expect(m.newRowOfPrev[prev.index.rowOf('id-00010')]).toBe(-1);
    expect(m.newRowOfPrev[prev.index.rowOf('id-00020')]).toBe(-1);
    // The plan counts the removed row and the changed row's old vector as removed.
    const plan = GenerationReuse.fromMatcher(m, n, 'v1', DIM)!;
    expect([plan.changed, plan.removed]).toEqual([2, 2]);
    // Another embedder version, or another row count than the build's: no plan.
    expect(GenerationReuse.fromMatcher(m, n, 'v2', DIM)).toBeUndefined();
    expect(GenerationReuse.fromMatcher(m, n + 1, 'v1', DIM)).toBeUndefined();
  });

  it('When rows come with their known serving rows (a delta build\'s kept rows), then they match without an id lookup or a vector read, the others as before', async () => {
    const n = 2000;
    const ids = Array.from({ length: n }, (_, i) => `id-${String(i).padStart(5, '0')}`);
    const v = vectors(n, 5);
    const prev = await serving(ids, v, true);
    // The fed rows: every serving row with its stored unit vector (the delta's kept rows), row 7 with another vector,
    // a new id after row 99; known serving rows given for every row but 7, 50 (looked up: unchanged) and the new one.
    const unit = (r: number) => prev.index.getVector(r);
    const fed: Array<[string, Float32Array, number]> = [];
    for (let i = 0; i < n; i++) {
      fed.push([ids[i]!, i === 7 ? vectors(1, 11) : unit(i), i === 7 || i === 50 ? -1 : i]);
      if (i === 99) fed.push(['id-00099x', vectors(1, 12), -1]);
    }
    const rowOf = jest.spyOn(prev.index, 'rowOf');
    const reads = jest.spyOn(prev.index.parts().quantised!.file!, 'readRows');
    const m = new RowMatcher(prev, 100);
    for (let at = 0; at < fed.length; at += 600) {
      const page = fed.slice(at, at + 600);
      const vec = new Float32Array(page.length * DIM);
      page.forEach(([, x], k) => vec.set(x, k * DIM));
      m.add(page.map(([id]) => id), vec, Int32Array.from(page.map(([, , p]) => p)));
    }
    expect(m.failure).toBeUndefined();
    expect(rowOf.mock.calls.map(([id]) => id).sort()).toEqual(['id-00007', 'id-00050', 'id-00099x']);
    // Two reads: row 7's and row 50's (one each; the new id has no serving row).
    expect(reads).toHaveBeenCalledTimes(2);
    expect([m.count, m.changed, m.kept]).toEqual([n + 1, 2, n - 1]);
    for (let r = 0; r < fed.length; r++) {
      const id = fed[r]![0];
      expect(m.prevRowOfNew[r]).toBe(id === 'id-00007' || id === 'id-00099x' ? -1 : prev.index.rowOf(id));
    }
    // A known row whose serving row an earlier row took is changed.
    const again = new RowMatcher(prev, 10);
    again.add([ids[3]!, ids[4]!], new Float32Array(2 * DIM).fill(1), Int32Array.from([3, 3]));
    expect(Array.from(again.prevRowOfNew.subarray(0, 2))).toEqual([3, -1]);
  });
});
