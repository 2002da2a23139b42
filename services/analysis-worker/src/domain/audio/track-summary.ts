/**
 * Track-level summaries shared by the embedder and the descriptors: tuned 12-bin chroma frames, the mean
 * chroma and key, and the onset autocorrelation with the tempo it implies.
 */
import { AudioAnalysis, CHROMA_GATE_DB } from './analysis';
import { CHROMA_SUBBINS, estimateKey, foldChroma, KeyEstimate } from './chroma';
import { OnsetAutocorrelation, TempoEstimate, tempoFromAutocorrelation } from './rhythm';

/** Largest onset-autocorrelation lag kept, seconds (2 s = 30 BPM). */
export const MAX_RHYTHM_LAG_SECONDS = 2.0;

/** Chroma of the audible chroma frames of all regions. */
export interface ChromaFrames {
  /** Frames kept (above the chroma gate, non-zero). */
  count: number;
  /** count x 12, each frame scaled to a maximum of 1 (librosa chroma `norm=inf`); index 0 = C. */
  frames: Float64Array;
  /** Mean of the frames (zeros when count is 0). */
  mean: Float64Array;
}

/**
 * Folds every audible 36-bin profile to 12 pitch classes at the track's tuning and max-normalises it.
 * Frames are visited region by region in time order, so the result is deterministic.
 */
export function chromaFrames(analysis: AudioAnalysis): ChromaFrames {
  const n36 = 12 * CHROMA_SUBBINS;
  let total = 0;
  for (const r of analysis.regions) total += r.nChromaFrames;
  const frames = new Float64Array(total * 12);
  const mean = new Float64Array(12);
  const tmp = new Float64Array(12);
  let count = 0;
  for (const r of analysis.regions) {
    for (let t = 0; t < r.nChromaFrames; t++) {
      if (r.chromaRmsDb[t]! < CHROMA_GATE_DB) continue;
      foldChroma(r.chroma36, t * n36, analysis.tuningShift, tmp);
      let max = 0;
      for (let p = 0; p < 12; p++) if (tmp[p]! > max) max = tmp[p]!;
      if (!(max > 0)) continue;
      for (let p = 0; p < 12; p++) {
        const v = tmp[p]! / max;
        frames[count * 12 + p] = v;
        mean[p] = mean[p]! + v;
      }
      count++;
    }
  }
  if (count > 0) for (let p = 0; p < 12; p++) mean[p] = mean[p]! / count;
  return { count, frames: frames.subarray(0, count * 12), mean };
}

/** Key of the mean chroma (Krumhansl-Schmuckler); C major with strength 0 when there is no audible chroma. */
export function trackKey(chroma: ChromaFrames): KeyEstimate {
  return estimateKey(chroma.mean);
}

/** Onset autocorrelation over all regions (lags 0..MAX_RHYTHM_LAG_SECONDS), null when every region is too short. */
export function onsetAutocorrelation(analysis: AudioAnalysis): Float64Array | null {
  const acf = new OnsetAutocorrelation(Math.round(MAX_RHYTHM_LAG_SECONDS * analysis.frameRate));
  // Frame 0 of each region has no predecessor and is left out.
  for (const r of analysis.regions) acf.add(r.onset, 1, r.nFrames);
  return acf.result();
}

/** Tempo of the onset autocorrelation (unfolded), or null without a pulse. */
export function trackTempo(analysis: AudioAnalysis, acf: Float64Array | null = onsetAutocorrelation(analysis)): TempoEstimate | null {
  return acf ? tempoFromAutocorrelation(acf, analysis.frameRate) : null;
}
