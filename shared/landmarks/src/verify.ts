import { scalePeaks, type Landmarks, type Peak } from './extract';

/**
 * Second-stage check of a candidate song at the offset and speed the landmark vote found (an experiment of issue 33,
 * measured in `bench/src/landmarks/recording-search.ts --verify K`): a landmark needs both of its peaks to survive in
 * the clip, a peak only itself, so under noise a clip keeps roughly the square root of the share of landmarks as
 * peaks. The stored song's peaks are recovered from its landmarks (each landmark's anchor (t, f1) and target
 * (t + dt, f1 + df), see `landmarkHash`), those inside the clip's span are compared with the clip's own peaks, and a
 * stored peak counts as found when a clip peak lies within +-`tolerance` frames and +-`tolerance` bins of it.
 */

/** Stored peaks (frame, bin relative to `minBin`) of `lm` with frames in [fromFrame, toFrame), distinct, as `t * 256 + f` keys. */
export function landmarkPeaks(lm: Landmarks, fromFrame: number, toFrame: number): number[] {
  const keys = new Set<number>();
  for (let i = 0; i < lm.hashes.length; i++) {
    const t = lm.times[i]!;
    if (t >= toFrame) break;
    const h = lm.hashes[i]!;
    const f1 = h >>> 12;
    const df = ((h >>> 6) & 63) - 32;
    const dt = h & 63;
    if (t >= fromFrame) keys.add(t * 256 + f1);
    const t2 = t + dt;
    if (t2 >= fromFrame && t2 < toFrame) keys.add(t2 * 256 + f1 + df);
  }
  return [...keys].sort((a, b) => a - b);
}

/** Result of {@link peakAgreement}. */
export interface PeakAgreement {
  /** Stored peaks inside the clip's span that have a clip peak nearby. */
  found: number;
  /** Stored peaks inside the clip's span. */
  stored: number;
}

/**
 * How many of a stored song's peaks inside the clip's span have a clip peak within +-`tolerance` frames and bins.
 * `clipPeaks` are the clip's peaks at its own speed (`extractPeaks`), `offsetFrames` and `speed` the candidate's
 * (song frame = clip frame at `speed` + offsetFrames), `clipFrames` the clip's length in frames at its own speed.
 */
export function peakAgreement(clipPeaks: readonly Peak[], stored: Landmarks, offsetFrames: number, speed: number, clipFrames: number, tolerance = 1): PeakAgreement {
  const mapped = scalePeaks(clipPeaks, speed);
  const near = new Set<number>();
  for (const p of mapped) {
    for (let dt = -tolerance; dt <= tolerance; dt++) for (let df = -tolerance; df <= tolerance; df++) near.add((p.t + offsetFrames + dt) * 256 + p.f + df);
  }
  const span = Math.round(clipFrames / speed);
  const peaks = landmarkPeaks(stored, Math.max(0, offsetFrames), offsetFrames + span);
  let found = 0;
  for (const k of peaks) if (near.has(k)) found++;
  return { found, stored: peaks.length };
}
