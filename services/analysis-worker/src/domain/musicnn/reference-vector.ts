/**
 * The reference implementation's MusiCNN song vector, computed by polyphony (issue 34, "Vector agreement";
 * ../shared/reference/reference-implementation.md 2.1-2.2): what the reference stores in its `embedding` table and
 * polyphony imports as `audiomuse:musicnn-msd-200`.
 *
 * The reference runs the MSD MusiCNN network exported to ONNX with output `model/dense/BiasAdd:0`: in musicnn's graph
 * (models.py backend: `dense = tf.layers.dense(BN(pooled), 200, activation=relu)`), that tensor is the 200-d dense
 * layer *before* its ReLU, i.e. `dense200(BN(pooled))`. Polyphony's network (network.ts) returns
 * `BN(ReLU(dense200(BN(pooled))))`, which cannot be inverted (the ReLU drops the negative half), so the vector is
 * computed here from the 1506-d pooled layer with the same checkpoint's `flatBn` and `dense` weights.
 *
 * Input as the reference (2.1-2.2): the first 600 s of the decoded audio (`AUDIO_LOAD_TIMEOUT`), 16 kHz mono,
 * mel with `center=False` (no padding), `log10(1 + 10000 mel)`, every non-overlapping 187-frame patch from frame 0
 * (the partial tail dropped), the song vector = the mean of the patch vectors. Differences that remain: the
 * reference resamples with soxr_hq (polyphony with ffmpeg, decode.ts) and runs its own ONNX export in float;
 * a song shorter than one patch gets no vector in the reference (here: its frames are tiled into one patch, as for
 * polyphony's own analysis, and `patches` says 0 complete patches).
 */
import { REFERENCE_EMBEDDER_VERSION } from '@polyphony/contracts';
import type { PatchOutputs } from './network';
import { MUSICNN_INPUT, uncentredFrameCount } from './mel';
import type { MusicnnWeights } from './weights';

/** Embedder version of the reference's vectors (the import stores them under it; shared/contracts import.ts). */
export const REFERENCE_MUSICNN_VERSION = REFERENCE_EMBEDDER_VERSION;
/** The reference decodes at most the first 600 s of a file (AUDIO_LOAD_TIMEOUT, reference 2.1). */
export const REFERENCE_MAX_SECONDS = 600;
/** Width of the reference vector (EMBEDDING_DIMENSION). */
export const REFERENCE_DIM = 200;
const POOLED = 1506;

/** The part of the MSD checkpoint after the temporal pooling that the reference's output reads. */
export type DenseHead = Pick<MusicnnWeights, 'flatBn' | 'dense'>;

/**
 * Start frames of the reference's patches for n samples at 16 kHz: every complete non-overlapping 187-frame patch of
 * the uncentred mel of the first 600 s; [0] (one tiled patch) when there is none.
 */
export function referencePatchStarts(n: number): { starts: number[]; samples: number; complete: number } {
  const samples = Math.min(n, REFERENCE_MAX_SECONDS * MUSICNN_INPUT.sampleRateHz);
  const complete = Math.floor(uncentredFrameCount(samples) / MUSICNN_INPUT.patchFrames);
  const starts = complete === 0 ? [0] : Array.from({ length: complete }, (_, i) => i * MUSICNN_INPUT.patchFrames);
  return { starts, samples, complete };
}

/**
 * `model/dense/BiasAdd` per patch from the pooled layer: out[p][j] = b[j] + sum_i (pooled[p][i] * scale[i] + shift[i]) * K[i][j]
 * (K in Keras layout [1506, 200], row-major), in float64, returned as float32.
 * @param pooled [patches][1506] (PatchOutputs.pooled)
 * @throws RangeError when the shapes do not match
 */
export function denseBiasAdd(pooled: Float32Array, patches: number, head: DenseHead): Float32Array {
  const { kernel, shape, bias } = head.dense;
  if (shape[0] !== POOLED || shape[1] !== REFERENCE_DIM || pooled.length !== patches * POOLED) throw new RangeError(`dense ${shape.join('x')} and pooled ${pooled.length} values for ${patches} patches do not match`);
  const out = new Float32Array(patches * REFERENCE_DIM);
  const acc = new Float64Array(REFERENCE_DIM);
  for (let p = 0; p < patches; p++) {
    for (let j = 0; j < REFERENCE_DIM; j++) acc[j] = bias[j]!;
    for (let i = 0; i < POOLED; i++) {
      const x = pooled[p * POOLED + i]! * head.flatBn.scale[i]! + head.flatBn.shift[i]!;
      const row = i * REFERENCE_DIM;
      for (let j = 0; j < REFERENCE_DIM; j++) acc[j]! += x * kernel[row + j]!;
    }
    out.set(acc, p * REFERENCE_DIM);
  }
  return out;
}

/** The song vector: mean over patches of {@link denseBiasAdd}. @throws RangeError without the pooled layer */
export function referenceVectorOf(msd: PatchOutputs, head: DenseHead): Float32Array {
  if (!msd.pooled) throw new RangeError('the reference vector needs the pooled layer of the MSD network');
  const per = denseBiasAdd(msd.pooled, msd.patches, head);
  const mean = new Float64Array(REFERENCE_DIM);
  for (let p = 0; p < msd.patches; p++) for (let j = 0; j < REFERENCE_DIM; j++) mean[j]! += per[p * REFERENCE_DIM + j]! / msd.patches;
  return Float32Array.from(mean);
}

/** Cosine similarity: the product's one, from `@polyphony/vectors` (re-exported for the engine entry point and tests). */
export { cosineSimilarity } from '@polyphony/vectors';
