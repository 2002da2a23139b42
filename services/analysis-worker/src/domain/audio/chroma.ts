/**
 * Pitch-class (chroma) features from a long-window STFT, and key estimation.
 *
 * Chroma: each FFT bin between `fMinHz` and `fMaxHz` adds its magnitude to a 36-bin (1/3 semitone) pitch-class
 * profile, split linearly between the two nearest sub-bins; the reference tuning is then estimated as the
 * sub-bin offset (-1/3, 0, +1/3 semitone) that holds the most energy over the whole track, and each pitch
 * class sums the three sub-bins centred on it. This is the HPCP idea of E. Gómez, "Tonal description of
 * music audio signals" (PhD thesis, UPF 2006), without its harmonic weighting; a 4096-point FFT at 16 kHz
 * (3.9 Hz bins) separates semitones from about 80 Hz up.
 *
 * Key: the Krumhansl-Kessler probe-tone profiles (C. Krumhansl, "Cognitive Foundations of Musical Pitch",
 * 1990, table 4.1; the values the reference implementation uses) are rotated over the 12 tonics and
 * correlated (Pearson) with the track's mean chroma; the best of the 24 correlations gives key and mode
 * (the Krumhansl-Schmuckler key-finding algorithm).
 */

/** Pitch-class names, index 0 = C. */
export const PITCH_CLASSES = Object.freeze(['C', 'C#', 'D', 'D#', 'E', 'F', 'F#', 'G', 'G#', 'A', 'A#', 'B'] as const);
export type PitchClass = (typeof PITCH_CLASSES)[number];

/** Krumhansl-Kessler major profile, tonic first. */
export const KK_MAJOR = Object.freeze([6.35, 2.23, 3.48, 2.33, 4.38, 4.09, 2.52, 5.19, 2.39, 3.66, 2.29, 2.88]);
/** Krumhansl-Kessler minor profile, tonic first. */
export const KK_MINOR = Object.freeze([6.33, 2.68, 3.52, 5.38, 2.6, 3.53, 2.54, 4.75, 3.98, 2.69, 3.34, 3.17]);

/** Sub-bins per semitone of the internal profile. */
export const CHROMA_SUBBINS = 3;
const N36 = 12 * CHROMA_SUBBINS;
/** Frequency of C4 at A4 = 440 Hz, the origin of pitch-class 0. */
const C4_HZ = 440 * Math.pow(2, -9 / 12);

/**
 * Maps a magnitude spectrum (nFft/2 + 1 bins) to the 36-bin pitch-class profile. Precomputes, per bin in
 * range, the two target sub-bins and weights.
 */
export class Chroma36Map {
  private readonly firstBin: number;
  private readonly lower: Uint8Array;
  private readonly upper: Uint8Array;
  private readonly upperWeight: Float64Array;

  /**
   * @param sampleRate Hz
   * @param nFft FFT length, samples
   * @param fMinHz lowest frequency used (default 80 Hz)
   * @param fMaxHz highest frequency used (default 2000 Hz; higher partials mostly add noise)
   */
  constructor(sampleRate: number, nFft: number, fMinHz = 80, fMaxHz = 2000) {
    const first = Math.max(1, Math.ceil((fMinHz * nFft) / sampleRate));
    const last = Math.min(nFft / 2, Math.floor((fMaxHz * nFft) / sampleRate));
    const count = Math.max(0, last - first + 1);
    this.firstBin = first;
    this.lower = new Uint8Array(count);
    this.upper = new Uint8Array(count);
    this.upperWeight = new Float64Array(count);
    for (let i = 0; i < count; i++) {
      const f = ((first + i) * sampleRate) / nFft;
      let pos = (N36 * Math.log2(f / C4_HZ)) % N36;
      if (pos < 0) pos += N36;
      const lo = Math.floor(pos);
      this.lower[i] = lo % N36;
      this.upper[i] = (lo + 1) % N36;
      this.upperWeight[i] = pos - lo;
    }
  }

