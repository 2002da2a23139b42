import { AvailabilityMask } from '@polyphony/vector-engine';
import { hashString32 } from '@polyphony/vectors';
import { RowOffsets } from './row-offsets';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Hash slot states (a slot otherwise holds the row whose primary id hashes there). */
const EMPTY = -1;
const TOMBSTONE = -2;
/** Slots in use (live + tombstones) / slots at which the table is rebuilt; linear probing stays short below it. */
const MAX_LOAD = 0.8;
/** Live ids / slots right after a rebuild while the map grows (room for the next inserts). */
const GROW_LOAD = 0.5;
/** Live ids / slots after `trim` (bulk load done: ~1.9 probes per hit, ~4.6 per miss with linear probing, Knuth). */
const TRIM_LOAD = 0.65;
/** Longest provider id in UTF-8 bytes (two-byte length prefix, 15 bits). */
const MAX_ID_BYTES = 0x7fff;

/**
 * The mappings of one media server over the rows of one index generation (issue 19: the index answers a
 * query without asking the catalogue): provider track id -> row (input), row -> provider id (output), and
 * the availability bitset (bit `row` set when the row has at least one provider id on the server).
 *
 * Mutable: `set` / `remove` apply catalogue mapping-log entries in place. Memory is kept compact because
 * there is one per server at up to 1M songs (issue 35, replica RSS):
 *  - every mapped row has one *primary* provider id, stored length-prefixed UTF-8 (1 length byte below 128
 *    bytes, else 2) in one byte arena; `primary.get(row)` = 1 + its arena offset (0 = the row is not mapped;
 *    `RowOffsets`: a table keyed by row while at most 1/4 of the rows are mapped, else an array of every row);
 *  - an open-addressing hash table (linear probing, FNV-1a + fmix32 of the id, slot = hash mod slot count, load
 *    <= 0.8, 0.65 after `trim`) holds the *rows* of the primary ids: a lookup compares the id with the arena
 *    bytes at `primary.get(slot's row)`, so no per-entry row / length / next arrays exist and compacting the arena
 *    (after removals) does not touch the hash table;
 *  - a row's further provider ids (a song with several files on one server: rare) are kept in two small JS
 *    maps (`extraRow`, `extrasOf`); when a row's primary id is removed, one of its further ids becomes primary.
 * About 4 bytes per row of the generation (16 per mapped row on a server with at most 1/4 of them) + (1 + id
 * bytes + ~6) per mapping: at 1M rows x `m-<i>` ids 18 MiB (34 MiB with the former per-entry arrays), a server with
 * 1% of the rows ~0.3 MiB (4.3). Removed ids leave garbage in
 * the arena; it is compacted when the garbage exceeds the live bytes.
 *
 * Output rule (same as the catalogue's `map-output`): among several provider ids of a row the smallest in
 * byte order wins, so answers are deterministic.
 */
export class ServerMap {
  private bytes = new Uint8Array(4096);
  private used = 0;
  /** Arena bytes of removed ids. */
  private garbage = 0;
  /** Per row: 1 + arena offset of its primary provider id; 0 = no provider id on this server. */
  private primary: RowOffsets;
  private slots = new Int32Array(16).fill(EMPTY);
  /** Slots holding a row or a tombstone. */
  private slotsUsed = 0;
  private primaries = 0;
  /** Further provider ids of rows that have more than one on this server: id -> row, and row -> ids. */
  private readonly extraRow = new Map<string, number>();
  private readonly extrasOf = new Map<number, string[]>();
  private readonly words: Uint32Array;
  private liveRows = 0;
  /** Bumped on every change of the availability bitset (mask snapshots are cached per version). */
  private version = 0;
  private maskCache?: { version: number; mask: AvailabilityMask };

  /** @param size rows of the generation the map belongs to */
  constructor(readonly size: number) {
    this.primary = new RowOffsets(size);
    this.words = new Uint32Array(Math.ceil(size / 32));
  }

