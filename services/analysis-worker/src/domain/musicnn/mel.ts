/**
 * MusiCNN input front end, exactly as the published networks were trained (../shared/models/musicnn/README.md,
 * "Input pipeline"; musicnn's extractor calls `librosa.feature.melspectrogram(y, sr=16000, hop_length=256,
 * n_fft=512, n_mels=96)` with librosa's defaults of the time, then `np.log10(10000 * mel + 1)`):
 * - mono PCM at 16 kHz, samples in [-1, 1];
 * - STFT n_fft 512, hop 256, periodic Hann window, centred: the signal is padded by 256 samples on each
 *   side by reflection (numpy `reflect`, the edge sample not repeated), so N samples give 1 + floor(N / 256)
 *   frames; power spectrum |X_k|^2, k = 0..256, unscaled;
 * - 96 triangular mel filters, Slaney scale (linear to 1 kHz at 200/3 Hz per mel, logarithmic above with
 *   step ln(6.4)/27), edges from 0 Hz to 8000 Hz, each scaled by 2 / (f_upper - f_lower) (Slaney "constant
 *   area", librosa `norm='slaney'`), evaluated at bin frequencies k * 16000 / 512;
 * - compression log10(1 + 10000 * mel);
 * - patches of 187 consecutive frames (about 3 s), non-overlapping from frame 0 (musicnn's default step).
 * Arithmetic is float64 (FFT of @polyphony/vectors fft.ts); the result is stored as float32, the network's input type.
 */
import { RealFft, hannWindow } from '@polyphony/vectors';

/** Fixed front-end parameters (units in the names). */
export const MUSICNN_INPUT = Object.freeze({
  sampleRateHz: 16000,
  nFft: 512,
  hopSamples: 256,
  nMels: 96,
  fmaxHz: 8000,
  logScale: 10000,
  /** Frames per network patch (187 x 256 samples = 2.99 s). */
  patchFrames: 187,
});

const F_SP = 200 / 3;
const MIN_LOG_HZ = 1000;
const MIN_LOG_MEL = MIN_LOG_HZ / F_SP;
const LOGSTEP = Math.log(6.4) / 27;

/** Slaney mel of a frequency in Hz (librosa `hz_to_mel(htk=False)`). */
export function hzToMel(hz: number): number {
  return hz >= MIN_LOG_HZ ? MIN_LOG_MEL + Math.log(hz / MIN_LOG_HZ) / LOGSTEP : hz / F_SP;
}

/** Inverse of {@link hzToMel}. */
export function melToHz(mel: number): number {
  return mel >= MIN_LOG_MEL ? MIN_LOG_HZ * Math.exp(LOGSTEP * (mel - MIN_LOG_MEL)) : F_SP * mel;
}

/** The 96 x 257 Slaney filter bank, row-major (filter m, bin k). */
export function slaneyMelFilterbank(): Float64Array {
  const { nMels, nFft, sampleRateHz, fmaxHz } = MUSICNN_INPUT;
  const bins = nFft / 2 + 1;
  const top = hzToMel(fmaxHz);
  const edges = new Float64Array(nMels + 2);
  for (let i = 0; i < nMels + 2; i++) edges[i] = melToHz((top * i) / (nMels + 1));
  const w = new Float64Array(nMels * bins);
  for (let m = 0; m < nMels; m++) {
    const lo = edges[m]!;
    const mid = edges[m + 1]!;
    const hi = edges[m + 2]!;
    const norm = 2 / (hi - lo);
    for (let k = 0; k < bins; k++) {
      const f = (k * sampleRateHz) / nFft;
      const v = Math.max(0, Math.min((f - lo) / (mid - lo), (hi - f) / (hi - mid)));
      w[m * bins + k] = v * norm;
    }
  }
  return w;
}

/** Frame-major log-mel spectrogram: `data[t * 96 + m]`. */
export interface LogMel {
  frames: number;
  data: Float32Array;
}

/** Frames of a centred STFT of n samples: 1 + floor(n / hop). */
export function centredFrameCount(n: number): number {
  return 1 + Math.floor(n / MUSICNN_INPUT.hopSamples);
}

/**
 * Frames of an uncentred STFT of n samples (librosa `center=False`, as the reference implementation computes its
 * MusiCNN input): frame t covers samples [t * hop, t * hop + n_fft), so 1 + floor((n - n_fft) / hop), 0 when n < n_fft.
 */
export function uncentredFrameCount(n: number): number {
  const { nFft, hopSamples } = MUSICNN_INPUT;
  return n < nFft ? 0 : 1 + Math.floor((n - nFft) / hopSamples);
}

/**
 * Computes the MusiCNN log-mel spectrogram. Reusable buffers: one instance per worker (not thread-safe).
 */
