import { PCA } from 'ml-pca';
import type { IvfIndex, CooperativeScheduler } from '@polyphony/vector-engine';

/** Rows of the uniform sample the PCA basis (and the catalogue variance) is estimated from. */
export const PCA_SAMPLE_ROWS = 5_000;

/**
 * A 2-D PCA basis of one index generation, plus the per-dimension variance of the catalogue (used as
 * the prior of the artist mixtures). Coordinates are `((v - mean) · axis_k - centre_k) / halfRange_k`,
 * so the catalogue spans [-1, 1] on both axes (the reference also scales its map to [-1, 1]).
 */
export interface PcaBasis {
  dim: number;
  mean: Float32Array;
  /** 2 * dim: first principal axis, then the second (unit vectors). */
  axes: Float32Array;
  /** Per-dimension variance of the (unit) vectors of the sample. */
  variance: Float32Array;
  /** [centre x, centre y, half range x, half range y] of the raw projections. */
  frame: Float32Array;
}

/**
 * Fits the basis on a uniform sample: every `ceil(size / PCA_SAMPLE_ROWS)`-th row (rows are in canonical
 * id order, and canonical ids are content hashes, so a stride is an unbiased sample). The sample's
 * covariance (upper triangle, float64) is computed here and handed to ml-pca (`isCovarianceMatrix`),
 * which returns its eigenvectors. O(sample * dim² / 2 + dim³).
 * Returns undefined for an empty index.
 */
export async function fitPca(index: IvfIndex, scheduler?: CooperativeScheduler): Promise<PcaBasis | undefined> {
  const size = index.size;
  const dim = index.dim;
  if (size === 0) return undefined;
  const stride = Math.max(1, Math.ceil(size / PCA_SAMPLE_ROWS));
  const rows: number[] = [];
  for (let r = 0; r < size; r += stride) rows.push(r);
  const m = rows.length;
  const mean = new Float64Array(dim);
  const sample = new Float32Array(m * dim);
  rows.forEach((r, i) => sample.set(index.getVector(r), i * dim));
  for (let i = 0; i < m; i++) for (let d = 0; d < dim; d++) mean[d]! += sample[i * dim + d]!;
  for (let d = 0; d < dim; d++) mean[d]! /= m;
  for (let i = 0; i < m; i++) for (let d = 0; d < dim; d++) sample[i * dim + d]! -= mean[d]!;
  const cov = new Float64Array(dim * dim);
  const x = new Float64Array(dim);
  for (let i = 0; i < m; i++) {
    const o = i * dim;
    for (let d = 0; d < dim; d++) x[d] = sample[o + d]!;
    for (let a = 0; a < dim; a++) {
      const xa = x[a]!;
      if (xa === 0) continue;
      const row = a * dim;
      for (let b = a; b < dim; b++) cov[row + b]! += xa * x[b]!;
    }
    if ((i & 255) === 255) await scheduler?.maybeYield();
  }
  const denom = Math.max(1, m - 1);
  const matrix: number[][] = [];
  for (let a = 0; a < dim; a++) {
    const line: number[] = new Array<number>(dim);
    for (let b = 0; b < dim; b++) line[b] = (a <= b ? cov[a * dim + b]! : cov[b * dim + a]!) / denom;
    matrix.push(line);
  }
  const variance = new Float32Array(dim);
  for (let d = 0; d < dim; d++) variance[d] = Math.max(matrix[d]![d]!, 1e-9);
  const pca = new PCA(matrix, { isCovarianceMatrix: true });
  const vectors = pca.getEigenvectors();
  const axes = new Float32Array(2 * dim);
  for (let k = 0; k < 2; k++) {
    const col = k < vectors.columns ? vectors.getColumn(k) : new Array<number>(dim).fill(0);
    for (let d = 0; d < dim; d++) axes[k * dim + d] = col[d] ?? 0;
  }
  const basis: PcaBasis = { dim, mean: Float32Array.from(mean), axes, variance, frame: new Float32Array([0, 0, 1, 1]) };
  // Frame from the sample's raw projections (robust enough: the sample is uniform).
  let minX = Infinity;
  let maxX = -Infinity;
  let minY = Infinity;
  let maxY = -Infinity;
  for (let i = 0; i < m; i++) {
    const [px, py] = rawProject(basis, index.getVector(rows[i]!), 0);
    minX = Math.min(minX, px);
    maxX = Math.max(maxX, px);
    minY = Math.min(minY, py);
    maxY = Math.max(maxY, py);
  }
  basis.frame = new Float32Array([(minX + maxX) / 2, (minY + maxY) / 2, Math.max((maxX - minX) / 2, 1e-9), Math.max((maxY - minY) / 2, 1e-9)]);
  return basis;
}

function rawProject(basis: PcaBasis, v: Float32Array, offset: number): [number, number] {
  const { dim, mean, axes } = basis;
  let px = 0;
  let py = 0;
  for (let d = 0; d < dim; d++) {
    const c = v[offset + d]! - mean[d]!;
    px += c * axes[d]!;
    py += c * axes[dim + d]!;
  }
  return [px, py];
}

/** 2-D map coordinates of one unit vector (see PcaBasis). Points outside the sample may fall slightly outside [-1, 1]. */
export function projectPoint(basis: PcaBasis, v: Float32Array): [number, number] {
  const [px, py] = rawProject(basis, v, 0);
  const f = basis.frame;
  return [(px - f[0]!) / f[2]!, (py - f[1]!) / f[3]!];
}

/** Map coordinates of every row of the generation: 2 floats per row, row order. O(size * dim). */
export async function projectAll(index: IvfIndex, basis: PcaBasis, scheduler?: CooperativeScheduler): Promise<Float32Array> {
  const out = new Float32Array(index.size * 2);
  for (let r = 0; r < index.size; r++) {
    const [x, y] = projectPoint(basis, index.getVector(r));
    out[2 * r] = x;
    out[2 * r + 1] = y;
    if ((r & 1023) === 1023) await scheduler?.maybeYield();
  }
  return out;
}

/** Serialises a basis as float32: [dim, mean, axes, variance, frame]. */
export function encodeBasis(basis: PcaBasis): Float32Array {
  const { dim } = basis;
  const out = new Float32Array(1 + dim * 4 + 4);
  out[0] = dim;
  out.set(basis.mean, 1);
  out.set(basis.axes, 1 + dim);
  out.set(basis.variance, 1 + 3 * dim);
  out.set(basis.frame, 1 + 4 * dim);
  return out;
}

/** Inverse of encodeBasis. @throws RangeError on a malformed array. */
export function decodeBasis(data: Float32Array): PcaBasis {
  const dim = data[0] ?? 0;
  if (!Number.isInteger(dim) || dim < 1 || data.length !== 1 + dim * 4 + 4) throw new RangeError('malformed PCA basis');
  return {
    dim,
    mean: data.slice(1, 1 + dim),
    axes: data.slice(1 + dim, 1 + 3 * dim),
    variance: data.slice(1 + 3 * dim, 1 + 4 * dim),
    frame: data.slice(1 + 4 * dim),
  };
}
