import type { TrackMeta } from '../core/track-records';
import type { SnapshotTrackBytes } from '@polyphony/contracts';
import { ByteLog } from '@polyphony/vector-engine';
import { decodeLabelScores, encodeLabelScores, isEncodedLabelScores } from './label-scores-codec';

/** One row of display metadata as the store takes it (TrackMeta without the id). */
export type TrackMetaFields = Omit<TrackMeta, 'itemId'>;

/** The two fields the similar-songs filters compare (`TrackMetaStore.titleArtist`). */
export type TrackTitleArtist = Pick<TrackMeta, 'title' | 'artist'>;

/**
 * The value PostgreSQL returns for `x` stored in a `real` column (the catalogue copy's tempo and energy): the
 * shortest decimal that reads back as the same float32 (PostgreSQL 12+ float4 output), as a JavaScript number. A
 * build that fills the store from the snapshot pages (build-run.ts) stores these, so its records equal the ones
 * a load from `index.tracks` writes.
 */
export function float4Value(x: number | null | undefined): number | null {
  if (x === null || x === undefined) return null;
  const f = Math.fround(x);
  if (!Number.isFinite(f)) return f;
  for (let p = 1; p < 9; p++) {
    const v = Number(f.toPrecision(p));
    if (Math.fround(v) === f) return v;
  }
  return Number(f.toPrecision(9));
}

/** The record of a catalogue snapshot row: the columns `streamMetadata` reads back from the copy (tempo and energy via `float4Value`). */
export function metaOfSnapshotTrack(t: SnapshotTrackBytes): TrackMetaFields {
  const learned = t.learned ?? undefined;
  return { title: t.title, artist: t.artist, album: t.album, albumArtist: t.albumArtist, moodVector: learned?.moodVector ?? null, otherFeatures: learned?.otherFeatures ?? null, tempo: float4Value(t.tempo), energy: float4Value(t.energy) };
}

/** Longest string kept, in UTF-8 bytes (longer display strings are cut at a character boundary). */
const MAX_STRING_BYTES = 65_535;

function truncateUtf8(s: string, maxBytes: number): string {
  let out = s.slice(0, maxBytes);
  while (Buffer.byteLength(out, 'utf8') > maxBytes) out = out.slice(0, -1);
  return out;
}

/** String columns; bit `f` of a record's flags marks field `f` null. `title` and `artist` are never null for a present row. */
const STRING_FIELDS = ['title', 'artist', 'album', 'albumArtist', 'moodVector', 'otherFeatures'] as const;
type StringField = (typeof STRING_FIELDS)[number];
/** Columns of `label:prob,...` text, kept in the compact form of `label-scores-codec.ts` when it reads back exactly. */
const LABEL_SCORE_FIELDS: ReadonlySet<StringField> = new Set(['moodVector', 'otherFeatures']);
/** LABEL_SCORE_FIELDS by field index (STRING_FIELDS order), for the per-row read and write loops. */
const IS_LABEL_SCORE: readonly boolean[] = STRING_FIELDS.map((name) => LABEL_SCORE_FIELDS.has(name));
/** Record flags after the six string-field bits: tempo null, energy null. */
const TEMPO_NULL = 1 << 6;
const ENERGY_NULL = 1 << 7;

/** Records start at multiples of this many bytes, so a uint32 addresses 16 GiB of log (`pos[row] = position / ALIGN + 1`). */
const ALIGN = 4;
/** A row's record is read with one call of this many bytes (a typical record is 40-150 bytes; a longer one takes a second read). */
const READ_WINDOW = 256;

/** Scratch for one record: a 3-byte length, flags, 6 fields of at most MAX_STRING_BYTES with 3-byte lengths, 2 float64, padding. */
const scratch = Buffer.allocUnsafe(3 + 1 + 6 * (3 + MAX_STRING_BYTES) + 16 + ALIGN);
/** Read window of `get` (one per process: reads are synchronous). */
const window = Buffer.allocUnsafe(READ_WINDOW);
/** Longest stretch of a source log `copyRows` reads at once (the records of ~2,000 typical rows). */
const COPY_SPAN = 1 << 18;
/** `copyRows`' read buffer and the buffer its records are gathered in before one append (one each per process: synchronous). */
const copyIn = Buffer.allocUnsafe(COPY_SPAN);
const copyOut = Buffer.allocUnsafe(COPY_SPAN);