export class MusicnnMelFrontend {
  private readonly fft = new RealFft(MUSICNN_INPUT.nFft);
  private readonly window = hannWindow(MUSICNN_INPUT.nFft);
  private readonly bank = slaneyMelFilterbank();
  private readonly frame = new Float64Array(MUSICNN_INPUT.nFft);
  private readonly power = new Float64Array(MUSICNN_INPUT.nFft / 2 + 1);
  /** First and last non-zero bin of each filter (skips the zeros of the bank). */
  private readonly span: Int32Array;

  constructor() {
    const bins = MUSICNN_INPUT.nFft / 2 + 1;
    this.span = new Int32Array(2 * MUSICNN_INPUT.nMels);
    for (let m = 0; m < MUSICNN_INPUT.nMels; m++) {
      let a = bins;
      let b = -1;
      for (let k = 0; k < bins; k++) {
        if (this.bank[m * bins + k]! > 0) {
          a = Math.min(a, k);
          b = k;
        }
      }
      this.span[2 * m] = a;
      this.span[2 * m + 1] = b;
    }
  }

  /**
   * @param pcm mono samples at 16 kHz; at least 257 samples (reflection padding needs n > 256)
   * @param frameRange optional [first, end) frame range to compute (default all frames); frames outside are 0
   * @param centred true (default): musicnn's centred STFT (reflection padding); false: librosa `center=False`, the
   *   reference implementation's front end (no padding; {@link uncentredFrameCount} frames)
   * @returns frame-major log-mel, `centredFrameCount(pcm.length)` (or `uncentredFrameCount`) frames of 96 bands
   * @throws RangeError when pcm has 256 samples or fewer (centred) or fewer than 512 (uncentred)
   */
  compute(pcm: Float32Array, frameRange?: ReadonlyArray<readonly [number, number]>, centred = true): LogMel {
    const { nFft, hopSamples, nMels, logScale } = MUSICNN_INPUT;
    const n = pcm.length;
    const pad = centred ? nFft / 2 : 0;
    if (centred ? n <= pad : n < nFft) throw new RangeError(`MusiCNN front end needs more than ${centred ? pad : nFft - 1} samples, got ${n}`);
    const frames = centred ? centredFrameCount(n) : uncentredFrameCount(n);
    const data = new Float32Array(frames * nMels);
    const bins = nFft / 2 + 1;
    const ranges = frameRange ?? [[0, frames]];
    for (const [first, end] of ranges) {
      for (let t = Math.max(0, first); t < Math.min(frames, end); t++) {
        const start = t * hopSamples - pad;
        for (let j = 0; j < nFft; j++) {
          let i = start + j;
          if (i < 0) i = -i; // reflect (edge not repeated)
          else if (i >= n) i = 2 * (n - 1) - i;
          this.frame[j] = pcm[i]! * this.window[j]!;
        }
        this.fft.power(this.frame, this.power);
        for (let m = 0; m < nMels; m++) {
          let s = 0;
          const row = m * bins;
          for (let k = this.span[2 * m]!; k <= this.span[2 * m + 1]!; k++) s += this.bank[row + k]! * this.power[k]!;
          data[t * nMels + m] = Math.log10(1 + logScale * s);
        }
      }
    }
    return { frames, data };
  }
}

/**
 * Start frames of the patches to run: the non-overlapping 187-frame patches from frame 0 (the trailing
 * partial patch dropped, as musicnn does), or when `maxPatches` is smaller than their number, `maxPatches`
 * of them spread evenly over the track (patch index round(i * (P - 1) / (K - 1))). A track shorter than
 * one patch yields [0] (the caller tiles its frames, see {@link patchTensorData}).
 */
export function patchStarts(frames: number, maxPatches = Infinity): number[] {
  const p = MUSICNN_INPUT.patchFrames;
  const total = Math.max(1, Math.floor(frames / p));
  const k = Math.min(total, Math.max(1, Math.floor(maxPatches)));
  if (k === total) return Array.from({ length: total }, (_, i) => i * p);
  if (k === 1) return [Math.floor((total - 1) / 2) * p];
  return Array.from({ length: k }, (_, i) => Math.round((i * (total - 1)) / (k - 1)) * p);
}

/**
 * Copies the patches starting at `starts` into one [patches, 187, 96] float32 block. Frames past the end of
 * a short track wrap around to its start (tiling), so audio shorter than 3 s still fills one patch.
 */
export function patchTensorData(mel: LogMel, starts: readonly number[]): Float32Array {
  const { patchFrames, nMels } = MUSICNN_INPUT;
  const out = new Float32Array(starts.length * patchFrames * nMels);
  starts.forEach((s, b) => {
    for (let t = 0; t < patchFrames; t++) {
      const src = ((s + t) % mel.frames) * nMels;
      out.set(mel.data.subarray(src, src + nMels), (b * patchFrames + t) * nMels);
    }
  });
  return out;
}

/** Frame ranges covered by the patches at `starts` (for {@link MusicnnMelFrontend.compute}). */
export function patchFrameRanges(starts: readonly number[]): Array<[number, number]> {
  return starts.map((s) => [s, s + MUSICNN_INPUT.patchFrames] as [number, number]);
}
