import { IvfCorruptStoreError, IvfDuplicateIdError, IvfInputError } from './errors';
import { hashString32 } from '@polyphony/vectors';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const EMPTY = -1;

/** Shortest run of trailing lowercase hex digits worth packing (nibbles save a byte per 2 digits, the tag costs 1). */
const MIN_PACKED_HEX = 8;
/** Longest prefix (UTF-8 bytes) of a packed id: it must fit the 7 low bits of the tag byte. */
const MAX_PACKED_PREFIX = 127;
const HEX_PAIRS = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/** Value of a lowercase hex digit's char code, or -1. */
function hexValue(c: number): number {
  return c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1;
}

/**
 * Encodes an id into `out` from `at`; returns the bytes written (`out` must have `3 * id.length + 1` bytes free).
 * Two forms, chosen by the id alone (so equal ids always have equal bytes, and the form is injective):
 *  - packed, when the id ends with at least MIN_PACKED_HEX lowercase hex digits: tag `0x80 | p`, the UTF-8
 *    prefix (p <= 127 bytes), then the longest even-length run of trailing hex digits as nibble pairs
 *    (canonical ids `fp_4` + 50 hex: 1 + 4 + 25 = 30 bytes instead of 54);
 *  - raw otherwise: tag 0, then the UTF-8 bytes.
 */
export function encodeId(id: string, out: Uint8Array, at: number): number {
  let h = 0;
  while (h < id.length && hexValue(id.charCodeAt(id.length - 1 - h)) >= 0) h++;
  h -= h & 1;
  if (h >= MIN_PACKED_HEX) {
    const prefix = id.length - h;
    const { written } = encoder.encodeInto(id.slice(0, prefix), out.subarray(at + 1));
    if (written <= MAX_PACKED_PREFIX) {
      out[at] = 0x80 | written;
      let o = at + 1 + written;
      for (let i = prefix; i < id.length; i += 2) out[o++] = (hexValue(id.charCodeAt(i)) << 4) | hexValue(id.charCodeAt(i + 1));
      return o - at;
    }
  }
  out[at] = 0;
  return 1 + encoder.encodeInto(id, out.subarray(at + 1)).written;
}

/** The id encoded (`encodeId`) in `bytes[start, end)`. */
export function decodeId(bytes: Uint8Array, start: number, end: number): string {
  const tag = bytes[start]!;
  if ((tag & 0x80) === 0) return decoder.decode(bytes.subarray(start + 1, end));
  const p = tag & 0x7f;
  let s = p === 0 ? '' : decoder.decode(bytes.subarray(start + 1, start + 1 + p));
  for (let i = start + 1 + p; i < end; i++) s += HEX_PAIRS[bytes[i]!]!;
  return s;
}

/**
 * Canonical id string table of one index generation: row number <-> canonical id.
 *
 * Ids are stored encoded (`encodeId`: trailing lowercase hex digits packed two per byte, the rest UTF-8) in
 * one byte buffer (no per-id JavaScript string is kept alive). `rowOf` compares encoded bytes:
 *  - when the encoded ids are in strictly increasing byte order by row (a generation built from the catalogue's
 *    snapshot, which streams in canonical-id order: the usual case), by binary search over the rows, no hash table
 *    (issue 35: 8 MiB less at 1M; ~20 comparisons of ~30 bytes a lookup);
 *  - otherwise (live-library appends, tests) with an open-addressing hash table (linear probing, FNV-1a keys of the
 *    id string, load factor <= 0.5).
 * Memory at 1M ids of 54 characters (`fp_4` + 50 hex): 30 MB of bytes (54 MB as UTF-8) + 4 MB offsets
 * (+ 8 MB hash slots when not sorted). Sorted ids of one encoded length (canonical ids) need no offsets either
 * (row r at `r * width`): 30 MB in all at 1M (issue 35). Immutable; build it with `IdTableBuilder`.
 */
