import type { TrackMeta } from '../../store/track.repository';
import { decodeLabelScores, encodeLabelScores, isEncodedLabelScores } from './label-scores-codec';

/** One row of display metadata as the store takes it (TrackMeta without the id). */
export type TrackMetaFields = Omit<TrackMeta, 'itemId'>;

/** Bytes per arena chunk: 16 MiB (a string never spans two chunks; the 24-bit offset addresses one chunk). */
const CHUNK_BYTES = 1 << 24;
/** Longest string kept, in UTF-8 bytes (longer display strings are cut at a character boundary). */
const MAX_STRING_BYTES = 65_535;

/**
 * Append-only UTF-8 string storage in 16 MiB chunks. A reference is `chunk << 24 | offset` (uint32) plus a
 * byte length kept by the caller. Strings live outside the JS heap, so a million rows of titles and mood
 * strings cost their UTF-8 bytes and no GC work (a JS string per field costs a heap object each, which the
 * major GC has to mark). Replaced strings are not reclaimed: the garbage is bounded by the metadata changes
 * of one generation, and the next generation starts a fresh arena.
 */
class StringArena {
  private readonly chunks: Buffer[] = [];
  private used = CHUNK_BYTES;

  /** Stores `s`; returns [ref, byteLength]. */
  add(s: string): [number, number] {
    let len = Buffer.byteLength(s, 'utf8');
    if (len === 0) return [0, 0];
    if (len > MAX_STRING_BYTES) {
      s = truncateUtf8(s, MAX_STRING_BYTES);
      len = Buffer.byteLength(s, 'utf8');
    }
    const [chunk, off] = this.reserve(len);
    this.chunks[chunk]!.write(s, off, len, 'utf8');
    return [((chunk << 24) | off) >>> 0, len];
  }

