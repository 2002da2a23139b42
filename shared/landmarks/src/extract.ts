import { hannWindow, RealFft } from '@polyphony/vectors';
import { LANDMARK_PARAMS, MAX_FRAME, type Density } from './params';

/**
 * Landmarks of one piece of audio: parallel arrays, sorted by time then hash.
 * `hashes[i]` is a 20-bit value (see {@link landmarkHash}); `times[i]` the anchor's frame (32 ms units).
 */
export interface Landmarks {
  hashes: Uint32Array;
  times: Uint16Array;
}

/** A spectral peak: frame, bin index relative to `minBin`, and prominence in dB. */
export interface Peak {
  t: number;
  f: number;
  strength: number;
  /** Sub-frame time of the peak, frames (parabolic interpolation of the dB values of t-1, t, t+1). */
  tf: number;
  /** Sub-bin frequency of the peak, bins relative to `minBin` (parabolic interpolation over f-1, f, f+1). */
  ff: number;
}

/** Vertex of the parabola through (-1, a), (0, b), (1, c), as an offset in [-0.5, 0.5] (0 when flat or at an edge). */
function parabolicOffset(a: number | undefined, b: number, c: number | undefined): number {
  if (a === undefined || c === undefined) return 0;
  const d = a - 2 * b + c;
  if (d >= 0) return 0;
  return Math.max(-0.5, Math.min(0.5, (0.5 * (a - c)) / d));
}

/** Packs (anchor bin, frequency difference, time difference) into the 20-bit hash. */
export function landmarkHash(f1: number, df: number, dt: number): number {
  return (f1 << 12) | ((df + 32) << 6) | dt;
}

/** Log-power spectrogram of the kept band (see {@link bandSpectrogram}). */
export interface Spectrogram {
  /** `frames x bins` dB values, row-major by frame. */
  db: Float32Array;
  /** dB of each frame's mean power over the band (the silence gate). */
  frameDb: Float32Array;
  frames: number;
  bins: number;
}

/**
 * Log-power spectrogram of the kept band: Float32Array of `frames x bins` (row-major by frame), in dB
 * (10 log10 of the FFT power, floor 1e-10). Frames start every `hopSamples` samples, the first at 0; a clip
 * shorter than one FFT has no frame.
 */
export function bandSpectrogram(pcm: Float32Array): Spectrogram {
  const { nFft, hopSamples, minBin, maxBin } = LANDMARK_PARAMS;
  const frames = pcm.length < nFft ? 0 : 1 + Math.floor((pcm.length - nFft) / hopSamples);
  const bins = maxBin - minBin;
  const db = new Float32Array(frames * bins);
  const frameDb = new Float32Array(frames);
  const fft = new RealFft(nFft);
  const window = hannWindow(nFft);
  const frame = new Float64Array(nFft);
  const power = new Float64Array(nFft / 2 + 1);
  for (let t = 0; t < frames; t++) {
    const start = t * hopSamples;
    for (let i = 0; i < nFft; i++) frame[i] = pcm[start + i]! * window[i]!;
    fft.power(frame, power);
    const row = t * bins;
    let sum = 0;
    for (let b = 0; b < bins; b++) {
      const p = power[minBin + b]!;
      sum += p;
      db[row + b] = 10 * Math.log10(p + 1e-10);
    }
    frameDb[t] = 10 * Math.log10(sum / bins + 1e-10);
  }
  return { db, frameDb, frames, bins };
}

/**
 * Spectral peaks: cells that are the maximum of the log spectrogram within +-`peakBinRadius` bins and
 * +-`peakFrameRadius` frames (a separable max filter), outside silent frames, ranked by prominence (the cell's
 * dB minus the mean of its frequency neighbourhood, which makes the ranking independent of the overall level
 * and of a smooth equalisation such as a phone microphone's), keeping the `peaksPerSecond` strongest per
 * one-second block. Returned sorted by frame, then bin.
 */
export function findPeaks(spec: Spectrogram, peaksPerSecond: number): Peak[] {
  return findPeaksWithin(spec, peaksPerSecond, LANDMARK_PARAMS.peakBinRadius, LANDMARK_PARAMS.peakFrameRadius);
}

