/**
 * Artist summaries as small diagonal Gaussian mixtures of their songs' unit embeddings, and the
 * divergence used to rank artists against each other.
 *
 * Fit (per artist, `fitArtistMixture`: the shared diagonal-GMM EM `fitDiagonalGmm` of @polyphony/vectors):
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

import { farthestFirstMeans, fitDiagonalGmm } from '@polyphony/vectors';

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
 * Fits the mixture of one artist (algorithm in the module comment) with the shared diagonal-GMM EM of
 * @polyphony/vectors (`fitDiagonalGmm`: farthest-first start, EM_ITERATIONS iterations, per-point tolerance 1e-6,
 * variance prior κ = PRIOR_WEIGHT, components under 1e-3 songs dropped, float32 means and variances, and for one
 * component the mean of all songs with the variances kept).
 * @param points n * dim floats, one song per row (unit vectors in practice)
 * @param priorVariance dim floats > 0: the prior variance `p` (PRIOR_FRACTION * catalogue variance)
 * @throws RangeError when sizes disagree, n < 1 or a prior variance is not positive
 * Cost: O(EM_ITERATIONS * n * k * dim).
 */
export function fitArtistMixture(points: Float32Array, n: number, dim: number, priorVariance: Float32Array, k = componentCount(n)): MixtureFit {
  if (n < 1 || points.length !== n * dim) throw new RangeError(`fitArtistMixture: ${points.length} floats for ${n} x ${dim}`);
  if (priorVariance.length !== dim) throw new RangeError('fitArtistMixture: prior variance must have dim entries');
  k = Math.max(1, Math.min(k, n));
  const fit = fitDiagonalGmm(points, n, dim, {
    start: { means: farthestFirstMeans(points, n, dim, k) },
    maxIterations: EM_ITERATIONS,
    tolerance: 1e-6,
    toleranceScale: 'per-point',
    variancePrior: { variance: priorVariance, weight: PRIOR_WEIGHT },
    minComponentWeight: 1e-3,
    storage: 'float32',
    singleComponent: 'mean',
  });
  return {
    k: fit.k,
    dim,
    weights: fit.weights,
    // float32 storage: the values are float32 already, the copy is exact.
    means: Float32Array.from(fit.means),
    variances: Float32Array.from(fit.variances),
    assignment: fit.assignment,
    sqDistance: fit.sqEuclidean,
  };
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
