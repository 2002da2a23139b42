import type { TrackMeta } from '../../store/track.repository';
import { decodeLabelScores, encodeLabelScores, isEncodedLabelScores } from './label-scores-codec';

/** One row of display metadata as the store takes it (TrackMeta without the id). */
export type TrackMetaFields = Omit<TrackMeta, 'itemId'>;

/** Bytes per arena chunk: 16 MiB (a string never spans two chunks; the 24-bit offset addresses one chunk). */
const CHUNK_BYTES = 1 << 24;
/** Longest string kept, in UTF-8 bytes (longer display strings are cut at a character boundary). */
const MAX_STRING_BYTES = 65_535;

/**
 * Append-only storage of metadata records (length-prefixed strings) in 16 MiB chunks. A reference is
 * `chunk << 24 | offset` (uint32); a record never spans two chunks. Strings live outside the JS heap, so a million rows of titles and mood
 * strings cost their UTF-8 bytes and no GC work (a JS string per field costs a heap object each, which the
 * major GC has to mark). Replaced records are not reclaimed: the garbage is bounded by the metadata changes
 * of one generation, and the next generation starts a fresh arena.
 */
class StringArena {
  private readonly chunks: Buffer[] = [];
  private used = CHUNK_BYTES;

  /** Stores raw bytes (at most one chunk); returns their ref. */
  addBytes(b: Uint8Array): number {
    if (b.length > CHUNK_BYTES) throw new Error('metadata arena: record too long');
    const [chunk, off] = this.reserve(b.length);
    this.chunks[chunk]!.set(b, off);
    return ((chunk << 24) | off) >>> 0;
  }

  /** The chunk holding `ref`. */
  chunkOf(ref: number): Buffer {
    return this.chunks[ref >>> 24]!;
  }

  private reserve(len: number): [number, number] {
    if (this.used + len > CHUNK_BYTES) {
      if (this.chunks.length >= 256) throw new Error('metadata arena full (4 GiB)');
      this.chunks.push(Buffer.allocUnsafeSlow(CHUNK_BYTES));
      this.used = 0;
    }
    const off = this.used;
    this.used += len;
    return [this.chunks.length - 1, off];
  }

  /** Bytes allocated (whole chunks). */
  get bytes(): number {
    return this.chunks.length * CHUNK_BYTES;
  }
}

function truncateUtf8(s: string, maxBytes: number): string {
  let out = s.slice(0, maxBytes);
  while (Buffer.byteLength(out, 'utf8') > maxBytes) out = out.slice(0, -1);
  return out;
}

/** String columns; bit `f` of a row's flags marks field `f` null. `title` and `artist` are never null for a present row. */
const STRING_FIELDS = ['title', 'artist', 'album', 'albumArtist', 'moodVector', 'otherFeatures'] as const;
type StringField = (typeof STRING_FIELDS)[number];
/** Fields of the shared album tuple (values that repeat for every song of an album), by field index. */
const TUPLE_FIELDS = [1, 2, 3] as const;
/** Fields written in the row's own record after the tuple reference, by field index. */
const ROW_FIELDS = [0, 4, 5] as const;
/** Columns of `label:prob,...` text, kept in the compact form of `label-scores-codec.ts` when it reads back exactly. */
const LABEL_SCORE_FIELDS: ReadonlySet<StringField> = new Set(['moodVector', 'otherFeatures']);
/** LABEL_SCORE_FIELDS by field index (STRING_FIELDS order), for the per-row read and write loops. */
const IS_LABEL_SCORE: readonly boolean[] = STRING_FIELDS.map((name) => LABEL_SCORE_FIELDS.has(name));

/** Row flag: the row holds metadata. Bits 0-5 flag a null string field (in STRING_FIELDS order). */
const PRESENT = 0x80;

/** Scratch for one record: 3 fields of at most MAX_STRING_BYTES plus a 3-byte length each, and a 4-byte reference. */
const scratch = Buffer.allocUnsafe(4 + 3 * (3 + MAX_STRING_BYTES));

