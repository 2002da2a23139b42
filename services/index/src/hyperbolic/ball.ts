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

/** The vectors a ball is built from: `size` rows of `dim` floats (a generation's index, or `ballInputOf` it). */
export interface BallInput {
  readonly size: number;
  readonly dim: number;
  /** Row `row`'s vector; read before the next call (it may be a view of a reused buffer). */
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
  /** The basis the rows were laid out with (absent when empty). */
  readonly basis?: BallBasis;
  /** Rows copied from the previous generation's ball instead of projected (issue 35 reuse; 0 or absent = none). */
  readonly reused?: number;
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
  return ball.norm2 ? ball.norm2[row]! : Math.fround(storedNormSum(ball, row));
}

/** The float64 sum of squares of row `row`'s stored coordinates (stored value x `pointScale`, coordinate order). */
function storedNormSum(ball: PoincareBall, row: number): number {
  const k = ball.dim;
  const { points, pointScale } = ball;
  const o = row * k;
  let m2 = 0;
  for (let j = 0; j < k; j++) {
    const v = points[o + j]! * pointScale;
    m2 += v * v;
  }
  return m2;
}

/**
 * Euclidean norm of row `row`'s stored point (its `hyperbolic_radius`, in [0, 1)), float32-rounded: the square root of
 * the float64 sum `ballNorm2` rounds, so the value is the one the ball stored per row before it was computed on demand
 * (issue 35: 4 bytes a song, 3.8 MiB at 1M). Cost: `dim` (16) multiply-adds and a square root.
 */
export function ballRadius(ball: PoincareBall, row: number): number {
  return ball.radius ? ball.radius[row]! : Math.fround(Math.sqrt(storedNormSum(ball, row)));
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
 * What a ball's layout is made of besides the rows (steps 1-3 of PoincareBall's derivation): the centroid, the
 * principal axes and the two distance percentiles. Fitted from every row (`fitBallBasis`, or inside a build without
 * one), or carried over from the serving generation by a build that reuses it (issue 35, generation reuse): it is
 * then stored with the generation (`index.builds.ball`, `encodeBallBasis`) so every replica lays out the same ball.
 */
export interface BallBasis {
  /** Dimension of the vectors (the index's). */
  readonly inputDim: number;
  /** Dimensions of each point (BALL_DIM or fewer). */
  readonly k: number;
  /** Centroid μ of every vector (`inputDim` float64). */
  readonly mean: Float64Array;
  /** k principal axes, `k * inputDim` float64 (row j = axis j). */
  readonly axes: Float64Array;
  /** g₀₁ and g₉₉: distances to μ mapped to radius 0 and to BALL_RIM_RADIUS. */
  readonly low: number;
  readonly high: number;
  /** Share of variance the axes hold. */
  readonly explained: number;
}

/**
 * Rows of the serving generation's ball a build takes over (issue 35): per new row the row of the previous ball with
 * a bitwise-identical stored vector, or -1. Valid only when the previous ball was laid out with the same basis and
 * storage (`buildPoincareBall` checks the basis values, `dim` and `pointScale`, and re-reads a sample of the vectors).
 */
export interface BallReuse {
  readonly ball: PoincareBall;
  /** The vectors the previous ball was built from (for the sample check). */
  readonly input: BallInput;
  readonly prevRowOfNew: Int32Array;
}

/** Reused rows whose vectors `buildPoincareBall` compares with the previous generation's before it copies any row. */
const REUSE_CHECK_ROWS = 64;

/**
 * Builds the ball of `input` (see PoincareBall for the derivation). Yields to the event loop every 1024 rows
 * through `scheduler` when given. From `compactFromRows` songs the points are stored as int16 (PoincareBall.points).
 * Without `basis` the basis is fitted from `input` (as always); with one, every row is laid out with it (the same
 * float arithmetic, so `buildPoincareBall(x)` and `buildPoincareBall(x, .., fitBallBasis(x))` hold the same values).
 * With `reuse` (and a basis), rows unchanged since the previous ball copy its point and radius instead of projecting.
 * Transient memory: `size * dim` floats of projections and `size` float64 distances while it builds (without basis).
 */
