/**
 * The raw 200-dimensional track descriptor of the default embedder ('dsp-v1'): statistics of timbre,
 * loudness, harmony and rhythm pooled over the analysed regions (analysis.ts). The values are in natural
 * units (dB, log2 Hz, log standard deviations, fractions); embedder.ts centres and scales them.
 *
 * Layout (index ranges are [start, end)):
 * | block        | dims | content |
 * |--------------|------|---------|
 * | mfcc_mean    | 20   | mean of MFCC 0..19 over audible frames |
 * | mfcc_std     | 20   | ln(std + 1e-3) of MFCC 0..19 |
 * | dmfcc_std    | 20   | ln(std + 1e-3) of the MFCC central difference (c[t+1] - c[t-1]) / 2 |
 * | mel_mean     | 16   | mean log-mel (dB) of 16 groups of 4 adjacent mel bands |
 * | mel_std      | 16   | ln(std + 1e-3) of the same |
 * | spectral     | 10   | mean and ln std of log2 centroid, log2 bandwidth, log2 roll-off (Hz), flatness (dB), ln zero-crossing rate |
 * | contrast     | 14   | mean and ln std of the 7 spectral-contrast bands (dB) |
 * | loudness     | 6    | RMS dB of audible frames: mean, ln std, p10, p50, p90, fraction below p90 - 20 dB |
 * | chroma_dft   | 6    | |DFT_k| k = 1..6 of the mean chroma scaled to sum 1 (transposition invariant) |
 * | intervals    | 6    | mean over frames of the circular autocorrelation of the sum-1 chroma at 1..6 semitones |
 * | mfcc_texture | 12   | ln(std + 1e-3) over ~1 s texture windows (32 frames) of the window-mean MFCC 0..11 |
 * | frame_sort   | 12   | mean over frames of each sum-1 chroma frame sorted descending |
 * | tonality     | 5    | key strength, major-minor margin, chroma flux mean and ln std, chroma entropy mean |
 * | onset        | 3    | ln mean, ln std of onset strength, pulse clarity (autocorrelation at the tempo lag) |
 * | tempo        | 2    | soft circular tempo (rhythm.ts circularTempo): tempo on a circle where doubling is a full |
 * |              |      | turn, averaged over all candidate lags, so octave errors and close tempo peaks do not jump |
 * | onset_acf    | 16   | onset autocorrelation at 16 log-spaced lags from 0.125 s to 2 s |
 * | modulation   | 16   | log10 modulation power of 4 mel-band groups (bands 0-15, 16-31, 32-47, 48-63) in 0.5-1, 1-2, 2-4, 4-8 Hz |
 * Transposition-invariant harmony features are used instead of raw chroma, so that two performances in
 * different keys, or an unstable key estimate, do not move the vector; MFCC/contrast/modulation statistics
 * follow G. Tzanetakis & P. Cook, "Musical genre classification of audio signals", IEEE TSAP 2002, and the
 * long-term "texture window" variability follows Tzanetakis & Cook's texture windows; the
 * modulation features T. Lidy & A. Rauber, "Evaluation of feature extractors and psycho-acoustic
 * transformations for music genre classification", ISMIR 2005 (rhythm patterns).
 */
import { ANALYSIS_PARAMS, AudioAnalysis, FRAME_GATE_DB, N_CONTRAST } from './analysis';
import { hannWindow, RealFft } from '@polyphony/vectors';
import { circularTempo, sampleAutocorrelation } from './rhythm';
import { chromaFrames, MAX_RHYTHM_LAG_SECONDS, onsetAutocorrelation, trackKey, trackTempo } from './track-summary';

/** A named range of descriptor dimensions. */
export interface FeatureBlock {
  name: string;
  start: number;
  length: number;
}

const BLOCK_SIZES: ReadonlyArray<readonly [string, number]> = [
  ['mfcc_mean', 20],
  ['mfcc_std', 20],
  ['dmfcc_std', 20],
  ['mel_mean', 16],
  ['mel_std', 16],
  ['spectral', 10],
  ['contrast', 14],
  ['loudness', 6],
  ['chroma_dft', 6],
  ['intervals', 6],
  ['mfcc_texture', 12],
  ['frame_sort', 12],
  ['tonality', 5],
  ['onset', 3],
  ['tempo', 2],
  ['onset_acf', 16],
  ['modulation', 16],
];

/** Block layout of the raw descriptor, in order. */
export const DSP_V1_BLOCKS: ReadonlyArray<FeatureBlock> = Object.freeze(
  BLOCK_SIZES.reduce<FeatureBlock[]>((acc, [name, length]) => {
    const prev = acc[acc.length - 1];
    acc.push(Object.freeze({ name, start: prev ? prev.start + prev.length : 0, length }));
    return acc;
  }, []),
);

