/**
 * Rhythm from an onset-strength envelope: autocorrelation, tempo and pulse statistics.
 *
 * Tempo follows the autocorrelation method used by librosa.feature.tempo (itself after D. Ellis, "Beat
 * tracking by dynamic programming", JNMR 2007): the mean-removed onset envelope is autocorrelated, each lag
 * is weighted by a log-normal prior centred at 120 BPM with a standard deviation of one octave, the best lag
 * is refined by parabolic interpolation and converted to BPM. The reference implementation then folds the
 * tempo by doubling or halving into [40, 200] BPM; {@link foldTempo} does the same.
 */

/** Lags of an autocorrelation, averaged over several envelopes. */
export class OnsetAutocorrelation {
  /** Largest lag kept, frames. */
  readonly maxLag: number;
  private readonly sum: Float64Array;
  private weight = 0;

  /** @param maxLag largest lag, frames (>= 1). */
  constructor(maxLag: number) {
    this.maxLag = maxLag;
    this.sum = new Float64Array(maxLag + 1);
  }

  /**
   * Adds the normalised, bias-corrected autocorrelation of one envelope (mean removed):
   * r[l] = (sum_t e[t] e[t+l] / (T - l)) / (sum_t e[t]^2 / T), weighted by the envelope length T.
   * Envelopes shorter than 2 * maxLag frames or with zero variance are ignored.
   */
  add(envelope: ArrayLike<number>, from = 0, to = envelope.length): void {
    const n = to - from;
    if (n < 2 * this.maxLag) return;
    let mean = 0;
    for (let t = from; t < to; t++) mean += envelope[t]!;
    mean /= n;
    const e = new Float64Array(n);
    for (let t = 0; t < n; t++) e[t] = envelope[from + t]! - mean;
    let r0 = 0;
    for (let t = 0; t < n; t++) r0 += e[t]! * e[t]!;
    if (!(r0 > 0)) return;
    r0 /= n;
    for (let l = 0; l <= this.maxLag; l++) {
      let acc = 0;
      for (let t = 0; t + l < n; t++) acc += e[t]! * e[t + l]!;
      this.sum[l] = this.sum[l]! + (n * acc) / (n - l) / r0;
    }
    this.weight += n;
  }

  /** Averaged autocorrelation r[0..maxLag] (r[0] = 1), or null when nothing was added. */
  result(): Float64Array | null {
    if (this.weight === 0) return null;
    const out = new Float64Array(this.maxLag + 1);
    // Each add() contributed n * r; dividing by the summed n gives the length-weighted mean.
    for (let l = 0; l <= this.maxLag; l++) out[l] = this.sum[l]! / this.weight;
    return out;
  }
}

/** Tempo estimate from an onset autocorrelation. */
export interface TempoEstimate {
  /** Raw tempo before folding, BPM. */
  bpm: number;
  /** Autocorrelation at the best lag, without the prior (0..1, higher = clearer pulse). */
  pulseClarity: number;
}

/**
 * Picks the tempo from an autocorrelation r (lags in frames at `frameRate` frames/s).
 * Lags for 30..300 BPM are searched; score = r[l] * exp(-0.5 * log2(bpm / 120)^2).
 * @returns null when the autocorrelation has no positive score in range (no pulse).
 */
export function tempoFromAutocorrelation(r: ArrayLike<number>, frameRate: number): TempoEstimate | null {
  const minLag = Math.max(1, Math.floor((60 * frameRate) / 300));
  const maxLag = Math.min(r.length - 2, Math.ceil((60 * frameRate) / 30));
  const score = (l: number): number => {
    const bpm = (60 * frameRate) / l;
    const z = Math.log2(bpm / 120);
    return r[l]! * Math.exp(-0.5 * z * z);
  };
  let best = -1;
  let bestScore = 0;
  for (let l = minLag; l <= maxLag; l++) {
    const s = score(l);
    if (s > bestScore) {
      bestScore = s;
      best = l;
    }
  }
  if (best < 0) return null;
  let lag = best;
  if (best > minLag && best < maxLag) {
    const a = score(best - 1);
    const b = bestScore;
    const c = score(best + 1);
    const den = a - 2 * b + c;
    if (den < 0) lag = best + (0.5 * (a - c)) / den;
  }
  return { bpm: (60 * frameRate) / lag, pulseClarity: Math.max(0, r[best]!) };
}

/**
 * Doubles or halves a tempo until it lies in [minBpm, maxBpm] (reference implementation: 40..200 BPM).
 * Non-finite or non-positive input returns NaN.
 */
export function foldTempo(bpm: number, minBpm = 40, maxBpm = 200): number {
  if (!Number.isFinite(bpm) || bpm <= 0) return Number.NaN;
  let t = bpm;
  while (t > maxBpm) t /= 2;
  while (t < minBpm) t *= 2;
  return t;
}

/**
 * Linear interpolation of r at fractional lag `lag` (frames); lags beyond the end clamp to the last value.
 */
export function sampleAutocorrelation(r: ArrayLike<number>, lag: number): number {
  if (lag <= 0) return r[0]!;
  const i = Math.floor(lag);
  if (i >= r.length - 1) return r[r.length - 1]!;
  const f = lag - i;
  return r[i]! * (1 - f) + r[i + 1]! * f;
}

/**
 * Soft, octave-invariant tempo summary: the weighted circular mean of theta(l) = 2 pi log2(bpm(l) / 120) over
 * the lags l of 30..300 BPM, with weights (max(0, r[l]) * prior(bpm(l)))^2 and the same log-normal prior as
 * {@link tempoFromAutocorrelation}. Doubling or halving a tempo is a full turn, so octave errors vanish, and
 * because every lag contributes smoothly, a small change of the autocorrelation (a re-encoded copy of the
 * song) moves the result a little instead of jumping between competing tempo peaks like an argmax does.
 * @returns [cos, sin] of the mean direction scaled by the mean resultant length (0..1, how concentrated the
 *   candidate tempi are); [0, 0] without any positive autocorrelation.
 */
export function circularTempo(r: ArrayLike<number>, frameRate: number): [number, number] {
  const minLag = Math.max(1, Math.floor((60 * frameRate) / 300));
  const maxLag = Math.min(r.length - 1, Math.ceil((60 * frameRate) / 30));
  let c = 0;
  let s = 0;
  let total = 0;
  for (let l = minLag; l <= maxLag; l++) {
    const bpm = (60 * frameRate) / l;
    const z = Math.log2(bpm / 120);
    const score = Math.max(0, r[l]!) * Math.exp(-0.5 * z * z);
    const w = score * score;
    c += w * Math.cos(2 * Math.PI * z);
    s += w * Math.sin(2 * Math.PI * z);
    total += w;
  }
  return total > 0 ? [c / total, s / total] : [0, 0];
}
