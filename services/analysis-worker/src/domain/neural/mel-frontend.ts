/**
 * MusiCNN input front end: log-compressed mel spectrogram and non-overlapping patches, computed with
 * typed arrays (no tfjs: `tf.signal.stft` has no wasm kernel and takes ~17 s per 30 s of audio on the
 * plain cpu backend).
 *
 * Conventions (chosen to reproduce the reference implementation's MusiCNN input, which calls
 * `librosa.feature.melspectrogram(y, sr=16000, n_fft=512, hop_length=256, n_mels=96, window='hann',
 * center=False, power=2.0, norm='slaney', htk=False)` and then `log10(1 + 10000 * mel)`; the original
 * musicnn package by Pons & Serra uses the same librosa defaults and log compression):
 * - input: mono PCM at 16 kHz, float samples in [-1, 1] (librosa.load scaling);
 * - frames: `center=False`, i.e. frame t covers samples [t*256, t*256 + 512), no padding, so a signal of
 *   N >= 512 samples has `1 + floor((N - 512) / 256)` frames and shorter signals have none;
 * - window: periodic Hann of length 512, `w[n] = 0.5 - 0.5 cos(2 pi n / 512)` (scipy `get_window('hann',
 *   512, fftbins=True)`, what librosa uses), not normalised;
 * - spectrum: POWER, `|X_k|^2` for k = 0..256 (257 bins), no scaling by the window sum or by N;
 * - mel scale: Slaney's Auditory Toolbox scale (librosa `htk=False`): linear below 1 kHz at 200/3 Hz per mel,
 *   logarithmic above with a step of ln(6.4)/27 per mel; fmin 0 Hz, fmax 8000 Hz (Nyquist);
 * - filters: 96 triangles between 98 mel-spaced edge frequencies, evaluated at FFT bin centres `k * sr / 512`,
 *   each scaled by `2 / (f_upper - f_lower)` (Slaney "constant area" normalisation, librosa `norm='slaney'`);
 * - compression: `log10(1 + 10000 * mel)`.
 * Essentia's `TensorflowInputMusiCNN` differs (magnitude spectrum, unit-height triangles); it is NOT what we
 * match, because stored embeddings must stay comparable with the reference implementation's.
 */

/** Fixed MusiCNN front-end parameters (units in the names). */
export const MUSICNN_FRONTEND = Object.freeze({
  /** Input sample rate, Hz. */
  sampleRateHz: 16000,
  /** FFT length and window length, samples. */
  nFft: 512,
  /** Hop between frames, samples. */
  hopSamples: 256,
  /** Number of mel bands. */
  nMels: 96,
  /** Frames per model patch (187 frames = 48 128 samples, about 3.0 s). */
  patchFrames: 187,
  /** Lowest / highest filter edge, Hz (0 and Nyquist, librosa defaults). */
  fminHz: 0,
  fmaxHz: 8000,
  /** Multiplier inside the log: `log10(1 + logScale * mel)`. */
  logScale: 10000,
});

/** Number of audio samples that make exactly `patches` MusiCNN patches: 512 + (187*patches - 1) * 256. */
export function samplesForPatches(patches: number): number {
  const { nFft, hopSamples, patchFrames } = MUSICNN_FRONTEND;
  if (!Number.isInteger(patches) || patches < 1) throw new RangeError(`patches must be a positive integer, got ${patches}`);
  return nFft + (patchFrames * patches - 1) * hopSamples;
}

/** Frames produced by a `center=False` STFT: `1 + floor((n - nFft) / hop)` when n >= nFft, else 0. */
export function frameCount(nSamples: number, nFft: number = MUSICNN_FRONTEND.nFft, hop: number = MUSICNN_FRONTEND.hopSamples): number {
  return nSamples < nFft ? 0 : 1 + Math.floor((nSamples - nFft) / hop);
}

const SLANEY_F_SP = 200 / 3; // Hz per mel on the linear part
const SLANEY_MIN_LOG_HZ = 1000;
const SLANEY_MIN_LOG_MEL = SLANEY_MIN_LOG_HZ / SLANEY_F_SP; // = 15
const SLANEY_LOGSTEP = Math.log(6.4) / 27;

/**
 * Hz to mel on Slaney's scale (Auditory Toolbox, `mel.m`; librosa `hz_to_mel(htk=False)`).
 * Linear below 1000 Hz (f / (200/3)), logarithmic above (15 + ln(f / 1000) / (ln(6.4) / 27)).
 */
export function hzToMelSlaney(hz: number): number {
  return hz >= SLANEY_MIN_LOG_HZ ? SLANEY_MIN_LOG_MEL + Math.log(hz / SLANEY_MIN_LOG_HZ) / SLANEY_LOGSTEP : hz / SLANEY_F_SP;
}

