/**
 * Hamming-tolerant candidate lookup by exact band matches (multi-index hashing).
 *
 * The math. Split the 200 signature bits into B disjoint bands. If two codes differ in at most t bits,
 * each differing bit lies in exactly one band, so at most t bands differ and, when B >= t + 1, at
 * least one band is bit-for-bit equal (pigeonhole). Looking up every stored code that shares at least
 * one (band number, band value) key with the query therefore returns a superset of all codes within
 * t bits: recall is exactly 1, with no probabilistic term. The superset is then cut to distance <= t
 * by an exact Hamming check.
 *
 * Cost. A band of w bits has 2^w values. For codes whose bits are independent and balanced, a given
 * stored code shares a given band with the query with probability 2^-w, so a lookup over N stored
 * codes examines about N * sum_b 2^-w_b codes besides the true neighbours. Default t = 10 -> B = 11
 * bands; 200 = 2*19 + 9*18 bits, so N = 1,000,000 gives 2*1.9 + 9*3.8 ~ 38 codes examined per lookup
 * (measured: 38.7), i.e. 1/26,000 of the catalogue. Strictly this is still proportional to N with a
 * tiny factor; what keeps it far from a scan is the 2^-w per band. Real embeddings have biased and
 * correlated bits, which fills some band values far beyond 2^-w (the reference's migration saw one
 * band value shared by ~10^5 songs, issue #777), so the default layout is STRIDED: bit i goes to band
 * i mod B, spreading neighbouring (often correlated) dimensions and any run of always-set dimensions
 * over all bands. {@link balancedBandLayout} can build a layout from a sample of real codes instead; a
 * store must persist the layout id it indexed with and rebuild its band index when the id changes.
 * Measured on a clustered synthetic set of 1,000,000 songs (bench/src/catalogue-identity/identity-1m.ts): 6,818 codes
 * examined per lookup with the strided layout, 5,132 with a balanced layout, 1,700 with the
 * multi-probe layout below.
 *
 * Multi-probe variant (opt-in, BandLayout.probeRadius = r > 0; multi-index hashing, Norouzi et al.,
 * "Fast search in Hamming space with multi-index hashing", CVPR 2012). If two codes differ in at most
 * t bits over B disjoint bands, some band differs in at most floor(t / B) bits. So with
 * B * (r + 1) >= t + 1, looking up every band's value AND every value within r bits of it finds every
 * code within t bits. Fewer, wider bands make each bucket 2^(w' - w) times smaller at the price of
 * sum_{i<=r} C(w, i) probes per band: t = 10 with 7 bands of 28-29 bits and r = 1 is 7 + 200 = 207
 * probes whose buckets are ~2^10 times smaller than 11 bands' (random codes at N = 10^6: ~0.5 codes
 * examined instead of 38; clustered: 4x fewer, see above). Caveat for stores: two codes within t bits then share a band only up to r bits,
 * not exactly, so a lock taken on a song's own exact band keys no longer serialises two near-identical
 * inserts; the default is therefore r = 0.
 *
 * Store contract: index rows (band_no, band_value) -> song, with band_value = {@link bandKeys} of the
 * song's signature (exact values, whatever the probe radius), and answer a lookup with every song
 * sharing any of the query's keys ({@link probeKeys}; equal to bandKeys when r = 0). It may drop songs
 * whose Hamming distance exceeds t (e.g. with bit_count(sig # query) in SQL); the domain re-checks.
 */
import {
  SIGNATURE_BITS,
  SIGNATURE_WORDS,
  SignatureCode,
  hammingDistancePacked,
  signatureBit,
} from './signature';

/** How the 200 bits are split into bands. */
export interface BandLayout {
  /** Stable name of the layout; a store indexes with one layout and must rebuild when it changes. */
  readonly id: string;
  /** Bit numbers (dimension indices, 0..199) of each band, most significant first. */
  readonly bands: readonly (readonly number[])[];
  /**
   * Lookups also probe band values within this many bits (multi-index hashing); absent or 0 = exact
   * band matches only. Query-side only: the stored (band, value) rows do not depend on it, so it is
   * not part of `id`.
   */
  readonly probeRadius?: number;
}

