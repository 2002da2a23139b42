/**
 * Steering of the text search by concepts (issue 31; docs/architecture.md "Steering"): the math, kept free of
 * the table and the service so it can be tested on small hand-made data.
 *
 * - A concept is one folded tag label; a song *carries* it when its normalised score on the concept (the best of
 *   the concept's columns, normalised as the text search normalises them) is at least CARRY_THRESHOLD.
 * - Its direction, per index generation, lives in the space the index searches (the generation's unit vectors):
 *   the unit vector of mean(vectors of songs carrying it) - mean(vectors of the other tagged songs), over a sample
 *   of the tagged songs; none when fewer than steerMinSongs(sample) songs of the sample carry it or lack it. This is the
 *   difference-of-means concept direction (the "concept activation vector" of Kim et al. 2018, TCAV, without the
 *   linear classifier: the class-mean difference of the two groups).
 * - A song's position on it: the dot product with the direction, scaled between the 5th and 95th percentiles of
 *   the sample's dot products and clamped to [0, 1].
 * - A steered score: the text search's channels plus one channel per steering concept, weighted by |weight|
 *   (see steeredScore). Moving a dot-product query q by w along d adds w <v, d> to every score; this is the same
 *   move with the position normalised to [0, 1] so a weight of 1 counts like one query term.
 */
import { percentile } from './percentile';

/** Normalised concept score from which a song carries the concept (the middle of the column's library range). */
export const CARRY_THRESHOLD = 0.5;
/**
 * Fewest sample songs with, and without, a concept for it to get a direction: 1% of the sample, at least 2 (a mean
 * of more than one song; small libraries) and at most 20 (20 songs already give a stable mean at 20k samples).
 */
export function steerMinSongs(sampleSize: number): number {
  return Math.max(2, Math.min(20, Math.ceil(0.01 * sampleSize)));
}
/** Steered searches re-rank the query's best `steerPool(limit)` songs (never songs further down its ranking). */
export const STEER_POOL_MIN = 200;
export const STEER_POOL_MAX = 5000;
/** Candidates a steered search re-ranks: 10 x limit, within [STEER_POOL_MIN, STEER_POOL_MAX]. */
export function steerPool(limit: number): number {
  return Math.min(STEER_POOL_MAX, Math.max(STEER_POOL_MIN, 10 * limit));
}

/** A concept's direction in the index space and the scale of the songs' positions on it. */
export interface ConceptDirection {
  /** Unit vector (index dim). */
  vector: Float32Array;
  /** 5th and 95th percentiles of <v, vector> over the sample (high > low). */
  low: number;
  high: number;
  /** Sample songs carrying / not carrying the concept. */
  strong: number;
  weak: number;
}

/**
 * Directions of several concepts from one sample of songs.
 * @param vectors the sample's vectors, row after row (n x dim, unit length as the index stores them)
 * @param dim vector dimension
 * @param carries per concept, a flag per sample row (1 = carries the concept)
 * @param minSongs fewest rows with and without the concept (default steerMinSongs(n))
 * @returns per concept its direction, or null when too few rows carry or lack it, or both groups have the same mean
 * Cost O(n * dim * (1 + concepts * share carrying)) for the sums plus O(concepts * n * dim) for the positions.
 */
export function deriveDirections(vectors: Float32Array, dim: number, carries: readonly Uint8Array[], minSongs?: number): Array<ConceptDirection | null> {
  const n = dim > 0 ? vectors.length / dim : 0;
  const least = minSongs ?? steerMinSongs(n);
  const total = new Float64Array(dim);
  for (let i = 0; i < n; i++) for (let d = 0; d < dim; d++) total[d]! += vectors[i * dim + d]!;
  const positions = new Float32Array(n);
  return carries.map((flags) => {
    const strongSum = new Float64Array(dim);
    let strong = 0;
    for (let i = 0; i < n; i++) {
      if (flags[i] !== 1) continue;
      strong++;
      for (let d = 0; d < dim; d++) strongSum[d]! += vectors[i * dim + d]!;
    }
    const weak = n - strong;
    if (strong < least || weak < least) return null;
    const vector = new Float32Array(dim);
    let norm = 0;
    for (let d = 0; d < dim; d++) {
      const diff = strongSum[d]! / strong - (total[d]! - strongSum[d]!) / weak;
      vector[d] = diff;
      norm += diff * diff;
    }
    norm = Math.sqrt(norm);
    if (!(norm > 1e-12)) return null;
    for (let d = 0; d < dim; d++) vector[d]! /= norm;
    for (let i = 0; i < n; i++) {
      let s = 0;
      for (let d = 0; d < dim; d++) s += vectors[i * dim + d]! * vector[d]!;
      positions[i] = s;
    }
    const sorted = positions.slice().sort();
    const low = percentile(sorted, 0.05);
    // Songs all at one position (two distinct vectors only, say): any spread keeps the scale finite.
    const high = Math.max(percentile(sorted, 0.95), low + 1e-6);
    return { vector, low, high, strong, weak };
  });
}

/** A song's position on a concept in [0, 1]: clamp((<v, d> - low) / (high - low)). `v` read from `offset`. */
export function conceptPosition(dir: ConceptDirection, v: Float32Array, offset = 0): number {
  let s = 0;
  const d = dir.vector;
  for (let i = 0; i < d.length; i++) s += v[offset + i]! * d[i]!;
  return Math.max(0, Math.min(1, (s - dir.low) / (dir.high - dir.low)));
}

/**
 * The steered score of a song: the weighted mean of the query's channels (each weight 1) and one channel per
 * steering concept with weight |w|, the concept's channel being the song's position on it for w > 0 ("more")
 * and 1 - position for w < 0 ("less"):
 *   (channels * base + sum_c |w_c| * (w_c > 0 ? pos_c : 1 - pos_c)) / (channels + sum_c |w_c|)
 * @param base the unsteered similarity (mean of the channels), in [0, 1]
 * @param channels the number of query channels (>= 1)
 * @param terms per steering concept its weight in [-1, 1] and the song's position in [0, 1]
 * @returns a score in [0, 1]; `base` when every weight is 0
 */
export function steeredScore(base: number, channels: number, terms: ReadonlyArray<{ weight: number; position: number }>): number {
  let num = channels * base;
  let den = channels;
  for (const { weight, position } of terms) {
    const w = Math.abs(weight);
    num += w * (weight > 0 ? position : 1 - position);
    den += w;
  }
  return den > 0 ? num / den : base;
}
