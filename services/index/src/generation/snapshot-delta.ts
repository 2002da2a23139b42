import { SNAPSHOT_BY_IDS_MAX, type SnapshotTrackBytes } from '@polyphony/contracts';
import { normaliseInto } from '@polyphony/vectors';
import type { ArtistLinkCounter, Generation } from '../core/generation';
import { bufferToI32, bytesOf } from '../core/codec';
import type { CataloguePort } from '../core/ports';
import { artistKey } from '../core/text';
import { snapshotVector } from '../core/track.repository';
import type { TrackMetaStore } from '../maps/track-meta-store';
import { rowRunReader } from './reuse';
import { byteOrderLess } from './snapshot-feed';

/* The delta snapshot (issue 35): a rebuild reads only the songs the catalogue's change feed lists and takes every other
   row from the serving generation it holds in memory. */

/** Serving rows read at once while planning and merging (512 x 200 floats = 400 KiB). */
const READ_RUN_ROWS = 512;
/** Rows per batch handed to the fed build by the merge. */
export const DELTA_BATCH_ROWS = 4096;

/**
 * The provider-artist-link contributions (ArtistLinkCounter: server, artist key, provider artist id) of every song a
 * build's snapshot listed: per row of the generation (build order) and, for songs listed but left out (vector not
 * usable), by id. A delta build recounts the links from these for unchanged songs and from the changed songs' rows,
 * which gives the counts a full snapshot would (the counts are kept, not the majority links). ~6 bytes a mapping.
 */
export class LinkRecorder {
  rows = 0;
  private readonly index = new Map<string, number>();
  private readonly triples: Array<[string, string, string]> = [];
  private offsets: Int32Array = new Int32Array(1025);
  private refs: Int32Array = new Int32Array(1024);
  private used = 0;
  readonly skipped = new Map<string, number[]>();

  private intern(serverId: string, key: string, providerId: string): number {
    const k = `${serverId}\u0000${key}\u0000${providerId}`;
    let i = this.index.get(k);
    if (i === undefined) {
      i = this.triples.length;
      this.index.set(k, i);
      this.triples.push([serverId, key, providerId]);
    }
    return i;
  }

  private refsOf(t: Pick<SnapshotTrackBytes, 'artist' | 'mappings'>): number[] {
    const key = artistKey(t.artist);
    const out: number[] = [];
    for (const m of t.mappings) if (m.artistId) out.push(this.intern(m.serverId, key, m.artistId));
    return out;
  }

  private push(refs: readonly number[]): void {
    if (this.rows + 2 > this.offsets.length) {
      const grown = new Int32Array(this.offsets.length * 2);
      grown.set(this.offsets);
      this.offsets = grown;
    }
    if (this.used + refs.length > this.refs.length) {
      const grown = new Int32Array(Math.max(this.used + refs.length, this.refs.length * 2));
      grown.set(this.refs.subarray(0, this.used));
      this.refs = grown;
    }
    for (const r of refs) this.refs[this.used++] = r;
    this.rows++;
    this.offsets[this.rows] = this.used;
  }

  /** The next row (build order) is song `t`. */
  row(t: Pick<SnapshotTrackBytes, 'artist' | 'mappings'>): void {
    this.push(this.refsOf(t));
  }

  /** Song `t` was listed but is not a row (vector not usable). */
  skip(t: Pick<SnapshotTrackBytes, 'itemId' | 'artist' | 'mappings'>): void {
    this.skipped.set(t.itemId, this.refsOf(t));
  }

  /** The next row is row `r` of `from` (an unchanged song of the generation `from` was recorded for). */
  copyRow(from: LinkRecorder, r: number): void {
    const refs: number[] = [];
    for (let i = from.offsets[r]!; i < from.offsets[r + 1]!; i++) {
      const [s, k, p] = from.triples[from.refs[i]!]!;
      refs.push(this.intern(s, k, p));
    }
    this.push(refs);
  }

  /** Song `id` listed but left out in `from` (unchanged) is listed but left out here too. */
  copySkipped(from: LinkRecorder, id: string, refs: readonly number[]): void {
    this.skipped.set(id, refs.map((i) => this.intern(...from.triples[i]!)));
  }

