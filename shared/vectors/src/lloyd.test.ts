import { type AssignmentKernel, type AssignmentKernelFactory, assignNearest, lloydKMeans, type PointSet } from './lloyd';
import { normaliseInto } from './kernels';
import { SeededRandom } from './random';

/** `clusters` tight blobs around random unit centres (dim 16), points interleaved across clusters, as unit vectors. */
function unitBlobs(clusters: number, perCluster: number, seed: number): { set: PointSet; labels: Int32Array } {
  const dim = 16;
  const rng = new SeededRandom(seed);
  const centres = new Float32Array(clusters * dim);
  for (let c = 0; c < clusters; c++) {
    for (let d = 0; d < dim; d++) centres[c * dim + d] = rng.nextGaussian();
    normaliseInto(centres, c * dim, centres, c * dim, dim);
  }
  const n = clusters * perCluster;
  const data = new Float32Array(n * dim);
  const labels = new Int32Array(n);
  const raw = new Float32Array(dim);
  for (let i = 0; i < n; i++) {
    labels[i] = i % clusters;
    for (let d = 0; d < dim; d++) raw[d] = centres[labels[i]! * dim + d]! + 0.02 * rng.nextGaussian();
    normaliseInto(raw, 0, data, i * dim, dim);
  }
  return { set: { data, dim, rows: Int32Array.from({ length: n }, (_, i) => i) }, labels };
}

/** True when every cluster holds one label and every label one cluster. */
function samePartition(a: Int32Array, b: Int32Array): boolean {
  const ab = new Map<number, number>();
  const ba = new Map<number, number>();
  for (let i = 0; i < a.length; i++) {
    if ((ab.get(a[i]!) ?? b[i]) !== b[i] || (ba.get(b[i]!) ?? a[i]) !== a[i]) return false;
    ab.set(a[i]!, b[i]!);
    ba.set(b[i]!, a[i]!);
  }
  return true;
}

/** A plain JavaScript dot-product kernel that counts the calls the engine makes. */
function countingKernel(calls: { nearest: number; dotsWith: number }): AssignmentKernelFactory {
  return (points) => {
    const { data, dim, rows } = points;
    let c: Float32Array = new Float32Array(0);
    let k = 0;
    const kernel: AssignmentKernel = {
      rowsPerCall: 8,
      load(centroids, count) {
        c = centroids;
        k = count;
      },
      nearest(start, end, outIdx, outScore) {
        calls.nearest++;
        for (let p = start; p < end; p++) {
          let best = -1;
          let bestDot = -Infinity;
          for (let j = 0; j < k; j++) {
            let s = 0;
            for (let d = 0; d < dim; d++) s += data[rows[p]! * dim + d]! * c[j * dim + d]!;
            if (s > bestDot) {
              bestDot = s;
              best = j;
            }
          }
          outIdx[p] = best;
          outScore[p] = bestDot;
        }
      },
      values: () => data,
      offset: (p) => rows[p]! * dim,
      dotsWith(po) {
        calls.dotsWith++;
        const view = new Float32Array(rows.length);
        for (let i = 0; i < rows.length; i++) {
          let s = 0;
          for (let d = 0; d < dim; d++) s += data[rows[i]! * dim + d]! * data[po + d]!;
          view[i] = s;
        }
        return { view, base: 0 };
      },
      release() {},
    };
    return kernel;
  };
}

describe(lloydKMeans.name, () => {
  it('When unit blobs are clustered spherically, then the clusters are recovered and every centroid has unit length', async () => {
    const { set, labels } = unitBlobs(6, 40, 3);
    const r = await lloydKMeans(set, 6, { geometry: 'spherical', random: new SeededRandom(1), maxIterations: 30 });
    expect(samePartition(r.assignment, labels)).toBe(true);
    expect(r.lastChangedFraction).toBe(0);
    for (let c = 0; c < 6; c++) {
      let ss = 0;
      for (let d = 0; d < set.dim; d++) ss += r.centroids[c * set.dim + d]! ** 2;
      expect(Math.sqrt(ss)).toBeCloseTo(1, 5);
    }
  });

  it('When a kernel is plugged in, then the engine uses it for assignment and seeding and finds the same partition', async () => {
    const { set, labels } = unitBlobs(5, 30, 8);
    const calls = { nearest: 0, dotsWith: 0 };
    const r = await lloydKMeans(set, 5, { geometry: 'spherical', random: new SeededRandom(2), maxIterations: 30, kernel: countingKernel(calls) });
    expect(samePartition(r.assignment, labels)).toBe(true);
    // 150 points in calls of 8 rows: 19 calls per iteration.
    expect(calls.nearest).toBe(19 * r.iterations);
    expect(calls.dotsWith).toBeGreaterThan(0);
  });

  it('When a cluster goes empty, then its centroid is moved onto the worst-served point', async () => {
    // Two points, two centroids both starting on the first point: the second cluster is empty after iteration 1.
    const set: PointSet = { data: Float32Array.from([1, 0, 0, 1]), dim: 2, rows: Int32Array.from([0, 1]) };
    const r = await lloydKMeans(set, 2, { geometry: 'spherical', random: new SeededRandom(1), maxIterations: 5, initialCentroids: Float32Array.from([1, 0, 1, 0]) });
    expect(r.reseeds).toBe(1);
    expect([...r.assignment].sort()).toEqual([0, 1]);
    expect([...r.centroids.subarray(2, 4)]).toEqual([0, 1]);
  });

  it('When k is out of range, then it throws RangeError', async () => {
    const { set } = unitBlobs(2, 2, 1);
    await expect(lloydKMeans(set, 5, { random: new SeededRandom(1), maxIterations: 3 })).rejects.toThrow(RangeError);
  });
});

describe(assignNearest.name, () => {
  it('When points are assigned euclidean, then each gets the centroid at the smallest squared distance', async () => {
    const set: PointSet = { data: Float32Array.from([0, 0, 10, 0, 4, 0, 6, 0]), dim: 2, rows: Int32Array.from([0, 1, 2, 3]) };
    const idx = new Int32Array(4);
    const dist = new Float64Array(4);
    await assignNearest(set, Float32Array.from([0, 0, 10, 0]), 2, idx, dist);
    expect([...idx]).toEqual([0, 1, 0, 1]);
    expect([...dist]).toEqual([0, 0, 16, 16]);
  });
});
