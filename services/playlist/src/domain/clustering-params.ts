import { SERVICE_DEFAULTS, type ClusteringStartBody } from '@polyphony/contracts';
import type { ClusterAlgorithm } from './cluster-algorithms';

/** Tunables of one clustering run (validated request values with defaults filled in). */
export interface ClusteringParams {
  /** Exact k per server (capped at the server's song count); undefined = automatic. */
  numClusters?: number;
  /** Bounds of the automatic k. */
  minClusters: number;
  maxClusters: number;
  /** Songs per playlist, nearest to the centroid first. */
  maxSongsPerPlaylist: number;
  /** Clusters with fewer songs make no playlist. */
  minSongsPerPlaylist: number;
  /** Keep only the N largest clusters per server; undefined = all. */
  topN?: number;
  /** Seed of k-means++ (fixed, so a re-run over the same catalogue gives the same playlists). */
  seed: number;
  algorithm: ClusterAlgorithm;
  dbscanEps?: number;
  dbscanMinSamples?: number;
  /** Principal components kept before clustering; 0 = none. */
  pcaComponents: number;
  /** Candidate clusterings evaluated per server by the parameter search. */
  searchRuns: number;
}

/** Default parameter-search budget per server (candidates; early stop after 3 without improvement). */
export const DEFAULT_SEARCH_RUNS = 6;

/** Default upper bound of the automatic k (reference implementation NUM_CLUSTERS_MAX = 100). */
export const DEFAULT_MAX_CLUSTERS = SERVICE_DEFAULTS.numClustersMax;
/** Default lower bound of the automatic k. */
export const DEFAULT_MIN_CLUSTERS = SERVICE_DEFAULTS.numClustersMin;
/** Default playlist length cap (the reference's auto-calibration targets at most 200 songs per playlist). */
export const DEFAULT_MAX_SONGS_PER_PLAYLIST = SERVICE_DEFAULTS.maxSongsPerClusterPlaylist;
/** Default smallest cluster that becomes a playlist. */
export const DEFAULT_MIN_SONGS_PER_PLAYLIST = 3;
/** Fixed k-means++ seed. */
export const DEFAULT_SEED = 0x5eed;

/**
 * Defaults of a run whose request leaves them out: an admin changes them with PUT /api/config
 * (NUM_CLUSTERS_MIN, NUM_CLUSTERS_MAX, MAX_SONGS_PER_CLUSTER_PLAYLIST, TOP_N_CLUSTERING_PLAYLIST).
 */
export interface ClusteringDefaults {
  minClusters: number;
  maxClusters: number;
  maxSongsPerPlaylist: number;
  /** 0 = keep every cluster. */
  topN: number;
}
export const STATIC_CLUSTERING_DEFAULTS: ClusteringDefaults = {
  minClusters: DEFAULT_MIN_CLUSTERS,
  maxClusters: DEFAULT_MAX_CLUSTERS,
  maxSongsPerPlaylist: DEFAULT_MAX_SONGS_PER_PLAYLIST,
  topN: SERVICE_DEFAULTS.topNClusteringPlaylist,
};

/** Run parameters from a validated POST /api/clustering/start body (`k` is an alias of `num_clusters`), `defaults` filling what it leaves out. */
export function clusteringParams(body: ClusteringStartBody, defaults: ClusteringDefaults = STATIC_CLUSTERING_DEFAULTS): ClusteringParams {
  const minClusters = body.num_clusters_min ?? defaults.minClusters;
  const maxClusters = Math.max(minClusters, body.num_clusters_max ?? defaults.maxClusters);
  return {
    numClusters: body.num_clusters ?? body.k,
    minClusters,
    maxClusters,
    maxSongsPerPlaylist: body.max_songs_per_playlist ?? defaults.maxSongsPerPlaylist,
    minSongsPerPlaylist: body.min_songs_per_playlist ?? DEFAULT_MIN_SONGS_PER_PLAYLIST,
    topN: body.top_n_playlists ?? (defaults.topN > 0 ? defaults.topN : undefined),
    seed: DEFAULT_SEED,
    algorithm: body.clustering_method ?? 'kmeans',
    dbscanEps: body.dbscan_eps,
    dbscanMinSamples: body.dbscan_min_samples,
    pcaComponents: body.pca_components ?? 0,
    searchRuns: body.search_runs ?? DEFAULT_SEARCH_RUNS,
  };
}

/**
 * Number of clusters for `n` songs: the requested k, or round(sqrt(n / 2)) (the rule of thumb in
 * K. V. Mardia, J. T. Kent, J. M. Bibby, "Multivariate Analysis", 1979) clamped to
 * [minClusters, maxClusters]; never more than n. Requires n >= 1.
 */
export function chooseK(n: number, p: Pick<ClusteringParams, 'numClusters' | 'minClusters' | 'maxClusters'>): number {
  const k = p.numClusters ?? Math.min(p.maxClusters, Math.max(p.minClusters, Math.round(Math.sqrt(n / 2))));
  return Math.max(1, Math.min(n, k));
}