/** One key of the band index: band number and the band's value (an unsigned integer < 2^width). */
export interface BandKey {
  readonly band: number;
  readonly value: number;
}

/** Widest band supported: band values must stay exact 32-bit unsigned integers. */
export const MAX_BAND_WIDTH = 31;

/**
 * Fewest bands that guarantee recall 1 at tolerance t with probe radius r: ceil((t + 1) / (r + 1))
 * (t + 1 for exact band matches), raised when needed so that no band is wider than
 * {@link MAX_BAND_WIDTH} bits (200 bits need at least 7 bands).
 */
export function bandCountForTolerance(maxHamming: number, probeRadius = 0): number {
  if (!Number.isInteger(maxHamming) || maxHamming < 0) throw new RangeError(`maxHamming must be an integer >= 0, got ${maxHamming}`);
  if (!Number.isInteger(probeRadius) || probeRadius < 0) throw new RangeError(`probeRadius must be an integer >= 0, got ${probeRadius}`);
  return Math.max(Math.ceil((maxHamming + 1) / (probeRadius + 1)), Math.ceil(SIGNATURE_BITS / MAX_BAND_WIDTH));
}

/**
 * Strided layout: bit i belongs to band (i mod bandCount), in increasing bit order. 11 bands give
 * bands 0 and 1 nineteen bits and bands 2..10 eighteen bits.
 */
export function stridedBandLayout(bandCount: number, probeRadius = 0): BandLayout {
  if (!Number.isInteger(bandCount) || bandCount < Math.ceil(SIGNATURE_BITS / MAX_BAND_WIDTH) || bandCount > SIGNATURE_BITS) {
    throw new RangeError(`bandCount must be an integer in ${Math.ceil(SIGNATURE_BITS / MAX_BAND_WIDTH)}..${SIGNATURE_BITS}, got ${bandCount}`);
  }
  const bands: number[][] = Array.from({ length: bandCount }, () => []);
  for (let i = 0; i < SIGNATURE_BITS; i++) (bands[i % bandCount] as number[]).push(i);
  return probeRadius > 0 ? { id: `strided-${bandCount}x${SIGNATURE_BITS}`, bands, probeRadius } : { id: `strided-${bandCount}x${SIGNATURE_BITS}`, bands };
}

/**
 * The layout for a tolerance: {@link stridedBandLayout}({@link bandCountForTolerance}(t, r), r).
 * Default r = 0: t + 1 exact bands (11 bands for t = 10).
 */
export function bandLayoutForTolerance(maxHamming: number, probeRadius = 0): BandLayout {
  return stridedBandLayout(bandCountForTolerance(maxHamming, probeRadius), probeRadius);
}

/** Probe radius of a layout (0 when absent). */
export function probeRadiusOf(layout: BandLayout): number {
  return layout.probeRadius ?? 0;
}

/**
 * Checks that a layout's bands are disjoint, non-empty, at most {@link MAX_BAND_WIDTH} wide and use
 * bits 0..199 only, and that bands * (probeRadius + 1) >= t + 1 for the given tolerance.
 * @throws RangeError describing the first violation.
 */
export function assertBandLayout(layout: BandLayout, maxHamming: number): void {
  const r = probeRadiusOf(layout);
  if (!Number.isInteger(r) || r < 0 || r > 3) throw new RangeError(`layout ${layout.id}: probeRadius must be an integer in 0..3, got ${r}`);
  if (layout.bands.length * (r + 1) < maxHamming + 1) {
    const needed = Math.ceil((maxHamming + 1) / (r + 1));
    throw new RangeError(`layout ${layout.id} has ${layout.bands.length} bands at probe radius ${r}; tolerance ${maxHamming} needs at least ${needed}`);
  }
  const seen = new Uint8Array(SIGNATURE_BITS);
  for (const band of layout.bands) {
    if (band.length === 0 || band.length > MAX_BAND_WIDTH) throw new RangeError(`layout ${layout.id}: band width ${band.length} outside 1..${MAX_BAND_WIDTH}`);
    for (const bit of band) {
      if (!Number.isInteger(bit) || bit < 0 || bit >= SIGNATURE_BITS) throw new RangeError(`layout ${layout.id}: bit ${bit} outside 0..199`);
      if (seen[bit]) throw new RangeError(`layout ${layout.id}: bit ${bit} in two bands`);
      seen[bit] = 1;
    }
  }
}

