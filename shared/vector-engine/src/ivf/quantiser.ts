import { IvfInputError } from './errors';
import { type AssignmentKernelFactory, lloydKMeans, SeededRandom } from '@polyphony/vectors';

/**
 * Compressed vector codes for the IVF cells (issue 19 "Bounded memory").
 *
 * Both quantisers encode the **residual** of a unit vector from its cell centroid (`r = x - c`, FAISS
 * `IndexIVFScalarQuantizer` / `IndexIVFPQ` with `by_residual`), because residuals span a much smaller
 * range than the vectors themselves. Scoring uses asymmetric distance computation (ADC: the query stays
 * float, only the database side is quantised): for a unit query `q`
 *
 *     dot(q, x) ~ dot(q, c) + dot(q, decode(code))
 *
 * and `dot(q, decode(code))` is evaluated from a per-query table without decoding:
 *  - int8 (`ScalarQuantiser`): `decode(code)_d = min_d + step_d * code_d`, so
 *    `dot(q, decode) = sum_d q_d*min_d + sum_d (q_d*step_d) * code_d`: a table of `dim` floats plus a constant;
 *    `dim` bytes per vector.
 *  - PQ (`ProductQuantiser`, Jegou, Douze & Schmid, "Product quantization for nearest neighbor search",
 *    TPAMI 2011): `m` sub-spaces of `dim / m` dimensions, 256 centroids each, one byte per sub-space;
 *    `dot(q, decode) = sum_j T[j][code_j]` with `T[j][k] = dot(q_j, C_j[k])`: a table of `m * 256` floats;
 *    `m` bytes per vector.
 * The approximate score only ranks candidates: the IVF index re-ranks a short list with the exact float
 * vectors (read from disk), so returned distances are exact.
 */
export interface Quantiser {
  readonly kind: 'int8' | 'pq';
  readonly dim: number;
  /** Bytes per encoded vector. */
  readonly codeSize: number;
  /** Floats of the per-query table (`prepare`). */
  readonly tableSize: number;
  /** Encodes `dim` floats of `x` at `xo` into `codeSize` bytes of `out` at `oo`. */
  encode(x: Float32Array, xo: number, out: Uint8Array, oo: number): void;
  /** Decodes one code into `dim` floats of `out` at `oo` (tests, error bounds). */
  decode(codes: Uint8Array, co: number, out: Float32Array, oo: number): void;
  /** Fills `table` for the unit query `q`; returns the constant term of every approximate dot product. */
  prepare(q: Float32Array, table: Float32Array): number;
  /**
   * Approximate `dot(q, decode(code))` minus the constant of `prepare`, for the `count` codes starting at
   * code index `first`, written to `out[0..count)`.
   */
  scoreRange(codes: Uint8Array, first: number, count: number, table: Float32Array, out: Float64Array): void;
  /** Serialisable parameters (stored with a generation so replicas need not retrain). */
  toParams(): Float32Array;
}

/** Bytes per code of the 8-bit scalar quantiser: one per dimension. */
export const INT8_LEVELS = 256;
/** Centroids per PQ sub-space (one byte per code). */
export const PQ_KSUB = 256;

/**
 * 8-bit scalar quantiser, per-dimension min and step trained on a sample: `code = round((x - min) / step)`
 * clamped to [0, 255], with `step = (max - min) / 255`. Round-trip error `|x - decode(encode(x))| <= step / 2`
 * for every component inside the trained [min, max] (values outside are clamped to the range ends).
 */
export class ScalarQuantiser implements Quantiser {
  readonly kind = 'int8' as const;
  readonly codeSize: number;
  readonly tableSize: number;

  constructor(
    readonly dim: number,
    /** Per-dimension lower end of the range. */
    readonly min: Float32Array,
    /** Per-dimension step (range / 255); never 0. */
    readonly step: Float32Array,
  ) {
    if (min.length !== dim || step.length !== dim) throw new IvfInputError('scalar quantiser: min/step length must equal dim');
    this.codeSize = dim;
    this.tableSize = dim;
  }