export async function buildPoincareBall(input: BallInput, scheduler?: CooperativeScheduler, ballDim = BALL_DIM, compactFromRows = BALL_COMPACT_MIN_ROWS, basis?: BallBasis, reuse?: BallReuse): Promise<PoincareBall & { reused: number }> {
  const { size, dim } = input;
  if (size === 0 || dim === 0) return { ...emptyBall(), reused: 0 };
  if (basis && basis.inputDim === dim && basis.k === Math.max(1, Math.min(ballDim, dim, size))) return layOutWithBasis(input, basis, scheduler, compactFromRows, reuse);
  // 1. centroid of every vector (float64).
  const mean = await centroidOf(input, scheduler);
  // 3. principal axes from a uniform sample (rows are in content-hash order, so a stride is unbiased).
  const k = Math.max(1, Math.min(ballDim, dim, size));
  const { axes, explained } = await principalAxes(input, mean, k, scheduler);
  // Project every row; keep its distance to the centroid.
  const points = new Float32Array(size * k);
  const dist = new Float64Array(size);
  const c = new Float64Array(dim);
  for (let r = 0; r < size; r++) {
    dist[r] = projectRow(input.getVector(r), mean, axes, k, c, points, r * k);
    if ((r & 1023) === 1023) await scheduler?.maybeYield();
  }
  // 2. robust scale of the genericity.
  const { low, high } = distanceScale(dist);
  // 4. exponential map at the origin.
  const compact = size >= compactFromRows;
  const stored = compact ? new Int16Array(size * k) : points;
  const pointScale = compact ? 1 / INT16_ONE : 1;
  // Stored below the compact threshold only (small libraries, the golden suite's memory figure unchanged).
  const radius = compact ? undefined : new Float32Array(size);
  const norm2 = compact ? undefined : new Float32Array(size);
  let maxRadius = 0;
  for (let r = 0; r < size; r++) {
    maxRadius = Math.max(maxRadius, placeRow(points, r * k, k, dist[r]!, low, high, stored, r, radius, norm2, pointScale));
    if ((r & 1023) === 1023) await scheduler?.maybeYield();
  }
  const fitted: BallBasis = { inputDim: dim, k, mean, axes, low, high, explained };
  return { size, dim: k, points: stored, pointScale, ...(radius ? { radius } : {}), ...(norm2 ? { norm2 } : {}), scale: { low, high }, explainedVariance: explained, maxRadius, basis: fitted, reused: 0 };
}

/** Step 1: the centroid of every row's vector (float64 sums in row order), yielding every 1024 rows. */
async function centroidOf(input: BallInput, scheduler?: CooperativeScheduler): Promise<Float64Array> {
  const { size, dim } = input;
  const mean = new Float64Array(dim);
  for (let r = 0; r < size; r++) {
    const v = input.getVector(r);
    for (let d = 0; d < dim; d++) mean[d]! += v[d]!;
    if ((r & 1023) === 1023) await scheduler?.maybeYield();
  }
  for (let d = 0; d < dim; d++) mean[d]! /= size;
  return mean;
}

/**
 * Fits the basis of `input` (centroid, principal axes, distance percentiles) as `buildPoincareBall` does without one:
 * one pass for the centroid, the axes from the sample, one pass for the distances. O(size * dim) + the axes.
 */
export async function fitBallBasis(input: BallInput, scheduler?: CooperativeScheduler, ballDim = BALL_DIM): Promise<BallBasis | undefined> {
  const { size, dim } = input;
  if (size === 0 || dim === 0) return undefined;
  const mean = await centroidOf(input, scheduler);
  const k = Math.max(1, Math.min(ballDim, dim, size));
  const { axes, explained } = await principalAxes(input, mean, k, scheduler);
  const dist = new Float64Array(size);
  for (let r = 0; r < size; r++) {
    const v = input.getVector(r);
    let g = 0;
    for (let d = 0; d < dim; d++) {
      const x = v[d]! - mean[d]!;
      g += x * x;
    }
    dist[r] = Math.sqrt(g);
    if ((r & 1023) === 1023) await scheduler?.maybeYield();
  }
  const { low, high } = distanceScale(dist);
  return { inputDim: dim, k, mean, axes, low, high, explained };
}