/** Value of every band of a code: element b = band b's bits read most significant first. */
export function bandValues(code: SignatureCode, layout: BandLayout): Uint32Array {
  const out = new Uint32Array(layout.bands.length);
  for (let b = 0; b < layout.bands.length; b++) {
    const bits = layout.bands[b] as readonly number[];
    let v = 0;
    for (let k = 0; k < bits.length; k++) v = v * 2 + signatureBit(code, bits[k] as number);
    out[b] = v;
  }
  return out;
}

/** The exact (band, value) keys of a code, one per band: what a store indexes a song under. */
export function bandKeys(code: SignatureCode, layout: BandLayout): BandKey[] {
  const values = bandValues(code, layout);
  return Array.from(values, (value, band) => ({ band, value }));
}

/**
 * Calls `visit(v')` for every value v' within `radius` bits of the `width`-bit value v, v itself
 * first, then one flipped bit, two, ... (sum_{i<=radius} C(width, i) calls).
 */
export function forEachProbe(value: number, width: number, radius: number, visit: (probe: number) => void): void {
  visit(value);
  const flip = (v: number, from: number, left: number): void => {
    for (let i = from; i < width; i++) {
      const p = (v ^ (1 << i)) >>> 0;
      visit(p);
      if (left > 1) flip(p, i + 1, left - 1);
    }
  };
  if (radius > 0) flip(value, 0, radius);
}

/**
 * The keys a lookup must ask for: the exact band keys, plus every value within the layout's probe
 * radius of each (see the module docs). Equal to {@link bandKeys} when the radius is 0.
 */
export function probeKeys(code: SignatureCode, layout: BandLayout): BandKey[] {
  const r = probeRadiusOf(layout);
  if (r === 0) return bandKeys(code, layout);
  const values = bandValues(code, layout);
  const keys: BandKey[] = [];
  values.forEach((v, band) => forEachProbe(v, (layout.bands[band] as readonly number[]).length, r, (value) => keys.push({ band, value })));
  return keys;
}

/**
 * Layout fitted to a sample of real codes: bits are dealt to bands so that each band's total bit
 * entropy is as even as possible (greedy: bits by decreasing entropy, each to the band with the
 * lowest entropy sum that still has room; band sizes as in the strided layout). Near-constant bits
 * carry no selectivity, so spreading them stops one band from turning into a huge bucket. Ignores
 * correlations between bits. Deterministic for a given sample.
 *
 * @param sample codes of stored songs (a few thousand suffice).
 * @param bandCount number of bands (>= t + 1 for the tolerance in use).
 */
export function balancedBandLayout(sample: readonly SignatureCode[], bandCount: number): BandLayout {
  const template = stridedBandLayout(bandCount);
  const entropy = new Float64Array(SIGNATURE_BITS);
  for (let i = 0; i < SIGNATURE_BITS; i++) {
    let ones = 0;
    for (const code of sample) ones += signatureBit(code, i);
    const p = sample.length === 0 ? 0.5 : ones / sample.length;
    entropy[i] = p <= 0 || p >= 1 ? 0 : -(p * Math.log2(p) + (1 - p) * Math.log2(1 - p));
  }
  const order = Array.from({ length: SIGNATURE_BITS }, (_, i) => i).sort((a, b) => (entropy[b] as number) - (entropy[a] as number) || a - b);
  const capacity = template.bands.map((b) => b.length);
  const bands: number[][] = Array.from({ length: bandCount }, () => []);
  const total = new Float64Array(bandCount);
  for (const bit of order) {
    let best = -1;
    for (let b = 0; b < bandCount; b++) {
      if ((bands[b] as number[]).length >= (capacity[b] as number)) continue;
      if (best < 0 || (total[b] as number) < (total[best] as number)) best = b;
    }
    (bands[best] as number[]).push(bit);
    total[best] = (total[best] as number) + (entropy[bit] as number);
  }
  for (const band of bands) band.sort((a, b) => a - b);
  // The id names the exact assignment so a store notices any change.
  let h = 0x811c9dc5;
  for (const band of bands) {
    for (const bit of band) h = Math.imul(h ^ (bit + 1), 0x01000193) >>> 0;
    h = Math.imul(h ^ 0xfff, 0x01000193) >>> 0; // band separator (bits are 1..200, never 0xfff)
  }
  return { id: `balanced-${bandCount}x${SIGNATURE_BITS}-${h.toString(16).padStart(8, '0')}`, bands };
}

