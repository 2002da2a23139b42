import { type AssignmentKernelFactory, assignNearest, javascriptKernel, lloydKMeans, lloydKMeansSync, type PointSet } from './lloyd';
import { dot } from './kernels';
import { SeededRandom, unitClusters } from './random';

/** `clusters` tight blobs around random unit centres (dim 16), points interleaved across clusters, as unit vectors. */
function unitBlobs(clusters: number, perCluster: number, seed: number): { set: PointSet; labels: Int32Array } {
  const { data, labels } = unitClusters(clusters, perCluster, 16, 0.02, seed);
  return { set: { data, dim: 16, rows: Int32Array.from({ length: labels.length }, (_, i) => i) }, labels };
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

/** The built-in JavaScript kernel, wrapped to count the calls the engine makes, with a `dotsWith` for seeding. */
function countingKernel(calls: { nearest: number; dotsWith: number }): AssignmentKernelFactory {
  return (points, _k, geometry) => {
    const { data, dim, rows } = points;
    const inner = javascriptKernel(points, geometry);
    return {
      rowsPerCall: 8,
      load: (centroids, count) => inner.load(centroids, count),
      nearest(start, end, outIdx, outScore) {
        calls.nearest++;
        inner.nearest(start, end, outIdx, outScore);
      },
      values: () => inner.values(),
      offset: (p) => inner.offset(p),
      dotsWith(po) {
        calls.dotsWith++;
        const view = new Float32Array(rows.length);
        for (let i = 0; i < rows.length; i++) view[i] = dot(data, rows[i]! * dim, data, po, dim);
        return { view, base: 0 };
      },
      release: () => inner.release(),
    };
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

  it('When a cluster goes empty and the rule is keep, then its centroid stays; when the rule is a function, the function places it', async () => {
    const set: PointSet = { data: Float32Array.from([1, 0, 0, 1]), dim: 2, rows: Int32Array.from([0, 1]) };
    const start = Float32Array.from([1, 0, 1, 0]);
    const kept = await lloydKMeans(set, 2, { geometry: 'spherical', maxIterations: 5, initialCentroids: start, emptyClusters: 'keep' });
    // Iteration 1: both points on centroid 0 (ties to the lower index), centroid 1 stays on [1, 0] and then
    // takes the first point back.
    expect(kept.reseeds).toBe(0);
    expect([...kept.assignment]).toEqual([1, 0]);
    expect([...kept.centroids]).toEqual([0, 1, 1, 0]);
    const placed: number[] = [];
    const moved = await lloydKMeans(set, 2, {
      geometry: 'spherical',
      maxIterations: 5,
      initialCentroids: start,
      emptyClusters: (c, centroids) => {
        placed.push(c);
        centroids.set([0, 1], c * 2);
      },
    });
    expect(placed).toEqual([1]);
    expect(moved.reseeds).toBe(1);
    expect([...moved.assignment]).toEqual([0, 1]);
  });

  it('When the same run is made synchronously, then centroids, assignment and iterations are the same as the async run', async () => {
    const { set } = unitBlobs(6, 40, 3);
    for (const geometry of ['euclidean', 'spherical'] as const) {
      const a = await lloydKMeans(set, 6, { geometry, random: new SeededRandom(4), maxIterations: 20 });
      const b = lloydKMeansSync(set, 6, { geometry, random: new SeededRandom(4), maxIterations: 20 });
      expect(b.centroids).toEqual(a.centroids);
      expect(b.assignment).toEqual(a.assignment);
      expect(b.iterations).toBe(a.iterations);
    }
  });

  it('When neither a generator nor starting centroids are given, then it throws RangeError', () => {
    const { set } = unitBlobs(2, 4, 1);
    expect(() => lloydKMeansSync(set, 2, { maxIterations: 3 })).toThrow(RangeError);
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
