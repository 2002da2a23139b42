/**
 * Frame-level analysis of mono 16 kHz PCM: the one spectral pass that both the default embedder and the
 * descriptors (tempo, key) read.
 *
 * Framing (all frames `center=False`: frame t covers samples [t*hop, t*hop + nFft), no padding):
 * - short-time spectrum: n_fft 1024 (64 ms), hop 512 (32 ms, 31.25 frames/s), periodic Hann window. The
 *   power spectrum is scaled by 4 / (sum of window)^2 so a full-scale sine peaks at 1 (0 dB);
 * - mel: 64 Slaney-scale bands with Slaney (unit-area) normalisation between 30 Hz and 8 kHz
 *   (librosa.filters.mel conventions), log-mel = 10 log10(mel + 1e-10);
 * - MFCC: orthonormal DCT-II of the 64 log-mel values, coefficients 0..19 (librosa.feature.mfcc layout);
 * - spectral shape on the magnitude spectrum: centroid, bandwidth (2nd central moment, sqrt), 85 % roll-off,
 *   flatness (geometric / arithmetic mean of power, amin 1e-8, i.e. -80 dB, in dB), contrast in 7 octave
 *   sub-bands with edges 0, 200, 400, 800, 1600, 3200, 6400, 8000 Hz (Jiang et al., "Music type classification
 *   by spectral contrast feature", ICME 2002, with librosa's band layout). Peak and valley are the means of the
 *   band's magnitudes (floored at 1e-4, -80 dB) at/above and below the band mean, not Jiang's top/bottom 2 %:
 *   the quietest bins are exactly what lossy codecs zero or noise-fill, and a 2 % valley moved by up to 1.6
 *   between-track standard deviations between an Ogg original and its AAC/Opus copies in the identity
 *   calibration; the mean split is as robust as a 20 % quantile and needs no sorting;
 * - time domain: RMS (dB, 20 log10(max(rms, 1e-5)), the librosa amplitude_to_db floor) and zero-crossing rate
 *   of the un-windowed frame;
 * - onset strength: mean over mel bands of the positive first difference of log-mel, the spectral-flux novelty
 *   of librosa.onset.onset_strength (lag 1, no max filter);
 * - chroma: separate long frames, n_fft 4096 (256 ms), hop 4096 (no overlap; chroma statistics need no finer
 *   time grid and this halves the cost), Hann, magnitude, 36-bin profile (see
 *   chroma.ts), folded to 12 bins after a whole-track tuning estimate.
 *
 * Bounded cost: a track of at most `maxWindows * windowSeconds` (default 8 x 15 s = 120 s) is analysed whole as
 * one region; a longer one is analysed in `maxWindows` regions of `windowSeconds`, spread evenly from the first to
 * the last sample. Feature statistics pool the frames of all regions; differences never cross a region boundary.
 */
import { Chroma36Map, CHROMA_SUBBINS, estimateTuningShift } from './chroma';
import { hannWindow, RealFft } from '@polyphony/vectors';
import { dctIIMatrix, MelFilterbank } from './mel';

/** Fixed analysis parameters (units in the names). Changing any of them changes the embedder version. */
export const ANALYSIS_PARAMS = Object.freeze({
  sampleRateHz: 16000,
  nFft: 1024,
  hopSamples: 512,
  nMels: 64,
  melFMinHz: 30,
  melFMaxHz: 8000,
  logMelFloor: 1e-10,
  nMfcc: 20,
  contrastEdgesHz: Object.freeze([0, 200, 400, 800, 1600, 3200, 6400, 8000]),
  contrastFloor: 1e-4,
  flatnessAmin: 1e-8,
  rolloffFraction: 0.85,
  chromaNfft: 4096,
  chromaHopSamples: 4096,
  chromaFMinHz: 80,
  chromaFMaxHz: 2000,
  windowSeconds: 15,
  maxWindows: 8,
});

/** Number of spectral-contrast sub-bands. */
export const N_CONTRAST = ANALYSIS_PARAMS.contrastEdgesHz.length - 1;

/** Frame features of one contiguous region. Per-frame matrices are row-major (frame, feature). */
export interface RegionFrames {
  /** First sample of the region in the PCM. */
  startSample: number;
  /** Number of short-time frames (n_fft 1024 / hop 512). */
  nFrames: number;
  /** nFrames x nMels, dB. */
  logMel: Float32Array;
  /** nFrames x nMfcc. */
  mfcc: Float32Array;
  /** Per frame, dBFS. */
  rmsDb: Float32Array;
  /** Per frame, Hz. */
  centroidHz: Float32Array;
  /** Per frame, Hz. */
  bandwidthHz: Float32Array;
  /** Per frame, Hz. */
  rolloffHz: Float32Array;
  /** Per frame, dB (<= 0). */
  flatnessDb: Float32Array;
  /** nFrames x N_CONTRAST, dB. */
  contrastDb: Float32Array;
  /** Per frame, crossings per sample. */
  zcr: Float32Array;
  /** Onset strength per frame (frame 0 is 0), dB. */
  onset: Float32Array;
  /** Number of chroma frames (n_fft 4096 / hop 4096). */
  nChromaFrames: number;
  /** nChromaFrames x 36 magnitude profile (see chroma.ts). */
  chroma36: Float32Array;
  /** Per chroma frame, dBFS RMS of the (un-windowed) frame. */
  chromaRmsDb: Float32Array;
}

