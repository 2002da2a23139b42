import { PCA } from 'ml-pca';
import { fitDiagonalGmmAsync, kmeans, type KMeansOptions } from '@polyphony/vectors';

// density-clustering has no type declarations; its DBSCAN takes (dataset, eps, minPts, distance).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { DBSCAN } = require('density-clustering') as { DBSCAN: new () => { run(data: number[][], eps: number, minPts: number, distance?: (a: number[], b: number[]) => number): number[][]; noise: number[] } };

/** Clustering algorithms offered (reference CLUSTER_ALGORITHM kmeans | gmm | dbscan; spectral is not offered). */
export const CLUSTER_ALGORITHMS = ['kmeans', 'gmm', 'dbscan'] as const;
export type ClusterAlgorithm = (typeof CLUSTER_ALGORITHMS)[number];

/** A clustering of n songs: cluster per song (-1 = noise, DBSCAN only) and each song's distance to its cluster's centre. */
export interface Clustering {
  algorithm: ClusterAlgorithm;
  k: number;
  assignments: Int32Array;
  distances: Float64Array;
  /** The parameters that produced it (k, eps, min_samples, PCA components). */
  params: Record<string, number>;
}

/** What the scorer knows of each song: its top MSD tag (when tagged) and its descriptor profile. */
export interface SongLabels {
  /** Index of the song's most probable MSD tag, or -1 when the song has no learned tags. */
  topTag: number;
  /** Descriptor label (tempo band + scale + energy level), always present. */
  profile: string;
}

/**
 * Score of a clustering after the reference's idea (purity weight 1, diversity weight 2):
 * purity = mean over clusters of the share of members carrying the cluster's most common label;
 * diversity = distinct dominant labels / clusters. Labels are the top MSD tag when most songs are
 * tagged, else the descriptor profile. Noise (DBSCAN -1) is left out; fewer than 2 clusters score 0.
 * In [0, 3]; higher is better.
 */
export function scoreClustering(assignments: Int32Array, labels: readonly SongLabels[]): { score: number; purity: number; diversity: number } {
  const tagged = labels.filter((l) => l.topTag >= 0).length;
  const useTags = tagged >= labels.length / 2;
  const label = (i: number) => (useTags ? (labels[i]!.topTag >= 0 ? `t${labels[i]!.topTag}` : 'untagged') : labels[i]!.profile);
  const clusters = new Map<number, Map<string, number>>();
  for (let i = 0; i < assignments.length; i++) {
    const c = assignments[i]!;
    if (c < 0) continue;
    const counts = clusters.get(c) ?? new Map<string, number>();
    counts.set(label(i), (counts.get(label(i)) ?? 0) + 1);
    clusters.set(c, counts);
  }
  if (clusters.size < 2) return { score: 0, purity: 0, diversity: 0 };
  let purity = 0;
  const dominant = new Set<string>();
  for (const counts of clusters.values()) {
    let best = '';
    let bestN = 0;
    let total = 0;
    for (const [l, n] of counts) {
      total += n;
      if (n > bestN || (n === bestN && l < best)) {
        best = l;
        bestN = n;
      }
    }
    purity += bestN / total;
    dominant.add(best);
  }
  purity /= clusters.size;
  const diversity = dominant.size / clusters.size;
  return { score: purity + 2 * diversity, purity, diversity };
}

/** Projects unit vectors onto their first `components` principal components (ml-pca), re-normalised. */
export function reduceWithPca(vectors: Float32Array, n: number, dim: number, components: number): { vectors: Float32Array; dim: number } {
  if (components <= 0 || components >= dim || n < 3) return { vectors, dim };
  const rows: number[][] = [];
  for (let i = 0; i < n; i++) rows.push(Array.from(vectors.subarray(i * dim, (i + 1) * dim)));
  const c = Math.min(components, n - 1);
  const projected = new PCA(rows, { center: true, scale: false }).predict(rows, { nComponents: c }).to2DArray();
  const out = new Float32Array(n * c);
  for (let i = 0; i < n; i++) {
    let norm = 0;
    for (let j = 0; j < c; j++) norm += projected[i]![j]! ** 2;
    norm = Math.sqrt(norm) || 1;
    for (let j = 0; j < c; j++) out[i * c + j] = projected[i]![j]! / norm;
  }
  return { vectors: out, dim: c };
}

/**
 * Gaussian mixture with diagonal covariances fitted by EM (the shared `fitDiagonalGmmAsync` of
 * @polyphony/vectors: Dempster, Laird, Rubin 1977), started from a k-means clustering, at most
 * `maxIterations` M-steps, stopping when the log-likelihood changes by less than 1e-6 of itself; each
 * song goes to its most probable component, its distance is the Mahalanobis distance (diagonal) to
 * that component's mean. Variances are floored at 1e-4 so a component of identical songs stays finite.
 */
export async function gmmDiagonal(vectors: Float32Array, n: number, dim: number, k: number, seed: number, maxIterations = 30, shouldStop?: () => Promise<boolean> | boolean): Promise<Clustering> {
  const init = await kmeans(vectors, n, dim, { k, seed, maxIterations: 20, restarts: 1 });
  // The first M-step turns the k-means assignments into parameters; maxIterations - 1 more E + M pairs follow.
  const fit = await fitDiagonalGmmAsync(vectors, n, dim, { start: { assignments: init.assignments, k }, maxIterations: Math.max(0, maxIterations - 1), varianceFloor: 1e-4, shouldStop });
  return { algorithm: 'gmm', k, assignments: fit.assignment, distances: Float64Array.from(fit.sqMahalanobis, Math.sqrt), params: { k } };
}

