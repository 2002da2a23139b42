/**
 * Poincaré-ball geometry (curvature -1) on plain number arrays. Points are vectors of Euclidean norm < 1.
 *
 * Formulas (Ganea, Bécigneul & Hofmann, "Hyperbolic Neural Networks", NeurIPS 2018, section 2 with c = 1;
 * Ungar, "A Gyrovector Space Approach to Hyperbolic Geometry", 2008):
 * - Möbius addition  x ⊕ y = ((1 + 2<x,y> + |y|²) x + (1 - |x|²) y) / (1 + 2<x,y> + |x|²|y|²)
 * - distance         d(x, y) = 2 artanh(|(-x) ⊕ y|)   (equal to arcosh(1 + 2|x-y|² / ((1-|x|²)(1-|y|²))))
 * - exponential map at the origin  exp_0(v) = tanh(|v|) v / |v|,  log_0(y) = artanh(|y|) y / |y|
 *   (so d(0, exp_0(v)) = 2|v|)
 * - Möbius scalar multiple  r ⊗ x = tanh(r artanh|x|) x / |x|
 * - geodesic from x to y    γ(t) = x ⊕ (t ⊗ ((-x) ⊕ y)),  t in [0, 1]; γ(0) = x, γ(1) = y, and
 *   d(x, γ(t)) = t d(x, y) (constant speed).
 */

/** Largest Euclidean norm a point keeps (points are pulled back inside so artanh stays finite). */
export const BALL_MAX_NORM = 1 - 1e-7;

/** Euclidean dot product. */
export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/** Euclidean norm. */
export function norm(a: ArrayLike<number>): number {
  return Math.sqrt(dot(a, a));
}

/** Returns `x` scaled back inside the ball when its norm reaches BALL_MAX_NORM (a copy). */
export function project(x: ArrayLike<number>): number[] {
  const n = norm(x);
  const f = n >= BALL_MAX_NORM ? BALL_MAX_NORM / n : 1;
  return Array.from(x, (v) => v * f);
}

/** Möbius addition x ⊕ y (module formula). Not commutative; (-x) ⊕ x = 0. */
export function mobiusAdd(x: ArrayLike<number>, y: ArrayLike<number>): number[] {
  const xy = dot(x, y);
  const x2 = dot(x, x);
  const y2 = dot(y, y);
  const a = 1 + 2 * xy + y2;
  const b = 1 - x2;
  const den = Math.max(1 + 2 * xy + x2 * y2, 1e-15);
  const out = new Array<number>(x.length);
  for (let i = 0; i < x.length; i++) out[i] = (a * x[i]! + b * y[i]!) / den;
  return project(out);
}

/** Hyperbolic distance between two ball points (module formula), >= 0. */
export function poincareDistance(x: ArrayLike<number>, y: ArrayLike<number>): number {
  // The arcosh form is cheaper than the Möbius one and numerically equal away from the rim.
  const x2 = Math.min(dot(x, x), BALL_MAX_NORM * BALL_MAX_NORM);
  const y2 = Math.min(dot(y, y), BALL_MAX_NORM * BALL_MAX_NORM);
  let d2 = 0;
  for (let i = 0; i < x.length; i++) {
    const d = x[i]! - y[i]!;
    d2 += d * d;
  }
  const arg = 1 + (2 * d2) / ((1 - x2) * (1 - y2));
  return Math.acosh(Math.max(1, arg));
}

/**
 * `poincareDistance` over two rows of flat float arrays (`a[ao .. ao+k)`, `b[bo .. bo+k)`), with the squared
 * norms given: the per-candidate form of the search loops (no allocation).
 */
export function poincareDistanceAt(a: ArrayLike<number>, ao: number, a2: number, b: ArrayLike<number>, bo: number, b2: number, k: number): number {
  let d2 = 0;
  for (let i = 0; i < k; i++) {
    const d = a[ao + i]! - b[bo + i]!;
    d2 += d * d;
  }
  return Math.acosh(Math.max(1, 1 + (2 * d2) / ((1 - a2) * (1 - b2))));
}

