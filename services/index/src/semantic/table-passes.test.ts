import { ColumnFill, OTHER_COLUMNS } from './column-fill';
import { scorePosting } from './postings';
import { carrierBitsets, kthSmallest, popcount, topRowsByValue } from './table-passes';
import { FEATURE_COLUMNS, OTHER_OFFSET } from './vocabulary';

/**
 * The one-pass row passes of the text-search table (issue 35, activation cost) against the straightforward passes
 * they replace, on data with many ties: the same bits, the same rows in the same order, the same cut.
 */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

test('carrier bitsets are the tagged rows whose normalised score reaches the threshold, per column', () => {
  const rand = lcg(3);
  const size = 777;
  const fill = new ColumnFill(size, () => -1);
  for (let r = 0; r < size; r++) {
    if (r % 7 === 3) continue; // untagged rows
    const tags = Uint8Array.from({ length: OTHER_OFFSET }, () => Math.floor(rand() * rand() * 256));
    // Other features on a coarse grid: many exact ties with the threshold's neighbourhood.
    fill.set(r, tags, Array.from({ length: OTHER_COLUMNS }, () => Math.round(rand() * 20) / 20), null, null);
  }
  const taggedRows: number[] = [];
  for (let r = 0; r < size; r++) if (fill.tagged[r]) taggedRows.push(r);
  const low = Float32Array.from({ length: FEATURE_COLUMNS }, () => rand() * 0.3);
  const high = Float32Array.from(low, (lo) => lo + 0.25 + rand() * 0.5);
  const threshold = 0.5;
  const bits = carrierBitsets(fill, taggedRows, size, low, high, threshold);
  const value = (r: number, c: number) => (c < OTHER_OFFSET ? Math.fround(fill.tagBytes[r * OTHER_OFFSET + c]! / 255) : fill.others[r * OTHER_COLUMNS + c - OTHER_OFFSET]!);
  let set = 0;
  for (let c = 0; c < FEATURE_COLUMNS; c++) {
    for (let r = 0; r < size; r++) {
      const expected = fill.tagged[r] === 1 && Math.max(0, Math.min(1, (value(r, c) - low[c]!) / (high[c]! - low[c]!))) >= threshold;
      expect([c, r, ((bits[c]![r >>> 5]! >>> (r & 31)) & 1) === 1]).toEqual([c, r, expected]);
      if (expected) set++;
    }
  }
  expect(set).toBeGreaterThan(1000);
  expect(bits.reduce((n, b) => n + popcount(b), 0)).toBe(set);
});

test('the k best rows by value are the first k of the full sort (value descending, ties by row)', () => {
  const rand = lcg(11);
  const rows = Array.from({ length: 5000 }, (_, i) => i).filter((r) => r % 3 !== 1);
  const values = new Map(rows.map((r) => [r, Math.floor(rand() * 40) / 40]));
  for (const k of [0, 1, 7, 200, rows.length, rows.length + 5]) {
    const sorted = rows.map((r) => [r, values.get(r)!] as const).sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, k);
    expect(topRowsByValue(rows, (r) => values.get(r)!, k)).toEqual(sorted);
  }
  // Ascending values (every row enters) and all equal (only the first k rows).
  expect(topRowsByValue([1, 2, 3, 4, 5], (r) => r, 2)).toEqual([
    [5, 5],
    [4, 4],
  ]);
  expect(topRowsByValue([4, 8, 9, 12], () => 0.5, 3).map(([r]) => r)).toEqual([4, 8, 9]);
});

test('quickselect finds the value the sorted array holds at every rank', () => {
  const rand = lcg(5);
  const values = Float64Array.from({ length: 3001 }, () => Math.floor(rand() * 500) / 7);
  const sorted = Float64Array.from(values.subarray(0, 2900)).sort();
  for (const kth of [0, 1, 17, 1449, 2898, 2899]) expect(kthSmallest(values, 2900, kth)).toBe(sorted[kth]);
  expect(kthSmallest(Float64Array.of(2, 2, 2, 2), 4, 2)).toBe(2);
  expect(kthSmallest(Float64Array.of(9), 1, 0)).toBe(9);
});

test('a score posting holds the rows of the former whole-sort cut, in the same order', () => {
  const rand = lcg(21);
  const size = 20_000;
  const scores = Float64Array.from({ length: size }, () => (rand() < 0.3 ? 0 : Math.floor(rand() * 300) / 300));
  const has = (r: number) => r % 5 !== 0;
  for (const cap of [1, 100, 4096, size]) {
    // The construction before issue 35's activation work: JS arrays and a sort of every score for the cut.
    const rows: number[] = [];
    const ss: number[] = [];
    for (let r = 0; r < size; r++) {
      if (!has(r) || !(scores[r]! > 0)) continue;
      rows.push(r);
      ss.push(scores[r]!);
    }
    const take = Math.min(cap, rows.length);
    let kept = rows.map((_, i) => i);
    if (take < rows.length) {
      const cut = Float64Array.from(ss).sort()[rows.length - take]!;
      kept = kept.filter((i) => ss[i]! >= cut);
    }
    kept.sort((a, b) => ss[b]! - ss[a]! || rows[a]! - rows[b]!);
    const expected = Int32Array.from(kept.slice(0, take), (i) => rows[i]!);
    const got = scorePosting(size, has, (r) => scores[r]!, cap);
    expect(got.complete).toBe(take === rows.length);
    expect(Array.from(got.rows)).toEqual(Array.from(expected));
  }
});