/**
 * DBSCAN (Ester et al. 1996, via `density-clustering`) with cosine distance on unit vectors; noise
 * songs get -1. Distances are to the cluster's mean direction. O(n²) distance evaluations: meant
 * for one server's songs up to a few tens of thousands.
 */
export function dbscanCosine(vectors: Float32Array, n: number, dim: number, eps: number, minSamples: number): Clustering {
  const rows: number[][] = [];
  for (let i = 0; i < n; i++) rows.push(Array.from(vectors.subarray(i * dim, (i + 1) * dim)));
  const cosine = (a: number[], b: number[]) => {
    let dot = 0;
    for (let j = 0; j < a.length; j++) dot += a[j]! * b[j]!;
    return 1 - dot;
  };
  const clusters = new DBSCAN().run(rows, eps, minSamples, cosine);
  const assignments = new Int32Array(n).fill(-1);
  clusters.forEach((members, c) => members.forEach((i) => (assignments[i] = c)));
  const distances = new Float64Array(n).fill(2);
  clusters.forEach((members, c) => {
    const mean = new Float64Array(dim);
    for (const i of members) for (let j = 0; j < dim; j++) mean[j]! += rows[i]![j]!;
    const norm = Math.sqrt(mean.reduce((s, v) => s + v * v, 0)) || 1;
    for (const i of members) {
      let dot = 0;
      for (let j = 0; j < dim; j++) dot += (rows[i]![j]! * mean[j]!) / norm;
      distances[i] = 1 - dot;
    }
    void c;
  });
  return { algorithm: 'dbscan', k: clusters.length, assignments, distances, params: { eps, min_samples: minSamples } };
}

/** Inputs of the parameter search. */
export interface SearchSpec {
  algorithm: ClusterAlgorithm;
  /** Exact k (kmeans/gmm) or undefined to search minK..maxK. */
  k?: number;
  minK: number;
  maxK: number;
  /** DBSCAN eps and min_samples: exact values, or undefined to search the reference ranges (eps 0.1-0.5, min_samples 5-20). */
  eps?: number;
  minSamples?: number;
  /** Most candidate clusterings evaluated (bounded run time); the search stops early after 3 candidates without improvement. */
  maxRuns: number;
  seed: number;
  kmeans?: Pick<KMeansOptions, 'maxIterations' | 'restarts' | 'trainingSample' | 'shouldStop' | 'onIteration'>;
  shouldStop?: () => Promise<boolean> | boolean;
}

/** Candidate values spread evenly over [lo, hi] (at most `count`, distinct integers when `integer`). */
function spread(lo: number, hi: number, count: number, integer: boolean): number[] {
  if (count <= 1 || hi <= lo) return [integer ? Math.round(lo) : lo];
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const v = lo + ((hi - lo) * i) / (count - 1);
    const x = integer ? Math.round(v) : Math.round(v * 1000) / 1000;
    if (!out.includes(x)) out.push(x);
  }
  return out;
}

/**
 * Runs the chosen algorithm over a bounded set of parameter candidates and keeps the best by
 * {@link scoreClustering}; a fixed k (or eps and min_samples) is one candidate. Deterministic for a
 * given seed. Returns the best clustering with its score and how many candidates were tried.
 */
export async function searchClustering(vectors: Float32Array, n: number, dim: number, labels: readonly SongLabels[], spec: SearchSpec): Promise<{ best: Clustering; score: number; tried: number }> {
  const candidates: Array<() => Promise<Clustering>> = [];
  if (spec.algorithm === 'dbscan') {
    const epsList = spec.eps !== undefined ? [spec.eps] : spread(0.1, 0.5, 5, false);
    const minList = spec.minSamples !== undefined ? [spec.minSamples] : spread(Math.min(5, Math.max(2, Math.floor(n / 10))), Math.min(20, Math.max(2, Math.floor(n / 4))), 3, true);
    for (const e of epsList) for (const m of minList) candidates.push(async () => dbscanCosine(vectors, n, dim, e, m));
  } else {
    const ks = spec.k !== undefined ? [Math.min(n, spec.k)] : spread(Math.min(n, spec.minK), Math.min(n, spec.maxK), spec.maxRuns, true);
    for (const k of ks)
      candidates.push(async () => {
        if (spec.algorithm === 'gmm') return gmmDiagonal(vectors, n, dim, k, spec.seed, 30, spec.shouldStop);
        const r = await kmeans(vectors, n, dim, { k, seed: spec.seed, ...spec.kmeans });
        return { algorithm: 'kmeans' as const, k, assignments: r.assignments, distances: r.distances, params: { k } };
      });
  }
  let best: Clustering | undefined;
  let bestScore = -1;
  let tried = 0;
  let sinceBetter = 0;
  for (const make of candidates.slice(0, Math.max(1, spec.maxRuns))) {
    if (spec.shouldStop && (await spec.shouldStop())) break;
    const c = await make();
    tried++;
    const { score } = scoreClustering(c.assignments, labels);
    if (score > bestScore) {
      best = c;
      bestScore = score;
      sinceBetter = 0;
    } else if (++sinceBetter >= 3) break;
  }
  return { best: best!, score: Math.max(0, bestScore), tried };
}