/** Result of {@link analyseAudio}. */
export interface AudioAnalysis {
  sampleRate: number;
  /** Length of the PCM, seconds. */
  durationSeconds: number;
  /** Seconds covered by the regions. */
  analysedSeconds: number;
  /** Frames per second of the short-time features. */
  frameRate: number;
  regions: RegionFrames[];
  /** Tuning offset in 1/3 semitones (-1, 0, +1), estimated over all regions. */
  tuningShift: -1 | 0 | 1;
}

/**
 * Chooses the analysed regions [start, end) of a PCM of `nSamples` samples.
 * @returns one region covering everything when nSamples <= maxWindows * window, else `maxWindows` regions of
 *   `window` samples with starts floor(i * (nSamples - window) / (maxWindows - 1)).
 */
export function selectRegions(nSamples: number, sampleRate: number, windowSeconds: number = ANALYSIS_PARAMS.windowSeconds, maxWindows: number = ANALYSIS_PARAMS.maxWindows): Array<[number, number]> {
  const window = Math.round(windowSeconds * sampleRate);
  if (nSamples <= window * maxWindows || maxWindows < 2) return [[0, nSamples]];
  const regions: Array<[number, number]> = [];
  for (let i = 0; i < maxWindows; i++) {
    const start = Math.floor((i * (nSamples - window)) / (maxWindows - 1));
    regions.push([start, start + window]);
  }
  return regions;
}

/**
 * Reusable analyser: holds the FFTs, windows, filterbank and scratch buffers (one per worker, not thread-safe).
 */
export class FrameAnalyser {
  private readonly fft = new RealFft(ANALYSIS_PARAMS.nFft);
  private readonly window = hannWindow(ANALYSIS_PARAMS.nFft);
  private readonly mel = new MelFilterbank({
    sampleRate: ANALYSIS_PARAMS.sampleRateHz,
    nFft: ANALYSIS_PARAMS.nFft,
    nMels: ANALYSIS_PARAMS.nMels,
    fMin: ANALYSIS_PARAMS.melFMinHz,
    fMax: ANALYSIS_PARAMS.melFMaxHz,
    norm: 'slaney',
  });
  private readonly dct = dctIIMatrix(ANALYSIS_PARAMS.nMels, ANALYSIS_PARAMS.nMfcc);
  private readonly powerScale: number;
  private readonly frame = new Float64Array(ANALYSIS_PARAMS.nFft);
  private readonly power = new Float64Array(ANALYSIS_PARAMS.nFft / 2 + 1);
  private readonly magnitude = new Float64Array(ANALYSIS_PARAMS.nFft / 2 + 1);
  private readonly melOut = new Float64Array(ANALYSIS_PARAMS.nMels);
  private readonly binHz = new Float64Array(ANALYSIS_PARAMS.nFft / 2 + 1);
  private readonly contrastBands: Array<{ first: number; last: number }> = [];

  private readonly chromaFft = new RealFft(ANALYSIS_PARAMS.chromaNfft);
  private readonly chromaWindow = hannWindow(ANALYSIS_PARAMS.chromaNfft);
  private readonly chromaFrame = new Float64Array(ANALYSIS_PARAMS.chromaNfft);
  private readonly chromaPower = new Float64Array(ANALYSIS_PARAMS.chromaNfft / 2 + 1);
  private readonly chromaMap = new Chroma36Map(ANALYSIS_PARAMS.sampleRateHz, ANALYSIS_PARAMS.chromaNfft, ANALYSIS_PARAMS.chromaFMinHz, ANALYSIS_PARAMS.chromaFMaxHz);
  private readonly chromaPowerScale: number;

