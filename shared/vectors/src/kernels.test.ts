import fc from 'fast-check';
import { dot, nearestOfFour, normaliseInPlace, normaliseInto, normaliseSumInto } from './kernels';
import oracle from './__fixtures__/numpy-oracle.json';

describe(dot.name, () => {
  it.each(oracle.cosine.map((c, i) => [i, c.a.length, c] as const))('When pair %i (dim %i) is multiplied, then the dot product matches numpy', (_i, _dim, c) => {
    const scale = Math.max(1, Math.abs(c.dot));
    expect(dot(new Float32Array(c.a), 0, new Float32Array(c.b), 0, c.a.length) / scale).toBeCloseTo(c.dot / scale, 9);
  });

  it('When vectors sit at offsets inside larger arrays, then only the addressed values count', () => {
    const a = new Float32Array([9, 9, 1, 2, 3, 9]);
    const b = new Float32Array([4, 5, 6, 9]);
    expect(dot(a, 2, b, 0, 3)).toBe(32);
  });
});

describe('normalisation', () => {
  it.each(oracle.normalise.map((c, i) => [i, c.v.length, c] as const))('When vector %i (dim %i) is normalised, then norm and unit vector match numpy', (_i, _dim, c) => {
    const dst = new Float32Array(c.v.length);
    expect(normaliseInto(new Float32Array(c.v), 0, dst, 0, c.v.length) / c.norm).toBeCloseTo(1, 12);
    c.unit.forEach((u, i) => expect(dst[i]).toBeCloseTo(u, 6));
    const inPlace = new Float32Array(c.v);
    expect(normaliseInPlace(inPlace)).toBe(true);
    c.unit.forEach((u, i) => expect(inPlace[i]).toBeCloseTo(u, 6));
    const sum = new Float64Array(c.v);
    const fromSum = new Float32Array(c.v.length);
    expect(normaliseSumInto(sum, 0, fromSum, 0, c.v.length) / c.norm).toBeCloseTo(1, 12);
    c.unit.forEach((u, i) => expect(fromSum[i]).toBeCloseTo(u, 6));
  });

  it('When a vector is zero, then normaliseInto writes zeros and returns 0, normaliseInPlace refuses it unchanged', () => {
    const dst = new Float32Array([7, 7]);
    expect(normaliseInto(new Float32Array(2), 0, dst, 0, 2)).toBe(0);
    expect([...dst]).toEqual([0, 0]);
    const z = new Float32Array(3);
    expect(normaliseInPlace(z)).toBe(false);
    expect([...z]).toEqual([0, 0, 0]);
  });

  it('When a vector holds a non-finite value, then normaliseInto returns a non-finite norm (callers reject it)', () => {
    expect(Number.isFinite(normaliseInto(new Float32Array([1, NaN]), 0, new Float32Array(2), 0, 2))).toBe(false);
  });
});

describe(nearestOfFour.name, () => {
  it('When four points are matched against any centroids, then each gets the largest dot product, ties to the lower index', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 12 }), fc.integer(), (k, dim, seed) => {
        let s = seed >>> 0;
        const next = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
        const x = Float32Array.from({ length: 4 * dim }, next);
        const c = Float32Array.from({ length: k * dim }, next);
        const out = new Int32Array(4);
        const scores = new Float64Array(4);
        nearestOfFour(x, 0, dim, 2 * dim, 3 * dim, c, k, dim, out, scores);
        for (let p = 0; p < 4; p++) {
          let best = 0;
          for (let j = 1; j < k; j++) if (dot(x, p * dim, c, j * dim, dim) > dot(x, p * dim, c, best * dim, dim)) best = j;
          expect(out[p]).toBe(best);
          expect(scores[p]).toBeCloseTo(dot(x, p * dim, c, best * dim, dim), 9);
        }
      }),
    );
  });
});
