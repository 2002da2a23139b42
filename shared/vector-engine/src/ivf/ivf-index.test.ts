import { recall, SyntheticMixture } from '@polyphony/testkit';
import { AvailabilityMask } from './availability-mask';
import { IvfCorruptStoreError, IvfDuplicateIdError, IvfInputError } from './errors';
import { IvfBuildResult, TrainedInfo, VectorBatch, buildIvfIndex, defaultNlist, smallestKeyRows } from './ivf-build';
import { CentroidScan } from './centroid-scan';
import { IvfIndex, SearchStats, StoredCell } from './ivf-index';
import { SeededRandom } from '@polyphony/vectors';
import { setSimdKernelsEnabled } from '../simd/kernels';

const DIM = 200;
const N = 20000;
const K = 10;

function mixtureBatches(count: number, options: { seed?: number; stream?: number; prefix?: string } = {}): VectorBatch[] {
  const mixture = new SyntheticMixture({ seed: options.seed ?? 1234 });
  const out: VectorBatch[] = [];
  for (const b of mixture.batches(count, 2000, options.stream ?? 1)) {
    out.push({ ids: options.prefix ? b.ids.map((id) => options.prefix + id) : b.ids, vectors: b.vectors });
  }
  return out;
}

function newStats(): SearchStats {
  return { mode: 'ivf', cellsProbed: 0, distanceComputations: 0, centroidComputations: 0 };
}

function queryRows(count: number, size: number, seed: number): number[] {
  const rng = new SeededRandom(seed);
  return Array.from({ length: count }, () => rng.nextInt(size));
}