  constructor() {
    const { nFft, sampleRateHz, contrastEdgesHz } = ANALYSIS_PARAMS;
    let wsum = 0;
    for (let i = 0; i < nFft; i++) wsum += this.window[i]!;
    this.powerScale = 4 / (wsum * wsum);
    let cwsum = 0;
    for (let i = 0; i < this.chromaWindow.length; i++) cwsum += this.chromaWindow[i]!;
    this.chromaPowerScale = 4 / (cwsum * cwsum);
    for (let k = 0; k < this.binHz.length; k++) this.binHz[k] = (k * sampleRateHz) / nFft;
    const nBins = this.binHz.length;
    for (let b = 0; b < contrastEdgesHz.length - 1; b++) {
      const lo = contrastEdgesHz[b]!;
      const hi = contrastEdgesHz[b + 1]!;
      const first = Math.ceil((lo * nFft) / sampleRateHz);
      const last = b === contrastEdgesHz.length - 2 ? nBins - 1 : Math.ceil((hi * nFft) / sampleRateHz) - 1;
      this.contrastBands.push({ first, last });
    }
  }

  /**
   * Analyses `pcm` (mono, 16 kHz) over the regions chosen by {@link selectRegions}.
   * @throws RangeError when sampleRate is not 16000.
   */
  analyse(pcm: Float32Array, sampleRate: number): AudioAnalysis {
    if (sampleRate !== ANALYSIS_PARAMS.sampleRateHz) throw new RangeError(`analysis needs ${ANALYSIS_PARAMS.sampleRateHz} Hz PCM, got ${sampleRate}`);
    const regions: RegionFrames[] = [];
    let analysed = 0;
    const total36 = new Float64Array(12 * CHROMA_SUBBINS);
    for (const [start, end] of selectRegions(pcm.length, sampleRate)) {
      const region = this.analyseRegion(pcm, start, end);
      regions.push(region);
      analysed += end - start;
      for (let t = 0; t < region.nChromaFrames; t++) {
        if (region.chromaRmsDb[t]! < CHROMA_GATE_DB) continue;
        for (let j = 0; j < total36.length; j++) total36[j] = total36[j]! + region.chroma36[t * total36.length + j]!;
      }
    }
    return {
      sampleRate,
      durationSeconds: pcm.length / sampleRate,
      analysedSeconds: analysed / sampleRate,
      frameRate: sampleRate / ANALYSIS_PARAMS.hopSamples,
      regions,
      tuningShift: estimateTuningShift(total36),
    };
  }