/** {@link findPeaks} with its own neighbourhood: maxima within +-`rf` bins and +-`rt` frames (a density's `peakBinRadius`/`peakFrameRadius`). */
function findPeaksWithin(spec: Spectrogram, peaksPerSecond: number, rf: number, rt: number, lowBin: number = LANDMARK_PARAMS.minBin, highBin: number = LANDMARK_PARAMS.maxBin): Peak[] {
  const { db, frameDb, frames, bins } = spec;
  const { silenceBelowMaxDb, hopSamples, sampleRateHz, minBin } = LANDMARK_PARAMS;
  const keepLo = Math.max(0, lowBin - minBin);
  const keepHi = Math.min(bins, highBin - minBin);
  if (frames === 0) return [];
  let loudest = -Infinity;
  for (let t = 0; t < frames; t++) if (frameDb[t]! > loudest) loudest = frameDb[t]!;
  // Max over frequency, then over time.
  const maxF = new Float32Array(frames * bins);
  const prominence = new Float32Array(frames * bins);
  const prefix = new Float64Array(bins + 1); // prefix sums of one frame, for the neighbourhood mean
  for (let t = 0; t < frames; t++) {
    const row = t * bins;
    let acc = 0;
    for (let b = 0; b < bins; b++) {
      acc += db[row + b]!;
      prefix[b + 1] = acc;
    }
    for (let b = 0; b < bins; b++) {
      const lo = Math.max(0, b - rf);
      const hi = Math.min(bins - 1, b + rf);
      let m = -Infinity;
      for (let k = lo; k <= hi; k++) if (db[row + k]! > m) m = db[row + k]!;
      maxF[row + b] = m;
      prominence[row + b] = db[row + b]! - (prefix[hi + 1]! - prefix[lo]!) / (hi - lo + 1);
    }
  }
  const blockFrames = Math.max(1, Math.round(sampleRateHz / hopSamples));
  const keepPerBlock = Math.max(1, Math.round(peaksPerSecond * (blockFrames * hopSamples) / sampleRateHz));
  const peaks: Peak[] = [];
  let block: Peak[] = [];
  const flush = () => {
    if (block.length > keepPerBlock) {
      block.sort((a, b) => b.strength - a.strength || a.t - b.t || a.f - b.f);
      block.length = keepPerBlock;
    }
    for (const p of block) peaks.push(p);
    block = [];
  };
  for (let t = 0; t < frames; t++) {
    if (t > 0 && t % blockFrames === 0) flush();
    if (frameDb[t]! < loudest - silenceBelowMaxDb) continue;
    const lo = Math.max(0, t - rt);
    const hi = Math.min(frames - 1, t + rt);
    const row = t * bins;
    for (let b = keepLo; b < keepHi; b++) {
      const v = db[row + b]!;
      if (v !== maxF[row + b]) continue;
      let isMax = true;
      for (let u = lo; u <= hi && isMax; u++) if (u !== t && maxF[u * bins + b]! > v) isMax = false;
      // Ties in time: keep only the first frame of a plateau.
      if (isMax) for (let u = lo; u < t && isMax; u++) if (maxF[u * bins + b]! === v && db[u * bins + b] === v) isMax = false;
      if (isMax && prominence[row + b]! > 0) {
        const df = parabolicOffset(b > 0 ? db[row + b - 1] : undefined, v, b + 1 < bins ? db[row + b + 1] : undefined);
        const dt = parabolicOffset(t > 0 ? db[row - bins + b] : undefined, v, t + 1 < frames ? db[row + bins + b] : undefined);
        block.push({ t, f: b, strength: prominence[row + b]!, tf: t + dt, ff: b + df });
      }
    }
  }
  flush();
  peaks.sort((a, b) => a.t - b.t || a.f - b.f);
  return peaks;
}

/**
 * Pairs each anchor peak with up to `fanOut` target peaks 1..`maxDt` frames later (default LANDMARK_PARAMS.maxDt, at most 63) and within +-`maxDf` bins
 * (nearest in time first, then nearest in frequency), and hashes each pair. Anchors at frames above MAX_FRAME are
 * dropped. Sorted by time, then hash.
 */
export function pairPeaks(peaks: readonly Peak[], fanOut: number, maxDt: number = LANDMARK_PARAMS.maxDt): Landmarks {
  const { maxDf } = LANDMARK_PARAMS;
  if (maxDt > 63) throw new RangeError(`maxDt ${maxDt} does not fit the hash's 6 bits`);
  const hashes: number[] = [];
  const times: number[] = [];
  const targets: Peak[] = [];
  for (let i = 0; i < peaks.length; i++) {
    const a = peaks[i]!;
    if (a.t > MAX_FRAME) break;
    targets.length = 0;
    for (let j = i + 1; j < peaks.length; j++) {
      const b = peaks[j]!;
      const dt = b.t - a.t;
      if (dt > maxDt) break;
      if (dt < 1 || Math.abs(b.f - a.f) > maxDf) continue;
      targets.push(b);
    }
    targets.sort((x, y) => x.t - y.t || Math.abs(x.f - a.f) - Math.abs(y.f - a.f) || x.f - y.f);
    const n = Math.min(fanOut, targets.length);
    for (let k = 0; k < n; k++) {
      const b = targets[k]!;
      hashes.push(landmarkHash(a.f, b.f - a.f, b.t - a.t));
      times.push(a.t);
    }
  }
  return sortLandmarks(Uint32Array.from(hashes), Uint16Array.from(times));
}

