import { PCA } from 'ml-pca';
import type { CooperativeScheduler } from '@polyphony/vector-engine';

/** Dimensions of the Poincaré ball (principal axes of the embedding kept for a song's direction). */
export const BALL_DIM = 16;
/** Rows of the uniform sample the principal axes are estimated from (as the 2-D map's PCA). */
export const BALL_PCA_SAMPLE_ROWS = 5_000;
/** Euclidean ball radius given to a song at the 99th percentile of distance to the centroid. */
export const BALL_RIM_RADIUS = 0.95;
/** Percentiles of the distance to the centroid that map to the centre (0) and to BALL_RIM_RADIUS. */
export const BALL_LOW_PERCENTILE = 0.01;
export const BALL_HIGH_PERCENTILE = 0.99;
/** Largest scaled genericity (songs beyond the 99th percentile keep growing until then, below radius 0.993). */
const MAX_SCALED = 1.5;

/** The vectors a ball is built from: `size` rows of `dim` floats (a generation's index). */
export interface BallInput {
  readonly size: number;
  readonly dim: number;
  getVector(row: number): Float32Array;
}

/**
 * The Poincaré-ball layout of one index generation (docs/architecture.md, "Hyperbolic exploration").
 *
 * Derivation, per song with unit embedding x (the generation's stored vector):
 *  1. genericity: g = |x - μ|, the Euclidean distance to the catalogue centroid μ (the mean of every vector).
 *     A song near the centroid sounds like the library's average (generic); a song far from it is unusual (niche).
 *  2. scaled genericity s = clamp((g - g₀₁) / (g₉₉ - g₀₁), 0, 1.5), with g₀₁ and g₉₉ the 1st and 99th percentiles
 *     of g over the generation (robust to a few outliers, independent of the embedder's scale).
 *  3. direction u = P (x - μ) / |P (x - μ)|, with P the top BALL_DIM principal axes of the catalogue (covariance of a
 *     uniform sample of BALL_PCA_SAMPLE_ROWS rows, eigenvectors by ml-pca).
 *  4. the point is the exponential map at the origin of the tangent vector α s u, with α = artanh(BALL_RIM_RADIUS):
 *     p = exp₀(α s u) = tanh(α s) u (Ganea et al. 2018, c = 1). Its hyperbolic distance from the origin is 2 α s:
 *     linear in the song's distance to the centroid between the two percentiles; its Euclidean norm (the song's
 *     `hyperbolic_radius`) is tanh(α s) in [0, 0.993].
 * The 2-D disc of the UI keeps the radius and takes the angle from the first two principal axes:
 * disc = r (u₀, u₁) / |(u₀, u₁)| ((r, 0) when both are 0).
 * Deterministic: the same vectors give the same layout (no random state), so every replica computes the same ball.
 * Cost: O(size * dim * BALL_DIM) plus O(sample * dim²) for the axes; memory per row BALL_DIM float32 (int16 from
 * BALL_COMPACT_MIN_ROWS songs) + radius + squared norm: 72 bytes; compact 32 bytes (the points only: the radius and the
 * squared norm are computed on demand from the stored point, ballRadius and ballNorm2; the 2-D disc always is, ballDisc).
 */
export interface PoincareBall {
  readonly size: number;
  /** Dimensions of each point (BALL_DIM, or fewer for a tiny or low-dimensional index). */
  readonly dim: number;
  /**
   * `size * dim` coordinates: every row's point in the ball is `points[row * dim + j] * pointScale`. Float32 (scale 1)
   * below BALL_COMPACT_MIN_ROWS songs; from there int16 fixed point (scale 1 / 32767, coordinates are in (-1, 1);
   * error <= 1.5e-5 per coordinate), half the bytes (issue 35: 30.5 instead of 61 MiB at 1M).
   */
  readonly points: Float32Array | Int16Array;
  /** Factor from a stored coordinate to the point's coordinate (1 or 1 / 32767). */
  readonly pointScale: number;
  /**
   * Euclidean norm of every row's stored point (its `hyperbolic_radius`, in [0, 1)) below BALL_COMPACT_MIN_ROWS songs;
   * absent in a compact ball, where `ballRadius` computes the same float32 value on demand (issue 35: 3.8 MiB less at
   * 1M). Read it through `ballRadius`.
   */
  readonly radius?: Float32Array;
  /**
   * Squared norm of every row's stored point (float32) below BALL_COMPACT_MIN_ROWS songs; absent in a compact ball,
   * where `ballNorm2` computes the same value on demand (issue 35: 3.8 MiB less at 1M). Read it through `ballNorm2`.
   */
  readonly norm2?: Float32Array;
  /** The distances to the centroid mapped to radius 0 and to BALL_RIM_RADIUS (the 1st and 99th percentiles). */
  readonly scale: { low: number; high: number };
  /** Share of the centred vectors' variance the BALL_DIM axes hold, in [0, 1]. */
  readonly explainedVariance: number;
  /** Largest radius of any row (the rim of the `niche` target; 0 when empty). */
  readonly maxRadius: number;
}

