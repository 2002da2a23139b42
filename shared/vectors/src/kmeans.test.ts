import { kmeans, KMeansStoppedError } from './kmeans';
import { mulberry32 } from './random';
import oracle from './__fixtures__/numpy-oracle.json';

/** n points around `centres` (row-major), Gaussian-ish noise of scale `noise` from a seeded generator. */
function blobs(centres: number[][], perBlob: number, noise: number, seed = 1): { points: Float32Array; truth: number[]; d: number } {
  const rng = mulberry32(seed);
  const d = centres[0]!.length;
  const points = new Float32Array(centres.length * perBlob * d);
  const truth: number[] = [];
  let row = 0;
  for (let b = 0; b < centres.length; b++) {
    for (let j = 0; j < perBlob; j++, row++) {
      for (let t = 0; t < d; t++) points[row * d + t] = centres[b]![t]! + (rng() + rng() + rng() - 1.5) * noise;
      truth.push(b);
    }
  }
  return { points, truth, d };
}

/** True when the two labelings define the same partition (cluster numbers may differ). */
function samePartition(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  const ab = new Map<number, number>();
  const ba = new Map<number, number>();
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if ((ab.has(x) && ab.get(x) !== y) || (ba.has(y) && ba.get(y) !== x)) return false;
    ab.set(x, y);
    ba.set(y, x);
  }
  return true;
}

describe('kmeans', () => {
  const centres = [
    [5, 0, 0, 0],
    [0, 5, 0, 0],
    [0, 0, 5, 0],
    [0, 0, 0, 5],
  ];

  it('When blobs are well separated, then it recovers them exactly and centroids sit at the blob means', async () => {
    const { points, truth, d } = blobs(centres, 25, 0.5);
    const r = await kmeans(points, truth.length, d, { k: 4 });
    expect(samePartition(r.assignments, truth)).toBe(true);
    expect([...r.sizes].sort()).toEqual([25, 25, 25, 25]);
    for (let c = 0; c < 4; c++) {
      const members = [...r.assignments.keys()].filter((i) => r.assignments[i] === c);
      for (let t = 0; t < d; t++) {
        const mean = members.reduce((s, i) => s + points[i * d + t]!, 0) / members.length;
        expect(r.centroids[c * d + t]).toBeCloseTo(mean, 4);
      }
    }
    const inertia = [...r.distances].reduce((a, b) => a + b, 0);
    expect(r.inertia).toBeCloseTo(inertia, 6);
  });

  it('When run twice with the same seed, then results are identical; another seed may start elsewhere but finds the same partition', async () => {
    const { points, truth, d } = blobs(centres, 20, 0.8, 7);
    const a = await kmeans(points, truth.length, d, { k: 4, seed: 11 });
    const b = await kmeans(points, truth.length, d, { k: 4, seed: 11 });
    expect([...a.assignments]).toEqual([...b.assignments]);
    expect([...a.centroids]).toEqual([...b.centroids]);
    const c = await kmeans(points, truth.length, d, { k: 4, seed: 12 });
    expect(samePartition(a.assignments, c.assignments)).toBe(true);
  });

  it('When k equals n, then every point is its own cluster with zero inertia', async () => {
    const { points, truth, d } = blobs(centres, 2, 0.3);
    const r = await kmeans(points, truth.length, d, { k: truth.length });
    expect(new Set(r.assignments).size).toBe(truth.length);
    expect(r.inertia).toBe(0);
  });

  it('When points are duplicated so seeding runs out of distinct points, then it still returns k clusters without NaN', async () => {
    const d = 3;
    const points = new Float32Array(6 * d);
    for (let i = 3; i < 6; i++) points[i * d] = 1; // three copies of (0,0,0) and three of (1,0,0)
    const r = await kmeans(points, 6, d, { k: 3 });
    expect(r.centroids.every((v) => Number.isFinite(v))).toBe(true);
    expect(r.inertia).toBe(0);
    expect(samePartition([...r.assignments].map((c) => (c === r.assignments[0] ? 0 : 1)), [0, 0, 0, 1, 1, 1])).toBe(true);
  });

  it('When n exceeds the training sample, then it trains on the sample and still assigns every point', async () => {
    const { points, truth, d } = blobs(centres, 300, 0.5, 3);
    const r = await kmeans(points, truth.length, d, { k: 4, trainingSample: 200 });
    expect(r.trained).toBe(200);
    expect(r.assignments.length).toBe(1200);
    expect(samePartition(r.assignments, truth)).toBe(true);
  });

  it('When shouldStop turns true, then it stops with KMeansStoppedError', async () => {
    const { points, truth, d } = blobs(centres, 10, 0.5);
    let calls = 0;
    await expect(kmeans(points, truth.length, d, { k: 4, shouldStop: () => ++calls > 2 })).rejects.toBeInstanceOf(KMeansStoppedError);
    expect(calls).toBe(3);
  });

  it('When k is out of range, then it throws RangeError', async () => {
    const points = new Float32Array(8);
    await expect(kmeans(points, 4, 2, { k: 0 })).rejects.toBeInstanceOf(RangeError);
    await expect(kmeans(points, 4, 2, { k: 5 })).rejects.toBeInstanceOf(RangeError);
    await expect(kmeans(points, 5, 2, { k: 2 })).rejects.toBeInstanceOf(RangeError);
  });

  it('When the work is large, then it yields to the event loop while running', async () => {
    const { points, truth, d } = blobs(centres, 500, 0.5, 5);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    try {
      await kmeans(points, truth.length, d, { k: 4, yieldWork: 10_000, restarts: 2 });
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(0);
  });
});

describe('mulberry32', () => {
  it('When seeded alike, then it repeats; values lie in [0, 1)', () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    const xs = Array.from({ length: 1000 }, () => a());
    expect(xs).toEqual(Array.from({ length: 1000 }, () => b()));
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(new Set(xs).size).toBeGreaterThan(990);
  });
});

describe('kmeans against numpy', () => {
  const { points, start, one, converged } = oracle.lloyd;
  const flat = (rows: number[][]) => Float32Array.from(rows.flat());
  const d = points[0]!.length;

  it('When started from given centroids for one iteration, then centroids, assignments and inertia match numpy', async () => {
    const r = await kmeans(flat(points), points.length, d, { k: start.length, initialCentroids: flat(start), maxIterations: 1 });
    [...r.centroids].forEach((v, i) => expect(v).toBeCloseTo(one.centroids.flat()[i]!, 5));
    expect([...r.assignments]).toEqual(one.assign);
    expect(r.inertia).toBeCloseTo(one.inertia, 4);
  });

  it('When run from the same centroids to convergence, then it stops at the iteration numpy stops and on the same partition', async () => {
    const r = await kmeans(flat(points), points.length, d, { k: start.length, initialCentroids: flat(start), maxIterations: 100 });
    expect(r.iterations).toBe(converged.iterations);
    expect([...r.assignments]).toEqual(converged.assign);
    [...r.centroids].forEach((v, i) => expect(v).toBeCloseTo(converged.centroids.flat()[i]!, 5));
    expect(r.inertia).toBeCloseTo(converged.inertia, 4);
  });

  it('When initial centroids have the wrong size, then it refuses them', async () => {
    await expect(kmeans(flat(points), points.length, d, { k: 3, initialCentroids: new Float32Array(2) })).rejects.toThrow(RangeError);
  });
});
