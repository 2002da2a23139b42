/**
 * Gaussian mixtures with diagonal covariances fitted by expectation-maximisation (Dempster, Laird &
 * Rubin 1977; Bishop, "Pattern Recognition and Machine Learning", 2006, section 9.2.2): the one EM the
 * playlist's GMM clustering and the index's artist mixtures share.
 *
 * Iteration (at most `maxIterations`): E-step (responsibilities in log space with log-sum-exp; the
 * log-likelihood leaves out the constant -dim/2 ln 2π), then M-step, then the convergence test on the
 * E-step's log-likelihood; after the loop one last E-step gives each point's component.
 *
 * M-step, with `N_c = Σ_i r_ic` and `S_cd = Σ_i r_ic (x_id - μ_cd)²` (accumulated in float64 as
 * `Σ r x² - N μ²`, clamped at 0):
 *  - weight `π_c = N_c / Σ_kept N`, mean `μ_c = Σ_i r_ic x_i / N_c`;
 *  - variance `v_cd = max(varianceFloor, (S_cd + κ p_d) / (N_c + κ))`: with a prior (`variancePrior`, κ
 *    pseudo-points of variance p) this is the MAP update of a conjugate inverse-gamma-style prior, so a
 *    one-point component gets a proper Gaussian; without one (κ = 0) it is the maximum-likelihood
 *    variance, floored so a component of identical points stays finite;
 *  - a component whose `N_c` falls below `minComponentWeight` points is dropped (k shrinks); with the
 *    default 0 every component is kept (an empty one keeps mean 0 and the floored variance).
 *
 * Start: given means (variances default to the regularised variance of all points, shared by every
 * component; weights default to uniform), or given hard assignments (a first M-step turns them into
 * parameters, e.g. a k-means clustering). `farthestFirstMeans` gives deterministic starting means.
 *
 * Convergence: stops when |ℓ_t - ℓ_{t-1}| < `tolerance` × (|ℓ_t| when `toleranceScale` is 'relative',
 * n when it is 'per-point').
 *
 * Storage (`storage`): 'float64' (default) keeps means and variances in float64; 'float32' rounds them to
 * float32 (`Math.fround`) when they are set (start and every M-step; each variance is computed from the
 * unrounded float64 mean), so every E-step and the final distances use float32 parameters: the index's
 * artist mixtures, stored as float32, are fitted this way.
 *
 * One component left (`singleComponent`): 'refit' (default) ends with the exact M-step of one component
 * (mean and regularised variance of all points); 'mean' sets the mean to the mean of all points and keeps
 * the variances of the last M-step (or of the start when no iteration ran: the regularised two-pass
 * variance of all points), the index artist mixtures' rule.
 */

/** Parameters of a fitted diagonal mixture; arrays are packed component by component. */
export interface DiagonalGmm {
  k: number;
  dim: number;
  /** k mixing weights, sum 1. */
  weights: Float64Array;
  /** k * dim means. */
  means: Float64Array;
  /** k * dim variances (> 0). */
  variances: Float64Array;
}

/** A fit, with each point's component. */
export interface DiagonalGmmFit extends DiagonalGmm {
  /** Component of each point (largest responsibility; ties go to the lower index). */
  assignment: Int32Array;
  /** Squared Mahalanobis distance (diagonal) of each point to its component's mean. */
  sqMahalanobis: Float64Array;
  /** Squared Euclidean distance of each point to its component's mean. */
  sqEuclidean: Float64Array;
  /** Log-likelihood of the last E-step (without the -n·dim/2 ln 2π constant). */
  logLikelihood: number;
  /** EM iterations run (E + M pairs). */
  iterations: number;
}

/** How EM starts (module comment). */
export type GmmStart =
  | { means: ArrayLike<number>; variances?: ArrayLike<number>; weights?: ArrayLike<number> }
  | { assignments: ArrayLike<number>; k: number };