/** Result of {@link BandedSignatureIndex.query}. */
export interface BandQueryResult {
  /** Entry numbers within the tolerance, nearest first (ties by entry number). */
  readonly entries: number[];
  /** Hamming distance of each returned entry, same order. */
  readonly distances: number[];
  /** Distinct stored codes examined (shared at least one band with the query). */
  readonly scanned: number;
}

/** Bands at most this wide use a direct-addressed head table (2^w Int32 per band). */
const DIRECT_TABLE_MAX_WIDTH = 22;

/**
 * In-memory band index over packed signatures, for tests, benchmarks and the relabel planner.
 * Entries are numbered 0, 1, 2, ... in insertion order and never removed.
 *
 * Layout in memory: codes packed 7 words per entry; per band a chain (head[value] -> newest entry,
 * next[entry] -> previous entry with the same value). Bands up to 22 bits use a direct Int32Array
 * head table (11 bands of 18-19 bits: 23 MB), wider bands a Map. Per entry: 28 bytes of code +
 * 4 bytes per band of chain links + 4 bytes of visit stamp (76 bytes at 11 bands).
 */
export class BandedSignatureIndex {
  readonly layout: BandLayout;
  private readonly bandCount: number;
  private readonly directHeads: (Int32Array | null)[];
  private readonly mapHeads: (Map<number, number> | null)[];
  private codes: Uint32Array;
  private next: Int32Array;
  private stamps: Int32Array;
  private stamp = 0;
  private count = 0;
  private capacity: number;
  private readonly valuesScratch: Uint32Array;
  private readonly probeRadius: number;

  /**
   * @param layout band layout (see {@link assertBandLayout}; it is checked against tolerance 0 here,
   *   callers check their tolerance).
   * @param initialCapacity entries to allocate up front; the index grows by doubling.
   */
  constructor(layout: BandLayout, initialCapacity = 1024) {
    assertBandLayout(layout, 0);
    this.layout = layout;
    this.bandCount = layout.bands.length;
    this.probeRadius = probeRadiusOf(layout);
    this.capacity = Math.max(16, initialCapacity);
    this.directHeads = layout.bands.map((b) => (b.length <= DIRECT_TABLE_MAX_WIDTH ? new Int32Array(2 ** b.length).fill(-1) : null));
    this.mapHeads = layout.bands.map((b) => (b.length <= DIRECT_TABLE_MAX_WIDTH ? null : new Map<number, number>()));
    this.codes = new Uint32Array(this.capacity * SIGNATURE_WORDS);
    this.next = new Int32Array(this.capacity * this.bandCount);
    this.stamps = new Int32Array(this.capacity);
    this.valuesScratch = new Uint32Array(this.bandCount);
  }

  /** Number of entries. */
  get size(): number {
    return this.count;
  }

  /** Adds a code; returns its entry number. */
  add(code: SignatureCode): number {
    if (this.count === this.capacity) this.grow();
    const e = this.count++;
    this.codes.set(code.subarray(0, SIGNATURE_WORDS), e * SIGNATURE_WORDS);
    const values = this.computeValues(code);
    for (let b = 0; b < this.bandCount; b++) {
      const v = values[b] as number;
      const direct = this.directHeads[b];
      let prev: number;
      if (direct) {
        prev = direct[v] as number;
        direct[v] = e;
      } else {
        const map = this.mapHeads[b] as Map<number, number>;
        prev = map.get(v) ?? -1;
        map.set(v, e);
      }
      this.next[e * this.bandCount + b] = prev;
    }
    return e;
  }