/** Distance of a ball point of Euclidean norm `r` from the origin: 2 artanh(r). */
export function radiusToDistance(r: number): number {
  return 2 * Math.atanh(Math.min(Math.max(r, 0), BALL_MAX_NORM));
}

/** Exponential map at the origin: tangent vector v -> tanh(|v|) v/|v| (module formula). */
export function expMap0(v: ArrayLike<number>): number[] {
  const n = norm(v);
  if (n === 0) return Array.from(v, () => 0);
  const f = Math.tanh(n) / n;
  return project(Array.from(v, (x) => x * f));
}

/** Logarithmic map at the origin (inverse of expMap0): y -> artanh(|y|) y/|y|. */
export function logMap0(y: ArrayLike<number>): number[] {
  const n = Math.min(norm(y), BALL_MAX_NORM);
  if (n === 0) return Array.from(y, () => 0);
  const f = Math.atanh(n) / norm(y);
  return Array.from(y, (x) => x * f);
}

/** Möbius scalar multiple r ⊗ x (module formula); r ⊗ 0 = 0. */
export function mobiusScale(r: number, x: ArrayLike<number>): number[] {
  const n = Math.min(norm(x), BALL_MAX_NORM);
  if (n === 0) return Array.from(x, () => 0);
  const f = Math.tanh(r * Math.atanh(n)) / norm(x);
  return project(Array.from(x, (v) => v * f));
}

/** Negation (the Möbius inverse): -x. */
export function negate(x: ArrayLike<number>): number[] {
  return Array.from(x, (v) => -v);
}

/** The point at fraction `t` in [0, 1] of the geodesic from x to y (module formula). */
export function geodesicPoint(x: ArrayLike<number>, y: ArrayLike<number>, t: number): number[] {
  return mobiusAdd(x, mobiusScale(t, mobiusAdd(negate(x), y)));
}

/**
 * `n` >= 2 points evenly spaced in hyperbolic arc length along the geodesic from x to y, both ends included.
 * @throws RangeError for n < 2
 */
export function sampleGeodesic(x: ArrayLike<number>, y: ArrayLike<number>, n: number): number[][] {
  if (!Number.isInteger(n) || n < 2) throw new RangeError('a geodesic sample needs at least 2 points');
  const dir = mobiusAdd(negate(x), y);
  const out: number[][] = [];
  for (let i = 0; i < n; i++) out.push(i === n - 1 ? project(y) : mobiusAdd(x, mobiusScale(i / (n - 1), dir)));
  return out;
}

/**
 * A path from x to y through `via`: the geodesic x -> via then via -> y. Returns `n` points evenly spaced in
 * hyperbolic arc length over the whole path, each with its fraction `t` of the total length, and the total length.
 * @throws RangeError for n < 2
 */
export function samplePathVia(x: ArrayLike<number>, via: ArrayLike<number>, y: ArrayLike<number>, n: number): { points: Array<{ t: number; point: number[] }>; length: number } {
  if (!Number.isInteger(n) || n < 2) throw new RangeError('a path sample needs at least 2 points');
  const l1 = poincareDistance(x, via);
  const l2 = poincareDistance(via, y);
  const length = l1 + l2;
  const d1 = mobiusAdd(negate(x), via);
  const d2 = mobiusAdd(negate(via), y);
  const points: Array<{ t: number; point: number[] }> = [];
  for (let i = 0; i < n; i++) {
    const t = i / (n - 1);
    const s = t * length;
    let point: number[];
    if (i === 0) point = project(x);
    else if (i === n - 1) point = project(y);
    else if (s <= l1 && l1 > 0) point = mobiusAdd(x, mobiusScale(s / l1, d1));
    else point = l2 > 0 ? mobiusAdd(via, mobiusScale((s - l1) / l2, d2)) : project(via);
    points.push({ t, point });
  }
  return { points, length };
}