  /**
   * Bytes held: the id arena, the row array, the hash slots and the bitset (capacities, not only what is used),
   * plus an estimate of 96 bytes for each further id of a multi-id row (JS strings and map entries).
   */
  get memoryBytes(): number {
    return this.bytes.byteLength + this.primary.bytes + this.slots.byteLength + this.words.byteLength + (this.maskCache ? this.size / 8 : 0) + this.extraRow.size * 96;
  }

  /**
   * Gives back the growth slack after a bulk load: the arena keeps 1/16 of headroom, the hash table is rebuilt at
   * load TRIM_LOAD (tombstones dropped) when it holds more slots than that. Content is unchanged.
   */
  trim(): void {
    const bytes = this.used + Math.max(4096, this.used >>> 4);
    if (this.bytes.length > bytes) this.bytes = this.bytes.slice(0, bytes);
    const want = slotCountFor(this.primaries, TRIM_LOAD);
    if (this.slots.length > want) this.rehash(want);
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
    m.garbage = this.garbage;
    m.primary = this.primary.grownTo(size);
    m.slots = this.slots.slice();
    m.slotsUsed = this.slotsUsed;
    m.primaries = this.primaries;
    for (const [id, row] of this.extraRow) m.extraRow.set(id, row);
    for (const [row, ids] of this.extrasOf) m.extrasOf.set(row, ids.slice());
    m.words.set(this.words);
    m.liveRows = this.liveRows;
    return m;
  }

  /**
   * A copy of this map over another generation of `size` rows in which row r of this map is row `newRowOf[r]`; -1, or
   * r at or past `newRowOf.length`, = the row's song is not in that generation: its provider ids are dropped (a delta
   * build's maps carried from the serving generation's, GenerationMaps.remapped). No id is decoded or hashed:
   *  - the hash slots hold rows and an id's slot depends only on its hash and the slot count, so the table keeps its
   *    size and every slot keeps its position: a kept row's slot gets its new row, a dropped row's a tombstone;
   *  - the arena bytes are copied as they are (a dropped primary id counts as garbage; compacted by the usual rule);
   *  - `primary` and the availability bitset are rebuilt by row, the further ids' rows mapped.
   * Only when tombstones then outnumber the live ids is the table rebuilt (hashing the ids, as `trim` would).
   * O(size + slots + arena bytes); this map is unchanged.
   * @param newRowOf per row of this map (Int32Array, length normally this.size): its row in the new generation, or -1
   * @throws RangeError when a mapped row is sent outside [0, size) or two mapped rows to the same row
   */
  remapped(size: number, newRowOf: Int32Array): ServerMap {
    const m = new ServerMap(size);
    const n = newRowOf.length;
    const to = (row: number) => (row < n ? newRowOf[row]! : -1);
    let dropped = 0;
    this.primary.forEach((row, p) => {
      const r = to(row);
      if (r < 0) {
        dropped += this.entryBytes(p - 1);
        return;
      }
      if (!(r < size)) throw new RangeError(`row ${row} sent to row ${r} outside [0, ${size})`);
      const bit = 1 << (r & 31);
      if ((m.words[r >>> 5]! & bit) !== 0) throw new RangeError(`two rows sent to row ${r}`);
      m.words[r >>> 5]! |= bit;
      m.liveRows++;
    });
    // Every mapped row has a primary id and a set bit.
    m.primaries = m.liveRows;
    m.primary = this.primary.remapped(size, newRowOf);
    // The arena as it is (headroom cut to 1/16 as after `trim`).
    m.bytes = this.bytes.slice(0, Math.min(this.bytes.length, Math.max(4096, this.used + (this.used >>> 4))));
    m.used = this.used;
    m.garbage = this.garbage + dropped;
    const slots = this.slots;
    m.slots = new Int32Array(slots.length);
    for (let i = 0; i < slots.length; i++) {
      const row = slots[i]!;
      m.slots[i] = row < 0 ? row : to(row) >= 0 ? to(row) : TOMBSTONE;
    }
    m.slotsUsed = this.slotsUsed;
    for (const [id, row] of this.extraRow) if (to(row) >= 0) m.extraRow.set(id, to(row));
    for (const [row, ids] of this.extrasOf) if (to(row) >= 0) m.extrasOf.set(to(row), ids.slice());
    if (m.slotsUsed - m.primaries > m.primaries) m.rehash(slotCountFor(m.primaries, TRIM_LOAD));
    if (m.garbage > 65536 && m.garbage * 2 > m.used) m.compact();
    return m;
  }

