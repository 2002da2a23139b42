import { diagonalGmmIterations, farthestFirstMeans, fitDiagonalGmm, fitDiagonalGmmAsync, type GmmOptions } from './gmm';
import { unitClusters } from './random';

/**
 * Pinned answers: recorded from the two EM implementations this module replaced, on the same data
 * (`unitClusters(3, 20, 6, noise, seed)`): the index's artist mixture (`fitDiagonalGmm` in
 * services/index artist-gmm.ts: farthest-first start, 12 iterations, variance prior κ = 1, p = 0.01,
 * components under 1e-3 points dropped, per-point tolerance) and the playlist's GMM clustering
 * (`gmmDiagonal`: k-means start with the assignments below, 30 M-steps, variance floor 1e-4, relative
 * tolerance; its distance is the Mahalanobis one). Before the switch the new code matched both to 3e-8
 * (float32 storage in the index) and 5e-12.
 */
const PINNED = [
  {
    noise: 0.3,
    seed: 1,
    index: {
      assignment: '100000102200100200200100100100100100100100100100100100100202',
      weights: [0.649883, 0.250231, 0.099886],
      means0: [-0.442241, -0.018967, 0.1462, -0.435058, -0.140324, -0.291529],
      vars0: [0.0326992, 0.0754992, 0.125566, 0.0588136, 0.108815, 0.0766208],
      sqSum: 24.836189,
    },
    playlist: {
      kmeans: '200200201201201201201210200201200201201201210200201201201201',
      assignment: '201211201201201211201211201211200211211211211201201211201211',
      distSum: 141.343409,
    },
  },
  {
    noise: 0.9,
    seed: 3,
    index: {
      assignment: '100001100220001200000020201001100001200201211000101011000201',
      weights: [0.585294, 0.279153, 0.135553],
      means0: [0.298181, 0.046994, -0.025391, 0.289182, -0.050407, -0.206903],
      vars0: [0.158185, 0.108399, 0.140098, 0.136116, 0.129502, 0.0870446],
      sqSum: 38.857284,
    },
    playlist: {
      kmeans: '220102201210002100101120212102200112221202220000202102101202',
      assignment: '221102201220012201101120212202200122221202222001202102201202',
      distSum: 141.789361,
    },
  },
];

const indexOptions = (points: Float32Array, n: number, dim: number, k: number): GmmOptions => ({
  start: { means: farthestFirstMeans(points, n, dim, k) },
  maxIterations: 12,
  toleranceScale: 'per-point',
  variancePrior: { variance: new Float64Array(dim).fill(0.01), weight: 1 },
  minComponentWeight: 1e-3,
});

const digits = (a: ArrayLike<number>) => Array.from(a).join('');

