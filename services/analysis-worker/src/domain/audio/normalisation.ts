/**
 * Per-dimension centring and scaling constants that ship with an embedder version.
 * Produced by bench/src/analysis-worker/derive-normalisation.ts from real music and committed as a generated TS module.
 */

/** Constants of one embedder version. */
export interface NormalisationConstants {
  /** Embedder version the constants belong to. */
  version: string;
  /** Human-readable provenance (corpus, date, command). */
  derivedFrom: string;
  /** Number of tracks the statistics were computed over. */
  tracks: number;
  /** Per-dimension mean of the raw descriptor. */
  mean: number[];
  /** Per-dimension scale (population standard deviation, > 0). */
  std: number[];
  /**
   * Per-dimension reliability weight in (0, 1]: how reproducible the dimension is within a track relative to
   * its spread between tracks (see {@link reliabilityWeights}).
   */
  weight: number[];
}

/**
 * Checks that constants fit a descriptor of `dimensions` values with finite means and positive scales.
 * @throws Error naming the first problem.
 */
export function assertValidNormalisation(c: NormalisationConstants, dimensions: number): void {
  if (c.mean.length !== dimensions || c.std.length !== dimensions || c.weight.length !== dimensions) {
    throw new Error(`normalisation ${c.version} has ${c.mean.length}/${c.std.length}/${c.weight.length} values, expected ${dimensions}`);
  }
  for (let i = 0; i < dimensions; i++) {
    if (!Number.isFinite(c.mean[i]!)) throw new Error(`normalisation ${c.version}: mean[${i}] is not finite`);
    if (!(c.std[i]! > 0) || !Number.isFinite(c.std[i]!)) throw new Error(`normalisation ${c.version}: std[${i}] must be finite and > 0`);
    if (!(c.weight[i]! > 0) || !(c.weight[i]! <= 1)) throw new Error(`normalisation ${c.version}: weight[${i}] must be in (0, 1]`);
  }
}

/**
 * Per-dimension mean and population standard deviation of raw descriptors (float64, fixed order).
 * A dimension with (near) zero spread gets std = 1e-6 * max(1, |mean|) so that scaling stays finite.
 * @param vectors raw descriptors, all of length `dimensions`.
 * @throws RangeError when there are fewer than 2 vectors or a length differs.
 */
export function computeNormalisation(vectors: ReadonlyArray<ArrayLike<number>>, dimensions: number): { mean: number[]; std: number[] } {
  if (vectors.length < 2) throw new RangeError('computeNormalisation needs at least 2 vectors');
  const mean = new Array<number>(dimensions).fill(0);
  const std = new Array<number>(dimensions).fill(0);
  for (const v of vectors) {
    if (v.length !== dimensions) throw new RangeError(`vector of length ${v.length}, expected ${dimensions}`);
    for (let i = 0; i < dimensions; i++) mean[i] = mean[i]! + v[i]!;
  }
  for (let i = 0; i < dimensions; i++) mean[i] = mean[i]! / vectors.length;
  for (const v of vectors) for (let i = 0; i < dimensions; i++) std[i] = std[i]! + (v[i]! - mean[i]!) ** 2;
  for (let i = 0; i < dimensions; i++) {
    const s = Math.sqrt(std[i]! / vectors.length);
    std[i] = Math.max(s, 1e-6 * Math.max(1, Math.abs(mean[i]!)));
  }
  return { mean, std };
}

/** Lower bound of a reliability weight, so no dimension is switched off entirely. */
export const MIN_RELIABILITY_WEIGHT = 0.05;

/**
 * Reliability weights from pairs of descriptors of the SAME track (e.g. its first and second half analysed
 * separately), already mapped to the normalised space by `transform`.
 * For dimension i: icc_i = 1 - within_i / total_i with within_i = mean over tracks of (a_i - b_i)^2 / 2 and
 * total_i the variance of all halves, i.e. the intraclass correlation ICC(1) with the track as the class
 * (Shrout & Fleiss, "Intraclass correlations", Psychological Bulletin 1979). The weight is
 * clamp(icc_i, MIN_RELIABILITY_WEIGHT, 1) ^ power: dimensions that change within a song as much as between
 * songs (noisy statistics) count less in cosine distance. No group labels are involved.
 * @throws RangeError with fewer than 2 pairs.
 */
export function reliabilityWeights(
  pairs: ReadonlyArray<readonly [ArrayLike<number>, ArrayLike<number>]>,
  dimensions: number,
  power = 2,
): number[] {
  if (pairs.length < 2) throw new RangeError('reliabilityWeights needs at least 2 pairs');
  const mean = new Array<number>(dimensions).fill(0);
  for (const [a, b] of pairs) for (let i = 0; i < dimensions; i++) mean[i] = mean[i]! + (a[i]! + b[i]!) / (2 * pairs.length);
  const weights: number[] = [];
  for (let i = 0; i < dimensions; i++) {
    let within = 0;
    let total = 0;
    for (const [a, b] of pairs) {
      within += (a[i]! - b[i]!) ** 2 / 2;
      total += (a[i]! - mean[i]!) ** 2 + (b[i]! - mean[i]!) ** 2;
    }
    within /= pairs.length;
    total /= 2 * pairs.length;
    const icc = total > 0 ? 1 - within / total : 0;
    weights.push(Math.pow(Math.min(1, Math.max(MIN_RELIABILITY_WEIGHT, icc)), power));
  }
  return weights;
}