/** Number of descriptor dimensions (200). */
export const DSP_V1_DIMENSIONS = 200;

const STD_EPS = 1e-3;
const MEL_GROUP = 4;
const MOD_FFT = 256;
const MOD_HOP = 128;
const MOD_BANDS_HZ: ReadonlyArray<readonly [number, number]> = [
  [0.5, 1],
  [1, 2],
  [2, 4],
  [4, 8],
];
const MOD_GROUPS = 4;
const ACF_LAGS = 16;
const TEXTURE_FRAMES = 32;
const TEXTURE_COEFFS = 12;
const ACF_MIN_LAG_SECONDS = 0.125;

/** Running mean and variance (Welford), deterministic for a fixed insertion order. */
class Moments {
  n = 0;
  private m = 0;
  private s = 0;
  add(x: number): void {
    this.n++;
    const d = x - this.m;
    this.m += d / this.n;
    this.s += d * (x - this.m);
  }
  get mean(): number {
    return this.n > 0 ? this.m : 0;
  }
  get std(): number {
    return this.n > 1 ? Math.sqrt(this.s / this.n) : 0;
  }
}

function lnStd(m: Moments): number {
  return Math.log(m.std + STD_EPS);
}

/** Percentile (linear interpolation, numpy 'linear') of a sorted array. */
function percentileSorted(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  const pos = (sorted.length - 1) * q;
  const i = Math.floor(pos);
  const f = pos - i;
  return i + 1 < sorted.length ? sorted[i]! * (1 - f) + sorted[i + 1]! * f : sorted[i]!;
}

/** Reusable helper for the modulation spectrum (owns an FFT and buffers). */
class ModulationSpectrum {
  private readonly fft = new RealFft(MOD_FFT);
  private readonly window = hannWindow(MOD_FFT);
  private readonly buf = new Float64Array(MOD_FFT);
  private readonly pow = new Float64Array(MOD_FFT / 2 + 1);
  private readonly bandBins: Array<[number, number]>;
  readonly sums = new Float64Array(MOD_GROUPS * MOD_BANDS_HZ.length);
  count = 0;

  constructor(frameRate: number) {
    this.bandBins = MOD_BANDS_HZ.map(([lo, hi]) => [Math.ceil((lo * MOD_FFT) / frameRate), Math.ceil((hi * MOD_FFT) / frameRate) - 1]);
  }

  /** Adds the Welch segments of one region's band-group envelopes. */
  addRegion(logMel: Float32Array, nFrames: number, nMels: number): void {
    const groupSize = nMels / MOD_GROUPS;
    const env = new Float64Array(MOD_GROUPS * nFrames);
    for (let t = 0; t < nFrames; t++) {
      for (let g = 0; g < MOD_GROUPS; g++) {
        let acc = 0;
        for (let b = g * groupSize; b < (g + 1) * groupSize; b++) acc += logMel[t * nMels + b]!;
        env[g * nFrames + t] = acc / groupSize;
      }
    }
    const starts: number[] = [];
    if (nFrames <= MOD_FFT) starts.push(0);
    else for (let s = 0; s + MOD_FFT <= nFrames; s += MOD_HOP) starts.push(s);
    for (const s of starts) {
      const len = Math.min(MOD_FFT, nFrames - s);
      if (len < 32) continue;
      for (let g = 0; g < MOD_GROUPS; g++) {
        let mean = 0;
        for (let i = 0; i < len; i++) mean += env[g * nFrames + s + i]!;
        mean /= len;
        for (let i = 0; i < MOD_FFT; i++) this.buf[i] = i < len ? (env[g * nFrames + s + i]! - mean) * this.window[i]! : 0;
        this.fft.power(this.buf, this.pow);
        for (let m = 0; m < this.bandBins.length; m++) {
          const [lo, hi] = this.bandBins[m]!;
          let acc = 0;
          for (let k = lo; k <= hi; k++) acc += this.pow[k]!;
          const idx = g * MOD_BANDS_HZ.length + m;
          this.sums[idx] = this.sums[idx]! + acc / (hi - lo + 1) / MOD_FFT;
        }
      }
      this.count++;
    }
  }
}

/**
 * Computes the raw 200-d 'dsp-v1' descriptor of an analysis (layout in {@link DSP_V1_BLOCKS}).
 * Every value is finite: empty statistics (no audible frame, no pulse) fall back to fixed neutral values.
 * @returns Float64Array of length 200.
 */