/** Sorts parallel (hash, time) arrays by time then hash, dropping exact duplicates. */
export function sortLandmarks(hashes: Uint32Array, times: Uint16Array): Landmarks {
  const order = Array.from({ length: hashes.length }, (_, i) => i);
  order.sort((x, y) => times[x]! - times[y]! || hashes[x]! - hashes[y]!);
  const h: number[] = [];
  const t: number[] = [];
  for (const i of order) {
    const n = h.length;
    if (n > 0 && h[n - 1] === hashes[i] && t[n - 1] === times[i]) continue;
    h.push(hashes[i]!);
    t.push(times[i]!);
  }
  return { hashes: Uint32Array.from(h), times: Uint16Array.from(t) };
}

/**
 * Landmarks of mono 16 kHz PCM at the given density (`LANDMARK_PARAMS.store` for a library song,
 * `LANDMARK_PARAMS.query` for a clip). Silence yields none. Cost: one 1024-point FFT per 32 ms frame plus the
 * peak filter; measured per song in the benchmark.
 */
export function extractLandmarks(pcm: Float32Array, density: Density = LANDMARK_PARAMS.store): Landmarks {
  return pairPeaks(extractPeaks(pcm, density), density.fanOut, density.maxDt);
}

/** The spectral peaks {@link extractLandmarks} pairs, at `density` (sorted by frame, then bin). */
export function extractPeaks(pcm: Float32Array, density: Density = LANDMARK_PARAMS.store): Peak[] {
  const spec = bandSpectrogram(pcm);
  return findPeaksWithin(spec, density.peaksPerSecond, density.peakBinRadius ?? LANDMARK_PARAMS.peakBinRadius, density.peakFrameRadius ?? LANDMARK_PARAMS.peakFrameRadius, density.peakMinBin, density.peakMaxBin);
}

/**
 * The peaks of `pcm` as they would be found in `changeSpeed(pcm, factor)`, without analysing it again: a speed
 * change by `factor` moves content at time tau to tau / factor and frequency nu to nu * factor, so each peak's
 * sub-frame time and sub-bin frequency ({@link Peak} `tf`, `ff`) are mapped and rounded to the nearest frame and
 * bin (frame centres: frame t is centred at (t + 1) hops, so t -> (t + 1) / factor - 1; bins are absolute:
 * (f + minBin) * factor - minBin). Peaks mapped outside the kept band are dropped. Sorted by frame, then bin.
 * This is the matcher's speed grid: one spectrogram for every speed instead of one per speed.
 */
export function scalePeaks(peaks: readonly Peak[], factor: number): Peak[] {
  if (factor === 1) return [...peaks];
  const { minBin, maxBin } = LANDMARK_PARAMS;
  const bins = maxBin - minBin;
  const out: Peak[] = [];
  for (const p of peaks) {
    const tf = (p.tf + 1) / factor - 1;
    const ff = (p.ff + minBin) * factor - minBin;
    const t = Math.round(tf);
    const f = Math.round(ff);
    if (t < 0 || f < 0 || f >= bins) continue;
    out.push({ t, f, strength: p.strength, tf, ff });
  }
  out.sort((a, b) => a.t - b.t || a.f - b.f);
  return out;
}

/**
 * `pcm` played `factor` times faster (pitch and tempo both scale, like a turntable or tape speed error), by
 * linear interpolation: out[n] = pcm[n * factor]. Used to search a clip at a grid of speeds.
 */
export function changeSpeed(pcm: Float32Array, factor: number): Float32Array {
  if (factor === 1) return pcm;
  const n = Math.floor((pcm.length - 1) / factor);
  const out = new Float32Array(Math.max(0, n));
  for (let i = 0; i < n; i++) {
    const x = i * factor;
    const k = Math.floor(x);
    const frac = x - k;
    out[i] = pcm[k]! * (1 - frac) + pcm[Math.min(k + 1, pcm.length - 1)]! * frac;
  }
  return out;
}

/** Root-mean-square level of `pcm` in dBFS (-Infinity for digital silence). */
export function rmsDb(pcm: Float32Array): number {
  let sq = 0;
  for (let i = 0; i < pcm.length; i++) sq += pcm[i]! * pcm[i]!;
  return pcm.length === 0 ? -Infinity : 10 * Math.log10(sq / pcm.length);
}