  /**
   * Trains the per-dimension range on `n` sample vectors of `data` (row-major, `dim` floats each).
   * A dimension with no spread gets a tiny step (1e-9) so decoding returns its constant value.
   */
  static train(data: Float32Array, n: number, dim: number): ScalarQuantiser {
    if (n < 1) throw new IvfInputError('scalar quantiser: empty training sample');
    const min = new Float32Array(dim).fill(Infinity);
    const max = new Float32Array(dim).fill(-Infinity);
    for (let i = 0; i < n; i++) {
      const o = i * dim;
      for (let d = 0; d < dim; d++) {
        const v = data[o + d]!;
        if (v < min[d]!) min[d] = v;
        if (v > max[d]!) max[d] = v;
      }
    }
    const step = new Float32Array(dim);
    for (let d = 0; d < dim; d++) step[d] = Math.max(1e-9, (max[d]! - min[d]!) / (INT8_LEVELS - 1));
    return new ScalarQuantiser(dim, min, step);
  }

  /** Inverse of `toParams`. */
  static fromParams(dim: number, params: Float32Array): ScalarQuantiser {
    if (params.length !== 2 * dim) throw new IvfInputError('scalar quantiser parameters have the wrong length');
    return new ScalarQuantiser(dim, params.slice(0, dim), params.slice(dim));
  }

  encode(x: Float32Array, xo: number, out: Uint8Array, oo: number): void {
    const { dim, min, step } = this;
    for (let d = 0; d < dim; d++) {
      const c = Math.round((x[xo + d]! - min[d]!) / step[d]!);
      out[oo + d] = c < 0 ? 0 : c > 255 ? 255 : c;
    }
  }

  decode(codes: Uint8Array, co: number, out: Float32Array, oo: number): void {
    const { dim, min, step } = this;
    for (let d = 0; d < dim; d++) out[oo + d] = min[d]! + step[d]! * codes[co + d]!;
  }

  prepare(q: Float32Array, table: Float32Array): number {
    let constant = 0;
    for (let d = 0; d < this.dim; d++) {
      table[d] = q[d]! * this.step[d]!;
      constant += q[d]! * this.min[d]!;
    }
    return constant;
  }

  scoreRange(codes: Uint8Array, first: number, count: number, table: Float32Array, out: Float64Array): void {
    const dim = this.dim;
    const end8 = dim - 7;
    for (let i = 0; i < count; i++) {
      const o = (first + i) * dim;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      let d = 0;
      for (; d < end8; d += 8) {
        const p = o + d;
        s0 += table[d]! * codes[p]! + table[d + 4]! * codes[p + 4]!;
        s1 += table[d + 1]! * codes[p + 1]! + table[d + 5]! * codes[p + 5]!;
        s2 += table[d + 2]! * codes[p + 2]! + table[d + 6]! * codes[p + 6]!;
        s3 += table[d + 3]! * codes[p + 3]! + table[d + 7]! * codes[p + 7]!;
      }
      for (; d < dim; d++) s0 += table[d]! * codes[o + d]!;
      out[i] = s0 + s1 + (s2 + s3);
    }
  }

  toParams(): Float32Array {
    const p = new Float32Array(2 * this.dim);
    p.set(this.min, 0);
    p.set(this.step, this.dim);
    return p;
  }
}

/** Training knobs of the product quantiser. */
export interface PqTrainOptions {
  /** Lloyd iterations per sub-space (default 12). */
  iterations?: number;
  seed?: number;
  /** Awaited after every 1024 sample points of every iteration (event-loop turns, cancellation). */
  maybeYield?: () => Promise<void>;
}

/**
 * Product quantiser: `m` sub-spaces of `dsub = dim / m` consecutive dimensions, 256 centroids each (L2
 * k-means per sub-space on a sample: the shared engine `lloydKMeans` of `@polyphony/vectors`, started on
 * distinct random sample points, an empty centroid re-seeded on a random sample point). One byte per sub-space.
 * Encoding costs `256 * dim` multiply-adds per vector (nearest centroid in every sub-space).
 */
export class ProductQuantiser implements Quantiser {
  readonly kind = 'pq' as const;
  readonly dsub: number;
  readonly codeSize: number;
  readonly tableSize: number;
  /** `||C_j[k]||^2`, `m * 256`, for the L2 nearest-centroid search of `encode`. */
  private readonly norms: Float32Array;

