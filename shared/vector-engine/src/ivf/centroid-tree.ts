import { dot, normaliseSumInto } from '@polyphony/vectors';
import { KernelMemory, simdKernelsAvailable } from '../simd/kernels';

/**
 * The cone-bounded nearest-centroid search of the IVF coarse quantiser (`CentroidTree`), over the groups of the
 * two-level training (kmeans.ts `trainCentroids`). Moved out of kmeans.ts; issue 35 (session 17) changed which
 * groups a limited search visits.
 */

/** Slack of the cone bounds against float rounding: a group or centroid is skipped only below best - slack. */
const BOUND_SLACK = 1e-6;

/**
 * Nearest-centroid search (maximum inner product over unit centroids) with pruning; exact when all
 * groups may be visited, approximate when `nearest` is limited to the most promising groups.
 *
 * The centroids are split into groups (the coarse clusters of the two-level training). Each group has a
 * unit axis `a`; every centroid `c` stores its angle `theta_c = angle(a, c)`. For a unit query `x` with
 * `phi = angle(a, x)`, the triangle inequality on the sphere gives `angle(x, c) >= |phi - theta_c|`, hence
 *     dot(x, c) <= cos(phi - theta_c) = cos(phi) cos(theta_c) + sin(phi) sin(theta_c),
 * and for the whole group `dot(x, c) <= cos(dist(phi, [thetaMin, thetaMax]))`.
 * Groups are visited by decreasing bound and a group or centroid is skipped only when its bound is below
 * the best dot product found so far (minus 1e-6 slack for float rounding), so with no group limit the answer
 * is the same as a brute-force scan (ties go to the lower centroid index). This is a cone-bound variant of the
 * ball-tree / branch-and-bound maximum-inner-product search (Ram & Gray, "Maximum inner-product search
 * using cone trees", KDD 2012). Worst case (no pruning) costs `groups + nlist` dot products.
 *
 * With a group limit (`nearest(x, xo, maxGroups)`, the build's assignment: `DEFAULT_ASSIGN_GROUPS`, 4) the answer
 * is the nearest centroid inside the `maxGroups` groups whose axes are nearest to `x` (largest `dot(x, a)`, ties to
 * the lower group; the cone bounds then only prune inside them, which leaves that answer unchanged). Issue 35: choosing the limited
 * groups by decreasing bound instead (the exact search's order) favours wide cones over near axes: on the
 * benchmark catalogue (independent album centres, 200-d) 33% of the true neighbours of 500 songs at 1M were not
 * in their nearest centroid's cell, so queries that probe the right cells missed them (recall@10 0.952 at nprobe
 * 64 where an exact assignment gives 0.991; `bench/src/vector-engine/recall-decomposition.ts`); by nearest axis
 * 22.1% with 4 groups (recall 0.973) and 12.6% with 8 (0.984), for the same dot products per group. Ranking groups
 * by their axis is the usual multi-level coarse quantiser (visit the nearest first-level centroids, like an IVF
 * query's nprobe; the axis is the group's mean direction, the training's first-level centroid up to the fine runs).
 */
export class CentroidTree {
  readonly nlist: number;
  readonly groupCount: number;
  /** Dot products computed by `nearest` since construction (for benchmarks). */
  dotProducts = 0;
  private readonly dim: number;
  private readonly axes: Float32Array;
  private readonly ordered: Float32Array;
  private readonly orderedId: Int32Array;
  private readonly groupStart: Int32Array;
  private readonly cosTheta: Float64Array;
  private readonly sinTheta: Float64Array;
  private readonly theta: Float64Array;
  private readonly thetaMin: Float64Array;
  private readonly thetaMax: Float64Array;
  private readonly alpha: Float64Array;
  private readonly phi: Float64Array;
  private readonly bound: Float64Array;
  /** Scratch of `keepNearestAxes`: 1 for the groups a limited search may visit. */
  private readonly kept: Uint8Array;
  /** Dot product of the last `nearest` answer. */
  lastScore = -Infinity;
  /**
   * SIMD path (WebAssembly kernels available, dim % 4 == 0): axes and ordered centroids copied into this
   * tree's own kernel memory; `nearest` scores the axes and each visited group with one `dots` call.
   */
  private readonly simd?: { km: KernelMemory; axes: number; ordered: number; x: number; out: number; cosLo: Float64Array; sinLo: Float64Array; cosHi: Float64Array; sinHi: Float64Array };

