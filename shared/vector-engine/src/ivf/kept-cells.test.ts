import { SyntheticMixture } from '@polyphony/testkit';
import { dot } from '@polyphony/vectors';
import { CooperativeScheduler } from './cooperative';
import { IvfInputError } from './errors';
import { buildIvfIndex, type VectorBatch } from './ivf-build';
import { assignKeptCells, cellImbalance, PLACE_WORKER_MIN_ROWS, type KeptCells } from './kept-cells';
import { IvfWorkerPool } from './worker-pool';
import { CentroidScan } from './centroid-scan';

function batches(count: number, seed: number, prefix: string): VectorBatch[] {
  const out: VectorBatch[] = [];
  for (const b of new SyntheticMixture({ seed }).batches(count, 1000)) out.push({ ids: b.ids.map((id) => `${prefix}${id}`), vectors: b.vectors });
  return out;
}

/** Exact nearest centroid by `dot` (ties to the lower cell). */
function nearest(centroids: Float32Array, nlist: number, v: Float32Array, dim: number): number {
  let best = 0;
  let bestScore = -Infinity;
  for (let c = 0; c < nlist; c++) {
    const d = dot(centroids, c * dim, v, 0, dim);
    if (d > bestScore) [best, bestScore] = [c, d];
  }
  return best;
}

