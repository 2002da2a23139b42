import { unitClusters } from '@polyphony/vectors';
import before from './__fixtures__/mood-clusters-before-engine.json';
import { MOOD_CLUSTER_MIN_SONGS, moodClusters } from './semantic-table';

describe('mood clusters (centroid_index)', () => {
  /** Three well separated directions in 4-d, songs listed style by style with a little noise. */
  const directions = [
    [1, 0, 0, 0],
    [0, 1, 0, 0],
    [0, 0, 1, 0],
  ];
  function vectors(sizes: number[]): Float32Array[] {
    const out: Float32Array[] = [];
    sizes.forEach((n, s) => {
      for (let i = 0; i < n; i++) out.push(Float32Array.from(directions[s]!.map((x, d) => x + 0.05 * Math.sin(i * 7 + d * 3 + s))));
    });
    return out;
  }

  it('When a mood has songs in three styles, then its clusters are the styles, largest first, each with its own songs', () => {
    const v = vectors([12, 8, 6]);
    const rows = v.map((_, i) => i);
    const clusters = moodClusters(rows, (r) => v[r]!);
    expect(clusters.map((c) => c.length)).toEqual([12, 8, 6]);
    expect(clusters[0]).toEqual(rows.slice(0, 12));
    expect(clusters[1]).toEqual(rows.slice(12, 20));
    expect(clusters[2]).toEqual(rows.slice(20));
  });

  it('When a mood has too few songs for two clusters, or a style has too few songs, then only the larger clusters remain', () => {
    const few = vectors([9]);
    expect(moodClusters(few.map((_, i) => i), (r) => few[r]!)).toEqual([]);
    const v = vectors([12, 8, 2]);
    const clusters = moodClusters(v.map((_, i) => i), (r) => v[r]!);
    for (const c of clusters) expect(c.length).toBeGreaterThanOrEqual(MOOD_CLUSTER_MIN_SONGS);
    expect(clusters[0]!.slice(0, 12)).toEqual(Array.from({ length: 12 }, (_, i) => i));
  });
});

describe('mood clusters on the shared k-means engine', () => {
  it('When seeded unit songs are clustered, then the clusters are those of the loop the engine replaced', () => {
    for (const { shape, clusters } of before.cases) {
      const [count, perCluster, dim, noise, seed] = shape as [number, number, number, number, number];
      const { data } = unitClusters(count, perCluster, dim, noise, seed);
      const rows = Array.from({ length: count * perCluster }, (_, i) => i);
      expect(moodClusters(rows, (r) => data.subarray(r * dim, r * dim + dim))).toEqual(clusters);
    }
  });
});