/**
 * Songs from which a ball stores its points as int16 fixed point instead of float32 (issue 35, replica RSS at 1M:
 * 16 dims x 2 bytes instead of 4, 30.5 MiB less at 1M). Small libraries (and the golden suite's answers) keep float32.
 */
export const BALL_COMPACT_MIN_ROWS = 100_000;
/** Fixed-point factor of the int16 points (coordinates are in (-1, 1)). */
const INT16_ONE = 32767;

/** Row `row`'s point as floats (a copy; exact for a float32 ball). */
export function ballPoint(ball: PoincareBall, row: number): Float32Array {
  const k = ball.dim;
  const out = new Float32Array(k);
  const o = row * k;
  for (let j = 0; j < k; j++) out[j] = ball.points[o + j]! * ball.pointScale;
  return out;
}

/**
 * Squared Euclidean norm of row `row`'s stored point, float32-rounded: the sum over its coordinates (stored value x
 * `pointScale`) in coordinate order in float64, as the build computed it, so the value is the one the ball stored per
 * row before it was computed on demand (issue 35: 4 bytes a song, 3.8 MiB at 1M).
 */
export function ballNorm2(ball: PoincareBall, row: number): number {
  if (ball.norm2) return ball.norm2[row]!;
  const k = ball.dim;
  const { points, pointScale } = ball;
  const o = row * k;
  let m2 = 0;
  for (let j = 0; j < k; j++) {
    const v = points[o + j]! * pointScale;
    m2 += v * v;
  }
  return Math.fround(m2);
}

/**
 * Euclidean norm of row `row`'s stored point (its `hyperbolic_radius`, in [0, 1)), float32-rounded: the square root of
 * the float64 sum `ballNorm2` rounds, so the value is the one the ball stored per row before it was computed on demand
 * (issue 35: 4 bytes a song, 3.8 MiB at 1M). Cost: `dim` (16) multiply-adds and a square root.
 */
export function ballRadius(ball: PoincareBall, row: number): number {
  if (ball.radius) return ball.radius[row]!;
  const k = ball.dim;
  const { points, pointScale } = ball;
  const o = row * k;
  let m2 = 0;
  for (let j = 0; j < k; j++) {
    const v = points[o + j]! * pointScale;
    m2 += v * v;
  }
  return Math.fround(Math.sqrt(m2));
}

/**
 * Poincaré distance between the float point `q` (squared norm `q2`) and row `row` of the ball: arcosh(1 + 2|q - p|² /
 * ((1 - |q|²)(1 - |p|²))), as poincare.ts poincareDistanceAt, reading the stored point through `pointScale`; |p|² is
 * `ballNorm2` of the row, summed in the same loop.
 */
export function ballDistanceTo(ball: PoincareBall, q: ArrayLike<number>, q2: number, row: number): number {
  const k = ball.dim;
  const { points, pointScale } = ball;
  const o = row * k;
  let d2 = 0;
  let m2 = 0;
  for (let i = 0; i < k; i++) {
    const v = points[o + i]! * pointScale;
    const d = q[i]! - v;
    d2 += d * d;
    m2 += v * v;
  }
  const p2 = ball.norm2 ? ball.norm2[row]! : Math.fround(m2);
  return Math.acosh(Math.max(1, 1 + (2 * d2) / ((1 - q2) * (1 - p2))));
}

