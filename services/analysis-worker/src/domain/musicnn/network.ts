/**
 * The MusiCNN network (Pons & Serra 2019; layer graph of the published Keras files, see
 * ../shared/models/musicnn/README.md "Architecture") written as TensorFlow.js operations over the arrays
 * read by weights.ts. Inference only (dropout is the identity; BatchNorms use the moving statistics).
 *
 * Per patch x [187 time, 96 mel]:
 *   x0 = BN(x)
 *   timbral: T_j = maxFreq(BN(relu(conv_valid(padTime3(x0), 7 x f_j)))), f = 38, 67, 204 filters each
 *   (maxFreq is taken before BN and relu, exactly, see predict)
 *   temporal: S_j = maxFreq(BN(relu(conv_same(x0, k_j x 1)))), k = 128, 64, 32, 51 filters each
 *   F = concat(T, S) [187, 561]
 *   m1 = BN(relu(conv1d(padTime3(F), 7))); m2 = BN(relu(conv1d(padTime3(m1), 7))) + m1;
 *   m3 = BN(relu(conv1d(padTime3(m2), 7))) + m2                         (64 channels each)
 *   C = concat(F, m1, m2, m3) [187, 753]
 *   pooled = interleave(max_t C, mean_t C) [1506]  (index 2c = max of channel c, 2c+1 = its mean)
 *   penultimate = BN(relu(dense200(BN(pooled))))  (the 200-d embedding)
 *   tags = sigmoid(dense50(penultimate))
 * 'same' padding of an even kernel k pads floor((k-1)/2) before and the rest after (TensorFlow's rule).
 */
import type * as Tf from '@tensorflow/tfjs';
import { MUSICNN_INPUT } from './mel';
import type { FoldedBatchNorm, MusicnnWeights } from './weights';

/** Outputs for a batch of patches, patch-major. */
export interface PatchOutputs {
  patches: number;
  /** sigmoid probabilities, [patches][50] */
  tags: Float32Array;
  /** the 200-d penultimate layer, [patches][200] */
  penultimate: Float32Array;
  /**
   * The 1506-d temporal pooling before the dense layers (max and mean over time of the 753 front/mid-end
   * channels, interleaved), [patches][1506]; only when predict() was asked for it (benchmarks).
   */
  pooled?: Float32Array;
}

/** A MusiCNN implementation: network.ts (TensorFlow.js) or onnx-network.ts (ONNX Runtime). */
export interface PatchNetwork {
  /**
   * Runs the network on n patches.
   * @param patches float32 [n][187][96] log-mel patches (mel.ts patchTensorData)
   * @param withPooled also return the 1506-d pooled layer
   */
  predict(patches: Float32Array, n: number, withPooled?: boolean): Promise<PatchOutputs>;
  /** Frees the weights. */
  dispose(): void;
}

export const TAG_COUNT = 50;
export const PENULTIMATE_DIM = 200;
export const POOLED_DIM = 1506;

interface Bn {
  scale: Tf.Tensor1D;
  shift: Tf.Tensor1D;
}

/** One MusiCNN network with its weights held as tfjs tensors. Call dispose() to free them. */
export class MusicnnNetwork implements PatchNetwork {
  private readonly tensors: Tf.Tensor[] = [];
  private readonly inBn: Bn;
  private readonly front: Array<{ kernel: Tf.Tensor4D; bias: Tf.Tensor1D; bn: Bn; kh: number; positive: Tf.Tensor1D }>;
  private readonly mid: Array<{ kernel: Tf.Tensor3D; bias: Tf.Tensor1D; bn: Bn }>;
  private readonly flatBn: Bn;
  private readonly denseK: Tf.Tensor2D;
  private readonly denseB: Tf.Tensor1D;
  private readonly denseBn: Bn;
  private readonly outK: Tf.Tensor2D;
  private readonly outB: Tf.Tensor1D;