  private analyseRegion(pcm: Float32Array, start: number, end: number): RegionFrames {
    const { nFft, hopSamples, nMels, nMfcc, rolloffFraction, logMelFloor, chromaNfft, chromaHopSamples, flatnessAmin } = ANALYSIS_PARAMS;
    const length = end - start;
    const nFrames = length < nFft ? 0 : 1 + Math.floor((length - nFft) / hopSamples);
    const logMel = new Float32Array(nFrames * nMels);
    const mfcc = new Float32Array(nFrames * nMfcc);
    const rmsDb = new Float32Array(nFrames);
    const centroidHz = new Float32Array(nFrames);
    const bandwidthHz = new Float32Array(nFrames);
    const rolloffHz = new Float32Array(nFrames);
    const flatnessDb = new Float32Array(nFrames);
    const contrastDb = new Float32Array(nFrames * N_CONTRAST);
    const zcr = new Float32Array(nFrames);
    const onset = new Float32Array(nFrames);

    const frame = this.frame;
    const win = this.window;
    const power = this.power;
    const mag = this.magnitude;
    const melOut = this.melOut;
    const binHz = this.binHz;
    const nBins = power.length;
    const dct = this.dct;
    const scale = this.powerScale;
    const log10e10 = 10 / Math.LN10;

    for (let t = 0; t < nFrames; t++) {
      const off = start + t * hopSamples;
      let sq = 0;
      let crossings = 0;
      let prev = pcm[off]!;
      for (let i = 0; i < nFft; i++) {
        const x = pcm[off + i]!;
        sq += x * x;
        if ((x >= 0) !== (prev >= 0)) crossings++;
        prev = x;
        frame[i] = x * win[i]!;
      }
      const rms = Math.sqrt(sq / nFft);
      rmsDb[t] = 20 * Math.log10(Math.max(rms, 1e-5));
      zcr[t] = crossings / nFft;

      this.fft.power(frame, power);
      let magSum = 0;
      let weighted = 0;
      let logSum = 0;
      let powSum = 0;
      // The geometric mean needs sum(ln(p + amin)); ln of products of 16 factors (each in [1e-8, ~4], so the
      // product stays within float64 range) needs 33 logarithms per frame instead of 513.
      let product = 1;
      for (let k = 0; k < nBins; k++) {
        const p = power[k]! * scale;
        power[k] = p;
        const m = Math.sqrt(p);
        mag[k] = m;
        magSum += m;
        weighted += m * binHz[k]!;
        const pa = p + flatnessAmin;
        product *= pa;
        if ((k & 15) === 15) {
          logSum += Math.log(product);
          product = 1;
        }
        powSum += pa;
      }
      logSum += Math.log(product);
      const centroid = magSum > 0 ? weighted / magSum : 0;
      let spread = 0;
      let cumulative = 0;
      let rolloffBin = nBins - 1;
      const target = rolloffFraction * magSum;
      let found = false;
      for (let k = 0; k < nBins; k++) {
        const m = mag[k]!;
        const d = binHz[k]! - centroid;
        spread += m * d * d;
        if (!found) {
          cumulative += m;
          if (cumulative >= target) {
            rolloffBin = k;
            found = true;
          }
        }
      }
      centroidHz[t] = centroid;
      bandwidthHz[t] = magSum > 0 ? Math.sqrt(spread / magSum) : 0;
      rolloffHz[t] = binHz[rolloffBin]!;
      flatnessDb[t] = log10e10 * (logSum / nBins - Math.log(powSum / nBins));
      this.contrast(mag, contrastDb, t * N_CONTRAST);

      this.mel.apply(power, melOut);
      const lmOff = t * nMels;
      for (let b = 0; b < nMels; b++) logMel[lmOff + b] = log10e10 * Math.log(melOut[b]! + logMelFloor);
      const mOff = t * nMfcc;
      for (let j = 0; j < nMfcc; j++) {
        let acc = 0;
        const row = j * nMels;
        for (let b = 0; b < nMels; b++) acc += dct[row + b]! * logMel[lmOff + b]!;
        mfcc[mOff + j] = acc;
      }
      if (t > 0) {
        let flux = 0;
        const pOff = lmOff - nMels;
        for (let b = 0; b < nMels; b++) {
          const d = logMel[lmOff + b]! - logMel[pOff + b]!;
          if (d > 0) flux += d;
        }
        onset[t] = flux / nMels;
      }
    }

    // Chroma pass on long frames.
    const nChromaFrames = length < chromaNfft ? 0 : 1 + Math.floor((length - chromaNfft) / chromaHopSamples);
    const chroma36 = new Float32Array(nChromaFrames * 12 * CHROMA_SUBBINS);
    const chromaRmsDb = new Float32Array(nChromaFrames);
    const cFrame = this.chromaFrame;
    const cWin = this.chromaWindow;
    const cPow = this.chromaPower;
    const cScale = this.chromaPowerScale;
    for (let t = 0; t < nChromaFrames; t++) {
      const off = start + t * chromaHopSamples;
      let sq = 0;
      for (let i = 0; i < chromaNfft; i++) {
        const x = pcm[off + i]!;
        sq += x * x;
        cFrame[i] = x * cWin[i]!;
      }
      chromaRmsDb[t] = 20 * Math.log10(Math.max(Math.sqrt(sq / chromaNfft), 1e-5));
      this.chromaFft.power(cFrame, cPow);
      this.chromaMap.applyPower(cPow, cScale, chroma36, t * 12 * CHROMA_SUBBINS);
    }

    return {
      startSample: start,
      nFrames,
      logMel,
      mfcc,
      rmsDb,
      centroidHz,
      bandwidthHz,
      rolloffHz,
      flatnessDb,
      contrastDb,
      zcr,
      onset,
      nChromaFrames,
      chroma36,
      chromaRmsDb,
    };
  }

  /**
   * Spectral contrast of one magnitude frame into out[offset .. offset + N_CONTRAST): per band, with magnitudes
   * floored at contrastFloor, 20 log10(mean of the bins at or above the band mean / mean of the bins below it);
   * 0 dB for a flat band.
   */
  private contrast(mag: Float64Array, out: Float32Array, offset: number): void {
    const floor = ANALYSIS_PARAMS.contrastFloor;
    for (let b = 0; b < this.contrastBands.length; b++) {
      const { first, last } = this.contrastBands[b]!;
      let sum = 0;
      for (let i = first; i <= last; i++) sum += Math.max(floor, mag[i]!);
      const mean = sum / (last - first + 1);
      let hi = 0;
      let nHi = 0;
      for (let i = first; i <= last; i++) {
        const v = Math.max(floor, mag[i]!);
        if (v >= mean) {
          hi += v;
          nHi++;
        }
      }
      const nLo = last - first + 1 - nHi;
      out[offset + b] = nLo > 0 ? 20 * Math.log10(hi / nHi / ((sum - hi) / nLo)) : 0;
    }
  }
}

/** Chroma frames quieter than this (dBFS RMS) are left out of tuning, key and chroma statistics. */
export const CHROMA_GATE_DB = -60;
/** Short-time frames quieter than this (dBFS RMS) are left out of timbre statistics. */
export const FRAME_GATE_DB = -60;

/**
 * One-shot helper: analyses `pcm` with a fresh {@link FrameAnalyser}.
 * @throws RangeError when sampleRate is not 16000.
 */
export function analyseAudio(pcm: Float32Array, sampleRate: number): AudioAnalysis {
  return new FrameAnalyser().analyse(pcm, sampleRate);
}