describe('IVF index on a 20k-item mixture', () => {
  let built: IvfBuildResult;
  let index: IvfIndex;
  let trained: TrainedInfo | undefined;
  const cells: StoredCell[] = [];
  // The hooks build a 20k-item generation: generous on a shared, loaded 2-core machine (the default 60 s timed out at load 25).
  jest.setTimeout(600_000);

  beforeAll(async () => {
    built = await buildIvfIndex(mixtureBatches(N), {
      expectedCount: N,
      onTrained: (info) => {
        trained = { ...info, centroids: info.centroids.slice() };
      },
      onCell: async (cellId, rowIds, vectors, ids) => {
        await Promise.resolve();
        cells.push({ cellId, rowIds: rowIds.slice(), vectors: vectors.slice(), ids: [...ids] });
      },
    });
    index = built.index;
  });

  it('When built, then nlist and the training sample follow the reference formulas', () => {
    expect(index.size).toBe(N);
    expect(index.nlist).toBe(defaultNlist(N));
    expect(index.nlist).toBe(1131); // round(8 * sqrt(20000))
    expect(built.report.sampleSize).toBe(N); // min(N, 50 * nlist)
    expect(trained?.nlist).toBe(index.nlist);
    expect(trained?.count).toBe(N);
  });

  it('When cells are emitted, then every vector is assigned to exactly one cell and matches the index', () => {
    expect(cells.map((c) => c.cellId)).toEqual(Array.from({ length: index.nlist }, (_, i) => i));
    const seen = new Uint8Array(N);
    const mismatches: string[] = [];
    for (const cell of cells) {
      if (Array.from(cell.rowIds).some((r, i) => index.cellRows(cell.cellId)[i] !== r)) mismatches.push(`cell ${cell.cellId} rows`);
      for (let i = 0; i < cell.rowIds.length; i++) {
        const row = cell.rowIds[i]!;
        seen[row]!++;
        if (index.cellOf(row) !== cell.cellId) mismatches.push(`row ${row} cellOf`);
        if (cell.ids[i] !== index.idOf(row) || index.rowOf(cell.ids[i]!) !== row) mismatches.push(`row ${row} id`);
      }
    }
    expect(mismatches).toEqual([]);
    expect(seen.every((v) => v === 1)).toBe(true);
    const sample = cells.find((c) => c.rowIds.length > 0)!;
    const v = index.getVector(sample.rowIds[0]!);
    expect([...v]).toEqual([...sample.vectors.subarray(0, DIM)]);
    expect(v.reduce((s, x) => s + x * x, 0)).toBeCloseTo(1, 5);
  });

  it('When queried at the default nprobe, then recall@10 against exact search is at least 0.95', () => {
    const rows = queryRows(200, N, 1);
    const found = rows.map((r) => index.searchByRow(r, { k: K }));
    const truth = rows.map((r) => index.exactSearch(index.getVector(r), { k: K, exclude: [r] }));
    expect(found.every((f) => f.length === K)).toBe(true);
    expect(recall(found, truth)).toBeGreaterThanOrEqual(0.95);
  });

  it('When the centroids are scanned on 8-bit codes (nlist >= 512), then a query re-scores max(32, 2 * nprobe) of them exactly and answers like scoring all', () => {
    const flat = new IvfIndex({ ...index.parts(), groups: null });
    const scan = index.parts().groups as CentroidScan;
    expect(scan).toBeInstanceOf(CentroidScan);
    const rows = queryRows(200, N, 11);
    const stats = newStats();
    const scanned = rows.map((r) => {
      const res = index.searchByRow(r, { k: K, nprobe: 16, stats });
      // every centroid on its code + the 32 best exactly (no adaptive probing without a mask)
      expect(stats.centroidComputations).toBe(index.nlist + scan.rescore(16));
      return res;
    });
    const all = rows.map((r) => flat.searchByRow(r, { k: K, nprobe: 16, stats }));
    expect(stats.centroidComputations).toBe(index.nlist);
    const truth = rows.map((r) => index.exactSearch(index.getVector(r), { k: K, exclude: [r] }));
    expect(recall(scanned, truth)).toBeGreaterThanOrEqual(recall(all, truth) - 0.005);
    expect(recall(scanned, all)).toBeGreaterThanOrEqual(0.99);
    // A wide probe (2 * nprobe * 2 >= nlist) scores every centroid exactly: same answers.
    const wide = rows.slice(0, 10);
    expect(wide.map((r) => index.searchByRow(r, { k: K, nprobe: 300 }))).toEqual(wide.map((r) => flat.searchByRow(r, { k: K, nprobe: 300 })));
  });

  it('When the coarse quantiser scores on the SIMD kernels, then every answer and centroid count equals the JavaScript path\'s', () => {
    setSimdKernelsEnabled(false);
    let plain: IvfIndex;
    try {
      plain = new IvfIndex({ ...index.parts(), groups: undefined });
    } finally {
      setSimdKernelsEnabled(true);
    }
    const rows = queryRows(60, N, 21);
    const half = AvailabilityMask.fromRows(
      N,
      Array.from({ length: N / 2 }, (_, i) => 2 * i),
    );
    // Every row of the 40 cells nearest to row 77 hidden: adaptive probing scores the remaining centroids exactly.
    const q77 = index.getVector(77);
    const hiddenCells = Array.from({ length: index.nlist }, (_, c) => c)
      .map((c) => ({ c, s: index.centroid(c).reduce((acc, x, i) => acc + x * q77[i]!, 0) }))
      .sort((a, b) => b.s - a.s)
      .slice(0, 40);
    const hidden = new Set<number>();
    for (const { c } of hiddenCells) for (const r of index.cellRows(c)) hidden.add(r);
    const holed = AvailabilityMask.fromRows(
      N,
      Array.from({ length: N }, (_, r) => r).filter((r) => !hidden.has(r)),
    );
    const cases: Array<{ row: number; nprobe?: number; mask?: AvailabilityMask }> = [
      ...rows.map((row) => ({ row, nprobe: 8 })),
      ...rows.slice(0, 20).map((row) => ({ row })),
      ...rows.slice(0, 20).map((row) => ({ row, mask: half })),
      { row: 77, nprobe: 8, mask: holed },
    ];
    let adaptive = 0;
    for (const { row, nprobe, mask } of cases) {
      const s1 = newStats();
      const s2 = newStats();
      expect(index.searchByRow(row, { k: K, nprobe, mask, stats: s1 })).toEqual(plain.searchByRow(row, { k: K, nprobe, mask, stats: s2 }));
      expect(s1).toEqual(s2);
      if (s1.centroidComputations > index.nlist + 32 && nprobe === 8) adaptive++;
    }
    expect(adaptive).toBeGreaterThanOrEqual(1); // the holed mask made a partial query score the remaining centroids
  });

  it('When a 50% mask is given, then no unavailable row is returned and recall holds', () => {
    const rng = new SeededRandom(5);
    const available: number[] = [];
    for (let r = 0; r < N; r++) if (rng.nextFloat() < 0.5) available.push(r);
    const mask = AvailabilityMask.fromRows(N, available);
    const rows = queryRows(100, N, 2);
    const stats = newStats();
    const found = rows.map((r) => index.searchByRow(r, { k: K, mask, stats }));
    expect(stats.mode).toBe('ivf');
    for (const res of found) {
      expect(res).toHaveLength(K);
      for (const hit of res) expect(mask.has(hit.row)).toBe(true);
    }
    const truth = rows.map((r) => index.exactSearch(index.getVector(r), { k: K, mask, exclude: [r] }));
    expect(recall(found, truth)).toBeGreaterThanOrEqual(0.95);
  });

  it('When the mask keeps only 1% of rows, then k exact results still come back', () => {
    const rng = new SeededRandom(6);
    const available = Array.from({ length: N / 100 }, () => rng.nextInt(N));
    const mask = AvailabilityMask.fromRows(N, available);
    for (const r of queryRows(30, N, 3)) {
      const stats = newStats();
      const res = index.search(index.getVector(r), { k: K, mask, stats });
      expect(stats.mode).toBe('exact');
      expect(stats.distanceComputations).toBe(mask.count);
      expect(res).toHaveLength(K);
      expect(res).toEqual(index.exactSearch(index.getVector(r), { k: K, mask }));
    }
  });

  it('When a sparse mask is queried again, or a denser one with nprobe = nlist, then answers stay exact', () => {
    const rng = new SeededRandom(16);
    const sparse = AvailabilityMask.fromRows(N, Array.from({ length: 300 }, () => rng.nextInt(N)));
    const q = index.getVector(11);
    const first = index.search(q, { k: K, mask: sparse });
    expect(index.search(q, { k: K, mask: sparse })).toEqual(first); // served from the cached contiguous copy
    const half = AvailabilityMask.fromRows(N, Array.from({ length: N / 2 }, (_, i) => 2 * i));
    const stats = newStats();
    const res = index.search(q, { k: K, mask: half, nprobe: index.nlist, stats });
    expect(stats.mode).toBe('exact'); // nlist + N * nprobe / nlist >= N: scanning is as cheap as probing
    expect(res).toEqual(index.exactSearch(q, { k: K, mask: half }));
    expect(res.every((h) => h.row % 2 === 0)).toBe(true);
  });

  it('When the mask holds fewer than k rows, then all of them are returned', () => {
    const mask = AvailabilityMask.fromRows(N, [3, 17000, 42]);
    const res = index.search(index.getVector(5), { k: K, mask });
    expect(res.map((h) => h.row).sort((a, b) => a - b)).toEqual([3, 42, 17000]);
  });

  it('When the probed cells hold no available row, then adaptive probing continues until k are found', () => {
    const seed = 123;
    const q = index.getVector(seed);
    const planned = 64;
    // Hide every row of the query's 3 * planned nearest cells: the first probes find nothing available.
    const ranked = Array.from({ length: index.nlist }, (_, c) => c)
      .map((c) => ({ c, s: index.centroid(c).reduce((acc, x, i) => acc + x * q[i]!, 0) }))
      .sort((a, b) => b.s - a.s)
      .slice(0, 3 * planned);
    const hidden = new Set<number>();
    for (const { c } of ranked) for (const r of index.cellRows(c)) hidden.add(r);
    const available: number[] = [];
    for (let r = 0; r < N; r++) if (!hidden.has(r)) available.push(r);
    const mask = AvailabilityMask.fromRows(N, available);
    const stats = newStats();
    const res = index.search(q, { k: K, nprobe: planned, mask, stats });
    expect(stats.mode).toBe('ivf');
    const plannedWithDensity = Math.ceil((planned * N) / mask.count);
    expect(stats.cellsProbed).toBeGreaterThan(plannedWithDensity);
    expect(res).toHaveLength(K);
    for (const hit of res) expect(mask.has(hit.row)).toBe(true);
  });

  it('When rows are excluded, then they never come back and k results are still returned', () => {
    for (const r of queryRows(20, N, 4)) {
      const q = index.getVector(r);
      const top = index.exactSearch(q, { k: 4 }).map((h) => h.row);
      expect(top[0]).toBe(r); // a stored vector is its own nearest neighbour
      const res = index.search(q, { k: K, exclude: top });
      expect(res).toHaveLength(K);
      for (const hit of res) expect(top).not.toContain(hit.row);
      expect(index.searchByRow(r, { k: K }).map((h) => h.row)).not.toContain(r);
    }
  });

  it('When results are returned, then distances are ascending cosine distances of the stored vectors', () => {
    const q = index.getVector(77);
    const res = index.search(q, { k: 20 });
    for (let i = 1; i < res.length; i++) expect(res[i]!.distance).toBeGreaterThanOrEqual(res[i - 1]!.distance);
    for (const hit of res) {
      const v = index.getVector(hit.row);
      expect(hit.distance).toBeCloseTo(1 - v.reduce((s, x, i) => s + x * q[i]!, 0), 6);
    }
  });

  it('When restored from the emitted centroids and cells (in any order), then queries answer identically', async () => {
    const shuffled = [...cells].reverse();
    const restored = await IvfIndex.restore({ dim: DIM, count: N, centroids: trained!.centroids, cells: shuffled, generation: 7 });
    expect(restored.generation).toBe(7);
    expect(restored.nlist).toBe(index.nlist);
    for (const r of queryRows(30, N, 8)) {
      expect(restored.searchByRow(r, { k: K })).toEqual(index.searchByRow(r, { k: K }));
      expect(restored.idOf(r)).toBe(index.idOf(r));
    }
  });

  it('When a stored cell is missing or repeated, then restore refuses the store', async () => {
    const nonEmpty = cells.findIndex((c) => c.rowIds.length > 0);
    const missing = cells.filter((_, i) => i !== nonEmpty);
    await expect(IvfIndex.restore({ dim: DIM, count: N, centroids: trained!.centroids, cells: missing })).rejects.toThrow(IvfCorruptStoreError);
    await expect(IvfIndex.restore({ dim: DIM, count: N, centroids: trained!.centroids, cells: [...cells, cells[nonEmpty]!] })).rejects.toThrow(IvfCorruptStoreError);
  });

  it('When inputs are malformed, then IvfInputError is thrown', () => {
    expect(() => index.search(new Float32Array(DIM - 1), { k: K })).toThrow(IvfInputError);
    expect(() => index.search(new Float32Array(DIM), { k: K })).toThrow(IvfInputError);
    expect(() => index.search(index.getVector(0), { k: 0 })).toThrow(IvfInputError);
    expect(() => index.search(index.getVector(0), { k: K, mask: AvailabilityMask.all(N - 1) })).toThrow(IvfInputError);
    expect(() => index.getVector(N)).toThrow(IvfInputError);
  });

  it('When a mask is built from ids, then unknown ids are ignored', () => {
    const mask = index.maskFromIds([index.idOf(10), 'fp_4unknown', index.idOf(20)]);
    expect([...mask.toRows()]).toEqual([10, 20]);
  });
});