/** Options of {@link fitDiagonalGmm}. */
export interface GmmOptions {
  start: GmmStart;
  /** Upper bound on EM iterations (>= 0). */
  maxIterations: number;
  /** Convergence threshold on the log-likelihood change (default 1e-6). */
  tolerance?: number;
  /** What `tolerance` is a fraction of: the log-likelihood (`relative`, default) or the number of points (`per-point`). */
  toleranceScale?: 'relative' | 'per-point';
  /** Lower bound on every variance (default 0). */
  varianceFloor?: number;
  /** Variance prior: `weight` pseudo-points (κ) of per-dimension variance `variance` (dim values > 0). */
  variancePrior?: { variance: ArrayLike<number>; weight: number };
  /** Components with fewer points (total responsibility) than this are dropped (default 0: keep all). */
  minComponentWeight?: number;
  /** Precision of the means and variances between iterations (module comment; default 'float64'). */
  storage?: 'float64' | 'float32';
  /** How a fit left with one component ends (module comment; default 'refit'). */
  singleComponent?: 'refit' | 'mean';
}

/** Checks sizes; throws RangeError. */
function check(points: ArrayLike<number>, n: number, dim: number, options: GmmOptions): void {
  if (n < 1 || dim < 1 || points.length !== n * dim) throw new RangeError(`fitDiagonalGmm: ${points.length} values for ${n} x ${dim}`);
  const prior = options.variancePrior;
  if (prior) {
    if (prior.variance.length !== dim) throw new RangeError('fitDiagonalGmm: prior variance must have dim entries');
    for (let d = 0; d < dim; d++) if (!(prior.variance[d]! > 0)) throw new RangeError('fitDiagonalGmm: prior variance must be > 0');
    if (!(prior.weight >= 0)) throw new RangeError('fitDiagonalGmm: prior weight must be >= 0');
  }
  const s = options.start;
  if ('means' in s) {
    if (s.means.length < dim || s.means.length % dim !== 0) throw new RangeError('fitDiagonalGmm: start means must be k * dim values');
    const k = s.means.length / dim;
    if (s.variances && s.variances.length !== k * dim) throw new RangeError('fitDiagonalGmm: start variances must be k * dim values');
    if (s.weights && s.weights.length !== k) throw new RangeError('fitDiagonalGmm: start weights must be k values');
  } else {
    if (s.assignments.length !== n || !(s.k >= 1)) throw new RangeError('fitDiagonalGmm: start assignments must be n values and k >= 1');
    for (let i = 0; i < n; i++) if (!(s.assignments[i]! >= 0 && s.assignments[i]! < s.k)) throw new RangeError(`fitDiagonalGmm: start assignment ${s.assignments[i]} outside [0, ${s.k})`);
  }
}

/**
 * The EM iterations as a generator: yields the iteration count after each E + M pair, so an
 * asynchronous caller can yield the event loop between iterations, or stop the fit by passing `true`
 * to `next` ({@link fitDiagonalGmmAsync}); returns the fit.
 * @param points n * dim values, one point per row
 * @throws RangeError on inconsistent sizes, a start assignment outside [0, k), a non-positive prior variance
 * Cost: O(maxIterations * n * k * dim).
 */
