import { dot, unitClusters } from '@polyphony/vectors';
import before from './__fixtures__/centroid-groups-before-engine.json';
import { CentroidGroups } from './centroid-groups';
import { setSimdKernelsEnabled, simdKernelsAvailable } from '../simd/kernels';

/** The grouping a fit produced (private fields, read for the comparison with the loop it replaced). */
interface Fitted {
  count: number;
  centres: Float32Array;
  members: Int32Array;
  offsets: Int32Array;
}

describe('CentroidGroups on the shared k-means engine', () => {
  it('When seeded unit centroids are grouped, then every cell is in the group the replaced loop put it in and the centres agree to float32 rounding', () => {
    for (const { shape, count, members, offsets, centres } of before.cases) {
      const [clusters, perCluster, dim, noise, seed] = shape as [number, number, number, number, number];
      const { data } = unitClusters(clusters, perCluster, dim, noise, seed);
      const fitted = CentroidGroups.fit(data, clusters * perCluster, dim) as unknown as Fitted;
      expect(fitted.count).toBe(count);
      expect([...fitted.members]).toEqual(members);
      expect([...fitted.offsets]).toEqual(offsets);
      // The engine normalises the float64 sums; the old loop rounded them to float32 first: within 2 ulp of 1.
      let largest = 0;
      for (let i = 0; i < centres.length; i++) largest = Math.max(largest, Math.abs(fitted.centres[i]! - centres[i]!));
      expect(largest).toBeLessThan(1.2e-7);
    }
  });

  it('When there are fewer cells than CENTROID_GROUPS_MIN_NLIST, then there are no groups', () => {
    const { data } = unitClusters(10, 10, 8, 0.1, 1);
    expect(CentroidGroups.fit(data, 100, 8)).toBeUndefined();
  });

  it('When groups score on the SIMD kernel, then scoreBest, scoreRemaining and scoreAll give the JavaScript path\'s scores bit for bit (random data)', () => {
    expect(simdKernelsAvailable()).toBe(true);
    for (const [clusters, perCluster, dim, seed] of [
      [40, 16, 200, 3],
      [30, 20, 37, 4],
      [64, 9, 12, 5],
    ] as const) {
      const nlist = clusters * perCluster;
      const { data: centroids } = unitClusters(clusters, perCluster, dim, 0.3, seed);
      const simd = CentroidGroups.fit(centroids, nlist, dim)!;
      setSimdKernelsEnabled(false);
      let plain: CentroidGroups;
      try {
        plain = CentroidGroups.fit(centroids, nlist, dim)!;
      } finally {
        setSimdKernelsEnabled(true);
      }
      expect(simd.bytes).toBeGreaterThan(plain.bytes); // the kernel path holds its own copy: it is the one used
      const { data: queries } = unitClusters(7, 3, dim, 0.5, seed + 100);
      for (let i = 0; i < 21; i++) {
        const q = queries.subarray(i * dim, i * dim + dim);
        for (const budget of [1, 40, 200]) {
          const a = new Float64Array(nlist);
          const b = new Float64Array(nlist);
          expect(simd.scoreBest(q, centroids, a, budget)).toBe(plain.scoreBest(q, centroids, b, budget));
          expect(a).toEqual(b);
          expect(a.some((v) => v === -Infinity)).toBe(true);
          expect(simd.scoreRemaining(q, centroids, a)).toBe(plain.scoreRemaining(q, centroids, b));
          expect(a).toEqual(b);
          for (let c = 0; c < nlist; c++) expect(a[c]).toBe(dot(centroids, c * dim, q, 0, dim));
        }
        const all = new Float64Array(nlist);
        simd.scoreAll(q, centroids, all);
        for (let c = 0; c < nlist; c++) expect(all[c]).toBe(dot(centroids, c * dim, q, 0, dim));
      }
    }
  });
});
