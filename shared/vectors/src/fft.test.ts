import { hannWindow, RealFft } from './fft';
import { mulberry32 as seededRandom } from './random';

function naiveDft(x: ArrayLike<number>): { re: Float64Array; im: Float64Array } {
  const n = x.length;
  const re = new Float64Array(n / 2 + 1);
  const im = new Float64Array(n / 2 + 1);
  for (let k = 0; k <= n / 2; k++) {
    for (let t = 0; t < n; t++) {
      re[k] = re[k]! + x[t]! * Math.cos((2 * Math.PI * k * t) / n);
      im[k] = im[k]! - x[t]! * Math.sin((2 * Math.PI * k * t) / n);
    }
  }
  return { re, im };
}

describe(RealFft.name, () => {
  it.each([4, 8, 16, 64, 512, 1024])('When transforming random real frames of %i samples, then it matches a naive DFT', (n) => {
    const rnd = seededRandom(n);
    const x = Float64Array.from({ length: n }, () => 2 * rnd() - 1);
    const fft = new RealFft(n);
    const re = new Float64Array(n / 2 + 1);
    const im = new Float64Array(n / 2 + 1);
    fft.forward(x, re, im);
    const ref = naiveDft(x);
    const tol = 1e-9 * n;
    for (let k = 0; k <= n / 2; k++) {
      expect(Math.abs(re[k]! - ref.re[k]!)).toBeLessThan(tol);
      expect(Math.abs(im[k]! - ref.im[k]!)).toBeLessThan(tol);
    }
    const power = new Float64Array(n / 2 + 1);
    fft.power(x, power);
    for (let k = 0; k <= n / 2; k++) expect(power[k]!).toBeCloseTo(ref.re[k]! ** 2 + ref.im[k]! ** 2, 6);
  });

  it('When given an offset, then it transforms the frame starting there', () => {
    const rnd = seededRandom(7);
    const x = Float64Array.from({ length: 100 }, () => rnd());
    const fft = new RealFft(16);
    const a = new Float64Array(9);
    const b = new Float64Array(9);
    fft.power(x, a, 37);
    fft.power(x.slice(37, 53), b);
    expect(Array.from(a)).toEqual(Array.from(b));
  });

  it('When a sine sits exactly on bin 5, then all energy is in bin 5', () => {
    const n = 64;
    const x = Float64Array.from({ length: n }, (_, t) => Math.cos((2 * Math.PI * 5 * t) / n));
    const p = new Float64Array(n / 2 + 1);
    new RealFft(n).power(x, p);
    expect(p[5]!).toBeCloseTo((n / 2) ** 2, 6);
    p[5] = 0;
    expect(Math.max(...p)).toBeLessThan(1e-18 * n * n + 1e-12);
  });

  it.each([0, 3, 6, 1000, 1.5])('When the size is %p, then the constructor throws', (n) => {
    expect(() => new RealFft(n)).toThrow(RangeError);
  });

  it('When building a periodic Hann window, then it starts at 0, peaks at n/2 and sums to n/2', () => {
    const w = hannWindow(8);
    expect(w[0]).toBe(0);
    expect(w[4]).toBeCloseTo(1, 12);
    expect(w.reduce((a, b) => a + b, 0)).toBeCloseTo(4, 12);
  });
});
