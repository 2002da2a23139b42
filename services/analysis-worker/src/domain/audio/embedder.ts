/**
 * Track embedders. An embedding is the 200-float vector stored per analysed song; similarity search,
 * clustering and the content signature (one bit per dimension, set when the value exceeds the vector's own
 * mean) all read it, always with cosine distance.
 *
 * The default embedder ('dsp-v1') is pure DSP: the raw descriptor of dsp-features.ts, centred and scaled
 * per dimension with constants derived from real music (dsp-v1-normalisation.ts, produced by
 * bench/src/analysis-worker/derive-normalisation.ts), clipped to +-DSP_V1_CLIP and weighted by each dimension's within-track
 * reliability. Raw spectral
 * statistics share a large common component (every song has falling MFCCs, similar loudness ...), which makes
 * all songs look alike under cosine; after centring, cosine compares how a song deviates from typical music,
 * and the scaling gives every dimension a comparable voice.
 */
import { AppError } from '@polyphony/platform';
import { AudioAnalysis, FrameAnalyser } from './analysis';
import { AudioDescriptors, descriptorsFromAnalysis } from './descriptors';
import { DSP_V1_NORMALISATION } from './dsp-v1-normalisation';
import { DSP_V1_DIMENSIONS, dspV1RawFeatures } from './dsp-features';
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
 * Identity thresholds calibrated for 'dsp-v1' by bench/src/analysis-worker/identity-calibration.ts (41 Wesnoth tracks, each
 * re-encoded as MP3 128k, AAC 128k, Opus 96k and FLAC, plus a copy with the first 1.5 s cut):
 * - cosine distance original -> re-encoding: median 0.001-0.003, max 0.0104 (Opus);
 * - cosine distance between different tracks: min 0.112 (sad / transience), 1st percentile 0.184;
 * - threshold = geometric mean of the two edges, 0.034: x3.3 above the worst re-encoding and x3.3 below the
 *   closest pair of different songs. (The reference implementation's 0.01 belongs to its MusiCNN embedding
 *   and does not transfer.)
 * - duration: re-encodings change the decoded duration by at most 0.022 s (AAC priming), so the reference
 *   tolerance of 1.0 s has a x45 margin and still splits copies cut by 1.5 s.
 * The catalogue-identity service owns the configuration; these are the defaults to seed it with.
 */
export const DSP_V1_IDENTITY_CALIBRATION = Object.freeze({
  /** DUPLICATE_DISTANCE_THRESHOLD_COSINE for dsp-v1 embeddings. */
  duplicateDistanceThresholdCosine: 0.034,
  /** DURATION_TOLERANCE_SECONDS. */
  durationToleranceSeconds: 1.0,
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
  private readonly weight: Float64Array;

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
    this.weight = Float64Array.from(normalisation.weight);
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

  /**
   * The version's fixed map from raw descriptor to embedding, per dimension i:
   * out_i = weight_i * clip((raw_i - mean_i) / std_i, +-DSP_V1_CLIP), as float32.
   * Centring removes the component all music shares; scaling gives every statistic the same unit (its spread
   * over real music); the reliability weight (normalisation.ts reliabilityWeights) shrinks statistics that
   * vary within a song nearly as much as between songs. In the identity calibration the weights cut the worst
   * re-encoding distance about 7-fold (0.076 -> 0.010) while distinct songs stay above 0.11.
   */
  normalise(raw: Float64Array): Float32Array {
    return normaliseWith(raw, this.mean, this.invStd, this.weight);
  }

  private analyse(pcm: Float32Array, sampleRate: number): AudioAnalysis {
    if (pcm.length < MIN_AUDIO_SECONDS * sampleRate) throw new InsufficientAudioError(pcm.length / sampleRate);
    return this.analyser.analyse(pcm, sampleRate);
  }
}

function normaliseWith(raw: Float64Array, mean: Float64Array, invStd: Float64Array, weight: Float64Array): Float32Array {
  const out = new Float32Array(DSP_V1_DIMENSIONS);
  for (let i = 0; i < DSP_V1_DIMENSIONS; i++) {
    out[i] = weight[i]! * Math.max(-DSP_V1_CLIP, Math.min(DSP_V1_CLIP, (raw[i]! - mean[i]!) * invStd[i]!));
  }
  return out;
}

/**
 * Normalised-space transform WITHOUT the reliability weights (used to derive those weights).
 * Same formula as {@link DefaultEmbedder.normalise} with weight 1.
 */
export function unweightedNormalise(raw: ArrayLike<number>, mean: ArrayLike<number>, std: ArrayLike<number>): Float64Array {
  const out = new Float64Array(DSP_V1_DIMENSIONS);
  for (let i = 0; i < DSP_V1_DIMENSIONS; i++) {
    out[i] = Math.max(-DSP_V1_CLIP, Math.min(DSP_V1_CLIP, (raw[i]! - mean[i]!) / std[i]!));
  }
  return out;
}
