import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  MUSICNN_FRONTEND,
  MusicnnMelFrontend,
  Radix2Fft,
  denseFilterbank,
  frameCount,
  hzToMelSlaney,
  melToHzSlaney,
  samplesForPatches,
  toPatches,
} from './mel-frontend';

/** Deterministic PRNG (mulberry32) so fixtures are reproducible without storing audio. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 2.5 s test signal: a 50 Hz -> 7.5 kHz chirp, two tones, white noise, a silent gap and a loud burst. */
function testSignal(): Float32Array {
  const sr = MUSICNN_FRONTEND.sampleRateHz;
  const n = 40000;
  const rand = rng(7);
  const y = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const t = i / sr;
    const chirp = Math.sin(2 * Math.PI * (50 * t + (7450 / (2 * 2.5)) * t * t));
    const tones = 0.3 * Math.sin(2 * Math.PI * 440 * t) + 0.1 * Math.sin(2 * Math.PI * 3150 * t);
    let v = 0.4 * chirp + tones + 0.05 * (rand() * 2 - 1);
    if (i >= 12000 && i < 15000) v = 0; // digital silence: log10(1 + 0) = 0
    if (i >= 30000 && i < 31000) v = rand() * 2 - 1; // full-scale noise burst
    y[i] = v;
  }
  return y;
}

function hasNumpy(): boolean {
  const r = spawnSync('python3', ['-c', 'import numpy'], { stdio: 'ignore' });
  return r.status === 0;
}

describe('Radix2Fft', () => {
  it('When given random complex input, then it matches a direct O(N^2) DFT to 1e-9', () => {
    const n = 64;
    const rand = rng(1);
    const re = Float64Array.from({ length: n }, () => rand() * 2 - 1);
    const im = Float64Array.from({ length: n }, () => rand() * 2 - 1);
    const expRe = new Float64Array(n);
    const expIm = new Float64Array(n);
    for (let k = 0; k < n; k++) {
      for (let j = 0; j < n; j++) {
        const a = (-2 * Math.PI * k * j) / n;
        expRe[k]! += re[j]! * Math.cos(a) - im[j]! * Math.sin(a);
        expIm[k]! += re[j]! * Math.sin(a) + im[j]! * Math.cos(a);
      }
    }
    new Radix2Fft(n).transform(re, im);
    let maxDiff = 0;
    for (let k = 0; k < n; k++) maxDiff = Math.max(maxDiff, Math.abs(re[k]! - expRe[k]!), Math.abs(im[k]! - expIm[k]!));
    expect(maxDiff).toBeLessThan(1e-9);
  });

  it('When the size is not a power of two, then it throws', () => {
    expect(() => new Radix2Fft(96)).toThrow(RangeError);
  });
});

describe('Slaney mel scale', () => {
  it('When converting the 1 kHz break point and round-tripping, then values match the Auditory Toolbox scale', () => {
    expect(hzToMelSlaney(1000)).toBeCloseTo(15, 12);
    expect(hzToMelSlaney(200)).toBeCloseTo(3, 12);
    // 6.4x the break frequency is 27 mels above it by construction of the log step.
    expect(hzToMelSlaney(6400)).toBeCloseTo(42, 12);
    for (const hz of [0, 123.4, 999.9, 1000, 2500, 8000]) expect(melToHzSlaney(hzToMelSlaney(hz))).toBeCloseTo(hz, 9);
  });
});

describe(MusicnnMelFrontend.name, () => {
  const frontend = new MusicnnMelFrontend();

  it('When a pure 1 kHz tone is analysed, then the loudest band is the one whose centre is nearest 1 kHz', () => {
    const n = 16000;
    const y = Float32Array.from({ length: n }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 1000 * i) / 16000));
    const spec = frontend.logMel(y);
    const row = spec.data.subarray(10 * 96, 11 * 96);
    const argmax = row.indexOf(Math.max(...row));
    // band m is centred on edge m+1 of 98 mel-spaced edges over [0, 8000] Hz
    const centreHz = (m: number): number => melToHzSlaney(((m + 1) * hzToMelSlaney(8000)) / 97);
    const nearest = Array.from({ length: 96 }, (_, m) => Math.abs(centreHz(m) - 1000)).reduce(
      (best, d, m, all) => (d < all[best]! ? m : best),
      0,
    );
    expect(Math.abs(argmax - nearest)).toBeLessThanOrEqual(1);
  });

  it('When audio is shorter than one FFT frame, then there are no frames; frame counts follow center=False', () => {
    expect(frontend.logMel(new Float32Array(511)).frames).toBe(0);
    expect(frameCount(512)).toBe(1);
    expect(frameCount(767)).toBe(1);
    expect(frameCount(768)).toBe(2);
  });

  it('When audio holds exactly 2 patches, then 2 patches are cut, and one sample less gives 1', () => {
    const two = frontend.logMel(new Float32Array(samplesForPatches(2)));
    expect(two.frames).toBe(374);
    expect(toPatches(two).count).toBe(2);
    const lessThanTwo = frontend.logMel(new Float32Array(samplesForPatches(2) - 1));
    expect(toPatches(lessThanTwo).count).toBe(1);
    expect(toPatches(lessThanTwo).data.length).toBe(187 * 96);
  });

  const numpyIt = hasNumpy() ? it : it.skip;
  numpyIt('When compared with an independent numpy implementation of the librosa recipe, then filterbank and log-mel agree', () => {
    const dir = mkdtempSync(join(tmpdir(), 'musicnn-mel-'));
    try {
      const y = testSignal();
      writeFileSync(join(dir, 'in.f32'), Buffer.from(y.buffer, y.byteOffset, y.byteLength));
      const script = join(__dirname, '__fixtures__', 'musicnn_mel_reference.py');
      const r = spawnSync('python3', [script, join(dir, 'in.f32'), join(dir, 'ref')], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const readF64 = (p: string): Float64Array => {
        const b = readFileSync(p);
        return new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
      };
      const refFb = readF64(join(dir, 'ref.fb.f64'));
      const refMel = readF64(join(dir, 'ref.mel.f64'));

      const fb = denseFilterbank(frontend.filterbank, 257);
      expect(fb.length).toBe(refFb.length);
      let fbDiff = 0;
      for (let i = 0; i < fb.length; i++) fbDiff = Math.max(fbDiff, Math.abs(fb[i]! - refFb[i]!));
      expect(fbDiff).toBeLessThan(1e-12);

      const spec = frontend.logMel(y);
      expect(spec.frames).toBe(frameCount(y.length));
      expect(spec.data.length).toBe(refMel.length);
      let melDiff = 0;
      let maxVal = 0;
      for (let i = 0; i < refMel.length; i++) {
        melDiff = Math.max(melDiff, Math.abs(spec.data[i]! - refMel[i]!));
        maxVal = Math.max(maxVal, refMel[i]!);
      }
      // The signal must exercise the compression range, otherwise the comparison is weak.
      expect(maxVal).toBeGreaterThan(4);
      // Stated tolerance: max abs diff 1e-5 on log10(1 + 10000 mel) (output is float32, values up to ~6).
      expect(melDiff).toBeLessThan(1e-5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
