import {
  BandedSignatureIndex,
  assertBandLayout,
  balancedBandLayout,
  bandCountForTolerance,
  bandKeys,
  bandLayoutForTolerance,
  forEachProbe,
  probeKeys,
  stridedBandLayout,
} from './bands';
import { SignatureCode, hammingDistance, signatureFromHex, signatureToHex } from './signature';
import { mulberry32 as rng } from '@polyphony/vectors';

function randomCode(r: () => number): SignatureCode {
  const c = new Uint32Array(7);
  for (let w = 0; w < 6; w++) c[w] = Math.floor(r() * 2 ** 32) >>> 0;
  c[6] = (Math.floor(r() * 256) << 24) >>> 0;
  return c;
}

/** Copy of `code` with `k` distinct random bits flipped. */
function flip(code: SignatureCode, k: number, r: () => number): SignatureCode {
  const out = Uint32Array.from(code);
  const bits = new Set<number>();
  while (bits.size < k) bits.add(Math.floor(r() * 200));
  for (const d of bits) out[d >>> 5] = ((out[d >>> 5] as number) ^ (1 << (31 - (d & 31)))) >>> 0;
  return out;
}

describe('band layouts', () => {
  it('When the tolerance is 10 bits, then 11 strided bands of 19,19,18x9 bits cover all 200 bits once', () => {
    const layout = bandLayoutForTolerance(10);
    expect(layout.bands.map((b) => b.length)).toEqual([19, 19, 18, 18, 18, 18, 18, 18, 18, 18, 18]);
    expect(layout.bands[0]?.slice(0, 3)).toEqual([0, 11, 22]);
    expect(new Set(layout.bands.flat()).size).toBe(200);
    expect(() => assertBandLayout(layout, 10)).not.toThrow();
  });

  it('When the tolerance is small, then bands stay at most 31 bits wide', () => {
    expect(bandCountForTolerance(0)).toBe(7);
    expect(bandCountForTolerance(3)).toBe(7);
    expect(bandCountForTolerance(12)).toBe(13);
  });

  it('When a layout has too few bands or overlapping bits, then it is rejected', () => {
    expect(() => assertBandLayout(stridedBandLayout(11), 11)).toThrow(/needs at least 12/);
    const overlapping = { id: 'bad', bands: [[0, 1], [1, 2], [3], [4], [5], [6], [7]] };
    expect(() => assertBandLayout(overlapping, 0)).toThrow(/two bands/);
  });

  it('When band keys are computed, then each value reads its bits most significant first', () => {
    // Only dimension 0 set: band 0 (bits 0, 11, 22, ...) has its top bit set, every other band is 0.
    const keys = bandKeys(signatureFromHex('8' + '0'.repeat(49)), stridedBandLayout(11));
    expect(keys[0]).toEqual({ band: 0, value: 2 ** 18 });
    expect(keys.slice(1).every((k) => k.value === 0)).toBe(true);
    // Dimension 199 is the last bit of band 199 % 11 = 1.
    const last = bandKeys(signatureFromHex('0'.repeat(49) + '1'), stridedBandLayout(11));
    expect(last[1]).toEqual({ band: 1, value: 1 });
  });

  it('When a sample has stuck bits, then the balanced layout spreads them over the bands', () => {
    const r = rng(7);
    // Dimensions 0..31 are always set (zero entropy). A contiguous layout would put 18 of them in
    // band 0, leaving it no information; the balanced layout must leave every band informative.
    const sample = Array.from({ length: 500 }, () => {
      const c = randomCode(r);
      c[0] = 0xffffffff;
      return c;
    });
    const layout = balancedBandLayout(sample, 11);
    expect(() => assertBandLayout(layout, 10)).not.toThrow();
    const informativePerBand = layout.bands.map((b) => b.filter((bit) => bit >= 32).length);
    expect(Math.min(...informativePerBand)).toBeGreaterThanOrEqual(15);
    expect(balancedBandLayout(sample, 11).id).toBe(layout.id);
  });
});