  /**
   * @param centroids `nlist * dim` unit centroids
   * @param groupOf   group index in [0, groupCount) for every centroid
   */
  constructor(centroids: Float32Array, nlist: number, dim: number, groupOf: Int32Array, groupCount: number) {
    this.nlist = nlist;
    this.dim = dim;
    this.groupCount = groupCount;
    const sizes = new Int32Array(groupCount);
    for (let c = 0; c < nlist; c++) sizes[groupOf[c]!]!++;
    this.groupStart = new Int32Array(groupCount + 1);
    for (let g = 0; g < groupCount; g++) this.groupStart[g + 1] = this.groupStart[g]! + sizes[g]!;
    // Axis of a group: normalised mean of its centroids (any unit vector keeps the bound valid).
    this.axes = new Float32Array(groupCount * dim);
    const acc = new Float64Array(groupCount * dim);
    for (let c = 0; c < nlist; c++) {
      const g = groupOf[c]!;
      for (let d = 0; d < dim; d++) acc[g * dim + d]! += centroids[c * dim + d]!;
    }
    for (let g = 0; g < groupCount; g++) normaliseSumInto(acc, g * dim, this.axes, g * dim, dim);
    const theta = new Float64Array(nlist);
    for (let c = 0; c < nlist; c++) theta[c] = Math.acos(clamp1(dot(this.axes, groupOf[c]! * dim, centroids, c * dim, dim)));
    // Members of each group contiguous, by decreasing angle from the axis.
    const byGroup: number[][] = Array.from({ length: groupCount }, () => []);
    for (let c = 0; c < nlist; c++) byGroup[groupOf[c]!]!.push(c);
    this.orderedId = new Int32Array(nlist);
    this.ordered = new Float32Array(nlist * dim);
    this.cosTheta = new Float64Array(nlist);
    this.sinTheta = new Float64Array(nlist);
    this.theta = new Float64Array(nlist);
    this.thetaMin = new Float64Array(groupCount);
    this.thetaMax = new Float64Array(groupCount);
    let pos = 0;
    for (let g = 0; g < groupCount; g++) {
      const members = byGroup[g]!.sort((a, b) => theta[b]! - theta[a]! || a - b);
      this.thetaMax[g] = members.length > 0 ? theta[members[0]!]! : 0;
      this.thetaMin[g] = members.length > 0 ? theta[members[members.length - 1]!]! : 0;
      for (const c of members) {
        this.orderedId[pos] = c;
        this.ordered.set(centroids.subarray(c * dim, c * dim + dim), pos * dim);
        this.theta[pos] = theta[c]!;
        this.cosTheta[pos] = Math.cos(theta[c]!);
        this.sinTheta[pos] = Math.sin(theta[c]!);
        pos++;
      }
    }
    this.alpha = new Float64Array(groupCount);
    this.phi = new Float64Array(groupCount);
    this.bound = new Float64Array(groupCount);
    this.kept = new Uint8Array(groupCount);
    if (dim % 4 === 0 && simdKernelsAvailable()) {
      const km = new KernelMemory((groupCount + nlist + 1) * dim * 4 + Math.max(groupCount, nlist) * 4 + 1024);
      const axesPtr = km.alloc(groupCount * dim * 4);
      const orderedPtr = km.alloc(nlist * dim * 4);
      const x = km.alloc(dim * 4);
      const out = km.alloc(Math.max(groupCount, nlist) * 4);
      km.putF32(axesPtr, this.axes, 0, groupCount * dim);
      km.putF32(orderedPtr, this.ordered, 0, nlist * dim);
      // cos/sin of each group's angle range: the bounds need no trigonometry per query (see nearestSimd).
      const cosLo = this.thetaMin.map(Math.cos);
      const sinLo = this.thetaMin.map(Math.sin);
      const cosHi = this.thetaMax.map(Math.cos);
      const sinHi = this.thetaMax.map(Math.sin);
      this.simd = { km, axes: axesPtr, ordered: orderedPtr, x, out, cosLo, sinLo, cosHi, sinHi };
    }
  }

  /**
   * Index of the centroid with the largest dot product with the unit vector `x[xo .. xo+dim)`;
   * its dot product is left in `lastScore`.
   * @param maxGroups search only the centroids of this many groups, those whose axes are nearest to `x` (see the
   *   class comment). Infinity (default) gives the brute-force answer; a small number (the build uses 4) gives the
   *   nearest centroid inside the nearest groups, an approximate answer at a fraction of the cost, because in 200-d
   *   the cone bounds alone prune only ~40% of the centroids (equal to brute force for 88% of catalogue rows at 100k
   *   with 4 of 101 groups, 81.5% when the groups were chosen by bound; `recall-decomposition` prints the 1M share).
   */
  nearest(x: Float32Array, xo: number, maxGroups = Infinity): number {
    if (this.simd) return this.nearestSimd(x, xo, maxGroups);
    const dim = this.dim;
    const G = this.groupCount;
    for (let g = 0; g < G; g++) {
      const a = clamp1(dot(this.axes, g * dim, x, xo, dim));
      const phi = Math.acos(a);
      this.alpha[g] = a;
      this.phi[g] = phi;
      const lo = this.thetaMin[g]!;
      const hi = this.thetaMax[g]!;
      const empty = this.groupStart[g + 1] === this.groupStart[g];
      this.bound[g] = empty ? -Infinity : phi > hi ? Math.cos(phi - hi) : phi < lo ? Math.cos(lo - phi) : 1;
    }
    if (maxGroups < G) this.keepNearestAxes(maxGroups);
    let dots = G;
    let best = -Infinity;
    let bestId = -1;
    for (;;) {
      const g = this.takeBestGroup(best);
      if (g < 0) break;
      const a = this.alpha[g]!;
      const s = Math.sqrt(Math.max(0, 1 - a * a));
      const phi = this.phi[g]!;
      const end = this.groupStart[g + 1]!;
      for (let p = this.groupStart[g]!; p < end; p++) {
        const ub = a * this.cosTheta[p]! + s * this.sinTheta[p]!;
        if (ub + BOUND_SLACK <= best) {
          // Members are sorted by decreasing theta: once theta < phi the bound only shrinks further.
          if (this.theta[p]! <= phi) break;
          continue;
        }
        const v = dot(this.ordered, p * dim, x, xo, dim);
        dots++;
        const id = this.orderedId[p]!;
        if (v > best || (v === best && id < bestId)) {
          best = v;
          bestId = id;
        }
      }
    }
    this.dotProducts += dots;
    this.lastScore = best;
    return bestId;
  }

