/**
 * The clusters of a mood's songs (SemanticTable's moods; reference `centroid_index`): spherical k-means over the
 * songs a mood ranks highest, and the unit mean of a set of rows.
 */
import { dot, lloydKMeansSync, normaliseInto } from '@polyphony/vectors';

/** Largest number of clusters per mood, and the fewest songs per cluster (fewer songs: the mood alone). */
export const MOOD_MAX_CLUSTERS = 3;
export const MOOD_CLUSTER_MIN_SONGS = 5;
/** Lloyd iterations of the mood clusters (the mood's songs are at most 200). */
const MOOD_CLUSTER_ITERATIONS = 15;

/** Unit vector of the mean of the rows' vectors (zero vector when they cancel out). */
export function unitMean(rows: readonly number[], vectorOf: (row: number) => Float32Array): Float32Array {
  const first = vectorOf(rows[0]!);
  const sum = new Float64Array(first.length);
  for (const r of rows) {
    const v = vectorOf(r);
    for (let d = 0; d < v.length; d++) sum[d]! += v[d]!;
  }
  let norm = 0;
  for (let d = 0; d < sum.length; d++) norm += sum[d]! * sum[d]!;
  norm = Math.sqrt(norm) || 1;
  return Float32Array.from(sum, (x) => x / norm);
}

/**
 * Clusters of a mood's songs (the reference keeps several centroids per mood; `centroid_index` picks one):
 * spherical k-means with k = min(MOOD_MAX_CLUSTERS, floor(songs / MOOD_CLUSTER_MIN_SONGS)) on the shared
 * engine (`lloydKMeansSync` of `@polyphony/vectors`) over the songs' vectors scaled to unit length, with a
 * deterministic farthest-point start (the first row given, i.e. the song scoring highest for the mood, then
 * each time the song least similar to every chosen seed), at most MOOD_CLUSTER_ITERATIONS Lloyd steps on
 * cosine similarity, an empty cluster keeping its centre. Clusters with fewer than MOOD_CLUSTER_MIN_SONGS
 * songs are dropped; the rest come largest first (ties by their first row). Empty when k < 2: the mood is
 * then only its whole centroid. Cost O(MOOD_CLUSTER_ITERATIONS * songs * k * dim).
 */
export function moodClusters(rows: readonly number[], vectorOf: (row: number) => Float32Array): number[][] {
  const k = Math.min(MOOD_MAX_CLUSTERS, Math.floor(rows.length / MOOD_CLUSTER_MIN_SONGS));
  if (k < 2) return [];
  const dim = vectorOf(rows[0]!).length;
  const data = new Float32Array(rows.length * dim);
  rows.forEach((r, i) => normaliseInto(vectorOf(r), 0, data, i * dim, dim));
  const centres = new Float32Array(k * dim);
  centres.set(data.subarray(0, dim));
  // Farthest-point start: best[i] = similarity of song i to its most similar chosen seed.
  const best = new Float64Array(rows.length).fill(-Infinity);
  for (let j = 1; j < k; j++) {
    let worst = -1;
    let worstSim = Infinity;
    for (let i = 0; i < rows.length; i++) {
      best[i] = Math.max(best[i]!, dot(centres, (j - 1) * dim, data, i * dim, dim));
      if (best[i]! < worstSim) {
        worstSim = best[i]!;
        worst = i;
      }
    }
    centres.set(data.subarray(worst * dim, worst * dim + dim), j * dim);
  }
  const points = { data, dim, rows: Int32Array.from(rows, (_, i) => i) };
  const { assignment } = lloydKMeansSync(points, k, { geometry: 'spherical', initialCentroids: centres, maxIterations: MOOD_CLUSTER_ITERATIONS, emptyClusters: 'keep' });
  const groups = Array.from({ length: k }, (_, j) => rows.filter((_, i) => assignment[i] === j));
  return groups.filter((g) => g.length >= MOOD_CLUSTER_MIN_SONGS).sort((a, b) => b.length - a.length || a[0]! - b[0]!);
}