/** Offset just after the length `getLength` decoded last (module state, as reads are synchronous: no array per call). */
let afterLength = 0;

/** The LEB128 length at `b[at]` (`putLength`'s form); the offset after it is left in `afterLength`. */
function getLength(b: Uint8Array, at: number): number {
  let len = 0;
  for (let shift = 0; ; shift += 7) {
    const x = b[at++]!;
    len |= (x & 0x7f) << shift;
    // (Past the buffer's end x is undefined: that ends the length too, so damaged bytes cannot loop for ever.)
    if (!(x & 0x80)) break;
  }
  afterLength = at;
  return len;
}

/** Bytes of the record starting at `b[at]` (its length, body and padding: what `set` appended). */
function recordBytes(b: Uint8Array, at: number): number {
  const len = getLength(b, at);
  return Math.ceil((afterLength - at + len) / ALIGN) * ALIGN;
}

/** The artist (string field 1: never null, never in the compact form) of the record starting at `b[at]`. */
function artistOfRecord(b: Buffer, at: number): string {
  getLength(b, at);
  const title = getLength(b, afterLength + 1); // after the flags
  const n = getLength(b, afterLength + title);
  return n === 0 ? '' : b.toString('utf8', afterLength, afterLength + n);
}

/** Writes `len` as LEB128 (1-3 bytes for <= 65,535) at `at`; returns the next offset. */
function putLength(b: Buffer, at: number, len: number): number {
  while (len >= 0x80) {
    b[at++] = (len & 0x7f) | 0x80;
    len >>>= 7;
  }
  b[at++] = len;
  return at;
}

/** Bytes of the LEB128 form of `len`. */
function lengthBytes(len: number): number {
  let n = 1;
  while (len >= 0x80) {
    len >>>= 7;
    n++;
  }
  return n;
}

/** Where the display metadata of a generation lives: a file in `dir` once it is longer than `residentMaxBytes`. */
export interface TrackMetaStorage {
  /** Directory of the file (`INDEX_VECTOR_DIR`; default `$TMPDIR/polyphony-index`). */
  dir?: string;
  /** Longest record log kept in memory, bytes (`INDEX_TABLE_RESIDENT_MIB`); default: no limit (always in memory). */
  residentMaxBytes?: number;
}

/**
 * Display metadata of every row of one index generation (issue 19): what a result row shows
 * (`TrackRowDto`: title, artist, album, album_artist, mood_vector, other_features) plus tempo and energy, so a
 * query makes no database call for its rows.
 *
 * Storage: one self-contained record per row in an append-only `ByteLog` (in memory while the log is at most
 * `residentMaxBytes`, else in an unlinked local file read with one positional read per row, like the float
 * re-ranking vectors); per row in memory only the record's position (uint32, 4 bytes a row: 4 MiB at 1M songs
 * instead of the ~84 MiB the records and per-row arrays took in memory). A record is a LEB128 body length, a
 * flag byte (bits 0-5: null string field in STRING_FIELDS order; bit 6 / 7: tempo / energy null), every
 * non-null string as a LEB128 byte length and its bytes (UTF-8, cut at 65,535 bytes; `mood_vector` and
 * `other_features` in the compact form of `label-scores-codec.ts` whenever it decodes to the identical string),
 * then tempo and energy as float64 (exactly the value PostgreSQL returned), padded to 4 bytes. A result row
 * costs one read of READ_WINDOW bytes (page cache) and its decoding (a few hundred ns).
 *
 * Kept current by `set`/`remove` (row-addressed, so a relabel of canonical ids keeps it valid; a replaced record
 * is not reclaimed: the garbage is bounded by one generation's metadata changes); `seq` is the position of the
 * change log applied so far (0 = only what the generation was loaded with).
 */
export class TrackMetaStore {
  private readonly log: ByteLog;
  /** pos[row]: the row's record position / ALIGN + 1; 0 = no metadata. */
  private readonly pos: Uint32Array;
  private present = 0;
  /** Change-log position applied (0 = none beyond the load). */
  seq = 0;