export function* diagonalGmmIterations(points: ArrayLike<number>, n: number, dim: number, options: GmmOptions): Generator<number, DiagonalGmmFit, boolean | undefined> {
  check(points, n, dim, options);
  const floor = options.varianceFloor ?? 0;
  const priorWeight = options.variancePrior?.weight ?? 0;
  const priorVariance = options.variancePrior?.variance;
  const minWeight = options.minComponentWeight ?? 0;
  const tolerance = options.tolerance ?? 1e-6;
  const perPoint = options.toleranceScale === 'per-point';
  const regularise = (ss: number, nk: number, d: number): number => Math.max(floor, (ss + (priorVariance ? priorWeight * priorVariance[d]! : 0)) / Math.max(nk + priorWeight, 1e-12));
  const f32 = options.storage === 'float32';
  /** Rounds a mixture's means and variances to float32 in place when `storage` is 'float32'. */
  const stored = (g: DiagonalGmm): DiagonalGmm => {
    if (f32) {
      for (let j = 0; j < g.means.length; j++) g.means[j] = Math.fround(g.means[j]!);
      for (let j = 0; j < g.variances.length; j++) g.variances[j] = Math.fround(g.variances[j]!);
    }
    return g;
  };

  let gmm: DiagonalGmm;
  const start = options.start;
  if ('means' in start) {
    const k = start.means.length / dim;
    const means = Float64Array.from(start.means);
    let variances: Float64Array;
    if (start.variances) variances = Float64Array.from(start.variances);
    else {
      // The regularised variance of all points, shared by every component.
      const mean = new Float64Array(dim);
      for (let i = 0; i < n; i++) for (let d = 0; d < dim; d++) mean[d]! += points[i * dim + d]!;
      for (let d = 0; d < dim; d++) mean[d]! /= n;
      variances = new Float64Array(k * dim);
      for (let d = 0; d < dim; d++) {
        let s = 0;
        for (let i = 0; i < n; i++) {
          const x = points[i * dim + d]! - mean[d]!;
          s += x * x;
        }
        const v = regularise(s, n, d);
        for (let c = 0; c < k; c++) variances[c * dim + d] = v;
      }
    }
    const weights = start.weights ? Float64Array.from(start.weights) : new Float64Array(k).fill(1 / k);
    gmm = stored({ k, dim, weights, means, variances });
  } else {
    const resp = new Float64Array(n * start.k);
    for (let i = 0; i < n; i++) resp[i * start.k + start.assignments[i]!] = 1;
    gmm = stored(mStep(points, n, dim, start.k, resp, regularise, minWeight));
  }

  let resp = new Float64Array(n * gmm.k);
  let previous = -Infinity;
  let iterations = 0;
  for (let it = 0; it < options.maxIterations && gmm.k > 1; it++) {
    if (resp.length !== n * gmm.k) resp = new Float64Array(n * gmm.k);
    const ll = eStep(points, n, dim, gmm, resp);
    gmm = stored(mStep(points, n, dim, gmm.k, resp, regularise, minWeight));
    iterations++;
    if (Math.abs(ll - previous) < tolerance * (perPoint ? n : Math.abs(ll))) break;
    previous = ll;
    // A caller that answers `next(true)` stops the fit here (cancellation).
    if (yield iterations) break;
  }
  if (gmm.k === 1 && options.singleComponent === 'mean') {
    // One component: the mean of all points; the variances stay those of the last M-step (or the start).
    const mean = new Float64Array(dim);
    for (let i = 0; i < n; i++) for (let d = 0; d < dim; d++) mean[d]! += points[i * dim + d]!;
    for (let d = 0; d < dim; d++) mean[d]! /= n;
    gmm = stored({ k: 1, dim, weights: new Float64Array([1]), means: mean, variances: gmm.variances });
  } else if (gmm.k === 1) {
    // One component: its exact M-step (mean and regularised variance of all points) is the EM fixed point.
    resp = new Float64Array(n).fill(1);
    gmm = stored(mStep(points, n, dim, 1, resp, regularise, 0));
  }
  if (resp.length !== n * gmm.k) resp = new Float64Array(n * gmm.k);
  const logLikelihood = eStep(points, n, dim, gmm, resp);
  const { k, means, variances } = gmm;
  const assignment = new Int32Array(n);
  const sqMahalanobis = new Float64Array(n);
  const sqEuclidean = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let best = 0;
    for (let c = 1; c < k; c++) if (resp[i * k + c]! > resp[i * k + best]!) best = c;
    assignment[i] = best;
    let q = 0;
    let e = 0;
    for (let d = 0; d < dim; d++) {
      const x = points[i * dim + d]! - means[best * dim + d]!;
      e += x * x;
      q += (x * x) / variances[best * dim + d]!;
    }
    sqMahalanobis[i] = q;
    sqEuclidean[i] = e;
  }
  return { ...gmm, assignment, sqMahalanobis, sqEuclidean, logLikelihood, iterations };
}

