import fc from 'fast-check';
import { cosineDistance } from './cosine';
import { dot, normaliseInto } from './kernels';
import oracle from './__fixtures__/numpy-oracle.json';

describe(cosineDistance.name, () => {
  it('When vectors are parallel, orthogonal or opposite, then the distance is 0, 1 or 2', () => {
    expect(cosineDistance([1, 2, 3], [2, 4, 6])).toBeCloseTo(0, 15);
    expect(cosineDistance([1, 0], [0, 5])).toBe(1);
    expect(cosineDistance([1, 1], [-1, -1])).toBeCloseTo(2, 15);
  });

  it('When the vectors cannot be compared (zero, empty, different lengths, not finite), then the distance is NaN and no threshold holds', () => {
    expect(cosineDistance([0, 0, 0], [1, 2, 3])).toBeNaN();
    expect(cosineDistance([1, 2], [1, 2, 3])).toBeNaN();
    expect(cosineDistance([1, NaN], [1, 2])).toBeNaN();
    expect(cosineDistance([1, Infinity], [1, 2])).toBeNaN();
    expect(cosineDistance([], [])).toBeNaN();
    const d = cosineDistance([0, 0], [1, 1]);
    expect(d <= 0.5 || d > 0.5).toBe(false);
  });

  it.each(oracle.cosine.map((c, i) => [i, c.a.length, c] as const))('When pair %i (dim %i) is compared, then the distance matches numpy float64 to 1e-12', (_i, _dim, c) => {
    expect(cosineDistance(c.a, c.b)).toBeCloseTo(c.distance, 12);
    expect(cosineDistance(new Float32Array(c.a), new Float32Array(c.b))).toBeCloseTo(c.distance, 12);
  });

  const vector = (dim: number) => fc.array(fc.float({ min: -1e3, max: 1e3, noNaN: true, noDefaultInfinity: true }), { minLength: dim, maxLength: dim });
  const pair = fc.integer({ min: 1, max: 64 }).chain((dim) => fc.tuple(vector(dim), vector(dim)));
  const nonZero = (v: number[]) => v.some((x) => Math.abs(x) > 1e-3);

  it('When any two non-zero vectors are compared, then the distance is symmetric, within [0, 2] and unchanged by positive scaling', () => {
    fc.assert(
      fc.property(pair, fc.double({ min: 1e-3, max: 1e3, noNaN: true }), ([a, b], s) => {
        fc.pre(nonZero(a) && nonZero(b));
        const d = cosineDistance(a, b);
        expect(d).toBeGreaterThanOrEqual(-1e-12);
        expect(d).toBeLessThanOrEqual(2 + 1e-12);
        expect(cosineDistance(b, a)).toBeCloseTo(d, 12);
        expect(cosineDistance(a.map((x) => x * s), b)).toBeCloseTo(d, 9);
        expect(cosineDistance(a, a)).toBeCloseTo(0, 9);
        expect(cosineDistance(a, a.map((x) => -x))).toBeCloseTo(2, 9);
      }),
    );
  });

  it('When both vectors are normalised first, then 1 - dot (the index path) gives the same distance', () => {
    fc.assert(
      fc.property(pair, ([a, b]) => {
        fc.pre(nonZero(a) && nonZero(b));
        const dim = a.length;
        const ua = new Float32Array(dim);
        const ub = new Float32Array(dim);
        normaliseInto(new Float32Array(a), 0, ua, 0, dim);
        normaliseInto(new Float32Array(b), 0, ub, 0, dim);
        expect(1 - dot(ua, 0, ub, 0, dim)).toBeCloseTo(cosineDistance(a, b), 5);
      }),
    );
  });
});