/** Inverse of {@link hzToMelSlaney}. */
export function melToHzSlaney(mel: number): number {
  return mel >= SLANEY_MIN_LOG_MEL ? SLANEY_MIN_LOG_HZ * Math.exp(SLANEY_LOGSTEP * (mel - SLANEY_MIN_LOG_MEL)) : mel * SLANEY_F_SP;
}

/** One triangular filter stored sparsely: weights for bins firstBin .. firstBin + weights.length - 1. */
export interface MelFilter {
  readonly firstBin: number;
  readonly weights: Float64Array;
}

/**
 * Slaney-normalised triangular mel filterbank (librosa `filters.mel(norm='slaney', htk=False)` semantics).
 * @param sampleRateHz sample rate, Hz
 * @param nFft FFT length; the filters span bins 0 .. nFft/2
 * @param nMels number of bands
 * @param fminHz lowest edge, Hz; @param fmaxHz highest edge, Hz (<= sampleRateHz / 2)
 * @returns nMels sparse filters, band 0 lowest. A band narrower than one bin spacing may be all zero (librosa
 *   warns in that case); with the MusiCNN parameters every band has at least one non-zero weight.
 */
export function slaneyMelFilterbank(
  sampleRateHz: number,
  nFft: number,
  nMels: number,
  fminHz = 0,
  fmaxHz = sampleRateHz / 2,
): MelFilter[] {
  if (!(fmaxHz > fminHz) || fminHz < 0 || fmaxHz > sampleRateHz / 2) {
    throw new RangeError(`invalid mel range [${fminHz}, ${fmaxHz}] Hz for sample rate ${sampleRateHz} Hz`);
  }
  const nBins = nFft / 2 + 1;
  const melLo = hzToMelSlaney(fminHz);
  const melHi = hzToMelSlaney(fmaxHz);
  const edgesHz = new Float64Array(nMels + 2);
  for (let i = 0; i < nMels + 2; i++) edgesHz[i] = melToHzSlaney(melLo + ((melHi - melLo) * i) / (nMels + 1));
  const filters: MelFilter[] = [];
  for (let m = 0; m < nMels; m++) {
    const lower = edgesHz[m]!;
    const centre = edgesHz[m + 1]!;
    const upper = edgesHz[m + 2]!;
    const area = 2 / (upper - lower);
    let first = -1;
    const w: number[] = [];
    for (let k = 0; k < nBins; k++) {
      const f = (k * sampleRateHz) / nFft;
      const rising = (f - lower) / (centre - lower);
      const falling = (upper - f) / (upper - centre);
      const v = Math.max(0, Math.min(rising, falling));
      if (v > 0) {
        if (first < 0) first = k;
        // fill gaps (cannot happen for a triangle, kept for exact indexing)
        while (first + w.length < k) w.push(0);
        w.push(v * area);
      }
    }
    filters.push({ firstBin: Math.max(first, 0), weights: Float64Array.from(w) });
  }
  return filters;
}

/** Dense [nMels][nFft/2+1] row-major copy of a sparse filterbank (for tests and inspection). */
export function denseFilterbank(filters: readonly MelFilter[], nBins: number): Float64Array {
  const out = new Float64Array(filters.length * nBins);
  filters.forEach((f, m) => out.set(f.weights, m * nBins + f.firstBin));
  return out;
}

/**
 * In-place iterative radix-2 complex FFT (Cooley-Tukey, decimation in time, forward sign e^{-2 pi i k n / N})
 * with precomputed twiddles and bit-reversal permutation. N must be a power of two >= 2.
 */
export class Radix2Fft {
  private readonly cos: Float64Array;
  private readonly sin: Float64Array;
  private readonly bitrev: Uint32Array;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 2 || (size & (size - 1)) !== 0) throw new RangeError(`FFT size must be a power of two >= 2, got ${size}`);
    this.cos = new Float64Array(size / 2);
    this.sin = new Float64Array(size / 2);
    for (let i = 0; i < size / 2; i++) {
      this.cos[i] = Math.cos((2 * Math.PI * i) / size);
      this.sin[i] = -Math.sin((2 * Math.PI * i) / size);
    }
    const bits = Math.log2(size);
    this.bitrev = new Uint32Array(size);
    for (let i = 0; i < size; i++) {
      let r = 0;
      for (let b = 0; b < bits; b++) r |= ((i >>> b) & 1) << (bits - 1 - b);
      this.bitrev[i] = r;
    }
  }

  /** Forward transform of (re, im), each of length `size`, in place. */
  transform(re: Float64Array, im: Float64Array): void {
    const n = this.size;
    if (re.length !== n || im.length !== n) throw new RangeError(`expected arrays of length ${n}`);
    for (let i = 0; i < n; i++) {
      const j = this.bitrev[i]!;
      if (j > i) {
        const tr = re[i]!;
        re[i] = re[j]!;
        re[j] = tr;
        const ti = im[i]!;
        im[i] = im[j]!;
        im[j] = ti;
      }
    }
    for (let len = 2; len <= n; len <<= 1) {
      const half = len >>> 1;
      const step = n / len;
      for (let start = 0; start < n; start += len) {
        for (let k = 0; k < half; k++) {
          const wr = this.cos[k * step]!;
          const wi = this.sin[k * step]!;
          const a = start + k;
          const b = a + half;
          const br = re[b]!;
          const bi = im[b]!;
          const xr = br * wr - bi * wi;
          const xi = br * wi + bi * wr;
          re[b] = re[a]! - xr;
          im[b] = im[a]! - xi;
          re[a] = re[a]! + xr;
          im[a] = im[a]! + xi;
        }
      }
    }
  }
}