  /** Copy of the code stored at an entry. */
  code(entry: number): SignatureCode {
    if (!(entry >= 0 && entry < this.count)) throw new RangeError(`no entry ${entry}`);
    return this.codes.slice(entry * SIGNATURE_WORDS, (entry + 1) * SIGNATURE_WORDS);
  }

  /**
   * Every entry within `maxHamming` bits of `code`. Exact (recall 1) while
   * maxHamming < bands * (probeRadius + 1) (pigeonhole); a larger tolerance is refused.
   * @throws RangeError when the tolerance is beyond the layout's guarantee.
   */
  query(code: SignatureCode, maxHamming: number): BandQueryResult {
    if (maxHamming >= this.bandCount * (this.probeRadius + 1)) {
      throw new RangeError(`tolerance ${maxHamming} needs more than ${this.bandCount} bands at probe radius ${this.probeRadius}`);
    }
    if (++this.stamp === 0x7fffffff) {
      this.stamps.fill(0);
      this.stamp = 1;
    }
    const stamp = this.stamp;
    const values = this.computeValues(code);
    const hits: number[] = [];
    const dists: number[] = [];
    let scanned = 0;
    for (let b = 0; b < this.bandCount; b++) {
      const direct = this.directHeads[b];
      const map = this.mapHeads[b] as Map<number, number>;
      const walk = (v: number): void => {
        let e = direct ? (direct[v] as number) : (map.get(v) ?? -1);
        while (e >= 0) {
          if (this.stamps[e] !== stamp) {
            this.stamps[e] = stamp;
            scanned++;
            const d = hammingDistancePacked(this.codes, e * SIGNATURE_WORDS, code);
            if (d <= maxHamming) {
              hits.push(e);
              dists.push(d);
            }
          }
          e = this.next[e * this.bandCount + b] as number;
        }
      };
      if (this.probeRadius === 0) walk(values[b] as number);
      else forEachProbe(values[b] as number, (this.layout.bands[b] as readonly number[]).length, this.probeRadius, walk);
    }
    const order = hits.map((_, i) => i).sort((i, j) => (dists[i] as number) - (dists[j] as number) || (hits[i] as number) - (hits[j] as number));
    return { entries: order.map((i) => hits[i] as number), distances: order.map((i) => dists[i] as number), scanned };
  }

  /** Size of the largest bucket (entries sharing one value) of each band: a skew diagnostic. */
  largestBuckets(): number[] {
    return this.layout.bands.map((_, b) => {
      const counts = new Map<number, number>();
      for (let e = 0; e < this.count; e++) {
        const v = this.bandValueOf(e, b);
        counts.set(v, (counts.get(v) ?? 0) + 1);
      }
      let max = 0;
      for (const c of counts.values()) if (c > max) max = c;
      return max;
    });
  }

  private bandValueOf(entry: number, band: number): number {
    const bits = this.layout.bands[band] as readonly number[];
    const base = entry * SIGNATURE_WORDS;
    let v = 0;
    for (let k = 0; k < bits.length; k++) {
      const d = bits[k] as number;
      v = v * 2 + (((this.codes[base + (d >>> 5)] as number) >>> (31 - (d & 31))) & 1);
    }
    return v;
  }

  private computeValues(code: SignatureCode): Uint32Array {
    const out = this.valuesScratch;
    for (let b = 0; b < this.bandCount; b++) {
      const bits = this.layout.bands[b] as readonly number[];
      let v = 0;
      for (let k = 0; k < bits.length; k++) {
        const d = bits[k] as number;
        v = v * 2 + (((code[d >>> 5] as number) >>> (31 - (d & 31))) & 1);
      }
      out[b] = v;
    }
    return out;
  }

  private grow(): void {
    const cap = this.capacity * 2;
    const codes = new Uint32Array(cap * SIGNATURE_WORDS);
    codes.set(this.codes);
    const next = new Int32Array(cap * this.bandCount);
    next.set(this.next);
    const stamps = new Int32Array(cap);
    stamps.set(this.stamps);
    this.codes = codes;
    this.next = next;
    this.stamps = stamps;
    this.capacity = cap;
  }
}