describe('diagonal GMM by EM', () => {
  it.each(PINNED)('When fitted like the index artist mixtures (noise $noise), then the recorded answer comes back', ({ noise, seed, index }) => {
    const { data } = unitClusters(3, 20, 6, noise, seed);
    const fit = fitDiagonalGmm(data, 60, 6, indexOptions(data, 60, 6, 3));
    expect(fit.k).toBe(3);
    expect(digits(fit.assignment)).toBe(index.assignment);
    fit.weights.forEach((w, c) => expect(w).toBeCloseTo(index.weights[c]!, 5));
    index.means0.forEach((m, d) => expect(fit.means[d]).toBeCloseTo(m, 5));
    index.vars0.forEach((v, d) => expect(fit.variances[d]! / v).toBeCloseTo(1, 4));
    expect(fit.sqEuclidean.reduce((a, b) => a + b, 0)).toBeCloseTo(index.sqSum, 5);
  });

  it.each(PINNED)('When fitted like the playlist clustering (noise $noise), then the recorded answer comes back', async ({ noise, seed, playlist }) => {
    const { data } = unitClusters(3, 20, 6, noise, seed);
    const start = { assignments: Array.from(playlist.kmeans, Number), k: 3 };
    const fit = await fitDiagonalGmmAsync(data, 60, 6, { start, maxIterations: 29, varianceFloor: 1e-4 });
    expect(digits(fit.assignment)).toBe(playlist.assignment);
    expect(Array.from(fit.sqMahalanobis, Math.sqrt).reduce((a, b) => a + b, 0)).toBeCloseTo(playlist.distSum, 5);
  });

  it('When a fit ends, then weights sum to 1, variances respect the floor, and distances match the parameters', () => {
    const { data } = unitClusters(4, 15, 5, 0.5, 11);
    const fit = fitDiagonalGmm(data, 60, 5, { start: { means: farthestFirstMeans(data, 60, 5, 4) }, maxIterations: 20, varianceFloor: 0.05 });
    expect(fit.weights.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
    expect(Math.min(...fit.variances)).toBeGreaterThanOrEqual(0.05);
    for (let i = 0; i < 60; i++) {
      const c = fit.assignment[i]!;
      let e = 0;
      let q = 0;
      for (let d = 0; d < 5; d++) {
        const x = data[i * 5 + d]! - fit.means[c * 5 + d]!;
        e += x * x;
        q += (x * x) / fit.variances[c * 5 + d]!;
      }
      expect(fit.sqEuclidean[i]).toBeCloseTo(e, 12);
      expect(fit.sqMahalanobis[i]).toBeCloseTo(q, 9);
    }
  });

  it('When one component is asked for, then it is the mean of all points with the prior-shrunk variance', () => {
    const points = new Float32Array([0, 0, 2, 0, 0, 4]);
    const fit = fitDiagonalGmm(points, 3, 2, { start: { means: [0, 0] }, maxIterations: 12, variancePrior: { variance: [1, 1], weight: 1 } });
    expect(Array.from(fit.means)).toEqual([2 / 3, 4 / 3]);
    // Σ (x - mean)² = 8/3 and 32/3 per dimension; (S + κ p) / (n + κ).
    expect(fit.variances[0]).toBeCloseTo((8 / 3 + 1) / 4, 12);
    expect(fit.variances[1]).toBeCloseTo((32 / 3 + 1) / 4, 12);
    expect(Array.from(fit.weights)).toEqual([1]);
  });

  it('When the parameters are stored as float32, then every mean and variance is a float32 value and the index answer is unchanged', () => {
    const { data } = unitClusters(3, 20, 6, 0.3, 1);
    const wide = fitDiagonalGmm(data, 60, 6, indexOptions(data, 60, 6, 3));
    const narrow = fitDiagonalGmm(data, 60, 6, { ...indexOptions(data, 60, 6, 3), storage: 'float32' });
    for (const v of [...narrow.means, ...narrow.variances]) expect(Math.fround(v)).toBe(v);
    expect([...wide.means, ...wide.variances].some((v) => Math.fround(v) !== v)).toBe(true);
    expect(digits(narrow.assignment)).toBe(PINNED[0]!.index.assignment);
    narrow.means.forEach((m, j) => expect(m).toBeCloseTo(wide.means[j]!, 6));
    // The distances use the stored (float32) means.
    const x = data[0]! - narrow.means[narrow.assignment[0]! * 6]!;
    expect(narrow.sqEuclidean[0]).toBeGreaterThanOrEqual(x * x);
  });

  it("When one component is left and the rule is 'mean', then its mean is the points' mean and its variances those of the last M-step", () => {
    // The second start component attracts nothing and is dropped after the first M-step (k 2 -> 1).
    const points = new Float32Array([0, 0, 0.5, 0, 0.1, 0.3]);
    const base: GmmOptions = { start: { means: [0.2, 0.1, 100, 100], variances: [1, 1, 1, 1] }, maxIterations: 5, variancePrior: { variance: [0.5, 0.5], weight: 1 }, minComponentWeight: 1e-3 };
    const mean = fitDiagonalGmm(points, 3, 2, { ...base, singleComponent: 'mean' });
    expect(mean.k).toBe(1);
    expect(Array.from(mean.means)).toEqual([(0 + 0.5 + Math.fround(0.1)) / 3, Math.fround(0.3) / 3]);
    const refit = fitDiagonalGmm(points, 3, 2, base);
    expect(refit.k).toBe(1);
    // Same single component: the M-step after the drop already had every point's full responsibility.
    refit.variances.forEach((v, d) => expect(mean.variances[d]).toBeCloseTo(v, 12));
    expect(mean.iterations).toBe(1);
  });

  it('When a starting component attracts no point, then it is dropped above the minimum weight and kept at 0', () => {
    const points = new Float32Array([0, 0, 0.1, 0, 5, 5, 5.1, 5]);
    const start = { means: [0, 0, 5, 5, 100, 100], variances: [1, 1, 1, 1, 1, 1] };
    const dropped = fitDiagonalGmm(points, 4, 2, { start, maxIterations: 5, varianceFloor: 1e-4, minComponentWeight: 1e-3 });
    expect(dropped.k).toBe(2);
    expect(digits(dropped.assignment)).toBe('0011');
    const kept = fitDiagonalGmm(points, 4, 2, { start, maxIterations: 5, varianceFloor: 1e-4 });
    expect(kept.k).toBe(3);
    expect(kept.weights[2]).toBe(0);
  });

  it('When identical points form a component, then its variance is the floor and the fit stays finite', () => {
    const points = new Float32Array([1, 1, 1, 1, 1, 1, -1, 0, -1.2, 0]);
    const fit = fitDiagonalGmm(points, 5, 2, { start: { assignments: [0, 0, 0, 1, 1], k: 2 }, maxIterations: 10, varianceFloor: 1e-4 });
    expect(fit.variances[0]).toBe(1e-4);
    expect(Number.isFinite(fit.logLikelihood)).toBe(true);
    expect(digits(fit.assignment)).toBe('00011');
  });

  it('When the caller stops after the first iteration, then the fit ends there with consistent answers', async () => {
    const { data } = unitClusters(3, 20, 6, 0.9, 3);
    const options = indexOptions(data, 60, 6, 3);
    let calls = 0;
    const stopped = await fitDiagonalGmmAsync(data, 60, 6, { ...options, shouldStop: async () => ++calls >= 1 });
    expect(stopped.iterations).toBe(1);
    const run = diagonalGmmIterations(data, 60, 6, options);
    expect(run.next(false).value).toBe(1);
    const manual = run.next(true);
    expect(manual.done).toBe(true);
    expect(digits(stopped.assignment)).toBe(digits((manual.value as { assignment: Int32Array }).assignment));
    expect(fitDiagonalGmm(data, 60, 6, options).iterations).toBeGreaterThan(1);
  });

  it('When farthest-first seeds are asked for more components than distinct points, then the extra ones repeat the first', () => {
    const points = new Float32Array([1, 0, 1, 0, 0, 1]);
    expect(Array.from(farthestFirstMeans(points, 3, 2, 3))).toEqual([1, 0, 0, 1, 1, 0]);
  });

  it('When sizes disagree or the prior is not positive, then a RangeError names the problem', () => {
    const points = new Float32Array(6);
    expect(() => fitDiagonalGmm(points, 4, 2, { start: { means: [0, 0] }, maxIterations: 1 })).toThrow(RangeError);
    expect(() => fitDiagonalGmm(points, 3, 2, { start: { means: [0, 0] }, maxIterations: 1, variancePrior: { variance: [1, 0], weight: 1 } })).toThrow(/prior variance/);
    expect(() => fitDiagonalGmm(points, 3, 2, { start: { assignments: [0, 2, 0], k: 2 }, maxIterations: 1 })).toThrow(/outside/);
    expect(() => fitDiagonalGmm(points, 3, 2, { start: { means: [0, 0, 0] }, maxIterations: 1 })).toThrow(/k \* dim/);
  });
});
