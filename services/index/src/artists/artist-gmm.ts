/**
 * Artist summaries as small diagonal Gaussian mixtures of their songs' unit embeddings, and the
 * divergence used to rank artists against each other.
 *
 * Fit (per artist, `fitDiagonalGmm`):
 *  - K components: 1 + floor(n / SONGS_PER_COMPONENT), at most MAX_COMPONENTS (≈10 songs per component,
 *    at most 3). The reference picks 2..10 components by BIC (reference-implementation.md 2.7); a fixed,
 *    small K keeps memory at `K * 2 * dim` floats per artist and the fit cheap.
 *  - Initial means: farthest-first traversal (Gonzalez 1985, "Clustering to minimize the maximum
 *    intercluster distance", TCS 38), starting from the song nearest the artist's mean: deterministic.
 *  - EM for a diagonal-covariance GMM (Dempster, Laird & Rubin 1977; Bishop, PRML 2006, section 9.2.2),
 *    responsibilities in log space with log-sum-exp, at most EM_ITERATIONS iterations (stops early when
 *    the mean log-likelihood changes by less than 1e-6 per song).
 *  - Variances are shrunk toward a prior, `v = (N_k * s² + κ * p) / (N_k + κ)` with κ = PRIOR_WEIGHT
 *    pseudo-songs and `p = PRIOR_FRACTION * g` (g = per-dimension variance of the whole catalogue): the
 *    MAP update of a conjugate inverse-gamma-style prior. A one-song artist thus gets a proper Gaussian
 *    of variance p/2 instead of a degenerate one, and divergences stay finite.
 *  - A component whose total responsibility falls below 1e-3 songs is dropped.
 *
 * Divergence between two mixtures (`mixtureDivergence`): symmetric matched-component Bhattacharyya
 * divergence
 *     D(f, g) = ½ [ Σ_i π_i min_j B(f_i, g_j) + Σ_j ρ_j min_i B(g_j, f_i) ]
 * with B the Bhattacharyya distance between diagonal Gaussians (Bhattacharyya 1943; Fukunaga,
 * "Introduction to Statistical Pattern Recognition", 2nd ed. 1990, eq. 3.152):
 *     B(a, b) = 1/8 Σ_d (μa_d − μb_d)² / σ_d + ½ Σ_d ln σ_d − ¼ Σ_d ln va_d − ¼ Σ_d ln vb_d,  σ_d = (va_d + vb_d) / 2.
 * The "match each component to its closest counterpart, weight by the component's prior" rule is the
 * matching approximation of Goldberger, Gordon & Greenspan ("An efficient image similarity measure based
 * on approximations of KL-divergence between two Gaussian mixtures", ICCV 2003; also Hershey & Olsen,
 * ICASSP 2007, "matched bound"), used here with B instead of KL because B is symmetric and bounded for
 * close components. D(f, f) = 0 and D >= 0.
 */

/** Songs per mixture component in the K rule. */
export const SONGS_PER_COMPONENT = 10;
/** Largest number of components per artist. */
export const MAX_COMPONENTS = 3;
/** Upper bound on EM iterations per artist. */
export const EM_ITERATIONS = 12;
/** κ: weight of the variance prior, in songs. */
export const PRIOR_WEIGHT = 1;
/** Prior variance as a fraction of the catalogue's per-dimension variance. */
export const PRIOR_FRACTION = 0.25;

/** Number of mixture components for an artist with `songs` songs (>= 1). */
export function componentCount(songs: number): number {
  if (songs <= 0) return 0;
  return Math.min(MAX_COMPONENTS, 1 + Math.floor(songs / SONGS_PER_COMPONENT), songs);
}

/** A fitted mixture. Arrays are packed component by component. */
export interface MixtureFit {
  k: number;
  dim: number;
  /** k mixing weights, sum 1. */
  weights: Float64Array;
  /** k * dim means. */
  means: Float32Array;
  /** k * dim variances (> 0). */
  variances: Float32Array;
  /** Component of each input song (largest responsibility). */
  assignment: Int32Array;
  /** Squared Euclidean distance of each song to its component's mean. */
  sqDistance: Float64Array;
}