  constructor(
    readonly size: number,
    storage: TrackMetaStorage = {},
    shared?: TrackMetaStore,
  ) {
    this.pos = new Uint32Array(size);
    if (shared) {
      // grownTo / resizedTo: the same record log, the same positions for the first rows.
      this.log = shared.log;
      this.pos.set(shared.size <= size ? shared.pos : shared.pos.subarray(0, size));
      this.present = shared.present;
      this.seq = shared.seq;
    } else this.log = new ByteLog(storage.dir, storage.residentMaxBytes ?? Number.POSITIVE_INFINITY, 'metadata');
  }

  /**
   * A store of `size` rows (>= this.size) for a generation with appended rows (the live library): the first rows read
   * this store's records (the record log is shared, append-only; 4 bytes a row are copied), the new rows start empty.
   * Do not `close` one of the two while the other is used.
   * @throws RangeError when `size` is smaller than this store's
   */
  grownTo(size: number): TrackMetaStore {
    if (size < this.size) throw new RangeError(`cannot shrink a metadata store from ${this.size} to ${size} rows`);
    return new TrackMetaStore(size, {}, this);
  }

  /**
   * A store of exactly `size` rows over the same record log: `grownTo` when larger; when smaller, the rows cut off
   * must hold nothing (a build's store filled while the snapshot streamed, whose capacity was a guess).
   * @throws RangeError when a row at or past `size` holds metadata
   */
  resizedTo(size: number): TrackMetaStore {
    if (size >= this.size) return size === this.size ? this : this.grownTo(size);
    for (let r = size; r < this.size; r++) if (this.pos[r] !== 0) throw new RangeError(`metadata store: row ${r} holds metadata, cannot resize to ${size} rows`);
    return new TrackMetaStore(size, {}, this);
  }

  /** Rows holding metadata. */
  get count(): number {
    return this.present;
  }

  /** Bytes held in memory: the per-row positions plus the record log's memory (chunks, or the write buffer once on disk). */
  get bytes(): number {
    return this.pos.byteLength + this.log.residentBytes;
  }

  /** Bytes of records written (in memory or on disk). */
  get logBytes(): number {
    return this.log.bytes;
  }

  /** True when the records live in a file. */
  get onDisk(): boolean {
    return this.log.spilled;
  }

  /** Positional file reads so far (benchmarks). */
  get reads(): number {
    return this.log.reads;
  }

  /**
   * Sets the metadata of `row` (replacing what it held). Rows outside [0, size) are ignored.
   * Values are copied into the log; the argument is not kept.
   * @throws Error when the log cannot be written (disk full) or exceeds 16 GiB
   */
  set(row: number, m: TrackMetaFields): void {
    if (!(row >= 0 && row < this.size)) return;
    // A missing title or artist reads back as '' (as before), the other fields as null.
    let flags = 0;
    let at = 4; // room for the body length (<= 3 bytes) and the flags, moved down below
    const body = at;
    at++; // flags
    for (let f = 0; f < STRING_FIELDS.length; f++) {
      const raw = m[STRING_FIELDS[f]!];
      if (raw === null || raw === undefined) {
        if (f >= 2) {
          flags |= 1 << f;
          continue;
        }
      }
      const v = raw ?? '';
      const encoded = IS_LABEL_SCORE[f] ? encodeLabelScores(v) : undefined;
      if (encoded) {
        at = putLength(scratch, at, encoded.length);
        encoded.copy(scratch, at);
        at += encoded.length;
      } else {
        const s = Buffer.byteLength(v, 'utf8') > MAX_STRING_BYTES ? truncateUtf8(v, MAX_STRING_BYTES) : v;
        const len = Buffer.byteLength(s, 'utf8');
        at = putLength(scratch, at, len);
        scratch.write(s, at, len, 'utf8');
        at += len;
      }
    }
    if (m.tempo === null || m.tempo === undefined) flags |= TEMPO_NULL;
    else at = scratch.writeDoubleLE(m.tempo, at);
    if (m.energy === null || m.energy === undefined) flags |= ENERGY_NULL;
    else at = scratch.writeDoubleLE(m.energy, at);
    scratch[body] = flags;
    const bodyLength = at - body;
    const start = body - lengthBytes(bodyLength);
    putLength(scratch, start, bodyLength);
    const end = start + Math.ceil((at - start) / ALIGN) * ALIGN;
    scratch.fill(0, at, end);
    const position = this.log.append(scratch.subarray(start, end));
    const slot = position / ALIGN + 1;
    if (slot > 0xffffffff) throw new Error('metadata log full (16 GiB)');
    if (this.pos[row] === 0) this.present++;
    this.pos[row] = slot;
  }