/** g₀₁ and g₉₉ of the distances (step 2). */
function distanceScale(dist: Float64Array): { low: number; high: number } {
  const sorted = Float64Array.from(dist).sort();
  return { low: quantileSorted(sorted, BALL_LOW_PERCENTILE), high: quantileSorted(sorted, BALL_HIGH_PERCENTILE) };
}

/** Centres `v` on `mean` (into `c`), writes its k projections (float32) at `out[o..]`; @returns |v - mean| */
function projectRow(v: Float32Array, mean: Float64Array, axes: Float64Array, k: number, c: Float64Array, out: Float32Array, o: number): number {
  const dim = mean.length;
  let g = 0;
  for (let d = 0; d < dim; d++) {
    c[d] = v[d]! - mean[d]!;
    g += c[d]! * c[d]!;
  }
  for (let j = 0; j < k; j++) {
    let s = 0;
    const a = j * dim;
    for (let d = 0; d < dim; d++) s += c[d]! * axes[a + d]!;
    out[o + j] = s;
  }
  return Math.sqrt(g);
}

/**
 * Step 4 for one row: its projections `points[o..o+k]` (float32, overwritten) become the point at radius
 * tanh(α s), stored at row `r` of `stored` (int16 when `pointScale` < 1); its radius (and squared norm) from the stored values,
 * written to `radius` / `norm2` when the ball keeps those tables (below BALL_COMPACT_MIN_ROWS).
 * @returns the row's radius (float32-rounded: the value `ballRadius` gives)
 */
function placeRow(points: Float32Array, o: number, k: number, dist: number, low: number, high: number, stored: Float32Array | Int16Array, r: number, radius: Float32Array | undefined, norm2: Float32Array | undefined, pointScale: number): number {
  const span = high - low;
  const s = span > 1e-12 ? Math.min(MAX_SCALED, Math.max(0, (dist - low) / span)) : 0.5;
  const rad = Math.tanh(Math.atanh(BALL_RIM_RADIUS) * s);
  let n2 = 0;
  for (let j = 0; j < k; j++) n2 += points[o + j]! * points[o + j]!;
  const n = Math.sqrt(n2);
  if (n > 1e-12) {
    for (let j = 0; j < k; j++) points[o + j] = (points[o + j]! / n) * rad;
  } else {
    points.fill(0, o, o + k);
    points[o] = rad;
  }
  const so = r * k;
  if (stored !== points) for (let j = 0; j < k; j++) stored[so + j] = pointScale === 1 ? points[o + j]! : Math.round(points[o + j]! * INT16_ONE);
  // Stored as float32 (or int16): the norm is read back from the stored values (its square: ballNorm2, same sum).
  let m2 = 0;
  for (let j = 0; j < k; j++) {
    const v = stored[so + j]! * pointScale;
    m2 += v * v;
  }
  // The value ballRadius computes on demand in a compact ball (the same sum, float32-rounded).
  const rr = Math.fround(Math.sqrt(m2));
  if (radius) radius[r] = rr;
  if (norm2) norm2[r] = m2;
  return rr;
}

/** True when two bases hold the same values (a reused ball must have been laid out with the basis of the new one). */
export function sameBallBasis(a: BallBasis | undefined, b: BallBasis | undefined): boolean {
  if (!a || !b) return false;
  if (a === b) return true;
  if (a.inputDim !== b.inputDim || a.k !== b.k || a.low !== b.low || a.high !== b.high || a.mean.length !== b.mean.length || a.axes.length !== b.axes.length) return false;
  for (let i = 0; i < a.mean.length; i++) if (a.mean[i] !== b.mean[i]) return false;
  for (let i = 0; i < a.axes.length; i++) if (a.axes[i] !== b.axes[i]) return false;
  return true;
}