  /**
   * Adds the spectrum's contribution to `out[outOffset .. outOffset + 36)` (overwrites): each bin in range
   * adds its magnitude sqrt(power[k] * powerScale) to its two nearest 36-bin pitch classes, split linearly
   * (square roots computed only for the bins in range).
   * @param power |X[k]|^2 for k = 0..nFft/2, unscaled; `powerScale` brings it to the magnitude's scale.
   * @returns the summed magnitude that went into the profile (0 for silence).
   */
  applyPower(power: ArrayLike<number>, powerScale: number, out: Float32Array | Float64Array, outOffset: number): number {
    for (let j = 0; j < N36; j++) out[outOffset + j] = 0;
    let total = 0;
    const n = this.lower.length;
    for (let i = 0; i < n; i++) {
      const m = Math.sqrt(power[this.firstBin + i]! * powerScale);
      const w = this.upperWeight[i]!;
      const lo = outOffset + this.lower[i]!;
      const hi = outOffset + this.upper[i]!;
      out[lo] = out[lo]! + m * (1 - w);
      out[hi] = out[hi]! + m * w;
      total += m;
    }
    return total;
  }
}

/**
 * Estimates the tuning offset from summed 36-bin profiles.
 * @param total36 sum over frames of the 36-bin profiles.
 * @returns -1, 0 or +1: the sub-bin (1/3 semitone) where pitch classes are centred; ties prefer 0, then -1.
 */
export function estimateTuningShift(total36: ArrayLike<number>): -1 | 0 | 1 {
  let best: -1 | 0 | 1 = 0;
  let bestScore = -Infinity;
  for (const s of [0, -1, 1] as const) {
    let score = 0;
    for (let p = 0; p < 12; p++) score += total36[(CHROMA_SUBBINS * p + s + N36) % N36]!;
    if (score > bestScore) {
      bestScore = score;
      best = s;
    }
  }
  return best;
}

/**
 * Folds one 36-bin profile into 12 pitch classes centred at the tuning `shift`:
 * chroma[p] = c36[3p + shift - 1] + c36[3p + shift] + c36[3p + shift + 1] (indices mod 36).
 */
export function foldChroma(c36: ArrayLike<number>, offset: number, shift: number, out: Float64Array): void {
  for (let p = 0; p < 12; p++) {
    const centre = CHROMA_SUBBINS * p + shift;
    let acc = 0;
    for (let d = -1; d <= 1; d++) acc += c36[offset + ((centre + d + N36) % N36)]!;
    out[p] = acc;
  }
}

/** Key estimate. */
export interface KeyEstimate {
  key: PitchClass;
  scale: 'major' | 'minor';
  /** Tonic pitch-class index, 0 = C. */
  tonic: number;
  /** Pearson correlation of the best profile, in [-1, 1]. */
  strength: number;
  /** Best major correlation minus best minor correlation. */
  modeMargin: number;
}

function pearson(x: ArrayLike<number>, profile: ArrayLike<number>, rotation: number): number {
  let mx = 0;
  let mp = 0;
  for (let i = 0; i < 12; i++) {
    mx += x[i]!;
    mp += profile[i]!;
  }
  mx /= 12;
  mp /= 12;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < 12; i++) {
    const a = x[i]! - mx;
    const b = profile[(i - rotation + 12) % 12]! - mp;
    sxy += a * b;
    sxx += a * a;
    syy += b * b;
  }
  const den = Math.sqrt(sxx * syy);
  return den > 0 ? sxy / den : 0;
}

/**
 * Krumhansl-Schmuckler key finding on a 12-bin mean chroma (index 0 = C).
 * A flat or all-zero chroma yields C major with strength 0 (the reference implementation's default).
 */
export function estimateKey(meanChroma: ArrayLike<number>): KeyEstimate {
  let bestMajor = -Infinity;
  let bestMajorTonic = 0;
  let bestMinor = -Infinity;
  let bestMinorTonic = 0;
  for (let t = 0; t < 12; t++) {
    const cMaj = pearson(meanChroma, KK_MAJOR, t);
    const cMin = pearson(meanChroma, KK_MINOR, t);
    if (cMaj > bestMajor) {
      bestMajor = cMaj;
      bestMajorTonic = t;
    }
    if (cMin > bestMinor) {
      bestMinor = cMin;
      bestMinorTonic = t;
    }
  }
  const major = bestMajor >= bestMinor;
  const tonic = major ? bestMajorTonic : bestMinorTonic;
  return {
    key: PITCH_CLASSES[tonic]!,
    scale: major ? 'major' : 'minor',
    tonic,
    strength: Math.max(bestMajor, bestMinor),
    modeMargin: bestMajor - bestMinor,
  };
}
