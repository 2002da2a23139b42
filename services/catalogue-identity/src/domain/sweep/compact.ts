/**
 * Compact storage for the sweep's slim index (remote-index.ts) and the matcher's claims: strings packed
 * into UTF-8 blocks instead of one heap object each, numeric columns in typed arrays, and a sorted
 * 64-bit key table instead of a Map. A few large buffers instead of millions of small objects keep the
 * memory per track low and the garbage collector's work small (issue 7 "Bounded memory"; figures in
 * bench/src/catalogue-identity/sweep-500k.ts).
 */

/** Bytes per arena block. Entries never straddle blocks; a longer string gets a block of its own. */
const BLOCK_BYTES = 1 << 20;

/** Grows a typed array to at least `need` elements (capacity doubling), keeping its content. */
function grown<T extends Uint32Array | Int32Array | Float64Array | Float32Array | Uint8Array>(arr: T, need: number): T {
  if (need <= arr.length) return arr;
  let cap = Math.max(16, arr.length);
  while (cap < need) cap *= 2;
  const next = new (arr.constructor as new (n: number) => T)(cap);
  next.set(arr);
  return next;
}

/** Trims a typed array to `n` elements (no copy when it already fits exactly). */
function trimmed<T extends Uint32Array | Int32Array | Float64Array | Float32Array | Uint8Array>(arr: T, n: number): T {
  return arr.length === n ? arr : (arr.slice(0, n) as T);
}

/**
 * Append-only list of optional strings stored as UTF-8 in 1 MiB blocks: (bytes + 8) per entry, the
 * entry's place as one 32-bit offset (block number x 2^20 + start; 4096 blocks at most, 4 GiB).
 * `get` decodes a new string on each call.
 */
export class StringArena {
  private readonly blocks: Buffer[] = [];
  private used = BLOCK_BYTES;
  private offsetOf = new Uint32Array(16);
  /** Byte length, or -1 for an absent value. */
  private lengthOf = new Int32Array(16);
  private count = 0;

  /** Appends `value` (undefined allowed); returns its index. @throws RangeError past 4 GiB of text. */
  add(value: string | undefined): number {
    const i = this.count++;
    this.offsetOf = grown(this.offsetOf, this.count);
    this.lengthOf = grown(this.lengthOf, this.count);
    if (value === undefined) {
      this.lengthOf[i] = -1;
      return i;
    }
    const bytes = Buffer.byteLength(value, 'utf8');
    if (this.blocks.length === 0 || this.used + bytes > this.blocks[this.blocks.length - 1]!.length) {
      if (this.blocks.length >= 4096) throw new RangeError('string arena full (4 GiB)');
      this.blocks.push(Buffer.allocUnsafe(Math.max(BLOCK_BYTES, bytes)));
      this.used = 0;
    }
    const block = this.blocks[this.blocks.length - 1]!;
    block.write(value, this.used, bytes, 'utf8');
    this.offsetOf[i] = (this.blocks.length - 1) * BLOCK_BYTES + this.used;
    this.lengthOf[i] = bytes;
    this.used += bytes;
    return i;
  }

  /** The string at `i` (undefined when absent or out of range). */
  get(i: number): string | undefined {
    if (!(i >= 0 && i < this.count)) return undefined;
    const len = this.lengthOf[i]!;
    if (len < 0) return undefined;
    const off = this.offsetOf[i]!;
    const start = off % BLOCK_BYTES;
    return this.blocks[Math.floor(off / BLOCK_BYTES)]!.toString('utf8', start, start + len);
  }

  /** Whether the string at `i` equals `value`. */
  equals(i: number, value: string): boolean {
    const len = this.lengthOf[i];
    if (len === undefined || len < 0 || Buffer.byteLength(value, 'utf8') !== len) return false;
    return this.get(i) === value;
  }

  /** Drops the spare capacity of the index columns (after the last append). */
  trim(): void {
    this.offsetOf = trimmed(this.offsetOf, this.count);
    this.lengthOf = trimmed(this.lengthOf, this.count);
  }

  get size(): number {
    return this.count;
  }
}

/** Growable typed column of numbers with an "absent" marker (NaN); float32 when `single` (years, star ratings). */
export class NumberColumn {
  private values: Float64Array | Float32Array;
  private count = 0;

  constructor(single = false) {
    this.values = single ? new Float32Array(16) : new Float64Array(16);
  }

  add(value: number | undefined): void {
    this.values = grown(this.values, this.count + 1);
    this.values[this.count++] = value === undefined || !Number.isFinite(value) ? Number.NaN : value;
  }

  get(i: number): number | undefined {
    const v = this.values[i];
    return v === undefined || Number.isNaN(v) ? undefined : v;
  }

  /** Drops the spare capacity (after the last append). */
  trim(): void {
    this.values = trimmed(this.values, this.count);
  }
}

/**
 * Strings that repeat (album, artist names, artist ids): each distinct value once, a 32-bit code per
 * entry (0 = absent).
 */
export class InternedColumn {
  private readonly codes = new Map<string, number>();
  private readonly values: string[] = [''];
  private column = new Uint32Array(16);
  private count = 0;

  add(value: string | undefined): void {
    let code = 0;
    if (value !== undefined) {
      code = this.codes.get(value) ?? 0;
      if (code === 0) {
        code = this.values.length;
        this.values.push(value);
        this.codes.set(value, code);
      }
    }
    this.column = grown(this.column, this.count + 1);
    this.column[this.count++] = code;
  }