/** True when `reuse` may lend rows to a ball of `size` rows laid out with `basis` (see BallReuse). */
function reusable(input: BallInput, basis: BallBasis, pointScale: number, reuse: BallReuse | undefined): reuse is BallReuse {
  if (!reuse || reuse.prevRowOfNew.length !== input.size || reuse.ball.dim !== basis.k || reuse.ball.pointScale !== pointScale || !sameBallBasis(reuse.ball.basis, basis)) return false;
  // The rows' vectors must be the ones the previous ball projected (a quantised build that re-encoded them is not):
  // a spread sample is compared bitwise.
  const rows: number[] = [];
  const step = Math.max(1, Math.floor(input.size / REUSE_CHECK_ROWS));
  for (let r = 0; r < input.size && rows.length < REUSE_CHECK_ROWS; r += step) if (reuse.prevRowOfNew[r]! >= 0) rows.push(r);
  for (const r of rows) {
    const a = input.getVector(r);
    const b = reuse.input.getVector(reuse.prevRowOfNew[r]!);
    if (a.length !== b.length) return false;
    for (let d = 0; d < a.length; d++) if (!Object.is(a[d], b[d])) return false;
  }
  return true;
}

/** `buildPoincareBall` with a given basis: per row projection and placement, or a copy of the previous ball's row. */
async function layOutWithBasis(input: BallInput, basis: BallBasis, scheduler: CooperativeScheduler | undefined, compactFromRows: number, reuse: BallReuse | undefined): Promise<PoincareBall & { reused: number }> {
  const { size } = input;
  const { k, mean, axes, low, high } = basis;
  const compact = size >= compactFromRows;
  const pointScale = compact ? 1 / INT16_ONE : 1;
  const stored = compact ? new Int16Array(size * k) : new Float32Array(size * k);
  const radius = compact ? undefined : new Float32Array(size);
  const norm2 = compact ? undefined : new Float32Array(size);
  const from = reusable(input, basis, pointScale, reuse) ? reuse : undefined;
  const c = new Float64Array(basis.inputDim);
  const tmp = new Float32Array(k);
  let maxRadius = 0;
  let reused = 0;
  for (let r = 0; r < size; r++) {
    const p = from ? from.prevRowOfNew[r]! : -1;
    if (from && p >= 0) {
      stored.set(from.ball.points.subarray(p * k, p * k + k), r * k);
      const rr = ballRadius(from.ball, p);
      if (radius) radius[r] = rr;
      if (norm2) norm2[r] = ballNorm2(from.ball, p);
      maxRadius = Math.max(maxRadius, rr);
      reused++;
    } else {
      const g = projectRow(input.getVector(r), mean, axes, k, c, tmp, 0);
      maxRadius = Math.max(maxRadius, placeRow(tmp, 0, k, g, low, high, stored, r, radius, norm2, pointScale));
    }
    if ((r & 1023) === 1023) await scheduler?.maybeYield();
  }
  return { size, dim: k, points: stored, pointScale, ...(radius ? { radius } : {}), ...(norm2 ? { norm2 } : {}), scale: { low, high }, explainedVariance: basis.explained, maxRadius, basis, reused };
}

/** The stored form of a basis (`index.builds.ball`): float64 [inputDim, k, low, high, explained, mean..., axes...]. */
export function encodeBallBasis(b: BallBasis): Buffer {
  const out = new Float64Array(5 + b.mean.length + b.axes.length);
  out.set([b.inputDim, b.k, b.low, b.high, b.explained]);
  out.set(b.mean, 5);
  out.set(b.axes, 5 + b.mean.length);
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

/** The basis `encodeBallBasis` stored; undefined when the bytes are not one. */
export function decodeBallBasis(buf: Buffer | Uint8Array): BallBasis | undefined {
  if (buf.byteLength % 8 !== 0 || buf.byteLength < 40) return undefined;
  const f = new Float64Array(buf.byteLength / 8);
  new Uint8Array(f.buffer).set(buf);
  const [inputDim, k, low, high, explained] = [f[0]!, f[1]!, f[2]!, f[3]!, f[4]!];
  if (!Number.isInteger(inputDim) || !Number.isInteger(k) || inputDim < 1 || k < 1 || f.length !== 5 + inputDim + k * inputDim) return undefined;
  return { inputDim, k, low, high, explained, mean: f.slice(5, 5 + inputDim), axes: f.slice(5 + inputDim) };
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