  constructor(
    readonly dim: number,
    readonly m: number,
    /** `m * 256 * dsub` floats: centroid k of sub-space j at `(j * 256 + k) * dsub`. */
    readonly codebooks: Float32Array,
  ) {
    if (!Number.isInteger(m) || m < 1 || dim % m !== 0) throw new IvfInputError(`pq: m (${m}) must divide dim (${dim})`);
    this.dsub = dim / m;
    if (codebooks.length !== m * PQ_KSUB * this.dsub) throw new IvfInputError('pq: codebook length must be m * 256 * dim / m');
    this.codeSize = m;
    this.tableSize = m * PQ_KSUB;
    this.norms = new Float32Array(m * PQ_KSUB);
    for (let i = 0; i < m * PQ_KSUB; i++) {
      let s = 0;
      for (let t = 0; t < this.dsub; t++) s += codebooks[i * this.dsub + t]! ** 2;
      this.norms[i] = s;
    }
  }

  /**
   * Trains the codebooks on `n` sample vectors of `data` (row-major). Cost `n * 256 * dim * iterations`
   * multiply-adds (a 10k-vector sample, 200-d, 12 iterations: ~6e9, a few seconds; 4,096 x 200-d, m 25:
   * 9.2-9.3 s CPU at load 5-9, 10.3-10.6 s with the loop the engine replaced). A sub-space stops early when no
   * point changed centroid (its codebook is then final). Needs n >= 256.
   */
  static async train(data: Float32Array, n: number, dim: number, m: number, options: PqTrainOptions = {}): Promise<ProductQuantiser> {
    if (dim % m !== 0) throw new IvfInputError(`pq: m (${m}) must divide dim (${dim})`);
    if (n < PQ_KSUB) throw new IvfInputError(`pq: training needs at least ${PQ_KSUB} vectors, got ${n}`);
    const dsub = dim / m;
    const iterations = options.iterations ?? 12;
    const rng = new SeededRandom(options.seed ?? 0x5eed);
    const codebooks = new Float32Array(m * PQ_KSUB * dsub);
    const sub = new Float32Array(n * dsub);
    const points = { data: sub, dim: dsub, rows: Int32Array.from({ length: n }, (_, i) => i) };
    const start = new Float32Array(PQ_KSUB * dsub);
    const maybeYield = options.maybeYield;
    for (let j = 0; j < m; j++) {
      for (let i = 0; i < n; i++) for (let t = 0; t < dsub; t++) sub[i * dsub + t] = data[i * dim + j * dsub + t]!;
      // Seed: 256 distinct sample points (partial Fisher-Yates over indices).
      const perm = new Int32Array(n);
      for (let i = 0; i < n; i++) perm[i] = i;
      for (let k = 0; k < PQ_KSUB; k++) {
        const pick = k + rng.nextInt(n - k);
        const tmp = perm[k]!;
        perm[k] = perm[pick]!;
        perm[pick] = tmp;
        start.set(sub.subarray(perm[k]! * dsub, perm[k]! * dsub + dsub), k * dsub);
      }
      const run = await lloydKMeans(points, PQ_KSUB, {
        initialCentroids: start,
        maxIterations: iterations,
        kernel: normsKernel,
        batchSize: 1024,
        pause: maybeYield ? () => maybeYield() : undefined,
        // Empty centroid: re-seed on a random sample point (FAISS does a split; this is simpler and rare).
        emptyClusters: (k, cent) => {
          const p = rng.nextInt(n);
          for (let t = 0; t < dsub; t++) cent[k * dsub + t] = sub[p * dsub + t]! + 1e-6 * (rng.nextFloat() - 0.5);
        },
      });
      codebooks.set(run.centroids, j * PQ_KSUB * dsub);
    }
    return new ProductQuantiser(dim, m, codebooks);
  }

  /** Inverse of `toParams`. */
  static fromParams(dim: number, params: Float32Array): ProductQuantiser {
    const m = Math.round(params[0]!);
    return new ProductQuantiser(dim, m, params.slice(1));
  }

