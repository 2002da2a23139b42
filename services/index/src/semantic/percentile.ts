/** Linear-interpolated percentile of sorted values, q in [0, 1] (the text search's column scales, the steering positions). */
export function percentile(sorted: Float32Array, q: number): number {
  if (sorted.length === 1) return sorted[0]!;
  const pos = q * (sorted.length - 1);
  const i = Math.floor(pos);
  const f = pos - i;
  return sorted[i]! + f * ((sorted[Math.min(i + 1, sorted.length - 1)] ?? sorted[i]!) - sorted[i]!);
}
