import { chromaprintSimilarity, parseFpcalcRaw } from './chromaprint';
import { mulberry32 as rng } from '@polyphony/vectors';

function randomPrint(n: number, r: () => number): Int32Array {
  return Int32Array.from({ length: n }, () => Math.floor(r() * 2 ** 32) | 0);
}

const options = { maxOffset: 12, minOverlap: 40 };

describe(chromaprintSimilarity.name, () => {
  it('When both prints are identical, then similarity is 1 at offset 0', () => {
    const a = randomPrint(300, rng(1));
    expect(chromaprintSimilarity(a, Int32Array.from(a), options)).toEqual({ similarity: 1, offset: 0, overlap: 300 });
  });

  it('When one print starts 5 items later, then the alignment finds offset +5 with full agreement', () => {
    const r = rng(2);
    const a = randomPrint(300, r);
    const b = new Int32Array(305);
    b.set(randomPrint(5, r), 0);
    b.set(a, 5);
    const m = chromaprintSimilarity(a, b, options);
    expect(m).toEqual({ similarity: 1, offset: 5, overlap: 300 });
    expect(chromaprintSimilarity(b, a, options)?.offset).toBe(-5);
  });

  it('When k bits are flipped, then similarity is exactly 1 - k / (32 n)', () => {
    const a = randomPrint(100, rng(3));
    const b = Int32Array.from(a);
    for (let i = 0; i < 100; i++) b[i] = (b[i] as number) ^ 0b1011; // 3 bits per item
    expect(chromaprintSimilarity(a, b, options)?.similarity).toBeCloseTo(1 - 300 / 3200, 12);
  });

  it('When the prints are unrelated, then the best agreement stays near one half', () => {
    const r = rng(4);
    const m = chromaprintSimilarity(randomPrint(900, r), randomPrint(900, r), options);
    expect(m?.similarity).toBeGreaterThan(0.45);
    expect(m?.similarity).toBeLessThan(0.55);
  });

  it('When the shift is beyond the search range, then no alignment matches', () => {
    const r = rng(5);
    const a = randomPrint(300, r);
    const b = new Int32Array(320);
    b.set(randomPrint(20, r), 0);
    b.set(a, 20);
    expect(chromaprintSimilarity(a, b, options)?.similarity).toBeLessThan(0.6);
  });

  it('When no offset overlaps by the minimum, then the comparison abstains (null)', () => {
    const r = rng(6);
    expect(chromaprintSimilarity(randomPrint(39, r), randomPrint(300, r), options)).toBeNull();
    expect(chromaprintSimilarity(new Int32Array(0), randomPrint(300, r), options)).toBeNull();
  });

  it('When values are given unsigned or signed, then they compare as the same bits', () => {
    const signed = Int32Array.from([-1, -2, 5, 7]);
    const unsigned = [4294967295, 4294967294, 5, 7];
    expect(chromaprintSimilarity(signed, unsigned, { maxOffset: 0, minOverlap: 4 })?.similarity).toBe(1);
  });
});

describe(parseFpcalcRaw.name, () => {
  it('When given fpcalc -raw output, then items become signed 32-bit integers', () => {
    expect(Array.from(parseFpcalcRaw('DURATION=74\nFINGERPRINT=1,4294967295,2147483648\n'))).toEqual([1, -1, -2147483648]);
    expect(Array.from(parseFpcalcRaw('3,-4'))).toEqual([3, -4]);
  });

  it('When the output has no fingerprint or a bad item, then it throws', () => {
    expect(() => parseFpcalcRaw('DURATION=74\n')).toThrow(RangeError);
    expect(() => parseFpcalcRaw('FINGERPRINT=1,x,3')).toThrow(RangeError);
    expect(() => parseFpcalcRaw('FINGERPRINT=')).toThrow(RangeError);
  });
});
