import { AvailabilityMask } from '@polyphony/vector-engine';
import { hashString32 } from '@polyphony/vectors';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const EMPTY = -1;
const TOMBSTONE = -2;

/**
 * The mappings of one media server over the rows of one index generation (issue 19: the index answers a
 * query without asking the catalogue): provider track id -> row (input), row -> provider id (output), and
 * the availability bitset (bit `row` set when the row has at least one provider id on the server).
 *
 * Mutable: `set` / `remove` apply catalogue mapping-log entries in place. Memory is kept compact because
 * there is one per server at up to 1M songs: provider ids are UTF-8 in one byte arena, an open-addressing
 * hash (linear probing, load <= 0.5) maps them to entries, entries of one row form a linked list (a song
 * with several files on one server has several provider ids). About 16 + id-length bytes per mapping plus
 * 4 bytes per row; at 1M rows x 32-char ids about 60 MB per server. Removed entries leave garbage in the
 * arena; the map compacts itself when garbage exceeds the live entries.
 *
 * Output rule (same as the catalogue's `map-output`): among several provider ids of a row the smallest in
 * byte order wins, so answers are deterministic.
 */
export class ServerMap {
  private bytes = new Uint8Array(4096);
  private used = 0;
  private entryStart = new Uint32Array(64);
  private entryLen = new Uint16Array(64);
  private entryRow = new Int32Array(64);
  private entryNext = new Int32Array(64);
  private entries = 0;
  private dead = 0;
  private slots = new Int32Array(128).fill(EMPTY);
  private slotsUsed = 0;
  private readonly rowHead: Int32Array;
  private readonly words: Uint32Array;
  private liveRows = 0;
  /** Bumped on every change of the availability bitset (mask snapshots are cached per version). */
  private version = 0;
  private maskCache?: { version: number; mask: AvailabilityMask };

  /** @param size rows of the generation the map belongs to */
  constructor(readonly size: number) {
    this.rowHead = new Int32Array(size).fill(EMPTY);
    this.words = new Uint32Array(Math.ceil(size / 32));
  }

  /** Bytes held: the id arena, the entry arrays, the hash slots, the row heads and the bitset (capacities, not only what is used). */
  get memoryBytes(): number {
    return (
      this.bytes.byteLength +
      this.entryStart.byteLength +
      this.entryLen.byteLength +
      this.entryRow.byteLength +
      this.entryNext.byteLength +
      this.slots.byteLength +
      this.rowHead.byteLength +
      this.words.byteLength +
      (this.maskCache ? this.size / 8 : 0)
    );
  }

  /**
   * Gives back the growth slack of the arena and the entry arrays after a bulk load (they double while
   * growing, so up to half of each can be unused), keeping 1/16 of headroom for the changes that follow.
   * Content is unchanged.
   */
  trim(): void {
    const bytes = this.used + Math.max(4096, this.used >>> 4);
    if (this.bytes.length > bytes) this.bytes = this.bytes.slice(0, bytes);
    const cap = Math.max(64, this.entries + (this.entries >>> 4));
    if (this.entryRow.length > cap) {
      this.entryStart = this.entryStart.slice(0, cap);
      this.entryLen = this.entryLen.slice(0, cap);
      this.entryRow = this.entryRow.slice(0, cap);
      this.entryNext = this.entryNext.slice(0, cap);
    }
  }

  /**
   * A copy of this map over a generation of `size` rows (>= this.size) whose first rows are this map's rows (rows
   * appended by the live library start unmapped). O(bytes held): the arrays are copied, this map is unchanged.
   * @throws RangeError when `size` is smaller than this map's
   */
  grownTo(size: number): ServerMap {
    if (size < this.size) throw new RangeError(`cannot shrink a server map from ${this.size} to ${size} rows`);
    const m = new ServerMap(size);
    m.bytes = this.bytes.slice();
    m.used = this.used;
    m.entryStart = this.entryStart.slice();
    m.entryLen = this.entryLen.slice();
    m.entryRow = this.entryRow.slice();
    m.entryNext = this.entryNext.slice();
    m.entries = this.entries;
    m.dead = this.dead;
    m.slots = this.slots.slice();
    m.slotsUsed = this.slotsUsed;
    m.rowHead.set(this.rowHead);
    m.words.set(this.words);
    m.liveRows = this.liveRows;
    return m;
  }

