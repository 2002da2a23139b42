import { recall, SyntheticMixture } from '@polyphony/testkit';
import { AvailabilityMask } from './availability-mask';
import { IvfCorruptStoreError, IvfInputError } from './errors';
import { buildIvfIndex, type VectorBatch } from './ivf-build';
import { IvfIndex, parseRerankSource, type SearchStats, type StoredCell } from './ivf-index';
import { dot, normaliseInto, SeededRandom } from '@polyphony/vectors';
import { setSimdKernelsEnabled } from '../simd/kernels';
import { parseVectorMode, quantiseIndex, quantiserFromParams, restoreQuantised } from './quantised-store';

const N = 8000;
const K = 10;

function batches(count: number): VectorBatch[] {
  const out: VectorBatch[] = [];
  for (const b of new SyntheticMixture({ seed: 77 }).batches(count, 2000)) out.push({ ids: b.ids, vectors: b.vectors });
  return out;
}

describe('quantised IVF generations (int8, pq) with exact re-ranking from disk', () => {
  let float: IvfIndex;
  const cells: StoredCell[] = [];
  let centroids: Float32Array;
  const queries: number[] = [];
  let truth: { row: number; distance: number }[][];

  // Generous: the suite builds, quantises and restores 8k-vector generations (worker threads under ts-jest) on a shared 2-core machine.
  jest.setTimeout(900_000);
  beforeAll(async () => {
    const built = await buildIvfIndex(batches(N), {
      expectedCount: N,
      onTrained: (info) => {
        centroids = info.centroids.slice();
      },
      onCell: (cellId, rowIds, vectors, ids) => {
        cells.push({ cellId, rowIds: rowIds.slice(), vectors: vectors.slice(), ids: [...ids] });
      },
    });
    float = built.index;
    const rng = new SeededRandom(3);
    for (let i = 0; i < 60; i++) queries.push(rng.nextInt(N));
    truth = queries.map((r) => float.exactSearch(float.getVector(r), { k: K, exclude: [r] }));
  });

  for (const mode of ['int8', 'pq'] as const) {
    describe(mode, () => {
      let index: IvfIndex;
      beforeAll(async () => {
        index = await quantiseIndex(float, { mode, pqM: 25, sampleSize: 2000 });
      });

      it('keeps no float vectors in memory and reads exact vectors back from disk', () => {
        expect(index.mode).toBe(mode);
        expect(index.vectorBytes).toBe(N * (mode === 'int8' ? 200 : 25));
        for (const r of [0, 17, N - 1]) expect([...index.getVector(r)]).toEqual([...float.getVector(r)]);
      });

      it('reaches recall@10 >= 0.95 against exact search, with exact distances', () => {
        const stats: SearchStats = { mode: 'ivf', cellsProbed: 0, distanceComputations: 0, centroidComputations: 0 };
        const found = queries.map((r) => index.searchByRow(r, { k: K, stats }));
        expect(recall(found, truth)).toBeGreaterThanOrEqual(0.95);
        expect(stats.reranked).toBeGreaterThanOrEqual(K);
        found.forEach((res, i) => {
          expect(res).toHaveLength(K);
          const q = float.getVector(queries[i]!);
          for (const h of res) expect(h.distance).toBeCloseTo(1 - dotOf(float.getVector(h.row), q), 5);
        });
      });

      it('a short list longer than one kernel block (several re-rank calls) gives the exact distances of dot()', () => {
        // 600 rows: more than the 252 rows of 200-d floats one kernel call scores from the arena's block (int8).
        for (const r of queries.slice(0, 5)) {
          const q = float.getVector(r);
          const unit = new Float32Array(q.length);
          normaliseInto(q, 0, unit, 0, q.length); // as the search normalises its query
          const res = index.searchByRow(r, { k: 400, rerank: 600 });
          expect(res).toHaveLength(400);
          for (const h of res) expect(h.distance).toBe(1 - dot(index.getVector(h.row), 0, unit, 0, unit.length));
        }
      });

      it('a short list of k only (no re-ranking slack) loses recall: the re-ranking is what the recall rests on', () => {
        // Every cell probed, so that no miss comes from the cells (session 17: with the build's better assignment the
        // default nprobe's two misses on this data were both the cells', and the two lists tied at 0.9967 with 4 groups).
        const all = index.nlist;
        const found = queries.map((r) => index.searchByRow(r, { k: K, nprobe: all, rerank: K + 1 }));
        const full = queries.map((r) => index.searchByRow(r, { k: K, nprobe: all }));
        expect(recall(found, truth)).toBeLessThan(recall(full, truth));
      });

      it('honours masks: a 1% mask returns k exact results, none unavailable', () => {
        const rng = new SeededRandom(9);
        const rows: number[] = [];
        for (let r = 0; r < N; r++) if (rng.nextFloat() < 0.01 || r === queries[0]) rows.push(r);
        const mask = AvailabilityMask.fromRows(N, rows);
        for (const q of queries.slice(0, 10)) {
          const res = index.searchByRow(q, { k: K, mask });
          const exact = float.exactSearch(float.getVector(q), { k: K, mask, exclude: [q] });
          expect(res.map((h) => h.row)).toEqual(exact.map((h) => h.row));
          for (const h of res) expect(mask.has(h.row)).toBe(true);
        }
        const half = AvailabilityMask.fromRows(N, Array.from({ length: N / 2 }, (_, i) => i * 2));
        const res = index.searchByRow(queries[1]!, { k: K, mask: half });
        expect(res).toHaveLength(K);
        for (const h of res) expect(h.row % 2).toBe(0);
      });

      it('exactSearch over the disk copy equals the float brute force', () => {
        const q = queries[2]!;
        expect(index.exactSearch(index.getVector(q), { k: K, exclude: [q] }).map((h) => h.row)).toEqual(truth[2]!.map((h) => h.row));
      });

      it('encodes in worker threads to the same codes as in-thread (quantise after a build)', async () => {
        const quantisedParallel = await quantiseIndex(float, { mode, pqM: 25, sampleSize: 2000, workers: 2 });
        expect(Buffer.from(quantisedParallel.parts().quantised!.codes).equals(Buffer.from(index.parts().quantised!.codes))).toBe(true);
      }, 180_000);

      it('restores from stored cells in bounded memory to the same codes and answers', async () => {
        const shuffled = [...cells].reverse();
        // With worker threads: same codes as the in-thread quantisation, hence the same answers.
        const restored = await restoreQuantised({ dim: 200, count: N, centroids, cells: shuffled }, { mode, pqM: 25, sampleSize: 2000, workers: 2 });
        // (re-normalising the stored unit vectors may move a value by one ulp: compare byte agreement)
        const a = restored.parts().quantised!.codes;
        const b = index.parts().quantised!.codes;
        let same = 0;
        for (let i = 0; i < a.length; i++) if (a[i] === b[i]) same++;
        expect(a.length).toBe(b.length);
        expect(same / a.length).toBeGreaterThan(0.999);
        expect(restored.mode).toBe(mode);
        for (const q of queries.slice(0, 10)) expect(restored.searchByRow(q, { k: K }).map((h) => h.row)).toEqual(index.searchByRow(q, { k: K }).map((h) => h.row));
      }, 180_000);

      it('restores with the codes stored by the build: identical codes, no training, same answers; bad stored codes are refused', async () => {
        const parts = index.parts();
        const qz = parts.quantised!;
        const cellCodes = Array.from({ length: parts.nlist }, (_, c) => ({ cellId: c, codes: qz.codes.slice(parts.cellOffsets[c]! * qz.quantiser.codeSize, parts.cellOffsets[c + 1]! * qz.quantiser.codeSize) })).filter((c) => c.codes.length > 0);
        const quantiser = quantiserFromParams(mode, 200, qz.quantiser.toParams(), mode === 'pq' ? 25 : undefined);
        const restored = await restoreQuantised({ dim: 200, count: N, centroids, cells: [...cells].reverse() }, { mode }, { quantiser, cells: [...cellCodes].reverse() });
        expect(Buffer.from(restored.parts().quantised!.codes).equals(Buffer.from(qz.codes))).toBe(true);
        for (const q of queries.slice(0, 10)) expect(restored.searchByRow(q, { k: K })).toEqual(index.searchByRow(q, { k: K }));
        await expect(restoreQuantised({ dim: 200, count: N, centroids, cells }, { mode }, { quantiser, cells: cellCodes.slice(1) })).rejects.toThrow(/missing/);
        const short = [{ ...cellCodes[0]!, codes: cellCodes[0]!.codes.subarray(1) }, ...cellCodes.slice(1)];
        await expect(restoreQuantised({ dim: 200, count: N, centroids, cells }, { mode }, { quantiser, cells: short })).rejects.toThrow(IvfCorruptStoreError);
        if (mode === 'pq') expect(() => quantiserFromParams('pq', 200, qz.quantiser.toParams(), 50)).toThrow(IvfCorruptStoreError);
      }, 180_000);
    });
  }

  it('restore rejects a repeated cell and closes its file', async () => {
    await expect(restoreQuantised({ dim: 200, count: N, centroids, cells: [cells[0]!, cells[0]!] }, { mode: 'int8' })).rejects.toThrow(IvfCorruptStoreError);
  });

  it('parses the mode setting', () => {
    expect(parseVectorMode(undefined)).toBe('float');
    expect(parseVectorMode(' INT8 ')).toBe('int8');
    expect(parseVectorMode('pq')).toBe('pq');
    expect(() => parseVectorMode('fp16')).toThrow(IvfInputError);
  });

  it('int8 with re-rank source `codes` and no resident copy: no file read per query, recall kept, distances within the int8 error', async () => {
    const index = await quantiseIndex(float, { mode: 'int8', sampleSize: 2000, rerank: 'codes' });
    const byFile = await quantiseIndex(float, { mode: 'int8', sampleSize: 2000 });
    const resident = await quantiseIndex(float, { mode: 'int8', sampleSize: 2000, rerank: 'codes', residentMaxBytes: N * 200 * 4 });
    try {
      expect(index.codesServeQueries).toBe(true);
      expect(byFile.codesServeQueries).toBe(false);
      expect(resident.codesServeQueries).toBe(false); // a resident float copy always wins (exact distances)
      const file = index.parts().quantised!.file;
      const readRow = jest.spyOn(file, 'readRow');
      const readRows = jest.spyOn(file, 'readRows');
      const mask = AvailabilityMask.fromRows(N, Array.from({ length: N / 100 }, (_, i) => i * 100 + 7).concat(queries));
      const found = queries.map((r) => index.searchByRow(r, { k: K }));
      const masked = queries.map((r) => index.searchByRow(r, { k: K, mask }));
      expect(readRow).not.toHaveBeenCalled();
      expect(readRows).not.toHaveBeenCalled();
      readRow.mockRestore();
      readRows.mockRestore();
      const exactRecall = recall(queries.map((r) => byFile.searchByRow(r, { k: K })), truth);
      expect(recall(found, truth)).toBeGreaterThanOrEqual(0.95);
      expect(recall(found, truth)).toBeGreaterThanOrEqual(exactRecall - 0.02);
      const maskedTruth = queries.map((r) => float.exactSearch(float.getVector(r), { k: K, mask, exclude: [r] }));
      expect(recall(masked, maskedTruth)).toBeGreaterThanOrEqual(0.95);
      for (const [i, res] of found.entries()) {
        expect(res).toHaveLength(K);
        const q = float.getVector(queries[i]!);
        // int8 reconstruction: at most step/2 per component, a few 1e-3 of cosine distance on these vectors.
        for (const h of res) expect(Math.abs(h.distance - (1 - dotOf(float.getVector(h.row), q)))).toBeLessThan(0.01);
        for (let j = 1; j < res.length; j++) expect(res[j]!.distance).toBeGreaterThanOrEqual(res[j - 1]!.distance);
      }
      // Same answers as the resident index except near-ties: the ranking is the codes', the distances approximate.
      for (const r of queries.slice(0, 10)) {
        const a = index.searchByRow(r, { k: K }).map((h) => h.row);
        const b = resident.searchByRow(r, { k: K }).map((h) => h.row);
        expect(a.filter((x) => b.includes(x)).length).toBeGreaterThanOrEqual(K - 2);
      }
    } finally {
      for (const x of [index, byFile, resident]) x.parts().quantised!.file.close();
    }
  });

  it('parses the re-rank source setting', () => {
    expect(parseRerankSource(undefined, 'codes')).toBe('codes');
    expect(parseRerankSource(' FILE ', 'codes')).toBe('file');
    expect(() => parseRerankSource('disk', 'codes')).toThrow(IvfInputError);
  });

  it('int8: the SIMD scan (codes in a kernel arena, int16 table) finds the same neighbours as the JavaScript scan', async () => {
    const simd = await quantiseIndex(float, { mode: 'int8', sampleSize: 2000 });
    setSimdKernelsEnabled(false);
    let js: IvfIndex;
    try {
      js = await quantiseIndex(float, { mode: 'int8', sampleSize: 2000 });
    } finally {
      setSimdKernelsEnabled(true);
    }
    expect(simd.parts().quantised!.arena).toBeDefined();
    expect(js.parts().quantised!.arena).toBeUndefined();
    expect([...simd.parts().quantised!.codes]).toEqual([...js.parts().quantised!.codes]);
    const mask = AvailabilityMask.fromRows(N, Array.from({ length: N / 100 }, (_, i) => i * 100 + 7));
    for (const q of queries) {
      // Exact re-ranking of a short list: the answers agree except for near-ties at the list's edge.
      const a = simd.searchByRow(q, { k: K }).map((h) => h.row);
      const b = js.searchByRow(q, { k: K }).map((h) => h.row);
      expect(a.filter((r) => b.includes(r)).length).toBeGreaterThanOrEqual(K - 1);
      expect(simd.searchByRow(q, { k: K, mask }).map((h) => h.row)).toEqual(js.searchByRow(q, { k: K, mask }).map((h) => h.row));
    }
    expect(recall(queries.map((r) => simd.searchByRow(r, { k: K })), truth)).toBeGreaterThanOrEqual(recall(queries.map((r) => js.searchByRow(r, { k: K })), truth) - 0.01);
    simd.parts().quantised!.file.close();
    js.parts().quantised!.file.close();
  });
});

function dotOf(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}