  /** Number of provider ids held. */
  get mappings(): number {
    return this.primaries + this.extraRow.size;
  }

  /** Rows available on the server. */
  get available(): number {
    return this.liveRows;
  }

  /** Row of a provider id, or -1. Average O(id length). */
  rowOf(providerId: string): number {
    const slot = this.findSlot(providerId, hashString32(providerId));
    if (slot >= 0) return this.slots[slot]!;
    return this.extraRow.size === 0 ? -1 : (this.extraRow.get(providerId) ?? -1);
  }

  /** Provider id of `row` on the server (smallest in byte order), or undefined when the row is not mapped. */
  providerOf(row: number): string | undefined {
    if (!(row >= 0 && row < this.size)) return undefined;
    const p = this.primary.get(row);
    if (p === 0) return undefined;
    let best = this.text(p - 1);
    const extras = this.extrasOf.get(row);
    if (extras) for (const t of extras) if (Buffer.compare(Buffer.from(t), Buffer.from(best)) < 0) best = t;
    return best;
  }

  /** True when `row` has a provider id on the server. */
  has(row: number): boolean {
    return row >= 0 && row < this.size && ((this.words[row >>> 5]! >>> (row & 31)) & 1) === 1;
  }

  /**
   * Points `providerId` at `row` (row -1 = the id's song is not in this generation: the mapping is dropped).
   * Idempotent: applying the same change twice leaves the same state.
   * @throws RangeError for a row outside [-1, size), or a provider id longer than 32767 UTF-8 bytes
   */
  set(providerId: string, row: number): void {
    if (!(Number.isInteger(row) && row >= -1 && row < this.size)) throw new RangeError(`row ${row} outside [-1, ${this.size})`);
    const current = this.rowOf(providerId);
    if (current === row) return;
    if (current >= 0) this.remove(providerId);
    if (row < 0) return;
    if (this.primary.get(row) === 0) {
      this.insertPrimary(providerId, row);
      this.setBit(row, true);
    } else {
      this.extraRow.set(providerId, row);
      const ids = this.extrasOf.get(row);
      if (ids) ids.push(providerId);
      else this.extrasOf.set(row, [providerId]);
    }
  }