/**
 * Fits a diagonal-covariance Gaussian mixture by EM (module comment), synchronously.
 * @param points n * dim values, one point per row
 * @throws RangeError on inconsistent sizes (see {@link diagonalGmmIterations})
 */
export function fitDiagonalGmm(points: ArrayLike<number>, n: number, dim: number, options: GmmOptions): DiagonalGmmFit {
  const run = diagonalGmmIterations(points, n, dim, options);
  for (;;) {
    const step = run.next(false);
    if (step.done) return step.value;
  }
}

/**
 * {@link fitDiagonalGmm} that awaits `shouldStop` after every iteration; when it answers true the fit
 * stops there and returns the mixture of the iterations done so far (not an error).
 */
export async function fitDiagonalGmmAsync(points: ArrayLike<number>, n: number, dim: number, options: GmmOptions & { shouldStop?: () => Promise<boolean> | boolean }): Promise<DiagonalGmmFit> {
  const run = diagonalGmmIterations(points, n, dim, options);
  let stop = false;
  for (;;) {
    const step = run.next(stop);
    if (step.done) return step.value;
    stop = options.shouldStop ? await options.shouldStop() : false;
  }
}

/** E-step: fills `resp` (n * k) with responsibilities; returns the log-likelihood (without the -dim/2 ln 2π constant). */
function eStep(points: ArrayLike<number>, n: number, dim: number, gmm: DiagonalGmm, resp: Float64Array): number {
  const { k, weights, means, variances } = gmm;
  const logNorm = new Float64Array(k);
  const inv = new Float64Array(k * dim);
  for (let c = 0; c < k; c++) {
    let s = 0;
    for (let d = 0; d < dim; d++) {
      s += Math.log(variances[c * dim + d]!);
      inv[c * dim + d] = 1 / variances[c * dim + d]!;
    }
    logNorm[c] = Math.log(Math.max(weights[c]!, 1e-300)) - 0.5 * s;
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

/** M-step from responsibilities (module comment); drops components below `minWeight`. */
function mStep(points: ArrayLike<number>, n: number, dim: number, k: number, resp: Float64Array, regularise: (ss: number, nk: number, d: number) => number, minWeight: number): DiagonalGmm {
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
  for (let c = 0; c < k; c++) if (nk[c]! >= minWeight) keep.push(c);
  if (keep.length === 0) keep.push(nk.indexOf(Math.max(...nk)));
  let total = 0;
  for (const c of keep) total += nk[c]!;
  const k2 = keep.length;
  const means = new Float64Array(k2 * dim);
  const variances = new Float64Array(k2 * dim);
  const weights = new Float64Array(k2);
  keep.forEach((c, j) => {
    weights[j] = nk[c]! / Math.max(total, 1e-12);
    const w = Math.max(nk[c]!, 1e-12);
    for (let d = 0; d < dim; d++) {
      const mean = acc[c * dim + d]! / w;
      means[j * dim + d] = mean;
      variances[j * dim + d] = regularise(Math.max(0, acc2[c * dim + d]! - nk[c]! * mean * mean), nk[c]!, d);
    }
  });
  return { k: k2, dim, weights, means, variances };
}

/**
 * Deterministic starting means: farthest-first traversal (Gonzalez 1985, "Clustering to minimize the
 * maximum intercluster distance", TCS 38) from the point nearest the mean of all points. When fewer
 * than k points are distinct, the remaining means repeat the first.
 * @returns k * dim values
 */
export function farthestFirstMeans(points: ArrayLike<number>, n: number, dim: number, k: number): Float64Array {
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
    if (far < 0 || farD <= 0) break; // all remaining points coincide with a chosen one
    chosen.push(far);
    for (let i = 0; i < n; i++) minD[i] = Math.min(minD[i]!, sq(i, points, far * dim));
  }
  const out = new Float64Array(k * dim);
  for (let c = 0; c < k; c++) {
    const row = chosen[c] ?? first;
    for (let d = 0; d < dim; d++) out[c * dim + d] = points[row * dim + d]!;
  }
  return out;
}