  /** Number of provider ids held. */
  get mappings(): number {
    return this.entries - this.dead;
  }

  /** Rows available on the server. */
  get available(): number {
    return this.liveRows;
  }

  /** Row of a provider id, or -1. Average O(id length). */
  rowOf(providerId: string): number {
    const e = this.find(providerId);
    return e < 0 ? -1 : this.entryRow[e]!;
  }

  /** Provider id of `row` on the server (smallest in byte order), or undefined when the row is not mapped. */
  providerOf(row: number): string | undefined {
    if (row < 0 || row >= this.size) return undefined;
    let e = this.rowHead[row]!;
    if (e === EMPTY) return undefined;
    let best = this.text(e);
    for (e = this.entryNext[e]!; e !== EMPTY; e = this.entryNext[e]!) {
      const t = this.text(e);
      if (Buffer.compare(Buffer.from(t), Buffer.from(best)) < 0) best = t;
    }
    return best;
  }

  /** True when `row` has a provider id on the server. */
  has(row: number): boolean {
    return row >= 0 && row < this.size && ((this.words[row >>> 5]! >>> (row & 31)) & 1) === 1;
  }

  /**
   * Points `providerId` at `row` (row -1 = the id's song is not in this generation: the mapping is dropped).
   * Idempotent: applying the same change twice leaves the same state.
   * @throws RangeError for a row outside [-1, size)
   */
  set(providerId: string, row: number): void {
    if (!(Number.isInteger(row) && row >= -1 && row < this.size)) throw new RangeError(`row ${row} outside [-1, ${this.size})`);
    const e = this.find(providerId);
    if (e >= 0) {
      if (this.entryRow[e] === row) return;
      this.removeEntry(e);
    }
    if (row >= 0) this.insert(providerId, row);
  }

  /** Removes the mapping of `providerId` (no-op when absent). */
  remove(providerId: string): void {
    const e = this.find(providerId);
    if (e >= 0) this.removeEntry(e);
  }

  /**
   * The availability bitset as an immutable AvailabilityMask. The same object is returned until the
   * bitset changes (the index caches per-mask work on the object), then a fresh copy (O(size / 32)).
   */
  mask(): AvailabilityMask {
    if (this.maskCache?.version === this.version) return this.maskCache.mask;
    const mask = AvailabilityMask.fromWords(this.size, this.words);
    this.maskCache = { version: this.version, mask };
    return mask;
  }

  private text(e: number): string {
    const s = this.entryStart[e]!;
    return decoder.decode(this.bytes.subarray(s, s + this.entryLen[e]!));
  }

  private find(providerId: string): number {
    const mask = this.slots.length - 1;
    let i = hashString32(providerId) & mask;
    for (;;) {
      const e = this.slots[i]!;
      if (e === EMPTY) return -1;
      if (e !== TOMBSTONE && this.equals(e, providerId)) return e;
      i = (i + 1) & mask;
    }
  }

  private equals(e: number, id: string): boolean {
    const len = this.entryLen[e]!;
    const start = this.entryStart[e]!;
    if (len === id.length) {
      for (let j = 0; j < len; j++) {
        const b = this.bytes[start + j]!;
        if (b >= 0x80) return this.text(e) === id;
        if (b !== id.charCodeAt(j)) return false;
      }
      return true;
    }
    return len > id.length && this.text(e) === id;
  }

  private insert(providerId: string, row: number): void {
    if (this.entries === this.entryRow.length) this.growEntries();
    const maxBytes = providerId.length * 3;
    if (maxBytes > 0xffff) throw new RangeError('provider id longer than 21845 characters');
    if (this.used + maxBytes > this.bytes.length) {
      const next = new Uint8Array(Math.max(this.bytes.length * 2, this.used + maxBytes));
      next.set(this.bytes.subarray(0, this.used));
      this.bytes = next;
    }
    if (this.rowHead[row] === EMPTY) this.setBit(row, true);
    const e = this.appendEntry(providerId, row);
    if ((this.slotsUsed + 1) * 2 > this.slots.length) this.rehash(this.slots.length * 2);
    this.place(hashString32(providerId), e);
  }

