import { MUSICNN_INPUT, MusicnnMelFrontend, uncentredFrameCount } from './mel';
import { REFERENCE_MAX_SECONDS, cosineSimilarity, denseBiasAdd, referencePatchStarts, referenceVectorOf } from './reference-vector';

/** The reference implementation's vector layout (reference-vector.ts), without the model: shapes and arithmetic. */
describe('reference MusiCNN vector (layout and arithmetic)', () => {
  const SR = MUSICNN_INPUT.sampleRateHz;

  it('When audio is longer than 600 s, then only the first 600 s make patches, every complete non-overlapping 187-frame patch from frame 0', () => {
    // uncentred frames of 600 s: 1 + floor((9,600,000 - 512) / 256) = 37,499 -> 200 complete patches
    const long = referencePatchStarts(SR * 900);
    expect(long.samples).toBe(REFERENCE_MAX_SECONDS * SR);
    expect(long.complete).toBe(Math.floor(uncentredFrameCount(REFERENCE_MAX_SECONDS * SR) / 187));
    expect(long.complete).toBe(200);
    expect(long.starts.slice(0, 3)).toEqual([0, 187, 374]);
    expect(long.starts.at(-1)).toBe(199 * 187);
    // 187 frames need 512 + 186 * 256 = 48,128 samples: one sample less is no complete patch (tiled, reported as 0)
    expect(referencePatchStarts(48_128)).toEqual({ starts: [0], samples: 48_128, complete: 1 });
    expect(referencePatchStarts(48_127)).toEqual({ starts: [0], samples: 48_127, complete: 0 });
  });

  it('When the mel front end runs uncentred, then frame t is the spectrum of samples [256 t, 256 t + 512) with no padding', () => {
    const n = 4096;
    const pcm = Float32Array.from({ length: n }, (_, i) => Math.sin(i / 7) * 0.5 + Math.sin(i / 3.1) * 0.2);
    const fe = new MusicnnMelFrontend();
    const un = fe.compute(pcm, undefined, false);
    expect(un.frames).toBe(1 + Math.floor((n - 512) / 256));
    // The centred frame t + 1 covers the same samples (start 256 (t + 1) - 256): equal wherever no reflection is involved.
    const centred = fe.compute(pcm);
    for (let t = 0; t < un.frames; t++) {
      for (let m = 0; m < 96; m++) expect(un.data[t * 96 + m]).toBe(centred.data[(t + 1) * 96 + m]);
    }
    expect(() => fe.compute(pcm.subarray(0, 511), undefined, false)).toThrow(RangeError);
  });

  it('When the dense head is applied to pooled vectors, then it is b + BN(pooled) K per patch and the song vector is their mean', () => {
    const k = Float32Array.from({ length: 1506 * 200 }, (_, i) => ((i * 7919) % 13) / 13 - 0.5);
    const head = {
      flatBn: { scale: Float32Array.from({ length: 1506 }, (_, i) => 1 + (i % 3)), shift: Float32Array.from({ length: 1506 }, (_, i) => (i % 5) / 10) },
      dense: { kernel: k, shape: [1506, 200], bias: Float32Array.from({ length: 200 }, (_, j) => j / 100) },
    };
    const pooled = Float32Array.from({ length: 2 * 1506 }, (_, i) => Math.cos(i));
    const per = denseBiasAdd(pooled, 2, head);
    for (const [p, j] of [[0, 0], [1, 37], [1, 199]] as const) {
      let want = head.dense.bias[j]!;
      for (let i = 0; i < 1506; i++) want += (pooled[p * 1506 + i]! * head.flatBn.scale[i]! + head.flatBn.shift[i]!) * k[i * 200 + j]!;
      expect(per[p * 200 + j]).toBeCloseTo(want, 3);
    }
    const mean = referenceVectorOf({ patches: 2, tags: new Float32Array(100), penultimate: new Float32Array(400), pooled }, head);
    expect(mean[5]).toBeCloseTo((per[5]! + per[205]!) / 2, 4);
    expect(() => referenceVectorOf({ patches: 2, tags: new Float32Array(100), penultimate: new Float32Array(400) }, head)).toThrow(/pooled/);
    expect(() => denseBiasAdd(pooled, 3, head)).toThrow(RangeError);
  });

  it('When cosines are taken, then equal directions give 1, opposite -1, orthogonal 0 and a zero vector 0', () => {
    expect(cosineSimilarity([1, 2, 3], [2, 4, 6])).toBeCloseTo(1, 12);
    expect(cosineSimilarity([1, 2, 3], [-1, -2, -3])).toBeCloseTo(-1, 12);
    expect(cosineSimilarity([1, 0], [0, 5])).toBe(0);
    expect(cosineSimilarity([0, 0], [1, 1])).toBe(0);
    expect(() => cosineSimilarity([1], [1, 2])).toThrow(RangeError);
  });
});
