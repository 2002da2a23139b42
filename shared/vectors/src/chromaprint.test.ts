import { popcount32 } from './bits';
import { chromaprintAlignment, chromaprintSimilarity } from './chromaprint';
import { mulberry32 } from './random';

/** Random words, signed (Int32Array, as the identity stores them) or unsigned (Uint32Array, as fpcalc -json parses). */
function randomPrint(n: number, r: () => number): Int32Array {
  return Int32Array.from({ length: n }, () => Math.floor(r() * 2 ** 32) | 0);
}

describe(popcount32.name, () => {
  it.each([
    [0, 0],
    [1, 1],
    [0xffffffff, 32],
    [0x80000000, 1],
    [0xf0f0f0f0, 16],
    [-1, 32],
  ])('When counting bits of %p, then the count is %p', (x, n) => {
    expect(popcount32(x)).toBe(n);
  });

  it('When popcount runs on random words, then it matches a bit loop', () => {
    const r = mulberry32(12);
    for (let t = 0; t < 1000; t++) {
      const x = Math.floor(r() * 2 ** 32);
      let n = 0;
      for (let i = 0; i < 32; i++) n += (x >>> i) & 1;
      expect(popcount32(x)).toBe(n);
    }
  });
});

describe(chromaprintAlignment.name, () => {
  const options = { maxOffset: 12, minOverlap: 40 };

  it('When both prints are identical, then similarity is 1 at offset 0', () => {
    const a = randomPrint(300, mulberry32(1));
    expect(chromaprintAlignment(a, Int32Array.from(a), options)).toEqual({ similarity: 1, offset: 0, overlap: 300 });
    expect(chromaprintAlignment(a, a)).toEqual({ similarity: 1, offset: 0, overlap: 300 });
  });

  it('When one print starts 5 words later, then the alignment finds offset +5 (and -5 the other way) with full agreement', () => {
    const r = mulberry32(2);
    const a = randomPrint(300, r);
    const b = new Int32Array(305);
    b.set(randomPrint(5, r), 0);
    b.set(a, 5);
    expect(chromaprintAlignment(a, b, options)).toEqual({ similarity: 1, offset: 5, overlap: 300 });
    expect(chromaprintAlignment(b, a, options)?.offset).toBe(-5);
    expect(chromaprintAlignment(a, a.slice(7))).toEqual({ similarity: 1, offset: -7, overlap: 293 });
  });

  it('When k bits are flipped, then similarity is exactly 1 - k / (32 n)', () => {
    const a = randomPrint(100, mulberry32(3));
    const b = Int32Array.from(a, (w) => w ^ 0b1011); // 3 bits per word
    expect(chromaprintAlignment(a, b, options)?.similarity).toBeCloseTo(1 - 300 / 3200, 12);
  });

  it('When b has 3 % of its bits flipped at random, then similarity is about 0.97', () => {
    const r = mulberry32(9);
    const a = randomPrint(500, r);
    const b = Int32Array.from(a, (w) => {
      let x = w;
      for (let bit = 0; bit < 32; bit++) if (r() < 0.03) x ^= 1 << bit;
      return x;
    });
    expect(chromaprintSimilarity(a, b)!).toBeCloseTo(0.97, 1);
  });

  it('When the prints are unrelated, then the best agreement of 41 shifts stays near one half', () => {
    const r = mulberry32(4);
    const s = chromaprintSimilarity(randomPrint(900, r), randomPrint(900, r))!;
    expect(s).toBeGreaterThan(0.45);
    expect(s).toBeLessThan(0.55);
  });

  it('When the shift is beyond the search range, then no alignment matches', () => {
    const r = mulberry32(5);
    const a = randomPrint(300, r);
    const b = new Int32Array(320);
    b.set(randomPrint(20, r), 0);
    b.set(a, 20);
    expect(chromaprintAlignment(a, b, options)?.similarity).toBeLessThan(0.6);
  });

  it('When no offset overlaps by the minimum, then the comparison abstains (null)', () => {
    const r = mulberry32(6);
    const short = randomPrint(30, r);
    expect(chromaprintSimilarity(short, short)).toBeNull();
    expect(chromaprintSimilarity(short, short, { minOverlap: 10 })).toBe(1);
    expect(chromaprintAlignment(randomPrint(39, r), randomPrint(300, r), options)).toBeNull();
    expect(chromaprintAlignment(new Int32Array(0), randomPrint(300, r), { maxOffset: 3, minOverlap: 0 })).toBeNull();
  });

  it('When words are given unsigned or signed, then they compare as the same bits', () => {
    const signed = Int32Array.from([-1, -2, 5, 7]);
    const unsigned = Uint32Array.from([4294967295, 4294967294, 5, 7]);
    expect(chromaprintAlignment(signed, unsigned, { maxOffset: 0, minOverlap: 4 })?.similarity).toBe(1);
  });
});