/**
 * Row `row`'s position on the 2-D disc: its radius, the angle of its first two coordinates ((r, 0) when both are 0).
 * Computed on demand (not stored: 8 bytes a song), float32-rounded as the stored table it replaces.
 */
export function ballDisc(ball: PoincareBall, row: number): [number, number] {
  const k = ball.dim;
  const r = ballRadius(ball, row);
  const x = ball.points[row * k]! * ball.pointScale;
  const y = k > 1 ? ball.points[row * k + 1]! * ball.pointScale : 0;
  const h = Math.hypot(x, y);
  return h > 1e-12 ? [Math.fround((x / h) * r), Math.fround((y / h) * r)] : [r, 0];
}

/** Bytes a ball holds in memory (its typed arrays). */
export function ballBytes(b: PoincareBall): number {
  return b.points.byteLength + (b.radius?.byteLength ?? 0) + (b.norm2?.byteLength ?? 0);
}

/** The empty ball (no rows). */
export function emptyBall(): PoincareBall {
  return { size: 0, dim: 0, points: new Float32Array(0), pointScale: 1, radius: new Float32Array(0), scale: { low: 0, high: 0 }, explainedVariance: 0, maxRadius: 0 };
}

/** Value at quantile q in [0, 1] of a sorted array (linear interpolation). */
export function quantileSorted(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) return 0;
  const pos = Math.min(Math.max(q, 0), 1) * (n - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(n - 1, lo + 1);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/**
 * Builds the ball of `input` (see PoincareBall for the derivation). Yields to the event loop every 1024 rows
 * through `scheduler` when given. From `compactFromRows` songs the points are stored as int16 (PoincareBall.points).
 * Transient memory: `size * dim` floats of projections and `size` float64 distances while it builds.
 */
export async function buildPoincareBall(input: BallInput, scheduler?: CooperativeScheduler, ballDim = BALL_DIM, compactFromRows = BALL_COMPACT_MIN_ROWS): Promise<PoincareBall> {
  const { size, dim } = input;
  if (size === 0 || dim === 0) return emptyBall();
  // 1. centroid of every vector (float64).
  const mean = new Float64Array(dim);
  for (let r = 0; r < size; r++) {
    const v = input.getVector(r);
    for (let d = 0; d < dim; d++) mean[d]! += v[d]!;
    if ((r & 1023) === 1023) await scheduler?.maybeYield();
  }
  for (let d = 0; d < dim; d++) mean[d]! /= size;
  // 3. principal axes from a uniform sample (rows are in content-hash order, so a stride is unbiased).
  const k = Math.max(1, Math.min(ballDim, dim, size));
  const { axes, explained } = await principalAxes(input, mean, k, scheduler);
  // Project every row; keep its distance to the centroid.
  const points = new Float32Array(size * k);
  const dist = new Float64Array(size);
  const c = new Float64Array(dim);
  for (let r = 0; r < size; r++) {
    const v = input.getVector(r);
    let g = 0;
    for (let d = 0; d < dim; d++) {
      c[d] = v[d]! - mean[d]!;
      g += c[d]! * c[d]!;
    }
    dist[r] = Math.sqrt(g);
    for (let j = 0; j < k; j++) {
      let s = 0;
      const o = j * dim;
      for (let d = 0; d < dim; d++) s += c[d]! * axes[o + d]!;
      points[r * k + j] = s;
    }
    if ((r & 1023) === 1023) await scheduler?.maybeYield();
  }
  // 2. robust scale of the genericity.
  const sorted = Float64Array.from(dist).sort();
  const low = quantileSorted(sorted, BALL_LOW_PERCENTILE);
  const high = quantileSorted(sorted, BALL_HIGH_PERCENTILE);
  const span = high - low;
  const alpha = Math.atanh(BALL_RIM_RADIUS);
  // 4. exponential map at the origin.
  const compact = size >= compactFromRows;
  const stored = compact ? new Int16Array(size * k) : points;
  const pointScale = compact ? 1 / INT16_ONE : 1;
  // Stored below the compact threshold only (small libraries, the golden suite's memory figure unchanged).
  const radius = compact ? undefined : new Float32Array(size);
  const norm2 = compact ? undefined : new Float32Array(size);
  let maxRadius = 0;
  for (let r = 0; r < size; r++) {
    const s = span > 1e-12 ? Math.min(MAX_SCALED, Math.max(0, (dist[r]! - low) / span)) : 0.5;
    const rad = Math.tanh(alpha * s);
    const o = r * k;
    let n2 = 0;
    for (let j = 0; j < k; j++) n2 += points[o + j]! * points[o + j]!;
    const n = Math.sqrt(n2);
    if (n > 1e-12) {
      for (let j = 0; j < k; j++) points[o + j] = (points[o + j]! / n) * rad;
    } else {
      points.fill(0, o, o + k);
      points[o] = rad;
    }
    if (compact) for (let j = 0; j < k; j++) stored[o + j] = Math.round(points[o + j]! * INT16_ONE);
    // Stored as float32 (or int16): the norm is read back from the stored values (its square: ballNorm2, same sum).
    let m2 = 0;
    for (let j = 0; j < k; j++) {
      const v = stored[o + j]! * pointScale;
      m2 += v * v;
    }
    // The value ballRadius computes on demand in a compact ball (the same sum, float32-rounded).
    const rr = Math.fround(Math.sqrt(m2));
    if (radius) radius[r] = rr;
    if (norm2) norm2[r] = m2;
    maxRadius = Math.max(maxRadius, rr);
    if ((r & 1023) === 1023) await scheduler?.maybeYield();
  }
  return { size, dim: k, points: stored, pointScale, ...(radius ? { radius } : {}), ...(norm2 ? { norm2 } : {}), scale: { low, high }, explainedVariance: explained, maxRadius };
}

/** Top `k` principal axes (k rows of `dim`) of a uniform sample of the rows, and the share of variance they hold. */
async function principalAxes(input: BallInput, mean: Float64Array, k: number, scheduler?: CooperativeScheduler): Promise<{ axes: Float64Array; explained: number }> {
  const { size, dim } = input;
  const stride = Math.max(1, Math.ceil(size / BALL_PCA_SAMPLE_ROWS));
  const cov = new Float64Array(dim * dim);
  const x = new Float64Array(dim);
  let m = 0;
  for (let r = 0; r < size; r += stride, m++) {
    const v = input.getVector(r);
    for (let d = 0; d < dim; d++) x[d] = v[d]! - mean[d]!;
    for (let a = 0; a < dim; a++) {
      const xa = x[a]!;
      if (xa === 0) continue;
      const row = a * dim;
      for (let b = a; b < dim; b++) cov[row + b]! += xa * x[b]!;
    }
    if ((m & 255) === 255) await scheduler?.maybeYield();
  }
  const denom = Math.max(1, m - 1);
  const matrix: number[][] = [];
  let total = 0;
  for (let a = 0; a < dim; a++) {
    const line = new Array<number>(dim);
    for (let b = 0; b < dim; b++) line[b] = (a <= b ? cov[a * dim + b]! : cov[b * dim + a]!) / denom;
    total += line[a]!;
    matrix.push(line);
  }
  const axes = new Float64Array(k * dim);
  if (total <= 0) {
    // Every vector is the same: any orthonormal axes will do.
    for (let j = 0; j < k; j++) axes[j * dim + j] = 1;
    return { axes, explained: 0 };
  }
  const pca = new PCA(matrix, { isCovarianceMatrix: true });
  const vectors = pca.getEigenvectors();
  const values = pca.getEigenvalues();
  let kept = 0;
  for (let j = 0; j < k; j++) {
    const col = j < vectors.columns ? vectors.getColumn(j) : [];
    // Sign convention (deterministic across runs): the largest-magnitude component of each axis is positive.
    let big = 0;
    for (let d = 0; d < dim; d++) if (Math.abs(col[d] ?? 0) > Math.abs(big)) big = col[d] ?? 0;
    const sign = big < 0 ? -1 : 1;
    for (let d = 0; d < dim; d++) axes[j * dim + d] = sign * (col[d] ?? 0);
    kept += Math.max(0, values[j] ?? 0);
  }
  return { axes, explained: Math.min(1, kept / total) };
}
