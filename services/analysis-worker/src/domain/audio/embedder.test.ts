import { cosineDistance } from '@polyphony/vectors';
import { DefaultEmbedder, InsufficientAudioError, unweightedNormalise } from './embedder';
import { DSP_V1_BLOCKS, DSP_V1_DIMENSIONS } from './dsp-features';
import { DSP_V1_NORMALISATION } from './dsp-v1-normalisation';
import { assertValidNormalisation, computeNormalisation, reliabilityWeights } from './normalisation';
import { clickTrack, noise, sines } from './__tests__/signals';

/** A short "song": a chord over a click track, with a little noise. */
function song(seed: number, chord: Array<[number, number]>, bpm: number, seconds = 12): Float32Array {
  const clicks = clickTrack(bpm, seconds, seed);
  const tones = sines(chord, seconds);
  const hiss = noise(seconds, 0.01, seed + 100);
  return Float32Array.from(clicks, (c, i) => c + tones[i]! + hiss[i]!);
}

describe(DefaultEmbedder.name, () => {
  const embedder = new DefaultEmbedder();

  it('When embedding, then the result has 200 finite float32 values and the version is dsp-v1', () => {
    const e = embedder.embed(song(1, [[220, 0.2], [277.18, 0.2]], 110), 16000);
    expect(e).toBeInstanceOf(Float32Array);
    expect(e.length).toBe(200);
    expect(embedder.dimensions).toBe(200);
    expect(embedder.version).toBe('dsp-v1');
    expect(e.every(Number.isFinite)).toBe(true);
    expect(e.some((v) => v !== 0)).toBe(true);
  });

  it('When the same PCM is embedded twice, by the same and by another instance, then the outputs are bit-identical', () => {
    const pcm = song(2, [[196, 0.3]], 128);
    const a = embedder.embed(pcm, 16000);
    const b = embedder.embed(pcm, 16000);
    const c = new DefaultEmbedder().embed(Float32Array.from(pcm), 16000);
    expect(Buffer.from(a.buffer).equals(Buffer.from(b.buffer))).toBe(true);
    expect(Buffer.from(a.buffer).equals(Buffer.from(c.buffer))).toBe(true);
  });

  it('When a song is embedded with faint added noise, then it stays much closer to itself than to a different song', () => {
    const a = song(3, [[261.63, 0.3], [329.63, 0.2]], 120);
    const aNoisy = Float32Array.from(a, (v, i) => v + 0.002 * Math.sin(i * 1.7));
    const b = noise(12, 0.3, 42);
    const ea = embedder.embed(a, 16000);
    expect(cosineDistance(ea, embedder.embed(aNoisy, 16000))).toBeLessThan(0.2 * cosineDistance(ea, embedder.embed(b, 16000)));
  });

  it('When the audio is silent, then the embedding is still finite', () => {
    expect(embedder.embed(new Float32Array(16000 * 3), 16000).every(Number.isFinite)).toBe(true);
  });

  it('When the audio is shorter than 1 s, then InsufficientAudioError is thrown', () => {
    expect(() => embedder.embed(new Float32Array(15999), 16000)).toThrow(InsufficientAudioError);
  });

  it('When the sample rate is not 16 kHz, then a RangeError is thrown', () => {
    expect(() => embedder.embed(new Float32Array(44100 * 2), 44100)).toThrow(RangeError);
  });

  it('When analysing a track, then the embedding equals embed() and descriptors come along', () => {
    const pcm = song(4, [[293.66, 0.3]], 100);
    const r = embedder.analyseTrack(pcm, 16000);
    expect(Array.from(r.embedding)).toEqual(Array.from(embedder.embed(pcm, 16000)));
    expect(r.descriptors.energy).toBeGreaterThan(0);
  });

  it('When normalising the mean raw vector, then the output is all zeros', () => {
    const out = embedder.normalise(Float64Array.from(DSP_V1_NORMALISATION.mean));
    expect(Array.from(out).every((v) => v === 0)).toBe(true);
  });

  it('When constants have the wrong length, then the constructor throws', () => {
    expect(() => new DefaultEmbedder({ ...DSP_V1_NORMALISATION, mean: [1, 2, 3] })).toThrow(/expected 200/);
  });
});

describe('dsp-v1 constants', () => {
  it('When loading the committed constants, then they are valid, derived from real tracks and cover the block layout', () => {
    expect(() => assertValidNormalisation(DSP_V1_NORMALISATION, DSP_V1_DIMENSIONS)).not.toThrow();
    expect(DSP_V1_NORMALISATION.tracks).toBeGreaterThanOrEqual(100);
    const last = DSP_V1_BLOCKS[DSP_V1_BLOCKS.length - 1]!;
    expect(last.start + last.length).toBe(DSP_V1_DIMENSIONS);
  });
});

describe(computeNormalisation.name, () => {
  it('When given vectors, then mean and population std are per dimension and a constant dimension gets a tiny positive std', () => {
    const { mean, std } = computeNormalisation([[1, 5], [3, 5]], 2);
    expect(mean).toEqual([2, 5]);
    expect(std[0]).toBeCloseTo(1, 12);
    expect(std[1]!).toBeGreaterThan(0);
    expect(std[1]!).toBeLessThan(1e-4);
  });
});

describe(reliabilityWeights.name, () => {
  it('When one dimension is identical within pairs and another is pure noise, then the first weighs 1 and the second the minimum', () => {
    const pairs = [
      [[1, 0], [1, 1]],
      [[2, 1], [2, 0]],
      [[3, 0], [3, 1]],
      [[4, 1], [4, 0]],
    ] as const;
    const w = reliabilityWeights(pairs, 2, 1);
    expect(w[0]).toBe(1);
    expect(w[1]).toBe(0.05);
  });
});

describe(unweightedNormalise.name, () => {
  it('When a raw value is 4 std above the mean, then the output is 4; beyond the clip it saturates at -5', () => {
    const mean = new Array(200).fill(0);
    const std = new Array(200).fill(1);
    const raw = new Array(200).fill(0);
    raw[0] = 4;
    raw[1] = -100;
    const out = unweightedNormalise(raw, mean, std);
    expect(out[0]).toBeCloseTo(4, 12);
    expect(out[1]).toBe(-5);
  });
});
