/**
 * The one cosine distance of the product: 1 - a.b / (|a| |b|), accumulated in float64.
 *
 * Range: [0, 2] (0 = same direction, 1 = orthogonal, 2 = opposite), up to float64 rounding
 * (a value may fall a few ulps outside, e.g. -2e-16 for identical vectors).
 * Returns NaN when the two are not comparable: lengths differ, a vector is empty or all zeros, or a
 * value is not finite. NaN fails every threshold test (`d <= t` and `d > t` are both false), so
 * incomparable embeddings are never judged "the same" nor silently ranked as orthogonal; callers
 * that rank must treat NaN explicitly.
 *
 * On unit vectors this equals 1 - dot(a, b) (see `dot` in kernels.ts, which the index uses on its
 * pre-normalised rows) and half the squared Euclidean distance, so k-means on unit vectors groups by angle.
 */
export function cosineDistance(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length || a.length === 0) return NaN;
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  if (!(aa > 0 && bb > 0) || !Number.isFinite(ab) || !Number.isFinite(aa) || !Number.isFinite(bb)) return NaN;
  return 1 - ab / Math.sqrt(aa * bb);
}

/**
 * Cosine similarity, 1 - {@link cosineDistance}, in [-1, 1]; 0 where that distance is NaN (a zero or non-finite
 * vector), so a comparison with nothing reads as "does not agree" (the import's vector-agreement report, issue 34).
 * @throws RangeError when the lengths differ
 */
export function cosineSimilarity(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new RangeError(`vectors of ${a.length} and ${b.length} values`);
  const d = cosineDistance(a, b);
  return Number.isNaN(d) ? 0 : 1 - d;
}