describe('IVF build on kept cells (issue 35 generation reuse)', () => {
  it('keeps the old centroids and the cell of every kept row; places the others at their nearest centroid; trains nothing', async () => {
    const old = await buildIvfIndex(batches(3000, 5, 'a'), { expectedCount: 3000 });
    const dim = old.index.dim;
    // New build: the old rows 0..2799 (200 removed) then 150 new songs.
    const oldBatches = batches(3000, 5, 'a');
    const kept = oldBatches.map((b) => ({ ids: b.ids, vectors: b.vectors }));
    kept[2] = { ids: kept[2]!.ids.slice(0, 800), vectors: kept[2]!.vectors.slice(0, 800 * dim) };
    const fresh = batches(150, 9, 'b');
    let asked = 0;
    const built = await buildIvfIndex([...kept, ...fresh], {
      keptCells: (count): KeptCells => {
        asked = count;
        const cellOfRow = new Int32Array(count).fill(-1);
        for (let r = 0; r < 2800; r++) cellOfRow[r] = old.index.cellOf(r);
        return { nlist: old.index.nlist, centroids: old.index.parts().centroids, cellOfRow };
      },
    });
    expect(asked).toBe(2950);
    expect(built.report).toMatchObject({ nlist: old.index.nlist, sampleSize: 0, trainingIterations: 0, keptCellsPlaced: 150 });
    expect(built.index.size).toBe(2950);
    const c = old.index.parts().centroids;
    expect(Buffer.from(built.index.parts().centroids.buffer).equals(Buffer.from(c.buffer))).toBe(true);
    for (let r = 0; r < 2800; r++) expect(built.index.cellOf(r)).toBe(old.index.cellOf(r));
    for (let r = 2800; r < 2950; r++) expect(built.index.cellOf(r)).toBe(nearest(c, old.index.nlist, built.index.getVector(r), dim));
    // Searchable: a kept row finds itself first.
    expect(built.index.search(built.index.getVector(17), { k: 1 })[0]!.row).toBe(17);
  });

  it('undefined from keptCells trains as usual (same index as a build without the option)', async () => {
    const a = await buildIvfIndex(batches(2000, 3, 'x'), {});
    const b = await buildIvfIndex(batches(2000, 3, 'x'), { keptCells: () => undefined });
    expect(b.report.keptCellsPlaced).toBeUndefined();
    expect(b.report.nlist).toBe(a.report.nlist);
    expect(Buffer.from(b.index.parts().centroids.buffer).equals(Buffer.from(a.index.parts().centroids.buffer))).toBe(true);
  });

  it('rejects a kept assignment of the wrong length or with a cell outside [0, nlist)', async () => {
    const s = new CooperativeScheduler(10);
    const centroids = new Float32Array(2 * 4).fill(0.5);
    const vectors = new Float32Array(3 * 4).fill(0.5);
    await expect(assignKeptCells(vectors, 4, 3, { nlist: 2, centroids, cellOfRow: new Int32Array(2) }, s)).rejects.toThrow(IvfInputError);
    await expect(assignKeptCells(vectors, 4, 3, { nlist: 2, centroids, cellOfRow: Int32Array.from([0, 2, -1]) }, s)).rejects.toThrow(IvfInputError);
    await expect(assignKeptCells(vectors, 4, 3, { nlist: 3, centroids, cellOfRow: Int32Array.from([0, 1, -1]) }, s)).rejects.toThrow(IvfInputError);
  });

  it('places in worker threads (>= PLACE_WORKER_MIN_ROWS rows) exactly the cells it places in this thread', async () => {
    /** `n` unit vectors of the mixture, into `out` (a new array unless given). */
    const units = (n: number, seed: number, out?: Float32Array): Float32Array => {
      let o = 0;
      for (const b of batches(n, seed, 'u')) {
        const dim0 = b.vectors.length / b.ids.length;
        out ??= new Float32Array(n * dim0);
        for (let i = 0; i < b.ids.length; i++, o++) {
          const n2 = Math.sqrt(dot(b.vectors, i * dim0, b.vectors, i * dim0, dim0));
          for (let d = 0; d < dim0; d++) out[o * dim0 + d] = b.vectors[i * dim0 + d]! / n2;
        }
      }
      return out!;
    };
    // 600 centroids: enough for the coarse quantiser's exact scan (CentroidScan, from nlist 512) in this thread and in the workers.
    const nlist = 600;
    const centroids = units(nlist, 21);
    const dim = centroids.length / nlist;
    // Two thirds of the rows are placed: more than PLACE_WORKER_MIN_ROWS, so the pool's threads do place them.
    const count = Math.ceil(PLACE_WORKER_MIN_ROWS * 1.5) + 600;
    const vectors = units(count, 23, new Float32Array(new SharedArrayBuffer(count * dim * 4)));
    // Every third row keeps cell 0; the others are placed.
    const cellOfRow = Int32Array.from({ length: count }, (_, r) => (r % 3 === 0 ? 0 : -1));
    const s = new CooperativeScheduler(10);
    const inThread = await assignKeptCells(vectors, dim, count, { nlist, centroids, cellOfRow }, s);
    const withScan = await assignKeptCells(vectors, dim, count, { nlist, centroids, cellOfRow, coarse: CentroidScan.fit(centroids, nlist, dim) ?? null }, s);
    expect([...withScan.cellOfRow]).toEqual([...inThread.cellOfRow]);
    const pool = new IvfWorkerPool(2);
    try {
      await pool.share(vectors, dim);
      const run = jest.spyOn(pool, 'run');
      const pooled = await assignKeptCells(vectors, dim, count, { nlist, centroids, cellOfRow }, s, pool);
      expect(run).toHaveBeenCalledTimes(2);
      expect(pooled.placed).toBe(inThread.placed);
      expect(pooled.placed).toBeGreaterThanOrEqual(PLACE_WORKER_MIN_ROWS);
      expect([...pooled.cellOfRow]).toEqual([...inThread.cellOfRow]);
    } finally {
      await pool.close();
    }
    // A factory: called (and its pool given the vectors and closed) only with PLACE_WORKER_MIN_ROWS rows to place.
    const made: IvfWorkerPool[] = [];
    const factory = () => {
      const p = new IvfWorkerPool(2);
      made.push(p);
      return p;
    };
    const fromFactory = await assignKeptCells(vectors, dim, count, { nlist, centroids, cellOfRow }, s, factory);
    expect([...fromFactory.cellOfRow]).toEqual([...inThread.cellOfRow]);
    expect(made).toHaveLength(1);
    await expect(made[0]!.run({ type: 'place', rows: Int32Array.of(1), centroids, nlist })).rejects.toThrow();
    const few = Int32Array.from(cellOfRow, (c, r) => (r < count - 10 ? 0 : c));
    const fewPlaced = await assignKeptCells(vectors, dim, count, { nlist, centroids, cellOfRow: few }, s, factory);
    expect(fewPlaced.placed).toBeLessThan(PLACE_WORKER_MIN_ROWS);
    expect(made).toHaveLength(1);
    for (let r = 1; r < count; r += 97) if (r % 3 !== 0) expect(inThread.cellOfRow[r]).toBe(nearest(centroids, nlist, vectors.subarray(r * dim, (r + 1) * dim), dim));
    expect(inThread.cellOfRow[0]).toBe(0);
  }, 60_000);

  it('cellImbalance is the largest cell over the mean', () => {
    expect(cellImbalance(Int32Array.from([0, 0, 0, 1]), 2)).toBe(1.5);
    expect(cellImbalance(new Int32Array(0), 4)).toBe(0);
  });
});
