import { unitClusters } from '@polyphony/vectors';
import before from './__fixtures__/centroid-groups-before-engine.json';
import { CentroidGroups } from './centroid-groups';

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
});
