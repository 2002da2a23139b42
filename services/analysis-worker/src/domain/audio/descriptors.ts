/**
 * Musical descriptors stored with every analysed track (the reference implementation's `tempo`, `key`,
 * `scale` and `energy` columns), computed from decoded PCM.
 *
 * - tempo: onset-autocorrelation tempo (rhythm.ts) folded by doubling/halving into [40, 200] BPM;
 * - key, scale: Krumhansl-Schmuckler on the mean tuned chroma (chroma.ts); C major when there is no audible pitch;
 * - energy: mean over frames of clip((rms_dB + 60) / 60, 0, 1), rms_dB = 20 log10(max(rms, 1e-5)) (librosa
 *   amplitude_to_db with ref 1, top_db None), frames of 2048 samples with a hop of 512 over the WHOLE PCM
 *   (not just the analysed regions). The reference implementation's ENERGY_MIN/MAX are 0.30 / 0.95.
 */
import { AudioAnalysis, FrameAnalyser } from './analysis';
import { PitchClass } from './chroma';
import { foldTempo } from './rhythm';
import { chromaFrames, trackKey, trackTempo } from './track-summary';

/** Descriptors of one track. */
export interface AudioDescriptors {
  /** Tempo, BPM, folded into [40, 200]; null when no pulse was found (silence, too short). */
  tempoBpm: number | null;
  key: PitchClass;
  scale: 'major' | 'minor';
  /** Correlation of the chosen key profile with the mean chroma, in [-1, 1] (0 without audible pitch). */
  keyStrength: number;
  /** Mean clipped RMS level in [0, 1]. */
  energy: number;
}

/** RMS frame length and hop of the energy descriptor, samples. */
export const ENERGY_FRAME = 2048;
export const ENERGY_HOP = 512;

/**
 * Mean of clip((20 log10(max(rms, 1e-5)) + 60) / 60, 0, 1) over frames of 2048 samples, hop 512 (frames
 * start at 0, the last one may run past the end and is then shortened). Empty PCM returns 0.
 */
export function energyOf(pcm: Float32Array): number {
  if (pcm.length === 0) return 0;
  let acc = 0;
  let frames = 0;
  for (let start = 0; start < pcm.length; start += ENERGY_HOP) {
    const end = Math.min(pcm.length, start + ENERGY_FRAME);
    let sq = 0;
    for (let i = start; i < end; i++) sq += pcm[i]! * pcm[i]!;
    const db = 20 * Math.log10(Math.max(Math.sqrt(sq / (end - start)), 1e-5));
    acc += Math.min(1, Math.max(0, (db + 60) / 60));
    frames++;
    if (end === pcm.length) break;
  }
  return acc / frames;
}

/**
 * Descriptors from an existing analysis (shares the spectral pass with the embedder).
 * @param pcm the PCM the analysis was made from (energy reads all of it).
 */
export function descriptorsFromAnalysis(pcm: Float32Array, analysis: AudioAnalysis): AudioDescriptors {
  const tempo = trackTempo(analysis);
  const key = trackKey(chromaFrames(analysis));
  const bpm = tempo ? foldTempo(tempo.bpm) : Number.NaN;
  return {
    tempoBpm: Number.isFinite(bpm) ? bpm : null,
    key: key.key,
    scale: key.scale,
    keyStrength: key.strength,
    energy: energyOf(pcm),
  };
}

/**
 * Tempo, key, scale and energy of mono 16 kHz PCM.
 * @throws RangeError when sampleRate is not 16000.
 */
export function computeDescriptors(pcm: Float32Array, sampleRate: number): AudioDescriptors {
  return descriptorsFromAnalysis(pcm, new FrameAnalyser().analyse(pcm, sampleRate));
}
