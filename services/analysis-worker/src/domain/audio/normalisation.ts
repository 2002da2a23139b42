/**
 * Per-dimension centring and scaling constants that ship with an embedder version.
 * Produced by src/bench/derive-normalisation.ts from real music and committed as a generated TS module.
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
  /** Per-dimension scale (robust standard deviation, > 0). */
  std: number[];
}

/**
 * Checks that constants fit a descriptor of `dimensions` values with finite means and positive scales.
 * @throws Error naming the first problem.
 */
export function assertValidNormalisation(c: NormalisationConstants, dimensions: number): void {
  if (c.mean.length !== dimensions || c.std.length !== dimensions) {
    throw new Error(`normalisation ${c.version} has ${c.mean.length}/${c.std.length} values, expected ${dimensions}`);
  }
  for (let i = 0; i < dimensions; i++) {
    if (!Number.isFinite(c.mean[i]!)) throw new Error(`normalisation ${c.version}: mean[${i}] is not finite`);
    if (!(c.std[i]! > 0) || !Number.isFinite(c.std[i]!)) throw new Error(`normalisation ${c.version}: std[${i}] must be finite and > 0`);
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