  /**
   * @param tf the tfjs namespace whose backend is active (tf-runtime.ts)
   * @param w parsed checkpoint arrays
   */
  constructor(private readonly tf: typeof Tf, w: MusicnnWeights) {
    const keep = <T extends Tf.Tensor>(t: T): T => {
      this.tensors.push(t);
      return t;
    };
    const bn = (b: FoldedBatchNorm): Bn => ({ scale: keep(tf.tensor1d(b.scale)), shift: keep(tf.tensor1d(b.shift)) });
    this.inBn = bn(w.inputBn);
    this.front = w.frontConv.map((c, i) => ({
      kernel: keep(tf.tensor4d(c.kernel, c.shape as [number, number, number, number])),
      bias: keep(tf.tensor1d(c.bias)),
      bn: bn(w.frontBn[i]!),
      kh: c.shape[0]!,
      positive: keep(tf.tensor1d(w.frontBn[i]!.scale.map((v) => (v >= 0 ? 1 : 0)))),
    }));
    this.mid = w.midConv.map((c, i) => ({
      kernel: keep(tf.tensor3d(c.kernel, [c.shape[0]!, c.shape[1]!, c.shape[3]!])),
      bias: keep(tf.tensor1d(c.bias)),
      bn: bn(w.midBn[i]!),
    }));
    this.flatBn = bn(w.flatBn);
    this.denseK = keep(tf.tensor2d(w.dense.kernel, w.dense.shape as [number, number]));
    this.denseB = keep(tf.tensor1d(w.dense.bias));
    this.denseBn = bn(w.denseBn);
    this.outK = keep(tf.tensor2d(w.out.kernel, w.out.shape as [number, number]));
    this.outB = keep(tf.tensor1d(w.out.bias));
  }

  /**
   * Runs the network.
   * @param patches float32 [n][187][96] log-mel patches (mel.ts patchTensorData)
   * @param n number of patches
   * @param withPooled also return the 1506-d pooled layer (one more device-to-host copy)
   * @returns tags and penultimate vectors per patch
   */
  async predict(patches: Float32Array, n: number, withPooled = false): Promise<PatchOutputs> {
    const tf = this.tf;
    const { patchFrames, nMels } = MUSICNN_INPUT;
    if (patches.length !== n * patchFrames * nMels) throw new RangeError(`expected ${n} patches of ${patchFrames}x${nMels}`);
    const [tags, pen, pooledOut] = tf.tidy(() => {
      const apply = (x: Tf.Tensor, b: Bn) => tf.add(tf.mul(x, b.scale), b.shift);
      const x = apply(tf.tensor4d(patches, [n, patchFrames, nMels, 1]), this.inBn) as Tf.Tensor4D;
      const padded = tf.pad(x, [[0, 0], [3, 3], [0, 0], [0, 0]]);
      const branches: Tf.Tensor3D[] = this.front.map((c, i) => {
        const input = i < 2 ? padded : tf.pad(x, [[0, 0], [Math.floor((c.kh - 1) / 2), c.kh - 1 - Math.floor((c.kh - 1) / 2)], [0, 0], [0, 0]]);
        // max_f BN(relu(z_f + b)) computed on [n, 187, C] instead of [n, 187, F, C]: BN is x * s + t per
        // channel and relu is monotone, so it equals BN(relu(max_f z + b)) where s >= 0 and
        // BN(relu(min_f z + b)) where s < 0 (exact; saves two full-size elementwise passes).
        const z = tf.conv2d(input, c.kernel, 1, 'valid');
        const hi = tf.max(z, 2);
        const lo = tf.min(z, 2);
        const picked = tf.add(lo, tf.mul(tf.sub(hi, lo), c.positive));
        return apply(tf.relu(tf.add(picked, c.bias)), c.bn) as Tf.Tensor3D; // [n, 187, filters]
      });
      const f = tf.concat(branches, 2); // [n, 187, 561]
      const layers: Tf.Tensor3D[] = [f];
      let prev: Tf.Tensor3D = f;
      this.mid.forEach((c, i) => {
        const y = apply(tf.relu(tf.add(tf.conv1d(tf.pad(prev, [[0, 0], [3, 3], [0, 0]]), c.kernel, 1, 'valid'), c.bias)), c.bn) as Tf.Tensor3D;
        prev = i === 0 ? y : tf.add(y, prev);
        layers.push(prev);
      });
      const all = tf.concat(layers, 2); // [n, 187, 753]
      const pooled = tf.reshape(tf.stack([tf.max(all, 1), tf.mean(all, 1)], 2), [n, 1506]);
      const h = apply(tf.relu(tf.add(tf.matMul(apply(pooled, this.flatBn) as Tf.Tensor2D, this.denseK), this.denseB)), this.denseBn) as Tf.Tensor2D;
      const t = tf.sigmoid(tf.add(tf.matMul(h, this.outK), this.outB));
      return withPooled ? [t, h, pooled] : [t, h];
    });
    try {
      const [t, p] = await Promise.all([tags.data(), pen.data()]);
      const out: PatchOutputs = { patches: n, tags: Float32Array.from(t as Float32Array), penultimate: Float32Array.from(p as Float32Array) };
      if (pooledOut) out.pooled = Float32Array.from((await pooledOut.data()) as Float32Array);
      return out;
    } finally {
      tags.dispose();
      pen.dispose();
      pooledOut?.dispose();
    }
  }

  /** Frees the weight tensors. */
  dispose(): void {
    for (const t of this.tensors) t.dispose();
    this.tensors.length = 0;
  }
}
