import { CooperativeScheduler } from './cooperative';
import { CentroidTree, nearestCentroids, PointSet, TrainOptions, allocateProportionally, sphericalLloyd, trainCentroids } from './kmeans';
import { dot, nearestOfFour, normaliseInto, SeededRandom, unitClusters } from '@polyphony/vectors';

const DIM = 200;

/** `clusters` tight blobs around random unit centres, points interleaved across clusters. */
function separatedClusters(clusters: number, perCluster: number, seed: number): { set: PointSet; labels: Int32Array } {
  const { data, labels } = unitClusters(clusters, perCluster, DIM, 0.01, seed);
  return { set: { data, dim: DIM, rows: Int32Array.from({ length: labels.length }, (_, i) => i) }, labels };
}

function options(seed: number, overrides: Partial<TrainOptions> = {}): TrainOptions {
  return {
    seed,
    maxIterations: 20,
    tolerance: 0,
    batchSize: 256,
    scheduler: new CooperativeScheduler(1000),
    twoLevelMinCells: 256,
    coarseCellsPerSqrtNlist: 1,
    coarsePointsPerCentroid: 256,
    fineSeedingTrials: 3,
    refineIterations: 0,
    searchGroups: 4,
    ...overrides,
  };
}

/**
 * `artists * perArtist` unit points: artist centres N(0, 1) per coordinate, each point centre + N(0, noise^2) (the shape
 * of the testkit's synthetic catalogue: independent centres, so the centroids have no coarser structure).
 */
function artistCatalogue(artists: number, perArtist: number, noise: number, seed: number): Float32Array {
  const rng = new SeededRandom(seed);
  const data = new Float32Array(artists * perArtist * DIM);
  const centre = new Float32Array(DIM);
  for (let a = 0; a < artists; a++) {
    for (let d = 0; d < DIM; d++) centre[d] = rng.nextGaussian();
    for (let s = 0; s < perArtist; s++) {
      const o = (a * perArtist + s) * DIM;
      for (let d = 0; d < DIM; d++) data[o + d] = centre[d]! + noise * rng.nextGaussian();
      normaliseInto(data, o, data, o, DIM);
    }
  }
  return data;
}

/** True when the clustering is a bijection with the true labels (every cluster pure, every label once). */
function recoversLabels(assignment: Int32Array, labels: Int32Array, k: number): boolean {
  const labelOf = new Int32Array(k).fill(-1);
  const used = new Set<number>();
  for (let i = 0; i < labels.length; i++) {
    const c = assignment[i]!;
    if (labelOf[c] === -1) {
      if (used.has(labels[i]!)) return false;
      labelOf[c] = labels[i]!;
      used.add(labels[i]!);
    } else if (labelOf[c] !== labels[i]) return false;
  }
  return used.size === k;
}

function bruteNearest(centroids: Float32Array, k: number, data: Float32Array, row: number): number {
  const best = new Int32Array(4);
  const scores = new Float64Array(4);
  const o = row * DIM;
  nearestOfFour(data, o, o, o, o, centroids, k, DIM, best, scores);
  return best[0]!;
}

describe(sphericalLloyd.name, () => {
  it.each([1, 2, 3, 4, 5])('When clusters are well separated (seed %i), then k-means recovers them exactly', async (seed) => {
    const { set, labels } = separatedClusters(8, 60, 100 + seed);
    const result = await sphericalLloyd(set, 8, options(seed));
    expect(recoversLabels(result.assignment, labels, 8)).toBe(true);
    expect(result.iterations).toBeLessThanOrEqual(20);
    expect(result.lastChangedFraction).toBe(0);
  });

  it('When the seed is fixed, then two runs give bit-identical centroids; another seed differs', async () => {
    const { set } = separatedClusters(20, 30, 9);
    const a = await sphericalLloyd(set, 12, options(5));
    const b = await sphericalLloyd(set, 12, options(5));
    const c = await sphericalLloyd(set, 12, options(6));
    expect(Buffer.from(a.centroids.buffer).equals(Buffer.from(b.centroids.buffer))).toBe(true);
    expect(Buffer.from(a.centroids.buffer).equals(Buffer.from(c.centroids.buffer))).toBe(false);
  });

  it('When k exceeds the number of points, then it throws', async () => {
    const { set } = separatedClusters(2, 2, 1);
    await expect(sphericalLloyd(set, 5, options(1))).rejects.toThrow(RangeError);
  });
});

describe(trainCentroids.name, () => {
  it('When two-level training runs on 120 separated clusters, then every true cluster gets its own centroid', async () => {
    const { set, labels } = separatedClusters(120, 12, 77);
    const trained = await trainCentroids(set, 120, options(3, { twoLevelMinCells: 64 }));
    expect(trained.groupCount).toBe(11); // round(1 * sqrt(120))
    const assignment = new Int32Array(set.rows.length);
    for (let i = 0; i < assignment.length; i++) assignment[i] = bruteNearest(trained.centroids, 120, set.data, i);
    expect(recoversLabels(assignment, labels, 120)).toBe(true);
  });
});

