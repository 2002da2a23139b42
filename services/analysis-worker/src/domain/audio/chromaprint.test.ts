import { chromaprintAlignment, chromaprintSimilarity, parseFpcalcJson, popcount32 } from './chromaprint';
import { seededRandom } from './__tests__/signals';

function randomPrint(n: number, seed: number): Uint32Array {
  const rnd = seededRandom(seed);
  return Uint32Array.from({ length: n }, () => Math.floor(rnd() * 0x100000000));
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
});

describe(chromaprintAlignment.name, () => {
  it('When both prints are identical, then similarity is 1 at offset 0', () => {
    const a = randomPrint(300, 1);
    expect(chromaprintAlignment(a, a)).toEqual({ similarity: 1, offset: 0, overlap: 300 });
  });

  it('When b is a starting 7 words later, then the best offset is -7 with similarity 1', () => {
    const a = randomPrint(300, 2);
    const b = a.slice(7);
    const r = chromaprintAlignment(a, b)!;
    expect(r.offset).toBe(-7);
    expect(r.similarity).toBe(1);
    expect(r.overlap).toBe(293);
  });

  it('When b has 3 % of its bits flipped, then similarity is about 0.97', () => {
    const a = randomPrint(500, 3);
    const rnd = seededRandom(9);
    const b = Uint32Array.from(a, (w) => {
      let x = w;
      for (let bit = 0; bit < 32; bit++) if (rnd() < 0.03) x ^= 1 << bit;
      return x >>> 0;
    });
    expect(chromaprintSimilarity(a, b)!).toBeCloseTo(0.97, 1);
  });

  it('When the prints are unrelated, then similarity is near 0.5 (the best of 41 shifts stays below 0.55)', () => {
    const s = chromaprintSimilarity(randomPrint(400, 4), randomPrint(400, 5))!;
    expect(s).toBeGreaterThan(0.45);
    expect(s).toBeLessThan(0.55);
  });

  it('When the overlap is below minOverlap, then the comparison abstains with null', () => {
    expect(chromaprintSimilarity(randomPrint(30, 6), randomPrint(30, 6))).toBeNull();
    expect(chromaprintSimilarity(randomPrint(30, 6), randomPrint(30, 6), { minOverlap: 10 })).toBe(1);
  });
});

describe(parseFpcalcJson.name, () => {
  it('When the output has unsigned and signed words, then both map to uint32', () => {
    const p = parseFpcalcJson('{"duration": 74.08, "fingerprint": [147046359, 3397621332, -1]}');
    expect(p.durationSeconds).toBe(74.08);
    expect(Array.from(p.fingerprint)).toEqual([147046359, 3397621332, 0xffffffff]);
  });

  it.each(['not json', '{"duration": 1}', '{"duration": 1, "fingerprint": [1.5]}', '{"duration": 1, "fingerprint": [4294967296]}'])(
    'When the output is %p, then parsing throws',
    (text) => {
      expect(() => parseFpcalcJson(text)).toThrow();
    },
  );
});
