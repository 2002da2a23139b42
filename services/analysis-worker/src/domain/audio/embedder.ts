/**
 * Track embedders. An embedding is the 200-float vector stored per analysed song; similarity search,
 * clustering and the content signature (one bit per dimension, set when the value exceeds the vector's own
 * mean) all read it, always with cosine distance.
 *
 * The default embedder ('dsp-v1') is pure DSP: the raw descriptor of dsp-features.ts, centred and scaled
 * per dimension with constants derived from real music (dsp-v1-normalisation.ts, produced by
 * src/bench/derive-normalisation.ts), clipped to +-CLIP, and weighted per feature block. Raw spectral
 * statistics share a large common component (every song has falling MFCCs, similar loudness ...), which makes
 * all songs look alike under cosine; after centring, cosine compares how a song deviates from typical music,
 * and the scaling gives every dimension a comparable voice.
 */
import { AppError } from '@polyphony/platform';
import { AudioAnalysis, FrameAnalyser } from './analysis';
import { AudioDescriptors, descriptorsFromAnalysis } from './descriptors';
import { DSP_V1_NORMALISATION } from './dsp-v1-normalisation';
import { DSP_V1_BLOCKS, DSP_V1_DIMENSIONS, dspV1RawFeatures } from './dsp-features';
import { assertValidNormalisation, NormalisationConstants } from './normalisation';

/** Turns mono PCM into a fixed-size embedding. */
export interface Embedder {
  /** Identifies the model and its constants; embeddings of different versions are not comparable. */
  readonly version: string;
  readonly dimensions: 200;
  /**
   * @param pcm mono samples in [-1, 1]
   * @param sampleRate Hz of `pcm`
   * @returns `dimensions` finite float32 values; the same input gives bit-identical output.
   */
  embed(pcm: Float32Array, sampleRate: number): Float32Array;
}

/** The PCM is too short to describe (less than MIN_AUDIO_SECONDS). HTTP 422 if surfaced. */
export class InsufficientAudioError extends AppError {
  constructor(readonly seconds: number) {
    super('audio_too_short', `Audio of ${seconds.toFixed(3)} s is too short to analyse (minimum ${MIN_AUDIO_SECONDS} s)`, 422, { seconds });
  }
}

/** Shortest PCM the default embedder accepts, seconds. */
export const MIN_AUDIO_SECONDS = 1;

/** Normalised values are clipped to +-CLIP standard deviations so one odd statistic cannot dominate. */
export const DSP_V1_CLIP = 5;

/**
 * Weight per feature block applied after scaling (block names from DSP_V1_BLOCKS). Each value multiplies
 * every dimension of the block. Rationale: timbre blocks hold most dimensions and are the most reliable cue
 * of "sounds similar"; harmony and rhythm blocks are fewer dimensions but noisier per dimension.
 */
export const DSP_V1_BLOCK_WEIGHTS: Readonly<Record<string, number>> = Object.freeze({
  mfcc_mean: 1,
  mfcc_std: 1,
  dmfcc_std: 1,
  mel_mean: 1,
  mel_std: 1,
  spectral: 1,
  contrast: 1,
  loudness: 1,
  chroma_dft: 1,
  intervals: 1,
  chroma_sort: 1,
  frame_sort: 1,
  tonality: 1,
  onset: 1,
  tempo: 1,
  onset_acf: 1,
  modulation: 1,
});

/** Embedding plus descriptors from one spectral pass. */
export interface TrackAnalysis {
  embedding: Float32Array;
  descriptors: AudioDescriptors;
}

/**
 * The default DSP embedder, version 'dsp-v1'. Expects 16 kHz mono PCM (decode.ts default). Cost is bounded:
 * at most 120 s of audio are analysed (analysis.ts), so embedding a 10-minute track costs about the same as a
 * 2-minute one. Not thread-safe (reuses buffers); use one instance per worker.
 */
export class DefaultEmbedder implements Embedder {
  readonly version: string;
  readonly dimensions = 200 as const;
  private readonly analyser = new FrameAnalyser();
  private readonly mean: Float64Array;
  private readonly invStd: Float64Array;

  /**
   * @param normalisation constants to use (default: the committed dsp-v1 constants).
   * @throws Error when the constants do not fit the 200-d layout.
   */
  constructor(normalisation: NormalisationConstants = DSP_V1_NORMALISATION) {
    assertValidNormalisation(normalisation, DSP_V1_DIMENSIONS);
    this.version = normalisation.version;
    this.mean = Float64Array.from(normalisation.mean);
    this.invStd = new Float64Array(DSP_V1_DIMENSIONS);
    for (let i = 0; i < DSP_V1_DIMENSIONS; i++) this.invStd[i] = 1 / normalisation.std[i]!;
  }

  /**
   * @throws RangeError when sampleRate is not 16000; InsufficientAudioError below MIN_AUDIO_SECONDS.
   */
  embed(pcm: Float32Array, sampleRate: number): Float32Array {
    return this.embedAnalysis(this.analyse(pcm, sampleRate));
  }

  /** Embedding and descriptors (tempo, key, energy) from a single analysis pass. Same errors as embed. */
  analyseTrack(pcm: Float32Array, sampleRate: number): TrackAnalysis {
    const analysis = this.analyse(pcm, sampleRate);
    return { embedding: this.embedAnalysis(analysis), descriptors: descriptorsFromAnalysis(pcm, analysis) };
  }

  /** Normalised embedding of an existing analysis. */
  embedAnalysis(analysis: AudioAnalysis): Float32Array {
    return this.normalise(dspV1RawFeatures(analysis));
  }

  /** (raw - mean) / std, clipped to +-DSP_V1_CLIP, times the block weight; as float32. */
  normalise(raw: Float64Array): Float32Array {
    const out = new Float32Array(DSP_V1_DIMENSIONS);
    for (let i = 0; i < DSP_V1_DIMENSIONS; i++) {
      const z = (raw[i]! - this.mean[i]!) * this.invStd[i]!;
      out[i] = Math.max(-DSP_V1_CLIP, Math.min(DSP_V1_CLIP, z)) * DSP_V1_BLOCK_WEIGHTS_BY_DIM[i]!;
    }
    return out;
  }

  private analyse(pcm: Float32Array, sampleRate: number): AudioAnalysis {
    if (pcm.length < MIN_AUDIO_SECONDS * sampleRate) throw new InsufficientAudioError(pcm.length / sampleRate);
    return this.analyser.analyse(pcm, sampleRate);
  }
}

const DSP_V1_BLOCK_WEIGHTS_BY_DIM: Float64Array = (() => {
  const w = new Float64Array(DSP_V1_DIMENSIONS);
  for (const block of DSP_V1_BLOCKS) w.fill(DSP_V1_BLOCK_WEIGHTS[block.name] ?? 1, block.start, block.start + block.length);
  return w;
})();

/**
 * Cosine distance 1 - a.b / (|a| |b|) in float64, the metric the catalogue and the indexes use.
 * Returns 1 when either vector is all zeros.
 */
export function cosineDistance(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new RangeError(`cosineDistance: lengths ${a.length} and ${b.length} differ`);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  if (na === 0 || nb === 0) return 1;
  return 1 - dot / Math.sqrt(na * nb);
}