describe(CentroidTree.name, () => {
  it('When searching all groups, then the answer equals brute force and prunes some work', async () => {
    const { set } = separatedClusters(200, 8, 11);
    const trained = await trainCentroids(set, 150, options(4, { twoLevelMinCells: 64 }));
    const tree = new CentroidTree(trained.centroids, 150, DIM, trained.groupOf, trained.groupCount);
    const rng = new SeededRandom(12);
    const probe = new Float32Array(DIM);
    const probes = 300;
    for (let i = 0; i < probes; i++) {
      // half dataset points, half random directions (the bound must hold for any unit vector)
      if (i % 2 === 0) probe.set(set.data.subarray(i * DIM, i * DIM + DIM));
      else {
        for (let d = 0; d < DIM; d++) probe[d] = rng.nextGaussian();
        normaliseInto(probe, 0, probe, 0, DIM);
      }
      expect(tree.nearest(probe, 0)).toBe(bruteNearest(trained.centroids, 150, probe, 0));
    }
    expect(tree.dotProducts).toBeLessThan(probes * 150);
  });

  it('When the search is limited to g groups, then it answers the nearest centroid of the g groups whose axes are nearest', async () => {
    const data = artistCatalogue(600, 5, 0.6, 21);
    const set: PointSet = { data, dim: DIM, rows: Int32Array.from({ length: 3000 }, (_, i) => i) };
    const trained = await trainCentroids(set, 300, options(5, { twoLevelMinCells: 64, coarseCellsPerSqrtNlist: 2, coarsePointsPerCentroid: 64, fineSeedingTrials: 1, maxIterations: 10 }));
    const { centroids, groupOf, groupCount } = trained;
    const tree = new CentroidTree(centroids, 300, DIM, groupOf, groupCount);
    // Reference: axis = normalised sum of a group's centroids; keep the g groups of largest dot(x, axis) (float64).
    const axes = new Float32Array(groupCount * DIM);
    const sums = new Float64Array(DIM);
    for (let g = 0; g < groupCount; g++) {
      sums.fill(0);
      for (let c = 0; c < 300; c++) if (groupOf[c] === g) for (let d = 0; d < DIM; d++) sums[d]! += centroids[c * DIM + d]!;
      const norm = Math.hypot(...sums);
      for (let d = 0; d < DIM; d++) axes[g * DIM + d] = sums[d]! / norm;
    }
    let checked = 0;
    for (const g of [1, 3, 4]) {
      for (let row = 0; row < 3000; row += 7) {
        const alpha = Array.from({ length: groupCount }, (_, h) => ({ h, a: dot(axes, h * DIM, data, row * DIM, DIM) })).sort((x, y) => y.a - x.a || x.h - y.h);
        if (alpha[g - 1]!.a - alpha[g]!.a < 1e-5) continue; // the kept set is a near tie: float32 kernels may pick either
        const kept = new Set(alpha.slice(0, g).map((x) => x.h));
        let best = -Infinity;
        for (let c = 0; c < 300; c++) if (kept.has(groupOf[c]!)) best = Math.max(best, dot(centroids, c * DIM, data, row * DIM, DIM));
        const got = tree.nearest(data, row * DIM, g);
        expect(kept.has(groupOf[got]!)).toBe(true);
        expect(dot(centroids, got * DIM, data, row * DIM, DIM)).toBeCloseTo(best, 5);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(1000);
  });

  it('When songs cluster around independent artist centres (the benchmark catalogue), then 4 of 49 groups find the exact nearest centroid for >= 89% of points', async () => {
    // Issue 35: with the 4 groups chosen by cone bound (the exact search's visiting order) 85.8% agreed here and 67%
    // of the true neighbours' cells at 1M; by nearest axis 91.4% (bench/src/vector-engine/recall-decomposition.ts).
    const data = artistCatalogue(4000, 5, 0.6, 5);
    const n = 20_000;
    const rows = Int32Array.from({ length: n }, (_, i) => i);
    const trained = await trainCentroids({ data, dim: DIM, rows }, 600, options(7, { maxIterations: 10, tolerance: 0.005, batchSize: 1024, coarseCellsPerSqrtNlist: 2, coarsePointsPerCentroid: 64, fineSeedingTrials: 1 }));
    expect(trained.groupCount).toBe(49);
    const tree = new CentroidTree(trained.centroids, 600, DIM, trained.groupOf, trained.groupCount);
    const exact = new Int32Array(n);
    nearestCentroids(data, rows, 0, n, trained.centroids, 600, DIM, exact);
    let same = 0;
    for (let r = 0; r < n; r++) if (tree.nearest(data, r * DIM, 4) === exact[r]) same++;
    expect(same / n).toBeGreaterThanOrEqual(0.89);
  });
});

describe(allocateProportionally.name, () => {
  it('When shares divide evenly, then allocation is exactly proportional', () => {
    expect([...allocateProportionally(Int32Array.from([100, 300, 0, 600]), 10)]).toEqual([1, 3, 0, 6]);
  });

  it('When sizes are uneven, then the total is met and every group gets between 1 and its size', () => {
    const rng = new SeededRandom(3);
    for (let trial = 0; trial < 50; trial++) {
      const sizes = Int32Array.from({ length: 30 }, () => (rng.nextFloat() < 0.1 ? 0 : 1 + rng.nextInt(200)));
      const nonEmpty = sizes.filter((s) => s > 0).length;
      const sum = sizes.reduce((a, b) => a + b, 0);
      const total = nonEmpty + rng.nextInt(sum - nonEmpty + 1);
      const out = allocateProportionally(sizes, total);
      expect(out.reduce((a, b) => a + b, 0)).toBe(total);
      sizes.forEach((s, g) => {
        if (s === 0) expect(out[g]).toBe(0);
        else {
          expect(out[g]).toBeGreaterThanOrEqual(1);
          expect(out[g]).toBeLessThanOrEqual(s);
        }
      });
    }
  });
});
