/**
 * Mel filterbank and DCT-II, the two linear maps behind log-mel and MFCC features.
 *
 * Mel scales:
 * - Slaney (Auditory Toolbox, M. Slaney 1998; librosa `htk=False`, the default): linear below 1 kHz at
 *   200/3 Hz per mel, logarithmic above with a step of ln(6.4)/27 per mel.
 * - HTK (Young et al., The HTK Book; librosa `htk=True`): mel = 2595 log10(1 + f / 700).
 * Filters are triangles between consecutive mel-spaced edge frequencies, evaluated at the FFT bin centres
 * k * sampleRate / nFft (librosa.filters.mel). With `norm: 'slaney'` each triangle is scaled by
 * 2 / (f_upper - f_lower) so every filter has unit area in Hz ("constant area", librosa `norm='slaney'`);
 * with `norm: 'none'` triangles have unit height and overlapping filters sum to 1 between the first and
 * last centre frequency.
 */

const SLANEY_F_SP = 200 / 3;
const SLANEY_MIN_LOG_HZ = 1000;
const SLANEY_MIN_LOG_MEL = SLANEY_MIN_LOG_HZ / SLANEY_F_SP;
const SLANEY_LOGSTEP = Math.log(6.4) / 27;

/** Hz -> mel on the Slaney (default) or HTK scale. */
export function hzToMel(hz: number, htk = false): number {
  if (htk) return 2595 * Math.log10(1 + hz / 700);
  if (hz < SLANEY_MIN_LOG_HZ) return hz / SLANEY_F_SP;
  return SLANEY_MIN_LOG_MEL + Math.log(hz / SLANEY_MIN_LOG_HZ) / SLANEY_LOGSTEP;
}

/** mel -> Hz, inverse of {@link hzToMel}. */
export function melToHz(mel: number, htk = false): number {
  if (htk) return 700 * (Math.pow(10, mel / 2595) - 1);
  if (mel < SLANEY_MIN_LOG_MEL) return mel * SLANEY_F_SP;
  return SLANEY_MIN_LOG_HZ * Math.exp(SLANEY_LOGSTEP * (mel - SLANEY_MIN_LOG_MEL));
}

/** Options of {@link MelFilterbank}. Frequencies in Hz. */
export interface MelFilterbankOptions {
  sampleRate: number;
  /** FFT length the power spectra come from; the bank reads nFft/2 + 1 bins. */
  nFft: number;
  nMels: number;
  fMin?: number;
  /** Default: Nyquist. */
  fMax?: number;
  /** HTK scale instead of Slaney's. Default false. */
  htk?: boolean;
  /** 'slaney' (unit area, default) or 'none' (unit height). */
  norm?: 'slaney' | 'none';
}

/**
 * A mel filterbank stored sparsely: filter b covers bins [start[b], start[b] + weights[b].length).
 * `apply` costs about two multiply-adds per FFT bin, not nMels * bins.
 */
export class MelFilterbank {
  readonly nMels: number;
  readonly nBins: number;
  /** Centre frequency of every filter, Hz. */
  readonly centresHz: Float64Array;
  private readonly start: Int32Array;
  private readonly weights: Float64Array[];

  /** @throws RangeError on non-positive sizes or fMax above Nyquist / not above fMin. */
  constructor(options: MelFilterbankOptions) {
    const { sampleRate, nFft, nMels } = options;
    const fMin = options.fMin ?? 0;
    const fMax = options.fMax ?? sampleRate / 2;
    const htk = options.htk ?? false;
    const norm = options.norm ?? 'slaney';
    if (!(sampleRate > 0) || !(nFft > 0) || !(nMels > 0)) throw new RangeError('sampleRate, nFft and nMels must be positive');
    if (!(fMax > fMin) || fMax > sampleRate / 2 + 1e-9 || fMin < 0) throw new RangeError(`invalid mel range ${fMin}..${fMax} Hz`);
    this.nMels = nMels;
    this.nBins = Math.floor(nFft / 2) + 1;
    const melMin = hzToMel(fMin, htk);
    const melMax = hzToMel(fMax, htk);
    const edges = new Float64Array(nMels + 2);
    for (let i = 0; i < nMels + 2; i++) edges[i] = melToHz(melMin + ((melMax - melMin) * i) / (nMels + 1), htk);
    this.centresHz = edges.slice(1, nMels + 1);
    this.start = new Int32Array(nMels);
    this.weights = [];
    for (let b = 0; b < nMels; b++) {
      const lo = edges[b]!;
      const mid = edges[b + 1]!;
      const hi = edges[b + 2]!;
      const scale = norm === 'slaney' ? 2 / (hi - lo) : 1;
      let first = -1;
      let last = -1;
      const w = new Float64Array(this.nBins);
      for (let k = 0; k < this.nBins; k++) {
        const f = (k * sampleRate) / nFft;
        const rising = (f - lo) / (mid - lo);
        const falling = (hi - f) / (hi - mid);
        const v = Math.max(0, Math.min(rising, falling));
        if (v > 0) {
          if (first < 0) first = k;
          last = k;
          w[k] = v * scale;
        }
      }
      // A filter narrower than one bin has no support: keep the nearest bin so the band is never empty.
      if (first < 0) {
        first = Math.min(this.nBins - 1, Math.round((mid * nFft) / sampleRate));
        last = first;
        w[first] = scale;
      }
      this.start[b] = first;
      this.weights.push(w.slice(first, last + 1));
    }
  }

  /**
   * out[b] = sum_k W[b][k] * spectrum[k].
   * @param spectrum nFft/2 + 1 values (power or magnitude).
   * @param out nMels values.
   */
  apply(spectrum: ArrayLike<number>, out: Float64Array | Float32Array, outOffset = 0): void {
    for (let b = 0; b < this.nMels; b++) {
      const w = this.weights[b]!;
      const s = this.start[b]!;
      let acc = 0;
      for (let i = 0; i < w.length; i++) acc += w[i]! * spectrum[s + i]!;
      out[outOffset + b] = acc;
    }
  }

  /** Dense weight of filter `band` at FFT bin `bin` (0 outside its support); for tests and plots. */
  weight(band: number, bin: number): number {
    const s = this.start[band];
    const w = this.weights[band];
    if (s === undefined || w === undefined) throw new RangeError(`band ${band} out of range`);
    const i = bin - s;
    return i >= 0 && i < w.length ? w[i]! : 0;
  }
}

/**
 * Orthonormal DCT-II matrix (scipy.fft.dct(type=2, norm='ortho'), what librosa.feature.mfcc uses):
 * C[j][i] = s_j cos(pi j (2i + 1) / (2 nIn)), s_0 = sqrt(1/nIn), s_j = sqrt(2/nIn).
 * @returns row-major Float64Array of nOut x nIn.
 */
export function dctIIMatrix(nIn: number, nOut: number): Float64Array {
  if (nOut > nIn || nOut < 1) throw new RangeError(`dctIIMatrix needs 1 <= nOut <= nIn, got ${nOut} / ${nIn}`);
  const m = new Float64Array(nOut * nIn);
  for (let j = 0; j < nOut; j++) {
    const s = j === 0 ? Math.sqrt(1 / nIn) : Math.sqrt(2 / nIn);
    for (let i = 0; i < nIn; i++) m[j * nIn + i] = s * Math.cos((Math.PI * j * (2 * i + 1)) / (2 * nIn));
  }
  return m;
}