  /**
   * Group limit of `nearest`: only the `maxGroups` groups of largest axis score `alpha` (ties to the lower group)
   * keep their bound, the others get -Infinity and are never visited. O(groups * maxGroups).
   */
  private keepNearestAxes(maxGroups: number): void {
    const G = this.groupCount;
    const keep = this.kept;
    keep.fill(0);
    for (let i = 0; i < maxGroups; i++) {
      let g = -1;
      let ga = -Infinity;
      for (let h = 0; h < G; h++) {
        if (keep[h] === 0 && this.alpha[h]! > ga) {
          ga = this.alpha[h]!;
          g = h;
        }
      }
      if (g < 0) break;
      keep[g] = 1;
    }
    for (let h = 0; h < G; h++) if (keep[h] === 0) this.bound[h] = -Infinity;
  }

  /**
   * The unvisited group with the highest bound (marked visited), or -1 when none is left whose bound could
   * beat `best` (bounds within BOUND_SLACK of it still count, for float rounding).
   */
  private takeBestGroup(best: number): number {
    let g = -1;
    let gb = -Infinity;
    for (let h = 0; h < this.groupCount; h++) {
      if (this.bound[h]! > gb) {
        gb = this.bound[h]!;
        g = h;
      }
    }
    if (g < 0 || gb + BOUND_SLACK <= best) return -1;
    this.bound[g] = -Infinity;
    return g;
  }

  /**
   * `nearest` with the SIMD kernels: same group bounds and visiting order, but every member of a visited
   * group is scored (one `dots` call per group; the per-centroid cone test saves less than the kernel gains).
   * Scores are float32 sums (see simd/kernels.wat), so near-ties may resolve differently from the JavaScript path.
   */
  private nearestSimd(x: Float32Array, xo: number, maxGroups: number): number {
    const { km, axes, ordered, x: xp, out, cosLo, sinLo, cosHi, sinHi } = this.simd!;
    const dim = this.dim;
    const G = this.groupCount;
    km.putF32(xp, x, xo, dim);
    km.dots(xp, axes, G, dim, out);
    const f32 = km.f32;
    const ob = out >> 2;
    for (let g = 0; g < G; g++) {
      // Same bounds as `nearest` without acos/cos: with a = cos(phi), phi > hi <=> a < cos(hi), and
      // cos(phi - hi) = a cos(hi) + sqrt(1 - a^2) sin(hi) (likewise for lo).
      const a = clamp1(f32[ob + g]!);
      this.alpha[g] = a;
      const s = Math.sqrt(1 - a * a);
      const empty = this.groupStart[g + 1] === this.groupStart[g];
      this.bound[g] = empty ? -Infinity : a < cosHi[g]! ? a * cosHi[g]! + s * sinHi[g]! : a > cosLo[g]! ? a * cosLo[g]! + s * sinLo[g]! : 1;
    }
    if (maxGroups < G) this.keepNearestAxes(maxGroups);
    let dots = G;
    let best = -Infinity;
    let bestId = -1;
    for (;;) {
      const g = this.takeBestGroup(best);
      if (g < 0) break;
      const start = this.groupStart[g]!;
      const end = this.groupStart[g + 1]!;
      km.dots(xp, ordered + start * dim * 4, end - start, dim, out);
      dots += end - start;
      for (let p = start; p < end; p++) {
        const v = f32[ob + p - start]!;
        const id = this.orderedId[p]!;
        if (v > best || (v === best && id < bestId)) {
          best = v;
          bestId = id;
        }
      }
    }
    this.dotProducts += dots;
    this.lastScore = best;
    return bestId;
  }
}

function clamp1(v: number): number {
  return v > 1 ? 1 : v < -1 ? -1 : v;
}