  /** Adds every recorded contribution (rows and left-out songs) to `counter`. */
  countInto(counter: ArtistLinkCounter): void {
    for (let i = 0; i < this.used; i++) counter.add(...this.triples[this.refs[i]!]!);
    for (const refs of this.skipped.values()) for (const i of refs) counter.add(...this.triples[i]!);
  }

  /**
   * The recorder as bytes (stored with its generation, `index.builds.feed_links`): a 4-byte format tag
   * (LINKS_FORMAT), the JSON byte length (uint32 LE), the JSON `{ rows, used, triples, skipped }` padded to 4 bytes,
   * then the row offsets (`rows + 1` int32 LE) and the refs (`used` int32 LE). ~4 bytes a mapping plus the distinct triples.
   */
  encode(): Buffer {
    const json = Buffer.from(JSON.stringify({ rows: this.rows, used: this.used, triples: this.triples, skipped: [...this.skipped] }), 'utf8');
    const jsonEnd = 8 + json.length + ((4 - (json.length % 4)) % 4);
    const out = Buffer.alloc(jsonEnd + 4 * (this.rows + 1) + 4 * this.used);
    out.writeUInt32LE(LINKS_FORMAT, 0);
    out.writeUInt32LE(json.length, 4);
    json.copy(out, 8);
    out.set(bytesOf(this.offsets.subarray(0, this.rows + 1)), jsonEnd);
    out.set(bytesOf(this.refs.subarray(0, this.used)), jsonEnd + 4 * (this.rows + 1));
    return out;
  }

  /** The recorder `encode` wrote. @throws when the bytes are not such a recorder (unknown format, lengths or refs out of range) */
  static decode(bytes: Buffer): LinkRecorder {
    const bad = (why: string) => new Error(`stored link contributions unreadable: ${why}`);
    if (bytes.length < 8 || bytes.readUInt32LE(0) !== LINKS_FORMAT) throw bad('unknown format');
    const jsonLength = bytes.readUInt32LE(4);
    const jsonEnd = 8 + jsonLength + ((4 - (jsonLength % 4)) % 4);
    if (jsonEnd > bytes.length) throw bad('truncated');
    const j = JSON.parse(bytes.toString('utf8', 8, 8 + jsonLength)) as { rows: number; used: number; triples: Array<[string, string, string]>; skipped: Array<[string, number[]]> };
    if (!Number.isInteger(j.rows) || !Number.isInteger(j.used) || j.rows < 0 || j.used < 0 || bytes.length !== jsonEnd + 4 * (j.rows + 1) + 4 * j.used) throw bad('lengths disagree');
    const rec = new LinkRecorder();
    for (const [s, k, p] of j.triples) rec.intern(s, k, p);
    if (rec.triples.length !== j.triples.length) throw bad('repeated triples');
    rec.rows = j.rows;
    rec.used = j.used;
    const refsAt = jsonEnd + 4 * (j.rows + 1);
    rec.offsets = bufferToI32(bytes.subarray(jsonEnd, refsAt));
    rec.refs = j.used > 0 ? bufferToI32(bytes.subarray(refsAt)) : new Int32Array(1);
    const n = rec.triples.length;
    for (let r = 0; r < j.rows; r++) if (rec.offsets[r]! > rec.offsets[r + 1]!) throw bad('row offsets not ascending');
    if (rec.offsets[0] !== 0 || rec.offsets[j.rows] !== j.used) throw bad('row offsets do not span the refs');
    for (let i = 0; i < j.used; i++) if (rec.refs[i]! < 0 || rec.refs[i]! >= n) throw bad('ref out of range');
    for (const [id, refs] of j.skipped) {
      if (refs.some((i) => !Number.isInteger(i) || i < 0 || i >= n)) throw bad('ref out of range');
      rec.skipped.set(id, refs);
    }
    return rec;
  }
}

/** Format tag of `LinkRecorder.encode` (bump when the layout changes: an older tag then reads as no delta base). */
const LINKS_FORMAT = 0x4c4e4b31;

/**
 * What a build leaves for the next build's delta (held in memory by the build task, and stored with the generation in
 * `index.builds` so that a restarted service or another replica serving the generation can take it up: delta-snapshot.ts):
 * the generation, the change-feed mark taken BEFORE its snapshot was read and the catalogue that mark belongs to, its
 * row count as built (later live appends are re-read), and its link contributions.
 */
