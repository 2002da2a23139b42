/**
 * The learned embedding stored for the index and the identity gate when MusiCNN is loaded (issue 13, "Embedding
 * used by the index"; choice and figures: docs/musicnn.md "Retrieval benchmark").
 *
 * `tfjs:musicnn-fusion-v1`, 200 values, from two blocks:
 *   m = [MSD penultimate, MTT penultimate] averaged over the track's patches (400 values),
 *   d = the track's dsp-v1 embedding (200 values, dsp-v1's own constants);
 *   zm = (m - mMean) / mStd, zd = (d - dMean) / dStd            (per-dimension constants)
 *   pm = Pm zm (mDims values), pd = Pd zd (200 - mDims values)  (PCA projections)
 *   v  = [w * pm / |pm|, (1 - w) * pd / |pd|]
 * Every constant (means, stds, projections, w) was fitted on the TUNING tracks of the retrieval corpus only
 * (bench/musicnn-retrieval.ts `--write-constants`, split corpus.ts isHeldOut) from MusiCNN and dsp-v1 outputs:
 * our measurements, not the model's weights. The projections ship as int8 rows with one float scale per row
 * (value = q * scale / 127), which the benchmark evaluates as shipped.
 *
 * Both networks are needed (MUSICNN_MTT on); with the MSD network only the worker stays on dsp-v1.
 */
import type { MusicnnTrackOutputs } from './analyser';
import { FUSION_V1 } from './embedding-constants';
import type { FusionConstants, QuantisedMatrix } from './fusion-constants';
import type { PatchOutputs } from './network';

/**
 * Embedder version of the learned embedding. The `tfjs:` prefix marks vectors of a TensorFlow.js model (the index's
 * `neural` coverage probe counts them).
 */
export const LEARNED_EMBEDDER_VERSION = 'tfjs:musicnn-fusion-v1';

/** Width of the stored embedding (the catalogue's and the index's contract). */
export const LEARNED_EMBEDDING_DIM = 200;

export type { FusionConstants, QuantisedMatrix };

/** Dense float rows of a quantised matrix. */
export function dequantise(m: QuantisedMatrix): Float32Array {
  const bytes = Buffer.from(m.q, 'base64');
  if (bytes.length !== m.rows * m.cols || m.scale.length !== m.rows) throw new Error(`projection ${m.rows}x${m.cols} has ${bytes.length} values and ${m.scale.length} scales`);
  const out = new Float32Array(m.rows * m.cols);
  for (let r = 0; r < m.rows; r++) for (let c = 0; c < m.cols; c++) out[r * m.cols + c] = (bytes.readInt8(r * m.cols + c) / 127) * m.scale[r]!;
  return out;
}

/** Quantises dense rows (row-major) to int8 with one scale per row (the shipped form). */
export function quantise(rows: ReadonlyArray<ArrayLike<number>>): QuantisedMatrix {
  const cols = rows[0]?.length ?? 0;
  const bytes = Buffer.alloc(rows.length * cols);
  const scale = rows.map((row, r) => {
    let max = 0;
    for (let c = 0; c < cols; c++) max = Math.max(max, Math.abs(row[c]!));
    for (let c = 0; c < cols; c++) bytes.writeInt8(max > 0 ? Math.round((row[c]! / max) * 127) : 0, r * cols + c);
    return max;
  });
  return { rows: rows.length, cols, q: bytes.toString('base64'), scale };
}

/** Mean over patches of a network's 200-d penultimate vectors. */
export function penultimateMean(out: PatchOutputs): Float64Array {
  const mean = new Float64Array(200);
  for (let p = 0; p < out.patches; p++) for (let i = 0; i < 200; i++) mean[i]! += out.penultimate[p * 200 + i]! / out.patches;
  return mean;
}

/** Computes a fusion embedding (see module docs) from its inputs. */
export class FusionEmbedder {
  readonly version: string;
  private readonly pm: Float32Array;
  private readonly pd: Float32Array;

  /** @throws Error when the constants do not add up to a 200-d vector of 400 + 200 inputs. */
  constructor(private readonly c: FusionConstants = FUSION_V1) {
    if (c.mMean.length !== 400 || c.mStd.length !== 400 || c.dMean.length !== 200 || c.dStd.length !== 200) throw new Error(`${c.version}: wrong constant sizes`);
    if (c.pm.cols !== 400 || c.pd.cols !== 200 || c.pm.rows + c.pd.rows !== LEARNED_EMBEDDING_DIM) throw new Error(`${c.version}: projections ${c.pm.rows}x${c.pm.cols} + ${c.pd.rows}x${c.pd.cols} do not give 200 values`);
    this.version = c.version;
    this.pm = dequantise(c.pm);
    this.pd = dequantise(c.pd);
  }

  /**
   * The embedding of a track.
   * @param musicnn 400 values: MSD then MTT penultimate, averaged over patches
   * @param dsp the track's 200-d dsp-v1 embedding
   */
  embed(musicnn: ArrayLike<number>, dsp: ArrayLike<number>): Float32Array {
    const c = this.c;
    const out = new Float32Array(LEARNED_EMBEDDING_DIM);
    const pm = project(this.pm, c.pm.rows, musicnn, c.mMean, c.mStd);
    const pd = project(this.pd, c.pd.rows, dsp, c.dMean, c.dStd);
    const nm = norm(pm) || 1;
    const nd = norm(pd) || 1;
    for (let i = 0; i < pm.length; i++) out[i] = (c.w * pm[i]!) / nm;
    for (let i = 0; i < pd.length; i++) out[pm.length + i] = ((1 - c.w) * pd[i]!) / nd;
    return out;
  }

  /**
   * The embedding from the analyser's outputs and the dsp-v1 embedding.
   * @throws Error without the MTT network's outputs
   */
  embedTrack(outputs: MusicnnTrackOutputs, dsp: ArrayLike<number>): Float32Array {
    if (!outputs.mtt) throw new Error(`${this.version} needs the MTT network (MUSICNN_MTT)`);
    const m = new Float64Array(400);
    m.set(penultimateMean(outputs.msd), 0);
    m.set(penultimateMean(outputs.mtt), 200);
    return this.embed(m, dsp);
  }
}

function project(p: Float32Array, rows: number, x: ArrayLike<number>, mean: readonly number[], std: readonly number[]): Float64Array {
  const cols = mean.length;
  const z = new Float64Array(cols);
  for (let i = 0; i < cols; i++) z[i] = (x[i]! - mean[i]!) / std[i]!;
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let i = 0; i < cols; i++) s += p[r * cols + i]! * z[i]!;
    out[r] = s;
  }
  return out;
}

function norm(v: Float64Array): number {
  let s = 0;
  for (const x of v) s += x * x;
  return Math.sqrt(s);
}
