import { SeededRandom } from '@polyphony/vectors';

/** Parameters of the synthetic embedding mixture (defaults in `DEFAULT_MIXTURE`). */
export interface MixtureOptions {
  /** Vector dimension. */
  dim: number;
  /** Number of mixture components ("genres"). */
  clusters: number;
  /** Dimension of each component's random affine subspace (intrinsic dimension of the data). */
  intrinsicDim: number;
  /** Per-coordinate standard deviation of the spread inside the subspace (component centres are N(0, 1)). */
  spread: number;
  /** Per-coordinate standard deviation of the isotropic noise added to every point. */
  noise: number;
  /** Component weights follow 1 / (rank + 1)^zipf (0 = equal sizes). */
  zipf: number;
  seed: number;
}

export const DEFAULT_MIXTURE: MixtureOptions = {
  dim: 200,
  clusters: 500,
  intrinsicDim: 12,
  spread: 0.5,
  noise: 0.12,
  zipf: 0.7,
  seed: 1234,
};

/** A generated batch: ids, raw vectors (`ids.length * dim`) and the true component of every point. */
export interface MixtureBatch {
  ids: string[];
  vectors: Float32Array;
  labels: Int32Array;
}

/**
 * Synthetic stand-in for audio embeddings: a mixture of components, each a random `intrinsicDim`-dimensional
 * affine subspace (centre + basis * z, z ~ N(0, I)) plus isotropic noise. Real embeddings have low intrinsic
 * dimension and uneven genre sizes; pure isotropic Gaussian blobs in 200-d would make every nearest neighbour
 * almost equidistant and say nothing about an index. Points are generated on the fly, batch by batch, from
 * one seeded stream: the same options, count and batch size always give the same vectors.
 * Memory: `clusters * dim * (intrinsicDim + 1)` floats of parameters (5 MB with the defaults).
 */
export class SyntheticMixture {
  readonly options: MixtureOptions;
  private readonly centres: Float32Array;
  private readonly bases: Float32Array;
  private readonly cumulative: Float64Array;

  constructor(options: Partial<MixtureOptions> = {}) {
    this.options = { ...DEFAULT_MIXTURE, ...options };
    const { dim, clusters, intrinsicDim, spread, zipf, seed } = this.options;
    const rng = new SeededRandom(seed);
    this.centres = new Float32Array(clusters * dim);
    for (let i = 0; i < this.centres.length; i++) this.centres[i] = rng.nextGaussian();
    this.bases = new Float32Array(clusters * dim * intrinsicDim);
    const a = spread / Math.sqrt(intrinsicDim);
    for (let i = 0; i < this.bases.length; i++) this.bases[i] = rng.nextGaussian() * a;
    this.cumulative = new Float64Array(clusters);
    let total = 0;
    for (let c = 0; c < clusters; c++) {
      total += 1 / Math.pow(c + 1, zipf);
      this.cumulative[c] = total;
    }
    for (let c = 0; c < clusters; c++) this.cumulative[c]! /= total;
  }

  /** Canonical-looking id of point `i`: `fp_4` + 50 hex digits. */
  static idOf(i: number): string {
    return `fp_4${i.toString(16).padStart(50, '0')}`;
  }

  /**
   * Yields `count` points in batches of `batchSize`, ids `idOf(0..count-1)`.
   * @param streamSeed selects the point stream (different from the parameter seed, so queries can be drawn
   *   from the same mixture without repeating indexed points)
   */
  *batches(count: number, batchSize: number, streamSeed = 1): Generator<MixtureBatch> {
    const { dim, intrinsicDim } = this.options;
    const rng = new SeededRandom(streamSeed);
    const z = new Float64Array(intrinsicDim);
    for (let start = 0; start < count; start += batchSize) {
      const n = Math.min(batchSize, count - start);
      const vectors = new Float32Array(n * dim);
      const labels = new Int32Array(n);
      const ids: string[] = new Array<string>(n);
      for (let i = 0; i < n; i++) {
        const c = this.pickCluster(rng.nextFloat());
        labels[i] = c;
        ids[i] = SyntheticMixture.idOf(start + i);
        for (let j = 0; j < intrinsicDim; j++) z[j] = rng.nextGaussian();
        const co = c * dim;
        const bo = c * dim * intrinsicDim;
        const o = i * dim;
        for (let d = 0; d < dim; d++) {
          let v = this.centres[co + d]! + rng.nextGaussian() * this.options.noise;
          const row = bo + d * intrinsicDim;
          for (let j = 0; j < intrinsicDim; j++) v += this.bases[row + j]! * z[j]!;
          vectors[o + d] = v;
        }
      }
      yield { ids, vectors, labels };
    }
  }

  private pickCluster(u: number): number {
    const cum = this.cumulative;
    let lo = 0;
    let hi = cum.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cum[mid]! > u) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}

/**
 * Recall of a search against ground truth: the share of the true neighbours (`truth[i]`, by row) that
 * `found[i]` returned, over all queries; 1 when the truth is empty.
 */
export function recall(found: readonly { row: number }[][], truth: readonly { row: number }[][]): number {
  let hit = 0;
  let total = 0;
  found.forEach((res, i) => {
    const want = new Set(truth[i]!.map((t) => t.row));
    total += want.size;
    for (const r of res) if (want.has(r.row)) hit++;
  });
  return total === 0 ? 1 : hit / total;
}