/**
 * Fits the mixture of one artist (algorithm in the module comment).
 * @param points n * dim floats, one song per row (unit vectors in practice)
 * @param priorVariance dim floats > 0: the prior variance `p` (PRIOR_FRACTION * catalogue variance)
 * @throws RangeError when sizes disagree, n < 1 or a prior variance is not positive
 * Cost: O(EM_ITERATIONS * n * k * dim).
 */
export function fitDiagonalGmm(points: Float32Array, n: number, dim: number, priorVariance: Float32Array, k = componentCount(n)): MixtureFit {
  if (n < 1 || points.length !== n * dim) throw new RangeError(`fitDiagonalGmm: ${points.length} floats for ${n} x ${dim}`);
  if (priorVariance.length !== dim) throw new RangeError('fitDiagonalGmm: prior variance must have dim entries');
  for (let d = 0; d < dim; d++) if (!(priorVariance[d]! > 0)) throw new RangeError('fitDiagonalGmm: prior variance must be > 0');
  k = Math.max(1, Math.min(k, n));
  let means = initialMeans(points, n, dim, k);
  let variances = new Float32Array(k * dim);
  {
    // Start from the shrunk variance of all songs, shared by every component.
    const mean = new Float64Array(dim);
    for (let i = 0; i < n; i++) for (let d = 0; d < dim; d++) mean[d]! += points[i * dim + d]!;
    for (let d = 0; d < dim; d++) mean[d]! /= n;
    for (let d = 0; d < dim; d++) {
      let s = 0;
      for (let i = 0; i < n; i++) {
        const x = points[i * dim + d]! - mean[d]!;
        s += x * x;
      }
      const v = (s + PRIOR_WEIGHT * priorVariance[d]!) / (n + PRIOR_WEIGHT);
      for (let c = 0; c < k; c++) variances[c * dim + d] = v;
    }
  }
  let weights = new Float64Array(k).fill(1 / k);
  let resp = new Float64Array(n * k);
  let previous = -Infinity;
  for (let iter = 0; iter < EM_ITERATIONS && k > 1; iter++) {
    const ll = eStep(points, n, dim, k, weights, means, variances, resp);
    // M-step: one pass over the songs accumulates Σr·x and Σr·x² per component (float64).
    const nk = new Float64Array(k);
    const acc = new Float64Array(k * dim);
    const acc2 = new Float64Array(k * dim);
    for (let i = 0; i < n; i++) {
      const o = i * dim;
      for (let c = 0; c < k; c++) {
        const r = resp[i * k + c]!;
        if (r < 1e-12) continue;
        nk[c]! += r;
        const ao = c * dim;
        for (let d = 0; d < dim; d++) {
          const x = points[o + d]!;
          acc[ao + d]! += r * x;
          acc2[ao + d]! += r * x * x;
        }
      }
    }
    const keep: number[] = [];
    for (let c = 0; c < k; c++) if (nk[c]! >= 1e-3) keep.push(c);
    const k2 = keep.length;
    const m2 = new Float32Array(k2 * dim);
    const v2 = new Float32Array(k2 * dim);
    const w2 = new Float64Array(k2);
    let wsum = 0;
    for (const c of keep) wsum += nk[c]!;
    keep.forEach((c, j) => {
      w2[j] = nk[c]! / wsum;
      for (let d = 0; d < dim; d++) {
        const mean = acc[c * dim + d]! / nk[c]!;
        // N_k * s² = Σr·x² - N_k * mean², clamped against rounding.
        const ss = Math.max(0, acc2[c * dim + d]! - nk[c]! * mean * mean);
        m2[j * dim + d] = mean;
        v2[j * dim + d] = (ss + PRIOR_WEIGHT * priorVariance[d]!) / (nk[c]! + PRIOR_WEIGHT);
      }
    });
    if (k2 !== k) resp = new Float64Array(n * k2);
    k = k2;
    means = m2;
    variances = v2;
    weights = w2;
    if (Math.abs(ll - previous) < 1e-6 * n) break;
    previous = ll;
  }
  if (k === 1) {
    // One component: the mean of all songs (also the EM fixed point).
    const m = new Float32Array(dim);
    const acc = new Float64Array(dim);
    for (let i = 0; i < n; i++) for (let d = 0; d < dim; d++) acc[d]! += points[i * dim + d]!;
    for (let d = 0; d < dim; d++) m[d] = acc[d]! / n;
    means = m;
    weights = new Float64Array([1]);
  }
  // Hard assignment and distance to the assigned mean.
  const assignment = new Int32Array(n);
  const sqDistance = new Float64Array(n);
  if (k > 1) {
    const r = new Float64Array(n * k);
    eStep(points, n, dim, k, weights, means, variances, r);
    for (let i = 0; i < n; i++) {
      let best = 0;
      for (let c = 1; c < k; c++) if (r[i * k + c]! > r[i * k + best]!) best = c;
      assignment[i] = best;
    }
  }
  for (let i = 0; i < n; i++) {
    const c = assignment[i]!;
    let s = 0;
    for (let d = 0; d < dim; d++) {
      const x = points[i * dim + d]! - means[c * dim + d]!;
      s += x * x;
    }
    sqDistance[i] = s;
  }
  return { k, dim, weights, means, variances, assignment, sqDistance };
}

