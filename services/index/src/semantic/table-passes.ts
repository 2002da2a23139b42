/**
 * Row passes of a SemanticTable's construction that read every row once (issue 35: the text-search table is built for
 * every generation at activation; at 1M songs its per-concept and per-mood passes over every row were most of the
 * activation's `prepare`). Each gives exactly the result of the straightforward pass it replaces (the tests compare).
 */
import { CONCEPT_KIND, STEER_CONCEPTS } from '@polyphony/contracts';
import type { ColumnFill } from './column-fill';
import type { SteerConcept } from './semantic-table';
import { deriveDirections } from './steering';
import { OTHER_COLUMNS } from './column-fill';
import { FEATURE_COLUMNS, LABEL_COLUMNS, OTHER_OFFSET } from './vocabulary';

/** Probability of a stored tag byte (b / 255 as float32), as SemanticTable reads it. */
const BYTE_PROBABILITY = Float32Array.from({ length: 256 }, (_, b) => b / 255);

/**
 * Per feature column, the bitset (bit row & 31 of word row >>> 5) of the tagged rows whose normalised score
 * clamp((p - low[c]) / (high[c] - low[c])) is at least `threshold`: one pass over the rows in row order (the fill's
 * row-major arrays read sequentially); a tag column's test is a table over its 256 bytes (the same float operations).
 * @returns FEATURE_COLUMNS bitsets of ceil(size / 32) words
 */
export function carrierBitsets(fill: ColumnFill, taggedRows: readonly number[], size: number, low: Float32Array, high: Float32Array, threshold: number): Uint32Array[] {
  const words = Math.ceil(size / 32);
  const bits = Array.from({ length: FEATURE_COLUMNS }, () => new Uint32Array(words));
  const carries = (p: number, c: number) => Math.max(0, Math.min(1, (p - low[c]!) / (high[c]! - low[c]!))) >= threshold;
  // byteCarries[c * 256 + b] = 1 when tag byte b carries column c.
  const byteCarries = new Uint8Array(OTHER_OFFSET * 256);
  for (let c = 0; c < OTHER_OFFSET; c++) for (let b = 0; b < 256; b++) byteCarries[c * 256 + b] = carries(BYTE_PROBABILITY[b]!, c) ? 1 : 0;
  const { tagBytes, others } = fill;
  for (const r of taggedRows) {
    const w = r >>> 5;
    const bit = 1 << (r & 31);
    const t = r * OTHER_OFFSET;
    for (let c = 0; c < OTHER_OFFSET; c++) if (byteCarries[c * 256 + tagBytes[t + c]!] === 1) bits[c]![w]! |= bit;
    const o = r * OTHER_COLUMNS;
    for (let j = 0; j < OTHER_COLUMNS; j++) if (carries(others[o + j]!, OTHER_OFFSET + j)) bits[OTHER_OFFSET + j]![w]! |= bit;
  }
  return bits;
}

/** Number of set bits of a bitset. */
export function popcount(bits: Uint32Array): number {
  let n = 0;
  for (let i = 0; i < bits.length; i++) {
    let x = bits[i]! - ((bits[i]! >>> 1) & 0x55555555);
    x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
    n += (Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24);
  }
  return n;
}

/**
 * The `k` rows of `rows` (ascending row numbers) with the highest `value`, as [row, value] pairs in descending value,
 * ties by lower row: the first k of sorting every pair by (value desc, row asc), without sorting every row (a sorted
 * list of the best k so far; a row enters only when its value is strictly above the worst kept one, since a tie with a
 * larger row sorts after it). Values must not be NaN. O(rows + entries x k).
 */
export function topRowsByValue(rows: readonly number[], value: (row: number) => number, k: number): Array<readonly [number, number]> {
  const best: Array<readonly [number, number]> = [];
  if (k <= 0) return best;
  for (const r of rows) {
    const v = value(r);
    if (best.length === k && !(v > best[k - 1]![1])) continue;
    // Insert after every kept pair of value >= v (they hold lower rows when equal), before the first of value < v.
    let lo = 0;
    let hi = best.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (best[mid]![1] >= v) lo = mid + 1;
      else hi = mid;
    }
    best.splice(lo, 0, [r, v]);
    if (best.length > k) best.pop();
  }
  return best;
}

/**
 * The value `Float64Array.from(values.subarray(0, n)).sort()[kth]` (the kth smallest, 0-based) without sorting:
 * Hoare quickselect on a copy (median-of-three pivots). Values must not be NaN. O(n) expected.
 */
export function kthSmallest(values: Float64Array, n: number, kth: number): number {
  const a = values.slice(0, n);
  let lo = 0;
  let hi = n - 1;
  while (hi > lo) {
    const mid = (lo + hi) >>> 1;
    // Median of three as the pivot value.
    const x = a[lo]!;
    const y = a[mid]!;
    const z = a[hi]!;
    const pivot = x < y ? (y < z ? y : x < z ? z : x) : x < z ? x : y < z ? z : y;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (kth <= j) hi = j;
    else if (kth >= i) lo = i;
    else return a[kth]!;
  }
  return a[kth]!;
}

/**
 * The steering concepts of a table being built (steering.ts): per concept (STEER_CONCEPTS order) its columns
 * (LABEL_COLUMNS), the bitset of the tagged rows carrying it (best normalised column >= CARRY_THRESHOLD: the union of
 * its columns' `carrierBitsets`) and its direction from the sample's vectors (deriveDirections). Cost: one pass over
 * the tagged rows' columns for the bitsets (table-passes.ts), O(sample x dim x concepts) for the directions (0.83 s of
 * CPU for a 20k sample at 200-d, 95 concepts); memory ceil(size / 32) x 4 bytes per concept (11 MiB for 95 concepts at
 * 1M songs), the same per feature column while it builds, plus a transient copy of the sample's vectors (16 MiB for
 * 20k x 200-d).
 * @param columnBits per feature column, the tagged rows whose normalised score is >= CARRY_THRESHOLD (bitsets)
 */
export function buildConcepts(size: number, sample: readonly number[], columnBits: readonly Uint32Array[], vectorOf: (row: number) => Float32Array): Map<string, SteerConcept> {
  const defs = STEER_CONCEPTS.map((name) => ({ name, columns: LABEL_COLUMNS.get(name) ?? [] }));
  const carries = (row: number, columns: readonly number[]) => columns.some((c) => ((columnBits[c]![row >>> 5]! >>> (row & 31)) & 1) === 1);
  const dim = sample.length ? vectorOf(sample[0]!).length : 0;
  const vectors = new Float32Array(sample.length * dim);
  sample.forEach((r, i) => vectors.set(vectorOf(r), i * dim));
  const directions = deriveDirections(
    vectors,
    dim,
    defs.map((d) => Uint8Array.from(sample, (r) => (carries(r, d.columns) ? 1 : 0))),
  );
  const out = new Map<string, SteerConcept>();
  defs.forEach((d, i) => {
    const carriers = new Uint32Array(Math.ceil(size / 32));
    for (const c of d.columns) {
      const bits = columnBits[c]!;
      for (let w = 0; w < carriers.length; w++) carriers[w]! |= bits[w]!;
    }
    out.set(d.name, { name: d.name, kind: CONCEPT_KIND[d.name] ?? 'genre', columns: d.columns, carriers, songs: popcount(carriers), direction: directions[i] ?? null });
  });
  return out;
}