  encode(x: Float32Array, xo: number, out: Uint8Array, oo: number): void {
    const { m, dsub, codebooks, norms } = this;
    for (let j = 0; j < m; j++) {
      const xs = xo + j * dsub;
      const base = j * PQ_KSUB;
      let best = 0;
      let bestScore = Infinity;
      // argmin ||x - c||^2 = argmin (||c||^2 - 2 x.c)
      for (let k = 0; k < PQ_KSUB; k++) {
        const co = (base + k) * dsub;
        let s = 0;
        for (let t = 0; t < dsub; t++) s += x[xs + t]! * codebooks[co + t]!;
        const score = norms[base + k]! - 2 * s;
        if (score < bestScore) {
          bestScore = score;
          best = k;
        }
      }
      out[oo + j] = best;
    }
  }

  decode(codes: Uint8Array, co: number, out: Float32Array, oo: number): void {
    const { m, dsub, codebooks } = this;
    for (let j = 0; j < m; j++) {
      const c = (j * PQ_KSUB + codes[co + j]!) * dsub;
      for (let t = 0; t < dsub; t++) out[oo + j * dsub + t] = codebooks[c + t]!;
    }
  }

  prepare(q: Float32Array, table: Float32Array): number {
    const { m, dsub, codebooks } = this;
    for (let j = 0; j < m; j++) {
      for (let k = 0; k < PQ_KSUB; k++) {
        const co = (j * PQ_KSUB + k) * dsub;
        let s = 0;
        for (let t = 0; t < dsub; t++) s += q[j * dsub + t]! * codebooks[co + t]!;
        table[j * PQ_KSUB + k] = s;
      }
    }
    return 0;
  }

  scoreRange(codes: Uint8Array, first: number, count: number, table: Float32Array, out: Float64Array): void {
    const m = this.m;
    for (let i = 0; i < count; i++) {
      const o = (first + i) * m;
      let s0 = 0;
      let s1 = 0;
      let j = 0;
      for (; j + 1 < m; j += 2) {
        s0 += table[(j << 8) + codes[o + j]!]!;
        s1 += table[((j + 1) << 8) + codes[o + j + 1]!]!;
      }
      if (j < m) s0 += table[(j << 8) + codes[o + j]!]!;
      out[i] = s0 + s1;
    }
  }

  toParams(): Float32Array {
    const p = new Float32Array(1 + this.codebooks.length);
    p[0] = this.m;
    p.set(this.codebooks, 1);
    return p;
  }
}

/**
 * The engine's assignment kernel for PQ training: nearest sub-centroid by `||c||^2 - 2 x.c` (the same
 * argmin as the squared distance, `||x||^2` dropped: one dot product per centroid), the arithmetic of
 * `encode`. Scores are the squared distances (`||x||^2` added back). Euclidean only.
 */
const normsKernel: AssignmentKernelFactory = (points) => {
  const { data, dim, rows } = points;
  const norms = new Float64Array(PQ_KSUB);
  let cent: Float32Array = new Float32Array(0);
  return {
    rowsPerCall: 1024,
    load(centroids, k) {
      cent = centroids;
      for (let c = 0; c < k; c++) {
        let s = 0;
        for (let t = 0; t < dim; t++) s += centroids[c * dim + t]! ** 2;
        norms[c] = s;
      }
    },
    nearest(startRow, end, outIdx, outScore) {
      for (let p = startRow; p < end; p++) {
        const xo = rows[p]! * dim;
        const { best, score } = nearestSub(data, xo, cent, norms, dim);
        let xx = 0;
        for (let t = 0; t < dim; t++) xx += data[xo + t]! ** 2;
        outIdx[p] = best;
        outScore[p] = score + xx;
      }
    },
    values: () => data,
    offset: (p) => rows[p]! * dim,
    release() {},
  };
};

/** Nearest of the 256 sub-centroids `cent` to `x[xo..xo+dsub)` by `norms[k] - 2 x.c_k` (ties to the lower index). */
function nearestSub(x: Float32Array, xo: number, cent: Float32Array, norms: Float64Array, dsub: number): { best: number; score: number } {
  let best = 0;
  let bestScore = Infinity;
  for (let k = 0; k < PQ_KSUB; k++) {
    const co = k * dsub;
    let s = 0;
    for (let t = 0; t < dsub; t++) s += x[xo + t]! * cent[co + t]!;
    const score = norms[k]! - 2 * s;
    if (score < bestScore) {
      bestScore = score;
      best = k;
    }
  }
  return { best, score: bestScore };
}