/** Writes `len` as LEB128 (1-3 bytes for <= 65,535) at `at`; returns the next offset. */
function putLength(b: Buffer, at: number, len: number): number {
  while (len >= 0x80) {
    b[at++] = (len & 0x7f) | 0x80;
    len >>>= 7;
  }
  b[at++] = len;
  return at;
}

/**
 * Display metadata of every row of one index generation, in memory (issue 19): what a result row shows
 * (`TrackRowDto`: title, artist, album, album_artist, mood_vector, other_features) plus tempo and energy
 * (similar-songs filters), so a query makes no database call for its rows.
 *
 * Storage: per row a uint32 reference to its record in the arena, one flag byte (present, and which string
 * fields are null), tempo and energy as float64 (NaN = null, exactly the value PostgreSQL returned): 21 bytes
 * per row. The record holds a uint32 reference to the row's album tuple (artist, album, album_artist, stored
 * once per distinct tuple while loading: the songs of one album share it), then title, mood_vector and
 * other_features; every non-null string is a LEB128 byte length and its bytes (UTF-8, cut at 65,535 bytes).
 * `mood_vector` and `other_features` are held in the compact form of `label-scores-codec.ts` (16 + 13 bytes
 * instead of ~160 for a MusiCNN-analysed song) whenever it decodes to the identical string, else as UTF-8.
 * At 1M songs: ~21 + 4 + ~40 bytes a row (53 + ~40 when every field had its own reference and length).
 * Reading a row decodes its strings (a few hundred ns per row).
 *
 * Kept current by `set`/`remove` (row-addressed, so a relabel of canonical ids keeps it valid);
 * `seq` is the position of the change log applied so far (0 = only what the generation was loaded with).
 */
export class TrackMetaStore {
  private readonly arena = new StringArena();
  /** refs[row]: the row's record; flags[row]: PRESENT | null-field bits. */
  private readonly refs: Uint32Array;
  private readonly flags: Uint8Array;
  private readonly tempo: Float64Array;
  private readonly energy: Float64Array;
  /** Album tuples stored while loading, by content (dropped by `sealLoad`). */
  private shared: Map<string, number> | undefined = new Map();
  private present = 0;
  /** Change-log position applied (0 = none beyond the load). */
  seq = 0;

  constructor(readonly size: number) {
    this.refs = new Uint32Array(size);
    this.flags = new Uint8Array(size);
    this.tempo = new Float64Array(size).fill(Number.NaN);
    this.energy = new Float64Array(size).fill(Number.NaN);
  }

  /** Rows holding metadata. */
  get count(): number {
    return this.present;
  }

  /** Bytes held: the per-row arrays plus the string arena's chunks. */
  get bytes(): number {
    return this.refs.byteLength + this.flags.byteLength + this.tempo.byteLength + this.energy.byteLength + this.arena.bytes;
  }

  /**
   * Sets the metadata of `row` (replacing what it held). Rows outside [0, size) are ignored.
   * Values are copied into the arena; the argument is not kept.
   */
  set(row: number, m: TrackMetaFields): void {
    if (!(row >= 0 && row < this.size)) return;
    // A missing title or artist reads back as '' (as before), the other fields as null.
    let flags = PRESENT;
    for (let f = 2; f < STRING_FIELDS.length; f++) if (m[STRING_FIELDS[f]!] === null || m[STRING_FIELDS[f]!] === undefined) flags |= 1 << f;
    const value = (f: number): string | Buffer | undefined => {
      const v = m[STRING_FIELDS[f]!];
      if (v === null || v === undefined) return f < 2 ? '' : undefined;
      return (IS_LABEL_SCORE[f] ? encodeLabelScores(v) : undefined) ?? (Buffer.byteLength(v, 'utf8') > MAX_STRING_BYTES ? truncateUtf8(v, MAX_STRING_BYTES) : v);
    };
    const write = (fields: readonly number[], at: number): number => {
      for (const f of fields) {
        const v = value(f);
        if (v === undefined) continue;
        const len = typeof v === 'string' ? Buffer.byteLength(v, 'utf8') : v.length;
        at = putLength(scratch, at, len);
        if (typeof v === 'string') scratch.write(v, at, len, 'utf8');
        else v.copy(scratch, at);
        at += len;
      }
      return at;
    };
    // The album tuple: shared while loading, appended after.
    const key = this.shared ? JSON.stringify([m.artist ?? '', m.album ?? null, m.albumArtist ?? null]) : '';
    let tuple = this.shared?.get(key);
    if (tuple === undefined) {
      tuple = this.arena.addBytes(scratch.subarray(0, write(TUPLE_FIELDS, 0)));
      this.shared?.set(key, tuple);
    }
    scratch.writeUInt32LE(tuple, 0);
    const ref = this.arena.addBytes(scratch.subarray(0, write(ROW_FIELDS, 4)));
    if ((this.flags[row]! & PRESENT) === 0) this.present++;
    this.refs[row] = ref;
    this.flags[row] = flags;
    this.tempo[row] = m.tempo ?? Number.NaN;
    this.energy[row] = m.energy ?? Number.NaN;
  }