  /** Stores raw bytes (at most MAX_STRING_BYTES); returns [ref, byteLength]. */
  addBytes(b: Uint8Array): [number, number] {
    if (b.length > MAX_STRING_BYTES) throw new Error('metadata arena: value too long');
    const [chunk, off] = this.reserve(b.length);
    this.chunks[chunk]!.set(b, off);
    return [((chunk << 24) | off) >>> 0, b.length];
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

  get(ref: number, len: number): string {
    const off = ref & 0xffffff;
    return this.chunks[ref >>> 24]!.toString('utf8', off, off + len);
  }

  /** A label-scores field: its compact form decoded, or its UTF-8 text. */
  getLabelScores(ref: number, len: number): string {
    const off = ref & 0xffffff;
    const chunk = this.chunks[ref >>> 24]!;
    return isEncodedLabelScores(chunk, off, len) ? decodeLabelScores(chunk, off, len) : chunk.toString('utf8', off, off + len);
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

/** String columns in storage order. `title` and `artist` are never null for a present row. */
const STRING_FIELDS = ['title', 'artist', 'album', 'albumArtist', 'moodVector', 'otherFeatures'] as const;
type StringField = (typeof STRING_FIELDS)[number];
/** Columns whose values repeat a lot (one artist, one album for many songs): equal strings share bytes while loading. */
const SHARED_FIELDS: ReadonlySet<StringField> = new Set(['artist', 'album', 'albumArtist']);
/** Columns of `label:prob,...` text, kept in the compact form of `label-scores-codec.ts` when it reads back exactly. */
const LABEL_SCORE_FIELDS: ReadonlySet<StringField> = new Set(['moodVector', 'otherFeatures']);
/** LABEL_SCORE_FIELDS by field index (STRING_FIELDS order), for the per-row read and write loops. */
const IS_LABEL_SCORE: readonly boolean[] = STRING_FIELDS.map((name) => LABEL_SCORE_FIELDS.has(name));
const NF = STRING_FIELDS.length;

/** Row flag: the row holds metadata. Bits 0-5 flag a null string field (in STRING_FIELDS order). */
const PRESENT = 0x80;

/**
 * Display metadata of every row of one index generation, in memory (issue 19): what a result row shows
 * (`TrackRowDto`: title, artist, album, album_artist, mood_vector, other_features) plus tempo and energy
 * (similar-songs filters), so a query makes no database call for its rows.
 *
 * Storage per row: for each of the 6 string fields a uint32 arena reference and a uint16 UTF-8 length (strings
 * are cut at 65,535 bytes), one flag byte (present, and which fields are null), tempo and energy as float64
 * (NaN = null, exactly the value PostgreSQL returned): 53 bytes per row plus the UTF-8 bytes, which the loader
 * shares for equal artist/album values. `mood_vector` and `other_features` are held in the compact form of
 * `label-scores-codec.ts` (16 + 13 bytes instead of ~160 for a MusiCNN-analysed song) whenever it decodes to
 * the identical string, else as UTF-8. Reading a row decodes its strings (a few hundred ns per row).
 *
 * Kept current by `set`/`remove` (row-addressed, so a relabel of canonical ids keeps it valid);
 * `seq` is the position of the change log applied so far (0 = only what the generation was loaded with).
 */
export class TrackMetaStore {
  private readonly arena = new StringArena();
  /** refs[row * NF + field], lens[row * NF + field] (UTF-8 bytes), flags[row] (PRESENT | null-field bits). */
  private readonly refs: Uint32Array;
  private readonly lens: Uint16Array;
  private readonly flags: Uint8Array;
  private readonly tempo: Float64Array;
  private readonly energy: Float64Array;
  private shared: Map<string, [number, number]> | undefined = new Map();
  private present = 0;
  /** Change-log position applied (0 = none beyond the load). */
  seq = 0;

  constructor(readonly size: number) {
    this.refs = new Uint32Array(size * NF);
    this.lens = new Uint16Array(size * NF);
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
    return this.refs.byteLength + this.lens.byteLength + this.flags.byteLength + this.tempo.byteLength + this.energy.byteLength + this.arena.bytes;
  }

  /**
   * Sets the metadata of `row` (replacing what it held). Rows outside [0, size) are ignored.
   * Values are copied into the arena; the argument is not kept.
   */
  set(row: number, m: TrackMetaFields): void {
    if (!(row >= 0 && row < this.size)) return;
    if ((this.flags[row]! & PRESENT) === 0) this.present++;
    const base = row * NF;
    let flags = PRESENT;
    for (let f = 0; f < NF; f++) {
      const name = STRING_FIELDS[f]!;
      const v = m[name];
      if (v === null || v === undefined) {
        // A missing title or artist reads back as '' (as before), the other fields as null.
        if (name !== 'title' && name !== 'artist') flags |= 1 << f;
        this.lens[base + f] = 0;
        this.refs[base + f] = 0;
        continue;
      }
      let ref: [number, number] | undefined;
      const share = this.shared !== undefined && SHARED_FIELDS.has(name);
      if (share) ref = this.shared!.get(v);
      if (!ref) {
        const coded = IS_LABEL_SCORE[f] ? encodeLabelScores(v) : undefined;
        ref = coded ? this.arena.addBytes(coded) : this.arena.add(v);
        if (share) this.shared!.set(v, ref);
      }
      this.refs[base + f] = ref[0];
      this.lens[base + f] = ref[1];
    }
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

  /** Ends the bulk load: the sharing table of equal artist/album strings is dropped (later changes just append). */
  sealLoad(): void {
    this.shared = undefined;
  }

  /** Metadata of `row` under canonical id `itemId`, or undefined when the row holds none. */
  get(row: number, itemId: string): TrackMeta | undefined {
    if (!this.has(row)) return undefined;
    const base = row * NF;
    const flags = this.flags[row]!;
    const s = (f: number): string | null => {
      if (flags & (1 << f)) return null;
      const len = this.lens[base + f]!;
      if (len === 0) return '';
      return IS_LABEL_SCORE[f] ? this.arena.getLabelScores(this.refs[base + f]!, len) : this.arena.get(this.refs[base + f]!, len);
    };
    const tempo = this.tempo[row]!;
    const energy = this.energy[row]!;
    return {
      itemId,
      title: s(0) ?? '',
      artist: s(1) ?? '',
      album: s(2),
      albumArtist: s(3),
      moodVector: s(4),
      otherFeatures: s(5),
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
