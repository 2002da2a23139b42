/**
 * Deterministic synthetic signals for the audio unit tests (no Math.random: a fixed-seed PRNG).
 */
import { mulberry32 } from '@polyphony/vectors';

/** mulberry32 (the one in @polyphony/vectors): deterministic floats in [0, 1) from a 32-bit seed. */
export const seededRandom = mulberry32;

/** Sum of sines: each partial [frequency Hz, amplitude]; `seconds` long at `sampleRate`. */
export function sines(partials: Array<[number, number]>, seconds: number, sampleRate = 16000): Float32Array {
  const n = Math.round(seconds * sampleRate);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let v = 0;
    for (const [f, a] of partials) v += a * Math.sin((2 * Math.PI * f * i) / sampleRate);
    out[i] = v;
  }
  return out;
}

/** White noise of the given peak amplitude. */
export function noise(seconds: number, amplitude: number, seed: number, sampleRate = 16000): Float32Array {
  const rnd = seededRandom(seed);
  const out = new Float32Array(Math.round(seconds * sampleRate));
  for (let i = 0; i < out.length; i++) out[i] = amplitude * (2 * rnd() - 1);
  return out;
}

/**
 * Click track: a 10 ms decaying noise burst (amplitude 0.8) every 60/bpm seconds over a quiet noise floor,
 * optionally with a pitched tone (`toneHz`) underneath.
 */
export function clickTrack(bpm: number, seconds: number, seed = 1, toneHz = 0, sampleRate = 16000): Float32Array {
  const rnd = seededRandom(seed);
  const n = Math.round(seconds * sampleRate);
  const out = new Float32Array(n);
  const period = (60 / bpm) * sampleRate;
  const clickLen = Math.round(0.01 * sampleRate);
  for (let i = 0; i < n; i++) out[i] = 0.001 * (2 * rnd() - 1) + (toneHz > 0 ? 0.1 * Math.sin((2 * Math.PI * toneHz * i) / sampleRate) : 0);
  for (let k = 0; ; k++) {
    const start = Math.round(k * period);
    if (start >= n) break;
    for (let j = 0; j < clickLen && start + j < n; j++) out[start + j] = out[start + j]! + 0.8 * (2 * rnd() - 1) * Math.exp(-j / (clickLen / 4));
  }
  return out;
}