describe(BandedSignatureIndex.name, () => {
  it('When queried at tolerance 10, then it returns exactly the stored codes within 10 bits, nearest first', () => {
    const r = rng(42);
    const index = new BandedSignatureIndex(bandLayoutForTolerance(10), 64);
    const codes: SignatureCode[] = [];
    const query = randomCode(r);
    // Neighbours at every distance 0..14 (several each) plus random codes, in random order.
    for (let k = 0; k <= 14; k++) for (let j = 0; j < 4; j++) codes.push(flip(query, k, r));
    for (let i = 0; i < 3000; i++) codes.push(randomCode(r));
    codes.sort(() => r() - 0.5);
    codes.forEach((c) => index.add(c));

    const result = index.query(query, 10);
    const expected = codes.map((c, i) => ({ i, d: hammingDistance(c, query) })).filter((x) => x.d <= 10);
    expect(expected.length).toBe(44);
    expect(new Set(result.entries)).toEqual(new Set(expected.map((x) => x.i)));
    expect(result.distances).toEqual([...result.distances].sort((a, b) => a - b));
    expect(result.distances.every((d) => d <= 10)).toBe(true);
    // Sub-linear: far fewer than 3060 codes were examined.
    expect(result.scanned).toBeLessThan(200);
  });

  it('When many random queries run, then recall within the tolerance is always 1 (pigeonhole)', () => {
    const r = rng(3);
    const index = new BandedSignatureIndex(bandLayoutForTolerance(10));
    const stored = Array.from({ length: 2000 }, () => randomCode(r));
    stored.forEach((c) => index.add(c));
    const mismatches: number[] = [];
    let checked = 0;
    for (let q = 0; q < 200; q++) {
      const base = stored[Math.floor(r() * stored.length)] as SignatureCode;
      const query = flip(base, Math.floor(r() * 11), r); // 0..10 bits away from a stored code
      const got = index.query(query, 10).entries;
      const expected = stored.map((c, i) => (hammingDistance(c, query) <= 10 ? i : -1)).filter((i) => i >= 0);
      if (got.length !== expected.length || !expected.every((i) => got.includes(i))) mismatches.push(q);
      checked += expected.length;
    }
    expect(mismatches).toEqual([]);
    expect(checked).toBeGreaterThanOrEqual(200);
  });

  it('When the tolerance exceeds the band guarantee, then the query refuses', () => {
    const index = new BandedSignatureIndex(stridedBandLayout(11));
    expect(() => index.query(new Uint32Array(7), 11)).toThrow(RangeError);
  });

  it('When bands are wider than the direct table, then the map-backed chains give the same answer', () => {
    const r = rng(11);
    const wide = new BandedSignatureIndex(stridedBandLayout(7)); // 28-29-bit bands
    const query = randomCode(r);
    const near = flip(query, 6, r);
    const far = flip(query, 7, r);
    wide.add(far);
    wide.add(near);
    expect(wide.query(query, 6).entries).toEqual([1]);
    expect(signatureToHex(wide.code(1))).toBe(signatureToHex(near));
  });

  it('When entries outgrow the initial capacity, then earlier entries are still found', () => {
    const r = rng(5);
    const index = new BandedSignatureIndex(bandLayoutForTolerance(10), 16);
    const codes = Array.from({ length: 100 }, () => randomCode(r));
    codes.forEach((c) => index.add(c));
    expect(index.size).toBe(100);
    expect(index.query(codes[3] as SignatureCode, 0).entries).toEqual([3]);
    expect(index.largestBuckets()).toHaveLength(11);
  });
});

describe('multi-probe layouts', () => {
  it('When probing radius 2 around a 5-bit value, then every value within 2 bits is visited once', () => {
    const seen: number[] = [];
    forEachProbe(0b10110, 5, 2, (v) => seen.push(v));
    expect(seen).toHaveLength(1 + 5 + 10);
    expect(new Set(seen).size).toBe(16);
    expect(seen[0]).toBe(0b10110);
    expect(seen.every((v) => v < 32 && [0, 1, 2].includes(popcount(v ^ 0b10110)))).toBe(true);
  });

  it('When the probe radius is 1, then 7 bands cover tolerance 10 and a query asks 7 + 200 keys', () => {
    const layout = bandLayoutForTolerance(10, 1);
    expect(layout.bands).toHaveLength(7); // ceil(11 / 2) = 6, raised to 7 so no band exceeds 31 bits
    expect(layout.probeRadius).toBe(1);
    expect(() => assertBandLayout(layout, 10)).not.toThrow();
    expect(() => assertBandLayout(stridedBandLayout(7), 10)).toThrow(/needs at least 11/);
    expect(probeKeys(randomCode(rng(1)), layout)).toHaveLength(207);
    expect(probeKeys(randomCode(rng(1)), bandLayoutForTolerance(10))).toHaveLength(11);
  });

  it('When queried with probes, then recall within the tolerance is still exactly 1', () => {
    const r = rng(17);
    const index = new BandedSignatureIndex(bandLayoutForTolerance(10, 1));
    const stored = Array.from({ length: 1500 }, () => randomCode(r));
    stored.forEach((c) => index.add(c));
    const mismatches: number[] = [];
    let checked = 0;
    for (let q = 0; q < 150; q++) {
      const query = flip(stored[Math.floor(r() * stored.length)] as SignatureCode, Math.floor(r() * 11), r);
      const got = index.query(query, 10).entries;
      const expected = stored.map((c, i) => (hammingDistance(c, query) <= 10 ? i : -1)).filter((i) => i >= 0);
      if (got.length !== expected.length || !expected.every((i) => got.includes(i))) mismatches.push(q);
      checked += expected.length;
    }
    expect(mismatches).toEqual([]);
    expect(checked).toBeGreaterThanOrEqual(150);
    expect(() => index.query(stored[0] as SignatureCode, 14)).toThrow(RangeError);
  });
});

function popcount(x: number): number {
  let n = 0;
  for (; x; x &= x - 1) n++;
  return n;
}