export interface FeedBase {
  generation: number;
  mark: string;
  catalogue: string;
  rows: number;
  links: LinkRecorder;
}

/** Where a build keeps the FeedBase of the generation it made live (BuildHost.feedBase). */
export interface FeedBaseHolder {
  get(): FeedBase | undefined;
  set(base: FeedBase | undefined): void;
}

/** The delta of a rebuild: which serving rows are kept, the changed songs' current rows, and the ids that left. */
export interface DeltaPlan {
  /** Per base row: 1 = unchanged (taken from the serving generation). */
  keep: Uint8Array;
  kept: number;
  /** Songs read by id (the listed ones, live appends, rows not taken over). */
  reread: number;
  /** Every changed song the catalogue still has (usable vector or not), as read by id. */
  fetched: SnapshotTrackBytes[];
  /** The fetched songs with a usable vector, in canonical-id byte order: the new and changed rows. */
  incoming: SnapshotTrackBytes[];
  /** Ids listed as changed that are no rows any more (gone from the catalogue, or vector not usable): deleted from the copy at activation. */
  removed: string[];
  /** Songs left out of the base (not rows) still unchanged: [id, link refs of the base]. */
  skippedKept: Array<[string, number[]]>;
}

/**
 * Plans a delta rebuild of `prev` (the serving generation, built as `base`) from the changed ids `changed` (the change
 * feed since `base.mark`):
 *  - every serving row past `base.rows` (appended live after the build) and every base row without metadata is re-read
 *    too, as is a row whose stored unit vector is not a fixed point of the build's normalisation (`normaliseInto`:
 *    the build re-normalises what it is fed, so only such rows give bitwise the vector a full snapshot stores);
 *  - the changed songs' current rows are read by id (`tracksByIds`, SNAPSHOT_BY_IDS_MAX a call, two calls in flight).
 * @returns the plan, or a reason string when only a full snapshot is right (base rows out of canonical-id byte order,
 *   a changed song of another embedder version)
 */
export async function planDelta(prev: Generation, base: FeedBase, changed: readonly string[], catalogue: CataloguePort, signal: AbortSignal): Promise<DeltaPlan | string> {
  const index = prev.index;
  if (prev.generation !== base.generation || index.size < base.rows) return 'the serving generation is not the one the mark belongs to';
  const dim = index.dim;
  const reread = new Set(changed);
  for (let r = base.rows; r < index.size; r++) reread.add(index.idOf(r));
  const keep = new Uint8Array(base.rows);
  const read = rowRunReader(prev);
  const stored = new Float32Array(READ_RUN_ROWS * dim);
  const unit = new Float32Array(dim);
  let kept = 0;
  let last: string | undefined;
  for (let first = 0; first < base.rows; first += READ_RUN_ROWS) {
    if (signal.aborted) throw new Error('index build aborted');
    const n = Math.min(READ_RUN_ROWS, base.rows - first);
    read(first, n, stored);
    for (let k = 0; k < n; k++) {
      const r = first + k;
      const id = index.idOf(r);
      if (last !== undefined && !byteOrderLess(last, id)) return `serving rows not in canonical-id byte order at row ${r}`;
      last = id;
      if (reread.has(id)) continue;
      normaliseInto(stored, k * dim, unit, 0, dim);
      let fixed = prev.meta.has(r);
      for (let i = 0; fixed && i < dim; i++) if (unit[i] !== stored[k * dim + i]) fixed = false;
      if (!fixed) {
        reread.add(id);
        continue;
      }
      keep[r] = 1;
      kept++;
    }
  }
  const fetched = await readByIds(catalogue, [...reread], signal);
  const other = fetched.find((t) => t.embedderVersion !== prev.embedderVersion);
  if (other) return `a changed song has embedder version ${other.embedderVersion} (serving: ${prev.embedderVersion ?? 'none'})`;
  const incoming = fetched.filter((t) => snapshotVector(t.vector) !== undefined).sort((a, b) => (a.itemId === b.itemId ? 0 : byteOrderLess(a.itemId, b.itemId) ? -1 : 1));
  const rows = new Set(incoming.map((t) => t.itemId));
  const removed = [...reread].filter((id) => !rows.has(id));
  const skippedKept = [...base.links.skipped].filter(([id]) => !reread.has(id));
  return { keep, kept, reread: reread.size, fetched, incoming, removed, skippedKept };
}