  /** Drops the metadata of `row` (the song left the catalogue copy): it is then omitted from results. */
  remove(row: number): void {
    if (!this.has(row)) return;
    this.present--;
    this.flags[row] = 0;
    this.tempo[row] = Number.NaN;
    this.energy[row] = Number.NaN;
  }

  /** True when the row holds metadata. */
  has(row: number): boolean {
    return row >= 0 && row < this.size && (this.flags[row]! & PRESENT) !== 0;
  }

  /** Ends the bulk load: the sharing table of album tuples is dropped (later changes just append). */
  sealLoad(): void {
    this.shared = undefined;
  }

  /** Metadata of `row` under canonical id `itemId`, or undefined when the row holds none. */
  get(row: number, itemId: string): TrackMeta | undefined {
    if (!this.has(row)) return undefined;
    const flags = this.flags[row]!;
    const out: Array<string | null> = [null, null, null, null, null, null];
    const read = (fields: readonly number[], ref: number, skip: number): number => {
      const chunk = this.arena.chunkOf(ref);
      let at = (ref & 0xffffff) + skip;
      for (const f of fields) {
        if (flags & (1 << f)) continue;
        let len = 0;
        for (let shift = 0; ; shift += 7) {
          const b = chunk[at++]!;
          len |= (b & 0x7f) << shift;
          if (b < 0x80) break;
        }
        out[f] = len === 0 ? '' : IS_LABEL_SCORE[f] && isEncodedLabelScores(chunk, at, len) ? decodeLabelScores(chunk, at, len) : chunk.toString('utf8', at, at + len);
        at += len;
      }
      return at;
    };
    const ref = this.refs[row]!;
    read(ROW_FIELDS, ref, 4);
    read(TUPLE_FIELDS, this.arena.chunkOf(ref).readUInt32LE(ref & 0xffffff), 0);
    const tempo = this.tempo[row]!;
    const energy = this.energy[row]!;
    return {
      itemId,
      title: out[0] ?? '',
      artist: out[1] ?? '',
      album: out[2] ?? null,
      albumArtist: out[3] ?? null,
      moodVector: out[4] ?? null,
      otherFeatures: out[5] ?? null,
      tempo: Number.isNaN(tempo) ? null : tempo,
      energy: Number.isNaN(energy) ? null : energy,
    };
  }
}

/** Source of the bulk load (TrackRepository.streamMetadata). */
export interface TrackMetaSource {
  streamMetadata(): AsyncIterable<TrackMeta[]>;
}

/**
 * The in-memory metadata of a generation, read from the index's catalogue copy (`index.tracks`, the rows
 * the generation was built from) in keyset pages. Ids not in the generation are skipped.
 * @param index the generation's id table (`rowOf`) and size
 */
export async function loadTrackMeta(index: { size: number; rowOf(id: string): number }, source: TrackMetaSource): Promise<TrackMetaStore> {
  const store = new TrackMetaStore(index.size);
  for await (const page of source.streamMetadata()) {
    for (const m of page) store.set(index.rowOf(m.itemId), m);
  }
  store.sealLoad();
  return store;
}