  /** Drops the metadata of `row` (the song left the catalogue copy): it is then omitted from results. */
  remove(row: number): void {
    if (!this.has(row)) return;
    this.present--;
    this.pos[row] = 0;
  }

  /** True when the row holds metadata. */
  has(row: number): boolean {
    return row >= 0 && row < this.size && this.pos[row] !== 0;
  }

  /** Releases the log's memory and file now (later reads throw). The generation's owner calls it when the generation is dropped; otherwise the file closes when the store is garbage-collected. */
  close(): void {
    this.log.close();
  }

  /**
   * Copies the metadata of rows [fromRow, fromRow + n) of `from` into rows [toRow, toRow + n) of this store as record
   * bytes (no decoding and encoding): afterwards `get(toRow + i)` equals `from.get(fromRow + i)` and the records are
   * the bytes `set(toRow + i, from.get(fromRow + i))` appends (the encoding is canonical). A row of `from` without
   * metadata leaves its row here without. Records of consecutive rows that lie in increasing order in `from`'s log (a
   * store filled in row order: a build's) are read together, one read of up to COPY_SPAN (256 KiB) bytes, and
   * appended here with one append per read; either store may be in memory or on disk. The delta snapshot's kept rows
   * (issue 35; 1 read and no decoding per ~2,000 rows instead of a read, a decode and an encode per row).
   * @param artists when given, the artist of each copied row is pushed to it, in row order (`''` for a row without metadata)
   * @throws RangeError when a row range leaves its store, or overlaps the other in the same store
   * @throws Error when a store was closed, `from`'s file cannot be read, or this log cannot be written or exceeds 16 GiB
   */
  copyRows(from: TrackMetaStore, fromRow: number, toRow: number, n: number, artists?: string[]): void {
    if (!(Number.isInteger(fromRow) && Number.isInteger(toRow) && Number.isInteger(n) && n >= 0 && fromRow >= 0 && toRow >= 0 && fromRow + n <= from.size && toRow + n <= this.size)) {
      throw new RangeError(`metadata copy of ${n} rows from row ${fromRow} (of ${from.size}) to row ${toRow} (of ${this.size}) out of range`);
    }
    if (from.pos === this.pos && n > 0 && fromRow < toRow + n && toRow < fromRow + n) throw new RangeError(`metadata copy within one store over overlapping rows (${fromRow}, ${toRow}, ${n})`);
    const src = from.pos;
    let i = 0;
    while (i < n) {
      const first = src[fromRow + i]!;
      if (first === 0) {
        this.remove(toRow + i);
        artists?.push('');
        i++;
        continue;
      }
      // The span: the following rows whose records start after the previous row's, within COPY_SPAN of the first.
      const start = (first - 1) * ALIGN;
      let end = i + 1;
      let last = first;
      while (end < n) {
        const p = src[fromRow + end]!;
        if (p <= last || (p - 1) * ALIGN - start + READ_WINDOW > COPY_SPAN) break;
        last = p;
        end++;
      }
      const got = from.log.read(start, (last - 1) * ALIGN - start + READ_WINDOW, copyIn);
      let used = 0;
      // A last record longer than the window is read on its own and appended after the others.
      let tail: Buffer | undefined;
      for (let k = i; k < end; k++) {
        const at = (src[fromRow + k]! - 1) * ALIGN - start;
        // (The window holds at least the length prefix: a record's first bytes.)
        const size = recordBytes(copyIn, at);
        if (at + size > got) {
          tail = Buffer.allocUnsafe(size);
          from.log.read(at + start, size, tail);
          artists?.push(artistOfRecord(tail, 0));
          end = k + 1;
          break;
        }
        copyIn.copy(copyOut, used, at, at + size);
        artists?.push(artistOfRecord(copyOut, used));
        used += size;
      }
      // Positions: the gathered records (in row order), then the tail.
      const base = used > 0 ? this.log.append(copyOut.subarray(0, used)) : 0;
      const tailAt = tail ? this.log.append(tail) : 0;
      let offset = 0;
      for (let k = i; k < end; k++) {
        const isTail = tail !== undefined && k === end - 1;
        const slot = (isTail ? tailAt : base + offset) / ALIGN + 1;
        if (slot > 0xffffffff) throw new Error('metadata log full (16 GiB)');
        if (!isTail) offset += recordBytes(copyOut, offset);
        if (this.pos[toRow + k] === 0) this.present++;
        this.pos[toRow + k] = slot;
      }
      i = end;
    }
  }