  /** Removes the mapping of `providerId` (no-op when absent). */
  remove(providerId: string): void {
    const slot = this.findSlot(providerId, hashString32(providerId));
    if (slot < 0) {
      const row = this.extraRow.get(providerId);
      if (row !== undefined) this.dropExtra(providerId, row);
      return;
    }
    const row = this.slots[slot]!;
    this.slots[slot] = TOMBSTONE;
    this.garbage += this.entryBytes(this.primary.get(row) - 1);
    this.primary.set(row, 0);
    this.primaries--;
    // A further id of the row becomes its primary one (the row stays available).
    const extras = this.extrasOf.get(row);
    if (extras) {
      const next = extras[extras.length - 1]!;
      this.dropExtra(next, row);
      this.insertPrimary(next, row);
    } else this.setBit(row, false);
    if (this.garbage > 65536 && this.garbage * 2 > this.used) this.compact();
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

  private dropExtra(id: string, row: number): void {
    this.extraRow.delete(id);
    const ids = this.extrasOf.get(row)!;
    ids.splice(ids.indexOf(id), 1);
    if (ids.length === 0) this.extrasOf.delete(row);
  }

  /** Length prefix of the arena entry at `at`: [header bytes, id bytes]. */
  private header(at: number): [number, number] {
    const b0 = this.bytes[at]!;
    return b0 < 0x80 ? [1, b0] : [2, ((b0 & 0x7f) << 8) | this.bytes[at + 1]!];
  }

  private entryBytes(at: number): number {
    const [h, len] = this.header(at);
    return h + len;
  }

  private text(at: number): string {
    const [h, len] = this.header(at);
    return decoder.decode(this.bytes.subarray(at + h, at + h + len));
  }

  /** Slot of `providerId` among the primary ids (`hash` = hashString32 of it), or -1. */
  private findSlot(providerId: string, hash: number): number {
    const slots = this.slots;
    const n = slots.length;
    let i = hash % n;
    for (;;) {
      const row = slots[i]!;
      if (row === EMPTY) return -1;
      if (row >= 0 && this.equals(this.primary.get(row) - 1, providerId)) return i;
      if (++i === n) i = 0;
    }
  }

  private equals(at: number, id: string): boolean {
    const [h, len] = this.header(at);
    const start = at + h;
    if (len === id.length) {
      for (let j = 0; j < len; j++) {
        const b = this.bytes[start + j]!;
        if (b >= 0x80) return this.text(at) === id;
        if (b !== id.charCodeAt(j)) return false;
      }
      return true;
    }
    // A non-ASCII id has more UTF-8 bytes than UTF-16 code units.
    return len > id.length && this.text(at) === id;
  }

  /** Writes `id` to the arena as `row`'s primary id and enters it in the hash table. */
  private insertPrimary(id: string, row: number): void {
    const len = Buffer.byteLength(id, 'utf8');
    if (len > MAX_ID_BYTES) throw new RangeError(`provider id longer than ${MAX_ID_BYTES} UTF-8 bytes`);
    const need = len + 2;
    if (this.used + need > this.bytes.length) {
      const next = new Uint8Array(Math.max(this.bytes.length * 2, this.used + need));
      next.set(this.bytes.subarray(0, this.used));
      this.bytes = next;
    }
    const at = this.used;
    let h = 1;
    if (len < 0x80) this.bytes[at] = len;
    else {
      this.bytes[at] = 0x80 | (len >>> 8);
      this.bytes[at + 1] = len & 0xff;
      h = 2;
    }
    encoder.encodeInto(id, this.bytes.subarray(at + h, at + h + len));
    this.used += h + len;
    // Rebuilt before this row is entered (the rebuild places every row whose primary is set).
    if (this.slotsUsed + 1 > this.slots.length * MAX_LOAD) this.rehash(slotCountFor(this.primaries + 1, GROW_LOAD));
    this.primary.set(row, at + 1);
    this.primaries++;
    this.place(hashString32(id), row);
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

  /** Puts `row` in the first free slot from its id's home slot (a tombstone is reused). */
  private place(hash: number, row: number): void {
    const slots = this.slots;
    const n = slots.length;
    let i = hash % n;
    while (slots[i]! >= 0) if (++i === n) i = 0;
    if (slots[i] === EMPTY) this.slotsUsed++;
    slots[i] = row;
  }

  /** Rebuilds the hash table with `count` slots (tombstones dropped). O(rows or table entries + primary ids). */
  private rehash(count: number): void {
    this.slots = new Int32Array(count).fill(EMPTY);
    this.slotsUsed = 0;
    this.primary.forEach((row, p) => this.place(hashString32(this.text(p - 1)), row));
  }

  /** Rewrites the live ids into a fresh arena (drops removed ids). The hash table holds rows, so it is unchanged. */
  private compact(): void {
    const live = this.used - this.garbage;
    const next = new Uint8Array(Math.max(4096, live + (live >>> 4)));
    let used = 0;
    // Updating a row's value in place does not move entries of RowOffsets, so it can be done while iterating.
    this.primary.forEach((row, p) => {
      const len = this.entryBytes(p - 1);
      next.set(this.bytes.subarray(p - 1, p - 1 + len), used);
      this.primary.set(row, used + 1);
      used += len;
    });
    this.bytes = next;
    this.used = used;
    this.garbage = 0;
  }
}

/** Slots for `n` ids at `load` (at least 16, and always one more than `n` so a probe ends at an empty slot). */
function slotCountFor(n: number, load: number): number {
  return Math.max(16, Math.ceil((n + 1) / load));
}