/** E-step: fills `resp` (n * k) and returns the total log-likelihood (without the -dim/2 ln 2π constant). */
function eStep(points: Float32Array, n: number, dim: number, k: number, weights: Float64Array, means: Float32Array, variances: Float32Array, resp: Float64Array): number {
  const logNorm = new Float64Array(k);
  const inv = new Float64Array(k * dim);
  for (let c = 0; c < k; c++) {
    let s = 0;
    for (let d = 0; d < dim; d++) {
      s += Math.log(variances[c * dim + d]!);
      inv[c * dim + d] = 1 / variances[c * dim + d]!;
    }
    logNorm[c] = Math.log(weights[c]!) - 0.5 * s;
  }
  let total = 0;
  for (let i = 0; i < n; i++) {
    const o = i * dim;
    let max = -Infinity;
    for (let c = 0; c < k; c++) {
      let q = 0;
      const mo = c * dim;
      for (let d = 0; d < dim; d++) {
        const x = points[o + d]! - means[mo + d]!;
        q += x * x * inv[mo + d]!;
      }
      const lr = logNorm[c]! - 0.5 * q;
      resp[i * k + c] = lr;
      if (lr > max) max = lr;
    }
    let sum = 0;
    for (let c = 0; c < k; c++) sum += Math.exp(resp[i * k + c]! - max);
    const lse = max + Math.log(sum);
    total += lse;
    for (let c = 0; c < k; c++) resp[i * k + c] = Math.exp(resp[i * k + c]! - lse);
  }
  return total;
}

/** Farthest-first traversal from the song nearest the mean; k distinct songs as initial means. */
function initialMeans(points: Float32Array, n: number, dim: number, k: number): Float32Array {
  const mean = new Float64Array(dim);
  for (let i = 0; i < n; i++) for (let d = 0; d < dim; d++) mean[d]! += points[i * dim + d]!;
  for (let d = 0; d < dim; d++) mean[d]! /= n;
  const sq = (i: number, ref: ArrayLike<number>, ro: number): number => {
    let s = 0;
    for (let d = 0; d < dim; d++) {
      const x = points[i * dim + d]! - ref[ro + d]!;
      s += x * x;
    }
    return s;
  };
  let first = 0;
  let bestD = Infinity;
  for (let i = 0; i < n; i++) {
    const s = sq(i, mean, 0);
    if (s < bestD) {
      bestD = s;
      first = i;
    }
  }
  const chosen = [first];
  const minD = new Float64Array(n);
  for (let i = 0; i < n; i++) minD[i] = sq(i, points, first * dim);
  while (chosen.length < k) {
    let far = -1;
    let farD = -1;
    for (let i = 0; i < n; i++) {
      if (minD[i]! > farD) {
        farD = minD[i]!;
        far = i;
      }
    }
    if (far < 0 || farD <= 0) break; // all remaining songs coincide with a chosen one
    chosen.push(far);
    for (let i = 0; i < n; i++) minD[i] = Math.min(minD[i]!, sq(i, points, far * dim));
  }
  const out = new Float32Array(chosen.length * dim);
  chosen.forEach((row, c) => out.set(points.subarray(row * dim, row * dim + dim), c * dim));
  // The caller may have asked for more components than distinct songs: pad by repeating the first.
  if (chosen.length < k) {
    const padded = new Float32Array(k * dim);
    padded.set(out);
    for (let c = chosen.length; c < k; c++) padded.set(out.subarray(0, dim), c * dim);
    return padded;
  }
  return out;
}