  /**
   * Metadata of `row` under canonical id `itemId`, or undefined when the row holds none.
   * @throws Error when the store was closed or its file cannot be read
   */
  get(row: number, itemId: string): TrackMeta | undefined {
    return this.read(row, itemId, STRING_FIELDS.length) as TrackMeta | undefined;
  }

  /**
   * Title and artist of `row` only (what the duplicate and per-artist filters of similar songs compare), or
   * undefined when the row holds none: the record is read as by `get`, but the album fields and the
   * `mood_vector` / `other_features` strings after them are not decoded. Values equal `get(row).title/artist`.
   * @throws Error when the store was closed or its file cannot be read
   */
  titleArtist(row: number): TrackTitleArtist | undefined {
    return this.read(row, '', 2);
  }

  /** Decodes the record of `row` up to (not including) string field `fields` (2 = title and artist only; all = the full TrackMeta). */
  private read(row: number, itemId: string, fields: number): TrackMeta | TrackTitleArtist | undefined {
    if (!this.has(row)) return undefined;
    const position = (this.pos[row]! - 1) * ALIGN;
    let buf = window;
    const got = this.log.read(position, READ_WINDOW, buf);
    const len = getLength(buf, 0);
    let at = afterLength;
    if (at + len > got) {
      buf = Buffer.allocUnsafe(at + len);
      this.log.read(position, at + len, buf);
    }
    const flags = buf[at++]!;
    const out: Array<string | null> = [null, null, null, null, null, null];
    for (let f = 0; f < fields; f++) {
      if (flags & (1 << f)) continue;
      const n = getLength(buf, at);
      at = afterLength;
      out[f] = n === 0 ? '' : IS_LABEL_SCORE[f] && isEncodedLabelScores(buf, at, n) ? decodeLabelScores(buf, at, n) : buf.toString('utf8', at, at + n);
      at += n;
    }
    if (fields < STRING_FIELDS.length) return { title: out[0] ?? '', artist: out[1] ?? '' };
    let tempo: number | null = null;
    let energy: number | null = null;
    if (!(flags & TEMPO_NULL)) {
      tempo = buf.readDoubleLE(at);
      at += 8;
    }
    if (!(flags & ENERGY_NULL)) energy = buf.readDoubleLE(at);
    return {
      itemId,
      title: out[0] ?? '',
      artist: out[1] ?? '',
      album: out[2] ?? null,
      albumArtist: out[3] ?? null,
      moodVector: out[4] ?? null,
      otherFeatures: out[5] ?? null,
      tempo,
      energy,
    };
  }
}

/** Source of the bulk load (TrackRepository.streamMetadata). */
export interface TrackMetaSource {
  streamMetadata(): AsyncIterable<TrackMeta[]>;
}

/**
 * The metadata of a generation (in memory or in a local file, `storage`), read from the index's catalogue copy (`index.tracks`, the rows
 * the generation was built from) in keyset pages. Ids not in the generation are skipped.
 * @param index the generation's id table (`rowOf`) and size
 */
export async function loadTrackMeta(index: { size: number; rowOf(id: string): number }, source: TrackMetaSource, storage: TrackMetaStorage = {}): Promise<TrackMetaStore> {
  const store = new TrackMetaStore(index.size, storage);
  for await (const page of source.streamMetadata()) {
    for (const m of page) store.set(index.rowOf(m.itemId), m);
  }
  return store;
}