  private removeEntry(e: number): void {
    const row = this.entryRow[e]!;
    // Unlink from the row's list.
    let prev = EMPTY;
    for (let x = this.rowHead[row]!; x !== EMPTY; x = this.entryNext[x]!) {
      if (x === e) {
        if (prev === EMPTY) this.rowHead[row] = this.entryNext[x]!;
        else this.entryNext[prev] = this.entryNext[x]!;
        break;
      }
      prev = x;
    }
    if (this.rowHead[row] === EMPTY) this.setBit(row, false);
    // Tombstone its hash slot.
    const mask = this.slots.length - 1;
    let i = hashString32(this.text(e)) & mask;
    while (this.slots[i] !== e) i = (i + 1) & mask;
    this.slots[i] = TOMBSTONE;
    this.entryRow[e] = EMPTY;
    this.dead++;
    if (this.dead > 1024 && this.dead * 2 > this.entries) this.compact();
  }

  private setBit(row: number, on: boolean): void {
    const w = row >>> 5;
    const bit = 1 << (row & 31);
    if (on) {
      this.words[w]! |= bit;
      this.liveRows++;
    } else {
      this.words[w]! &= ~bit;
      this.liveRows--;
    }
    this.version++;
  }

  private place(hash: number, e: number): void {
    const mask = this.slots.length - 1;
    let i = hash & mask;
    while (this.slots[i]! >= 0) i = (i + 1) & mask;
    if (this.slots[i] === EMPTY) this.slotsUsed++;
    this.slots[i] = e;
  }

  private rehash(count: number): void {
    this.slots = new Int32Array(count).fill(EMPTY);
    this.slotsUsed = 0;
    for (let e = 0; e < this.entries; e++) if (this.entryRow[e] !== EMPTY) this.place(hashString32(this.text(e)), e);
  }

  /**
   * Writes `id` as UTF-8 at the end of the byte arena (the caller made room) as a new entry of `row`, at the
   * head of the row's entry list (entry capacity must be there too). @returns the entry
   */
  private appendEntry(id: string, row: number): number {
    const { written } = encoder.encodeInto(id, this.bytes.subarray(this.used));
    const e = this.entries++;
    this.entryStart[e] = this.used;
    this.entryLen[e] = written;
    this.used += written;
    this.entryRow[e] = row;
    this.entryNext[e] = this.rowHead[row]!;
    this.rowHead[row] = e;
    return e;
  }

  private growEntries(): void {
    const cap = this.entryRow.length * 2;
    const grow = <T extends Uint32Array | Uint16Array | Int32Array>(a: T, make: (n: number) => T): T => {
      const b = make(cap);
      b.set(a);
      return b;
    };
    this.entryStart = grow(this.entryStart, (n) => new Uint32Array(n));
    this.entryLen = grow(this.entryLen, (n) => new Uint16Array(n));
    this.entryRow = grow(this.entryRow, (n) => new Int32Array(n));
    this.entryNext = grow(this.entryNext, (n) => new Int32Array(n));
  }

  /** Rewrites the live entries into fresh arrays (drops removed ids from the arena). The bitset is unchanged. */
  private compact(): void {
    const live: Array<[string, number]> = [];
    for (let e = 0; e < this.entries; e++) if (this.entryRow[e] !== EMPTY) live.push([this.text(e), this.entryRow[e]!]);
    const version = this.version;
    const liveRows = this.liveRows;
    this.bytes = new Uint8Array(Math.max(4096, this.used));
    this.used = 0;
    this.entries = 0;
    this.dead = 0;
    this.rowHead.fill(EMPTY);
    this.slots = new Int32Array(Math.max(128, slotCountFor(live.length))).fill(EMPTY);
    this.slotsUsed = 0;
    for (const [id, row] of live) {
      if (this.entries === this.entryRow.length) this.growEntries();
      this.place(hashString32(id), this.appendEntry(id, row));
    }
    this.version = version;
    this.liveRows = liveRows;
  }
}

function slotCountFor(n: number): number {
  let s = 16;
  while (s < n * 2) s *= 2;
  return s;
}