export class IdTable {
  /** @internal use IdTableBuilder */
  constructor(
    readonly size: number,
    private readonly bytes_: Uint8Array,
    /**
     * `size + 1` byte offsets: id of row r is `bytes[offsets[r] .. offsets[r + 1])`; undefined when every encoded id
     * is `width` bytes long (row r at `r * width`; sorted tables only).
     */
    private readonly offsets: Uint32Array | undefined,
    /** Hash slots (rows), or undefined when the encoded ids are sorted by row (binary search). */
    private readonly slots: Int32Array | undefined,
    private readonly width = 0,
    /**
     * With `slots`: rows [0, sortedRows) are in increasing byte order and found by binary search; only the rows after
     * them are in the hash slots (a sorted build's table with rows appended, `appended`). 0 = every row is hashed.
     */
    private readonly sortedRows = 0,
  ) {}

  /** Bytes held: the encoded id bytes, the row offsets (none when of one width) and the hash slots (none when sorted). */
  get bytes(): number {
    return this.bytes_.byteLength + (this.offsets?.byteLength ?? 0) + (this.slots?.byteLength ?? 0);
  }

  /** True when `rowOf` binary-searches (the encoded ids are in increasing byte order by row). */
  get sorted(): boolean {
    return this.slots === undefined;
  }

  /**
   * Canonical id of `row`.
   * @throws IvfInputError when row is not in [0, size).
   */
  idOf(row: number): string {
    if (!Number.isInteger(row) || row < 0 || row >= this.size) throw new IvfInputError(`row ${row} outside [0, ${this.size})`);
    const o = this.offsets;
    return o ? decodeId(this.bytes_, o[row]!, o[row + 1]!) : decodeId(this.bytes_, row * this.width, (row + 1) * this.width);
  }

  /** Row of canonical `id`, or -1 when the id is not in this generation. Average O(id length). */
  rowOf(id: string): number {
    if (!this.slots) return search(id, this.bytes_, this.offsets, this.width, this.size);
    if (this.sortedRows > 0) {
      const r = search(id, this.bytes_, this.offsets, 0, this.sortedRows);
      if (r >= 0) return r;
    }
    return lookup(id, this.slots, this.bytes_, this.offsets!, this.offsets!, 1);
  }

  /**
   * This table with `ids` appended as rows `size .. size + ids.length - 1` (the live library's appended rows), without
   * decoding or hashing the existing rows: their encoded bytes are copied, a sorted table keeps its binary search for
   * them (`sortedRows`) and only the appended rows go into hash slots (copied and extended when this table has some;
   * the ids hashed so far are decoded again only when the slots must grow). Where the IdTableBuilder rebuilt the whole
   * table per batch (at 200k rows 1.1 s of a batch's CPU, session 21's profile), this costs O(bytes) of copying plus
   * O(ids.length). This table is unchanged.
   * @throws IvfDuplicateIdError when an id is already a row or repeats; IvfInputError for an empty id
   */
  appended(ids: readonly string[]): IdTable {
    const m = ids.length;
    if (m === 0) return this;
    const seen = new Set<string>();
    const encoded: Uint8Array[] = [];
    let extra = 0;
    for (const id of ids) {
      if (typeof id !== 'string' || id.length === 0) throw new IvfInputError('an appended row has an empty canonical id');
      if (seen.has(id) || this.rowOf(id) >= 0) throw new IvfDuplicateIdError(id);
      seen.add(id);
      const buf = new Uint8Array(id.length * 3 + 1);
      const e = buf.subarray(0, encodeId(id, buf, 0));
      encoded.push(e);
      extra += e.length;
    }
    const n = this.size + m;
    const used = this.offsets ? this.offsets[this.size]! : this.size * this.width;
    const bytes = new Uint8Array(used + extra);
    bytes.set(this.bytes_.subarray(0, used));
    const offsets = new Uint32Array(n + 1);
    if (this.offsets) offsets.set(this.offsets.subarray(0, this.size + 1));
    else for (let r = 0; r <= this.size; r++) offsets[r] = r * this.width;
    let at = used;
    for (let i = 0; i < m; i++) {
      bytes.set(encoded[i]!, at);
      at += encoded[i]!.length;
      offsets[this.size + i + 1] = at;
    }
    // The rows found by binary search stay so; the hashed ones are this table's hashed rows and the new ones.
    const sortedRows = this.slots ? this.sortedRows : this.size;
    const hashed = n - sortedRows;
    let slots: Int32Array;
    if (this.slots && this.slots.length >= slotCountFor(hashed)) slots = this.slots.slice();
    else {
      slots = new Int32Array(slotCountFor(hashed)).fill(EMPTY);
      for (let r = sortedRows; r < this.size; r++) insert(slots, hashString32(decodeId(bytes, offsets[r]!, offsets[r + 1]!)), r);
    }
    for (let i = 0; i < m; i++) insert(slots, hashString32(ids[i]!), this.size + i);
    return new IdTable(n, bytes, offsets, slots, 0, sortedRows);
  }
}