  get(i: number): string | undefined {
    const code = this.column[i] ?? 0;
    return code === 0 ? undefined : this.values[code];
  }

  /** Drops the spare capacity (after the last append). */
  trim(): void {
    this.column = trimmed(this.column, this.count);
  }
}

/** Marks a key shared by several distinct values in a collapsed {@link KeyTable}. */
export const AMBIGUOUS = -1;

/**
 * A table of (64-bit key, int32 value) pairs, kept as three typed columns (12 bytes per entry) and
 * sorted on demand for binary search. Entries are appended unsorted; the first lookup after an append
 * sorts once (`seal`).
 *
 * In `collapse` mode a sealed key holds one value: the value when every entry of that key carries the
 * same one, else {@link AMBIGUOUS}. Without it, equal keys stay as separate entries (see `range`).
 */
export class KeyTable {
  private hi = new Uint32Array(16);
  private lo = new Uint32Array(16);
  private val = new Int32Array(16);
  private n = 0;
  private sorted = true;

  constructor(private readonly collapse: boolean) {}

  /** Appends an entry. */
  add(h1: number, h2: number, value: number): void {
    const i = this.n++;
    this.hi = grown(this.hi, this.n);
    this.lo = grown(this.lo, this.n);
    this.val = grown(this.val, this.n);
    this.hi[i] = h1;
    this.lo[i] = h2;
    this.val[i] = value;
    this.sorted = false;
  }

  /** Entries (after sealing: distinct keys in collapse mode). */
  get size(): number {
    this.seal();
    return this.n;
  }

  /**
   * Sorts by (key, value) and, in collapse mode, merges equal keys; entries whose value is flagged in
   * `drop` are removed first. Trims the columns to the entry count. O(n log n).
   */
  seal(drop?: Uint8Array): void {
    if (this.sorted && !drop) return;
    const { hi, lo, val } = this;
    let perm = new Uint32Array(this.n);
    let m = 0;
    for (let i = 0; i < this.n; i++) {
      const v = val[i]!;
      if (drop && v >= 0 && drop[v] === 1) continue;
      perm[m++] = i;
    }
    perm = perm.subarray(0, m);
    perm.sort((a, b) => hi[a]! - hi[b]! || lo[a]! - lo[b]! || val[a]! - val[b]!);
    const nh = new Uint32Array(Math.max(1, m));
    const nl = new Uint32Array(Math.max(1, m));
    const nv = new Int32Array(Math.max(1, m));
    let k = 0;
    for (let j = 0; j < m; j++) {
      const i = perm[j]!;
      if (this.collapse && k > 0 && nh[k - 1] === hi[i] && nl[k - 1] === lo[i]) {
        if (nv[k - 1] !== val[i]) nv[k - 1] = AMBIGUOUS;
        continue;
      }
      nh[k] = hi[i]!;
      nl[k] = lo[i]!;
      nv[k] = val[i]!;
      k++;
    }
    this.hi = nh.length === k ? nh : nh.slice(0, Math.max(1, k));
    this.lo = nl.length === k ? nl : nl.slice(0, Math.max(1, k));
    this.val = nv.length === k ? nv : nv.slice(0, Math.max(1, k));
    this.n = k;
    this.sorted = true;
  }

  /** Index of the first entry with key >= (h1, h2) in the sealed order. */
  private lowerBound(h1: number, h2: number): number {
    this.seal();
    let a = 0;
    let b = this.n;
    while (a < b) {
      const mid = (a + b) >>> 1;
      const c = this.hi[mid]! - h1 || this.lo[mid]! - h2;
      if (c < 0) a = mid + 1;
      else b = mid;
    }
    return a;
  }

  /** The value of a key (collapse mode: the single value or AMBIGUOUS), or undefined. */
  get(h1: number, h2: number): number | undefined {
    const i = this.lowerBound(h1, h2);
    return i < this.n && this.hi[i] === h1 && this.lo[i] === h2 ? this.val[i] : undefined;
  }

  /** The values of every key stored more than once (non-collapse mode), each run in ascending order. */
  repeatedKeys(): number[][] {
    this.seal();
    const out: number[][] = [];
    for (let i = 1; i < this.n; i++) {
      if (this.hi[i] !== this.hi[i - 1] || this.lo[i] !== this.lo[i - 1]) continue;
      const run = [this.val[i - 1]!, this.val[i]!];
      while (i + 1 < this.n && this.hi[i + 1] === this.hi[i] && this.lo[i + 1] === this.lo[i]) run.push(this.val[++i]!);
      out.push(run);
    }
    return out;
  }

  /** Every value stored under a key, in ascending order. */
  values(h1: number, h2: number): number[] {
    const out: number[] = [];
    for (let i = this.lowerBound(h1, h2); i < this.n && this.hi[i] === h1 && this.lo[i] === h2; i++) out.push(this.val[i]!);
    return out;
  }
}

/** Scratch output of {@link hash64}: the two 32-bit lanes of the last hash. */
export const HASH = new Uint32Array(2);

/**
 * 64-bit hash of a string in two independent 32-bit lanes (FNV-1a, and a multiply-xorshift lane with
 * MurmurHash2's multiplier seeded by the length), written to {@link HASH} to avoid allocating. Collision
 * odds among 500k keys: about 500k^2 / 2^65 = 7e-9.
 */
export function hash64(key: string): void {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ key.length;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
    h2 ^= h2 >>> 13;
  }
  HASH[0] = h1 >>> 0;
  HASH[1] = h2 >>> 0;
}