export function dspV1RawFeatures(analysis: AudioAnalysis): Float64Array {
  const { nMels, nMfcc } = ANALYSIS_PARAMS;
  const out = new Float64Array(DSP_V1_DIMENSIONS);
  let o = 0;
  const put = (v: number): void => {
    out[o++] = Number.isFinite(v) ? v : 0;
  };

  // Audible frames; if (almost) none, all frames.
  let audible = 0;
  let totalFrames = 0;
  for (const r of analysis.regions) {
    totalFrames += r.nFrames;
    for (let t = 0; t < r.nFrames; t++) if (r.rmsDb[t]! >= FRAME_GATE_DB) audible++;
  }
  const useAll = audible < 10;
  const keep = (r: AudioAnalysis['regions'][number], t: number): boolean => useAll || r.rmsDb[t]! >= FRAME_GATE_DB;

  const mfcc = Array.from({ length: nMfcc }, () => new Moments());
  const dmfcc = Array.from({ length: nMfcc }, () => new Moments());
  const nGroups = nMels / MEL_GROUP;
  const mel = Array.from({ length: nGroups }, () => new Moments());
  const spectral = Array.from({ length: 5 }, () => new Moments());
  const contrast = Array.from({ length: N_CONTRAST }, () => new Moments());
  const loud = new Moments();
  const loudValues = new Float64Array(totalFrames);
  let nLoud = 0;
  const texture = Array.from({ length: TEXTURE_COEFFS }, () => new Moments());
  const textureSum = new Float64Array(TEXTURE_COEFFS);
  const onsetMoments = new Moments();
  const modulation = new ModulationSpectrum(analysis.frameRate);

  for (const r of analysis.regions) {
    for (let t = 0; t < r.nFrames; t++) {
      if (!keep(r, t)) continue;
      const mo = t * nMfcc;
      for (let j = 0; j < nMfcc; j++) mfcc[j]!.add(r.mfcc[mo + j]!);
      if (t > 0 && t + 1 < r.nFrames) {
        for (let j = 0; j < nMfcc; j++) dmfcc[j]!.add(0.5 * (r.mfcc[mo + nMfcc + j]! - r.mfcc[mo - nMfcc + j]!));
      }
      const lo = t * nMels;
      for (let g = 0; g < nGroups; g++) {
        let acc = 0;
        for (let b = 0; b < MEL_GROUP; b++) acc += r.logMel[lo + g * MEL_GROUP + b]!;
        mel[g]!.add(acc / MEL_GROUP);
      }
      spectral[0]!.add(Math.log2(r.centroidHz[t]! + 1));
      spectral[1]!.add(Math.log2(r.bandwidthHz[t]! + 1));
      spectral[2]!.add(Math.log2(r.rolloffHz[t]! + 1));
      spectral[3]!.add(r.flatnessDb[t]!);
      spectral[4]!.add(Math.log(r.zcr[t]! + 1e-4));
      for (let c = 0; c < N_CONTRAST; c++) contrast[c]!.add(r.contrastDb[t * N_CONTRAST + c]!);
      loud.add(r.rmsDb[t]!);
      loudValues[nLoud++] = r.rmsDb[t]!;
    }
    for (let s = 0; s + TEXTURE_FRAMES <= r.nFrames; s += TEXTURE_FRAMES) {
      textureSum.fill(0);
      let n = 0;
      for (let t = s; t < s + TEXTURE_FRAMES; t++) {
        if (!keep(r, t)) continue;
        n++;
        for (let j = 0; j < TEXTURE_COEFFS; j++) textureSum[j] = textureSum[j]! + r.mfcc[t * nMfcc + j]!;
      }
      if (n * 2 <= TEXTURE_FRAMES) continue;
      for (let j = 0; j < TEXTURE_COEFFS; j++) texture[j]!.add(textureSum[j]! / n);
    }
    for (let t = 1; t < r.nFrames; t++) onsetMoments.add(r.onset[t]!);
    modulation.addRegion(r.logMel, r.nFrames, nMels);
  }

  // Timbre.
  for (const m of mfcc) put(m.mean);
  for (const m of mfcc) put(lnStd(m));
  for (const m of dmfcc) put(lnStd(m));
  for (const m of mel) put(m.mean);
  for (const m of mel) put(lnStd(m));
  for (const m of spectral) {
    put(m.mean);
    put(lnStd(m));
  }
  for (const m of contrast) put(m.mean);
  for (const m of contrast) put(lnStd(m));

  // Loudness.
  const sortedLoud = loudValues.subarray(0, nLoud).sort();
  const p90 = percentileSorted(sortedLoud, 0.9);
  let quiet = 0;
  for (let i = 0; i < nLoud; i++) if (sortedLoud[i]! < p90 - 20) quiet++;
  put(nLoud > 0 ? loud.mean : -100);
  put(lnStd(loud));
  put(nLoud > 0 ? percentileSorted(sortedLoud, 0.1) : -100);
  put(nLoud > 0 ? percentileSorted(sortedLoud, 0.5) : -100);
  put(nLoud > 0 ? p90 : -100);
  put(nLoud > 0 ? quiet / nLoud : 0);

  // Harmony.
  const chroma = chromaFrames(analysis);
  const meanSum = chroma.mean.reduce((a, b) => a + b, 0);
  const mHat = new Float64Array(12);
  for (let p = 0; p < 12; p++) mHat[p] = meanSum > 0 ? chroma.mean[p]! / meanSum : 1 / 12;
  for (let k = 1; k <= 6; k++) {
    let re = 0;
    let im = 0;
    for (let p = 0; p < 12; p++) {
      re += mHat[p]! * Math.cos((2 * Math.PI * k * p) / 12);
      im -= mHat[p]! * Math.sin((2 * Math.PI * k * p) / 12);
    }
    put(Math.sqrt(re * re + im * im));
  }
  const intervals = new Float64Array(6);
  const frameSorted = new Float64Array(12);
  const entropy = new Moments();
  const flux = new Moments();
  const cHat = new Float64Array(12);
  const prev = new Float64Array(12);
  const sortBuf = new Float64Array(12);
  for (let f = 0; f < chroma.count; f++) {
    let sum = 0;
    for (let p = 0; p < 12; p++) sum += chroma.frames[f * 12 + p]!;
    for (let p = 0; p < 12; p++) cHat[p] = chroma.frames[f * 12 + p]! / sum;
    for (let l = 1; l <= 6; l++) {
      let acc = 0;
      for (let p = 0; p < 12; p++) acc += cHat[p]! * cHat[(p + l) % 12]!;
      intervals[l - 1] = intervals[l - 1]! + acc;
    }
    sortBuf.set(cHat);
    sortBuf.sort().reverse();
    for (let p = 0; p < 12; p++) frameSorted[p] = frameSorted[p]! + sortBuf[p]!;
    let h = 0;
    for (let p = 0; p < 12; p++) if (cHat[p]! > 0) h -= cHat[p]! * Math.log(cHat[p]!);
    entropy.add(h / Math.log(12));
    if (f > 0) {
      let dot = 0;
      let na = 0;
      let nb = 0;
      for (let p = 0; p < 12; p++) {
        dot += cHat[p]! * prev[p]!;
        na += cHat[p]! * cHat[p]!;
        nb += prev[p]! * prev[p]!;
      }
      flux.add(1 - dot / Math.sqrt(na * nb));
    }
    prev.set(cHat);
  }
  const nc = Math.max(1, chroma.count);
  for (let l = 0; l < 6; l++) put(chroma.count > 0 ? intervals[l]! / nc : 1 / 12);
  for (const m of texture) put(lnStd(m));
  for (let p = 0; p < 12; p++) put(chroma.count > 0 ? frameSorted[p]! / nc : 1 / 12);
  const key = trackKey(chroma);
  put(key.strength);
  put(key.modeMargin);
  put(flux.mean);
  put(lnStd(flux));
  put(chroma.count > 0 ? entropy.mean : 1);

  // Rhythm.
  const acf = onsetAutocorrelation(analysis);
  const tempo = trackTempo(analysis, acf);
  put(Math.log(onsetMoments.mean + STD_EPS));
  put(lnStd(onsetMoments));
  put(tempo ? tempo.pulseClarity : 0);
  const [tempoCos, tempoSin] = acf ? circularTempo(acf, analysis.frameRate) : [0, 0];
  put(tempoCos);
  put(tempoSin);
  const maxLagSeconds = MAX_RHYTHM_LAG_SECONDS;
  for (let i = 0; i < ACF_LAGS; i++) {
    const lagSeconds = ACF_MIN_LAG_SECONDS * Math.pow(maxLagSeconds / ACF_MIN_LAG_SECONDS, i / (ACF_LAGS - 1));
    put(acf ? sampleAutocorrelation(acf, lagSeconds * analysis.frameRate) : 0);
  }

  // Modulation.
  for (let i = 0; i < modulation.sums.length; i++) {
    put(Math.log10((modulation.count > 0 ? modulation.sums[i]! / modulation.count : 0) + 1e-6));
  }

  if (o !== DSP_V1_DIMENSIONS) throw new Error(`dsp-v1 layout produced ${o} values, expected ${DSP_V1_DIMENSIONS}`);
  return out;
}