/** The current rows of `ids` from the catalogue, SNAPSHOT_BY_IDS_MAX a call, two calls in flight. */
async function readByIds(catalogue: CataloguePort, ids: readonly string[], signal: AbortSignal): Promise<SnapshotTrackBytes[]> {
  const chunks: string[][] = [];
  for (let i = 0; i < ids.length; i += SNAPSHOT_BY_IDS_MAX) chunks.push(ids.slice(i, i + SNAPSHOT_BY_IDS_MAX));
  const out: SnapshotTrackBytes[][] = new Array(chunks.length);
  let next = 0;
  const worker = async () => {
    while (next < chunks.length) {
      if (signal.aborted) throw new Error('index build aborted');
      const c = next++;
      out[c] = await catalogue.tracksByIds(chunks[c]!);
    }
  };
  await Promise.all([worker(), worker()]);
  return out.flat();
}

/**
 * One batch of the merged rows (build order): ids and raw vectors, and each row's source. A kept row's display
 * metadata is not decoded here: the fed build copies it from `baseMeta` by base row (`feedDelta`, `TrackMetaStore.copyRows`).
 */
export interface DeltaBatch {
  ids: string[];
  vectors: Float32Array;
  /** Per row: the base row it is taken from (kept: same id, its stored vector), or -1 (a changed song's row). */
  baseRows: Int32Array;
  /** Per row: the changed song's snapshot row, or the base row it is taken from. */
  sources: Array<SnapshotTrackBytes | number>;
  /** The serving generation's display metadata, which `baseRows` index. */
  baseMeta: TrackMetaStore;
}

/**
 * The rows of the new generation in canonical-id byte order: the kept serving rows (their stored unit vectors, which
 * `planDelta` checked are fixed points of the build's normalisation; their metadata stays in `prev.meta`, by base row)
 * merged with the changed songs' rows, DELTA_BATCH_ROWS at a time.
 */
export function* mergeDelta(prev: Generation, plan: DeltaPlan): Generator<DeltaBatch> {
  const index = prev.index;
  const dim = index.dim;
  const read = rowRunReader(prev);
  const stored = new Float32Array(READ_RUN_ROWS * dim);
  let storedFirst = -1;
  let storedN = 0;
  const { keep, incoming } = plan;
  let r = -1;
  let keptId = '';
  let c = 0;
  /** Moves `r` to the next kept row at or after `from` (its id in `keptId`); -1 past the last. */
  const nextKept = (from: number) => {
    r = from;
    while (r < keep.length && keep[r] !== 1) r++;
    if (r >= keep.length) r = -1;
    else keptId = index.idOf(r);
  };
  nextKept(0);
  for (;;) {
    const batch: DeltaBatch = { ids: [], vectors: new Float32Array(DELTA_BATCH_ROWS * dim), baseRows: new Int32Array(DELTA_BATCH_ROWS), sources: [], baseMeta: prev.meta };
    let n = 0;
    while (n < DELTA_BATCH_ROWS) {
      const t = incoming[c];
      if (r < 0 && !t) break;
      const o = n * dim;
      if (r >= 0 && (!t || byteOrderLess(keptId, t.itemId))) {
        if (r < storedFirst || r >= storedFirst + storedN) {
          storedFirst = r;
          storedN = Math.min(READ_RUN_ROWS, keep.length - r);
          read(storedFirst, storedN, stored);
        }
        batch.vectors.set(stored.subarray((r - storedFirst) * dim, (r - storedFirst + 1) * dim), o);
        batch.ids.push(keptId);
        batch.baseRows[n] = r;
        batch.sources.push(r);
        nextKept(r + 1);
      } else {
        batch.vectors.set(snapshotVector(t!.vector)!, o);
        batch.ids.push(t!.itemId);
        batch.baseRows[n] = -1;
        batch.sources.push(t!);
        c++;
      }
      n++;
    }
    if (n === 0) return;
    batch.vectors = batch.vectors.subarray(0, n * dim);
    batch.baseRows = batch.baseRows.subarray(0, n);
    yield batch;
  }
}
