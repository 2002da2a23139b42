import { mulberry32 } from '@polyphony/vectors';

/**
 * A synthetic "song" for tests of search by recording: `seconds` of 16 kHz mono made of three voices of random notes
 * (300-3000 Hz, 80-400 ms each, with a short attack and decay) over quiet white noise; seeded, so the same seed
 * makes the same song and different seeds make unrelated ones.
 */
export function syntheticNotesPcm(seed: number, seconds: number): Float32Array {
  const sr = 16000;
  const rnd = mulberry32(seed);
  const out = new Float32Array(Math.round(seconds * sr));
  for (let voice = 0; voice < 3; voice++) {
    let t = 0;
    while (t < out.length) {
      const len = Math.round((0.08 + 0.32 * rnd()) * sr);
      const freq = 300 * 10 ** rnd();
      const amp = 0.05 + 0.15 * rnd();
      for (let i = 0; i < len && t + i < out.length; i++) {
        const env = Math.min(1, i / 160, (len - i) / 800);
        out[t + i] = out[t + i]! + amp * env * Math.sin((2 * Math.PI * freq * i) / sr);
      }
      t += len;
    }
  }
  for (let i = 0; i < out.length; i++) out[i] = out[i]! + 0.002 * (2 * rnd() - 1);
  return out;
}

/** Adds white noise at `snrDb` below the clip's own RMS level (seeded). */
export function addNoise(pcm: Float32Array, snrDb: number, seed: number): Float32Array {
  const rnd = mulberry32(seed);
  let sq = 0;
  for (const v of pcm) sq += v * v;
  const noiseRms = Math.sqrt(sq / pcm.length) / 10 ** (snrDb / 20);
  const amp = noiseRms * Math.sqrt(3); // uniform noise on [-a, a] has RMS a / sqrt(3)
  return pcm.map((v) => v + amp * (2 * rnd() - 1));
}

/** 16-bit mono PCM WAV bytes of float samples in [-1, 1] (clipped) at `sampleRate` Hz (default 16 kHz). */
export function wavBytes(pcm: Float32Array, sampleRate = 16000): Buffer {
  const b = Buffer.alloc(44 + 2 * pcm.length);
  b.write('RIFF', 0);
  b.writeUInt32LE(36 + 2 * pcm.length, 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(sampleRate, 24);
  b.writeUInt32LE(sampleRate * 2, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36);
  b.writeUInt32LE(2 * pcm.length, 40);
  for (let i = 0; i < pcm.length; i++) b.writeInt16LE(Math.round(32767 * Math.max(-1, Math.min(1, pcm[i]!))), 44 + 2 * i);
  return b;
}