/**
 * Accumulates (row, id) pairs in any order, then freezes them into an IdTable.
 * Every row in [0, size) must be set exactly once and ids must be unique.
 */
export class IdTableBuilder {
  private bytes: Uint8Array;
  private used = 0;
  private starts: Uint32Array;
  private ends: Uint32Array;
  private slots: Int32Array;
  private count = 0;
  private capacity: number;

  /** @param capacityHint expected number of ids (arrays grow by 1.5x when exceeded) */
  constructor(capacityHint = 1024) {
    this.capacity = Math.max(16, Math.ceil(capacityHint));
    this.bytes = new Uint8Array(this.capacity * 56);
    this.starts = new Uint32Array(this.capacity);
    this.ends = new Uint32Array(this.capacity);
    this.slots = new Int32Array(slotCountFor(this.capacity)).fill(EMPTY);
  }

  /** Number of ids added so far. */
  get size(): number {
    return this.count;
  }

  /**
   * Records `id` for `row`.
   * @throws IvfDuplicateIdError when `id` is already present
   * @throws IvfInputError when `id` is empty, or when row is negative or non-integer
   */
  set(row: number, id: string): void {
    if (typeof id !== 'string' || id.length === 0) throw new IvfInputError(`row ${row} has an empty canonical id`);
    if (!Number.isInteger(row) || row < 0) throw new IvfInputError(`invalid row ${row}`);
    if (row >= this.capacity) this.grow(row + 1);
    if (this.count + 1 > this.slots.length >>> 1) this.rehash(this.slots.length * 2);
    if (lookup(id, this.slots, this.bytes, this.starts, this.ends, 0) !== EMPTY) throw new IvfDuplicateIdError(id);
    if (this.ends[row]! !== 0) throw new IvfCorruptStoreError(`row ${row} was given two ids`);
    const maxBytes = id.length * 3 + 1;
    if (this.used + maxBytes > this.bytes.length) {
      const next = new Uint8Array(Math.max(this.bytes.length * 1.5, this.used + maxBytes) | 0);
      next.set(this.bytes.subarray(0, this.used));
      this.bytes = next;
    }
    const written = encodeId(id, this.bytes, this.used);
    this.starts[row] = this.used;
    this.used += written;
    this.ends[row] = this.used;
    insert(this.slots, hashString32(id), row);
    this.count++;
  }

  /**
   * Freezes the table for rows [0, size).
   * @throws IvfCorruptStoreError when some row in [0, size) has no id or rows >= size were set.
   */
  finish(size: number): IdTable {
    if (this.count !== size) throw new IvfCorruptStoreError(`id table holds ${this.count} ids for ${size} rows`);
    for (let r = 0; r < size; r++) {
      if (this.ends[r]! === 0) throw new IvfCorruptStoreError(`row ${r} has no canonical id`);
    }
    // Lay the bytes out in row order (already the case when rows were added in order) so that one offset
    // array replaces the start/end pair, and trim the over-allocation.
    const offsets = new Uint32Array(size + 1);
    let inOrder = true;
    for (let r = 0; r < size; r++) {
      offsets[r + 1] = offsets[r]! + (this.ends[r]! - this.starts[r]!);
      if (this.starts[r] !== offsets[r]) inOrder = false;
    }
    let bytes: Uint8Array;
    if (inOrder) {
      bytes = this.bytes.length > this.used * 1.1 ? this.bytes.slice(0, this.used) : this.bytes;
    } else {
      bytes = new Uint8Array(offsets[size]!);
      for (let r = 0; r < size; r++) bytes.set(this.bytes.subarray(this.starts[r]!, this.ends[r]!), offsets[r]!);
    }
    // Sorted encoded ids need no hash table (binary search). Otherwise the slots hold rows, which did not change:
    // keep them unless grossly oversized for `size`.
    if (isSorted(bytes, offsets, size)) {
      const width = size > 0 ? offsets[1]! : 0;
      let uniform = true;
      for (let r = 1; r < size && uniform; r++) uniform = offsets[r + 1]! - offsets[r]! === width;
      return uniform ? new IdTable(size, bytes, undefined, undefined, width) : new IdTable(size, bytes, offsets, undefined);
    }
    let slots = this.slots;
    if (slots.length > slotCountFor(size) * 2) {
      slots = new Int32Array(slotCountFor(size)).fill(EMPTY);
      for (let r = 0; r < size; r++) insert(slots, hashString32(decodeId(bytes, offsets[r]!, offsets[r + 1]!)), r);
    }
    return new IdTable(size, bytes, offsets, slots);
  }