/** A read-only view of one mixture inside packed arrays (see ArtistModel). */
export interface MixtureView {
  k: number;
  dim: number;
  weights: ArrayLike<number>;
  /** Offset (in floats) of component 0 in `means` / `variances`. */
  offset: number;
  means: Float32Array;
  variances: Float32Array;
  /** Σ_d ln v_d of each component (k values). */
  logDet: ArrayLike<number>;
}

/**
 * Bhattacharyya distance between two diagonal Gaussians stored at float offsets `oa` and `ob`
 * (formula in the module comment). `logDetA`/`logDetB` are Σ ln v of each. O(dim), dim logarithms.
 */
export function bhattacharyyaDiag(
  meansA: Float32Array,
  varsA: Float32Array,
  oa: number,
  logDetA: number,
  meansB: Float32Array,
  varsB: Float32Array,
  ob: number,
  logDetB: number,
  dim: number,
): number {
  let mahal = 0;
  let logSigma = 0;
  for (let d = 0; d < dim; d++) {
    const s = 0.5 * (varsA[oa + d]! + varsB[ob + d]!);
    const x = meansA[oa + d]! - meansB[ob + d]!;
    mahal += (x * x) / s;
    logSigma += Math.log(s);
  }
  return Math.max(0, 0.125 * mahal + 0.5 * logSigma - 0.25 * logDetA - 0.25 * logDetB);
}

/** One matched component pair: component `i` of the first mixture, its closest `j` in the second. */
export interface ComponentMatch {
  i: number;
  j: number;
  distance: number;
}

/**
 * Symmetric matched-component Bhattacharyya divergence between two mixtures (module comment).
 * @returns the divergence and, for every component i of `a` (in index order), its best match in `b`
 * Cost: O(ka * kb * dim).
 */
export function mixtureDivergence(a: MixtureView, b: MixtureView): { divergence: number; matches: ComponentMatch[] } {
  const { dim } = a;
  const table = new Float64Array(a.k * b.k);
  for (let i = 0; i < a.k; i++) {
    for (let j = 0; j < b.k; j++) {
      table[i * b.k + j] = bhattacharyyaDiag(a.means, a.variances, a.offset + i * dim, a.logDet[i]!, b.means, b.variances, b.offset + j * dim, b.logDet[j]!, dim);
    }
  }
  let ab = 0;
  const matches: ComponentMatch[] = [];
  for (let i = 0; i < a.k; i++) {
    let best = 0;
    for (let j = 1; j < b.k; j++) if (table[i * b.k + j]! < table[i * b.k + best]!) best = j;
    ab += a.weights[i]! * table[i * b.k + best]!;
    matches.push({ i, j: best, distance: table[i * b.k + best]! });
  }
  let ba = 0;
  for (let j = 0; j < b.k; j++) {
    let best = Infinity;
    for (let i = 0; i < a.k; i++) best = Math.min(best, table[i * b.k + j]!);
    ba += b.weights[j]! * best;
  }
  return { divergence: 0.5 * (ab + ba), matches };
}