describe(buildIvfIndex.name, () => {
  it('When the seed is fixed, then two builds are identical; another seed gives other centroids', async () => {
    const batches = mixtureBatches(1500);
    const a = (await buildIvfIndex(batches, { seed: 9 })).index;
    const b = (await buildIvfIndex(batches, { seed: 9 })).index;
    const c = (await buildIvfIndex(batches, { seed: 10 })).index;
    expect(a.nlist).toBe(310); // two-level training path (nlist >= 256)
    let sameAsB = true;
    let sameAsC = true;
    for (let cell = 0; cell < a.nlist; cell++) {
      const ca = a.centroid(cell);
      if (ca.some((x, i) => x !== b.centroid(cell)[i])) sameAsB = false;
      if (a.cellRows(cell).some((r, i) => r !== b.cellRows(cell)[i])) sameAsB = false;
      if (ca.some((x, i) => x !== c.centroid(cell)[i])) sameAsC = false;
    }
    expect(sameAsB).toBe(true);
    expect(sameAsC).toBe(false);
  });

  it('When the source is empty, then the index is empty and answers nothing', async () => {
    const { index } = await buildIvfIndex([]);
    expect(index.size).toBe(0);
    expect(index.nlist).toBe(0);
    expect(index.search(new Float32Array(DIM).fill(1), { k: 5 })).toEqual([]);
  });

  it('When the catalogue is tiny, then every item is still found', async () => {
    const batches = mixtureBatches(5);
    const { index } = await buildIvfIndex(batches, { expectedCount: 1 });
    expect(index.size).toBe(5);
    expect(index.nlist).toBe(5); // min(round(8 * sqrt(5)), N)
    const res = index.search(index.getVector(2), { k: 10 });
    expect(res.map((h) => h.row).sort()).toEqual([0, 1, 2, 3, 4]);
    expect(res[0]!.row).toBe(2);
  });

  it('When ids repeat or vectors are malformed, then the build fails with a typed error', async () => {
    const v = new Float32Array(2 * DIM).fill(1);
    await expect(buildIvfIndex([{ ids: ['x', 'x'], vectors: v }])).rejects.toThrow(IvfDuplicateIdError);
    await expect(buildIvfIndex([{ ids: ['x'], vectors: v }])).rejects.toThrow(IvfInputError);
    const bad = new Float32Array(DIM).fill(1);
    bad[3] = NaN;
    await expect(buildIvfIndex([{ ids: ['x'], vectors: bad }])).rejects.toThrow(IvfInputError);
  });

  it('When the source is async and larger than the capacity hint, then all rows are ingested in order', async () => {
    const batches = mixtureBatches(1200, { prefix: 'srv:' });
    async function* source(): AsyncGenerator<VectorBatch> {
      for (const b of batches) {
        await new Promise((r) => setImmediate(r));
        yield b;
      }
    }
    const { index } = await buildIvfIndex(source(), { expectedCount: 10 });
    expect(index.size).toBe(1200);
    expect(index.idOf(0)).toBe(`srv:${SyntheticMixture.idOf(0)}`);
    expect(index.idOf(1199)).toBe(`srv:${SyntheticMixture.idOf(1199)}`);
  });
});

describe('smallestKeyRows', () => {
  it('When keys repeat, then the rows of the smallest keys come back ordered by (key, row)', () => {
    const rng = new SeededRandom(21);
    const keys = Uint32Array.from({ length: 5000 }, () => (rng.nextFloat() < 0.3 ? 77 : rng.nextUint32() & 0xfff0000f));
    for (const size of [0, 1, 1499, 1500, 1501, 4000, 5000, 9000]) {
      const expected = Array.from({ length: keys.length }, (_, i) => i)
        .sort((a, b) => keys[a]! - keys[b]! || a - b)
        .slice(0, size);
      expect([...smallestKeyRows(keys, size)]).toEqual(expected);
    }
  });
});