  private grow(minCapacity: number): void {
    const cap = Math.max(minCapacity, Math.ceil(this.capacity * 1.5));
    const starts = new Uint32Array(cap);
    starts.set(this.starts);
    const ends = new Uint32Array(cap);
    ends.set(this.ends);
    this.starts = starts;
    this.ends = ends;
    this.capacity = cap;
  }

  private rehash(slotCount: number): void {
    const slots = new Int32Array(slotCount).fill(EMPTY);
    for (let i = 0; i < this.slots.length; i++) {
      const row = this.slots[i]!;
      if (row === EMPTY) continue;
      insert(slots, hashString32(decodeId(this.bytes, this.starts[row]!, this.ends[row]!)), row);
    }
    this.slots = slots;
  }
}

function slotCountFor(n: number): number {
  let s = 16;
  while (s < n * 2) s *= 2;
  return s;
}

function insert(slots: Int32Array, hash: number, row: number): void {
  const mask = slots.length - 1;
  let i = hash & mask;
  while (slots[i]! !== EMPTY) i = (i + 1) & mask;
  slots[i] = row;
}

/** Byte order of `a[as, ae)` against `b[bs, be)`: negative, 0 or positive (memcmp, a shorter prefix first). */
function compareBytes(a: Uint8Array, as: number, ae: number, b: Uint8Array, bs: number, be: number): number {
  const n = Math.min(ae - as, be - bs);
  for (let i = 0; i < n; i++) {
    const d = a[as + i]! - b[bs + i]!;
    if (d !== 0) return d;
  }
  return ae - as - (be - bs);
}

/** True when the encoded ids of rows 0..size-1 are in strictly increasing byte order. O(total bytes). */
function isSorted(bytes: Uint8Array, offsets: Uint32Array, size: number): boolean {
  for (let r = 1; r < size; r++) if (compareBytes(bytes, offsets[r - 1]!, offsets[r]!, bytes, offsets[r]!, offsets[r + 1]!) >= 0) return false;
  return true;
}

/** Binary search for `id` among sorted encoded ids (`offsets`, or `width` bytes each); its row or -1. O(log size) comparisons. */
function search(id: string, bytes: Uint8Array, offsets: Uint32Array | undefined, width: number, size: number): number {
  if (probe.length < id.length * 3 + 1) probe = new Uint8Array(id.length * 3 + 1);
  const len = encodeId(id, probe, 0);
  let lo = 0;
  let hi = size - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const c = offsets ? compareBytes(bytes, offsets[mid]!, offsets[mid + 1]!, probe, 0, len) : compareBytes(bytes, mid * width, (mid + 1) * width, probe, 0, len);
    if (c === 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return EMPTY;
}

/** Scratch for the encoded form of a looked-up id (grown on demand; lookups are synchronous). */
let probe = new Uint8Array(256);

/** Probes for `id`; the encoded id of row r spans `bytes[starts[r] .. ends[r + endShift])`. */
function lookup(id: string, slots: Int32Array, bytes: Uint8Array, starts: Uint32Array, ends: Uint32Array, endShift: number): number {
  if (probe.length < id.length * 3 + 1) probe = new Uint8Array(id.length * 3 + 1);
  const len = encodeId(id, probe, 0);
  const mask = slots.length - 1;
  let i = hashString32(id) & mask;
  for (;;) {
    const row = slots[i]!;
    if (row === EMPTY) return EMPTY;
    const start = starts[row]!;
    if (ends[row + endShift]! - start === len) {
      let j = 0;
      while (j < len && bytes[start + j] === probe[j]) j++;
      if (j === len) return row;
    }
    i = (i + 1) & mask;
  }
}
