import { ClusteringStartBody } from '@polyphony/contracts';
import { chooseK, clusteringParams, DEFAULT_MAX_SONGS_PER_PLAYLIST } from './clustering-params';

describe('clustering parameters', () => {
  it('When the body is empty, then defaults apply and k follows sqrt(n/2) within 2..100', () => {
    const p = clusteringParams(ClusteringStartBody.parse({}));
    expect(p.numClusters).toBeUndefined();
    expect(p.maxSongsPerPlaylist).toBe(DEFAULT_MAX_SONGS_PER_PLAYLIST);
    expect(chooseK(36, p)).toBe(4);
    expect(chooseK(3, p)).toBe(2);
    expect(chooseK(1, p)).toBe(1);
    expect(chooseK(10_000, p)).toBe(71);
    expect(chooseK(1_000_000, p)).toBe(100);
  });

  it('When k or num_clusters is given, then it is used, capped at n', () => {
    expect(chooseK(50, clusteringParams(ClusteringStartBody.parse({ k: 7 })))).toBe(7);
    expect(chooseK(50, clusteringParams(ClusteringStartBody.parse({ num_clusters: '9' })))).toBe(9);
    expect(chooseK(5, clusteringParams(ClusteringStartBody.parse({ num_clusters: 40 })))).toBe(5);
  });

  it('When the reference bounds are given, then the automatic k is clamped to them', () => {
    const p = clusteringParams(ClusteringStartBody.parse({ num_clusters_min: 40, num_clusters_max: 60 }));
    expect(chooseK(200, p)).toBe(40);
    expect(chooseK(100_000, p)).toBe(60);
    expect(chooseK(30, p)).toBe(30);
  });
});

describe('clusteringParams with admin defaults', () => {
  it('When the admin settings change the defaults, then a request that leaves them out gets them and its own values still win', () => {
    const defaults = { minClusters: 5, maxClusters: 7, maxSongsPerPlaylist: 50, topN: 4 };
    const p = clusteringParams(ClusteringStartBody.parse({}), defaults);
    expect(p).toMatchObject({ minClusters: 5, maxClusters: 7, maxSongsPerPlaylist: 50, topN: 4 });
    expect(chooseK(1000, p)).toBe(7);
    const own = clusteringParams(ClusteringStartBody.parse({ num_clusters_max: 9, top_n_playlists: 2, max_songs_per_playlist: 10 }), defaults);
    expect(own).toMatchObject({ minClusters: 5, maxClusters: 9, maxSongsPerPlaylist: 10, topN: 2 });
    expect(clusteringParams(ClusteringStartBody.parse({}), { ...defaults, topN: 0 }).topN).toBeUndefined();
  });
});