/** Periodic Hann window of length n: `0.5 - 0.5 cos(2 pi i / n)` (scipy `get_window('hann', n, fftbins=True)`). */
export function periodicHann(n: number): Float64Array {
  const w = new Float64Array(n);
  for (let i = 0; i < n; i++) w[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / n);
  return w;
}

/** Log-mel spectrogram, time-major: value of frame t, band m at `data[t * nMels + m]`. */
export interface LogMelSpectrogram {
  readonly frames: number;
  readonly nMels: number;
  readonly data: Float32Array;
}

/**
 * MusiCNN front end, reusable across calls (holds the window, FFT tables and filterbank; not thread-shared
 * state beyond scratch buffers, so use one instance per concurrent caller).
 */
export class MusicnnMelFrontend {
  private readonly window = periodicHann(MUSICNN_FRONTEND.nFft);
  private readonly fft = new Radix2Fft(MUSICNN_FRONTEND.nFft);
  private readonly filters = slaneyMelFilterbank(
    MUSICNN_FRONTEND.sampleRateHz,
    MUSICNN_FRONTEND.nFft,
    MUSICNN_FRONTEND.nMels,
    MUSICNN_FRONTEND.fminHz,
    MUSICNN_FRONTEND.fmaxHz,
  );
  private readonly re = new Float64Array(MUSICNN_FRONTEND.nFft);
  private readonly im = new Float64Array(MUSICNN_FRONTEND.nFft);
  private readonly power = new Float64Array(MUSICNN_FRONTEND.nFft / 2 + 1);

  /** The sparse filterbank in use (96 Slaney filters over 257 bins). */
  get filterbank(): readonly MelFilter[] {
    return this.filters;
  }

  /**
   * `log10(1 + 10000 * mel_power)` for every complete frame of `pcm`.
   * @param pcm mono samples at 16 kHz, float in [-1, 1]
   * @returns time-major [frames][96] float32 (frames = {@link frameCount}(pcm.length); 0 for < 512 samples)
   */
  logMel(pcm: Float32Array): LogMelSpectrogram {
    const { nFft, hopSamples, nMels, logScale } = MUSICNN_FRONTEND;
    const frames = frameCount(pcm.length, nFft, hopSamples);
    const out = new Float32Array(frames * nMels);
    const { re, im, power, window, filters } = this;
    const nBins = nFft / 2 + 1;
    for (let t = 0; t < frames; t++) {
      const off = t * hopSamples;
      for (let i = 0; i < nFft; i++) re[i] = pcm[off + i]! * window[i]!;
      im.fill(0);
      this.fft.transform(re, im);
      for (let k = 0; k < nBins; k++) power[k] = re[k]! * re[k]! + im[k]! * im[k]!;
      const row = t * nMels;
      for (let m = 0; m < nMels; m++) {
        const f = filters[m]!;
        let acc = 0;
        for (let j = 0; j < f.weights.length; j++) acc += f.weights[j]! * power[f.firstBin + j]!;
        out[row + m] = Math.log10(1 + logScale * acc);
      }
    }
    return { frames, nMels, data: out };
  }
}

/** Non-overlapping patches cut from a log-mel spectrogram: patch-major [count][187][96], float32. */
export interface MelPatches {
  readonly count: number;
  readonly patchFrames: number;
  readonly nMels: number;
  /** count * patchFrames * nMels values; patch p starts at p * patchFrames * nMels. */
  readonly data: Float32Array;
}

/**
 * Cuts `floor(frames / 187)` non-overlapping patches from the start of the spectrogram; trailing frames that
 * do not fill a patch are dropped (reference implementation behaviour: a track shorter than one patch yields
 * no patch). Zero-copy: `data` is a view on `spec.data`.
 */
export function toPatches(spec: LogMelSpectrogram, patchFrames: number = MUSICNN_FRONTEND.patchFrames): MelPatches {
  const count = Math.floor(spec.frames / patchFrames);
  return { count, patchFrames, nMels: spec.nMels, data: spec.data.subarray(0, count * patchFrames * spec.nMels) };
}
