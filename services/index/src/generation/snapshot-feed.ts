import type { SnapshotTrackBytes } from '@polyphony/contracts';
import type { VectorBatch } from '@polyphony/vector-engine';
import { artistKey } from '../core/text';
import { VECTOR_DIM, otherFeaturesOf, snapshotVector, tagBytesOf } from '../core/track.repository';
import { metaOfSnapshotTrack, type TrackMetaStore } from '../maps/track-meta-store';
import type { SemanticRows } from '../semantic/column-fill';
import type { BuildRows } from './build-rows';
import type { RowMatcher } from './reuse';
import type { DeltaBatch, LinkRecorder } from './snapshot-delta';

/**
 * True when `a` sorts strictly before `b` in UTF-8 byte order, the order of `ORDER BY item_id COLLATE "C"`
 * (the order the build reads the catalogue copy in, TrackRepository.streamVectors). JavaScript's `<` compares
 * UTF-16 code units, which differs from byte order only where a surrogate (a code point above U+FFFF, 4 UTF-8
 * bytes) meets a code unit U+E000-U+FFFF: the surrogate is the larger code point there.
 */
export function byteOrderLess(a: string, b: string): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca === cb) continue;
    const sa = ca >= 0xd800 && ca <= 0xdfff;
    const sb = cb >= 0xd800 && cb <= 0xdfff;
    return sa === sb ? ca < cb : sb;
  }
  return a.length < b.length;
}

/**
 * A one-producer, one-consumer queue of vector batches: the snapshot loop pushes each page's usable vectors as it
 * arrives, the IVF build (`buildIvfIndex`) pulls them as its source, so the build ingests while the snapshot is
 * still being read and written instead of reading every vector back from `index.tracks` afterwards. Unbounded:
 * the build copies a batch at once (~1 ms per 1,000 rows), far faster than pages arrive; at most a few 4 MB pages
 * wait. `fail` ends the stream with an error (the build then rejects with it).
 */
export class SnapshotFeed implements AsyncIterable<VectorBatch> {
  private readonly queue: VectorBatch[] = [];
  private ended = false;
  private error: Error | undefined;
  private wake: (() => void) | undefined;

  /** Adds one batch (ids and `ids.length * dim` raw floats). Ignored after `end`/`fail`. */
  push(batch: VectorBatch): void {
    if (this.ended || this.error) return;
    this.queue.push(batch);
    this.notify();
  }

  /** No more batches: the consumer's iteration ends after the queued ones. */
  end(): void {
    this.ended = true;
    this.notify();
  }

  /** Ends the stream with `error`: the consumer's next pull throws it (queued batches are dropped). */
  fail(error: Error): void {
    if (this.ended) return;
    this.error = error;
    this.queue.length = 0;
    this.notify();
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<VectorBatch> {
    for (;;) {
      if (this.error) throw this.error;
      const next = this.queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}

/**
 * Pushes the usable vectors of one snapshot page into the fed build (the rule of `snapshotVector`, as the copy
 * skips them), checking that ids rise in byte order (`byteOrderLess`, the read-back's order); the first id out of
 * order stops the feed (`stop`), so the build reads the copy back instead and still sees the same row order.
 * The fed rows' display metadata goes into `meta` (row = build order), grown when full, and their text-search
 * columns into `semantic` when given (the new generation's semantic table is then built from memory), and the rows
 * are matched with the serving generation by `match` when given (generation reuse, issue 35), and each song's
 * provider-artist links are recorded per row by `links` when given (the next build's delta, snapshot-delta.ts).
 * @returns the metadata store to use for the next page (undefined once the feed stopped)
 */
export function feedPage(tracks: readonly SnapshotTrackBytes[], feed: SnapshotFeed, rows: BuildRows, meta: TrackMetaStore | undefined, stop: (reason: string) => void, semantic?: SemanticRows, match?: RowMatcher, links?: LinkRecorder): TrackMetaStore | undefined {
  let lastId = rows.lastId;
  const ids: string[] = [];
  const keys: string[] = [];
  const names: string[] = [];
  const fedTracks: SnapshotTrackBytes[] = [];
  const vectors = new Float32Array(tracks.length * VECTOR_DIM);
  for (const t of tracks) {
    const f = snapshotVector(t.vector);
    if (!f) {
      links?.skip(t);
      continue;
    }
    if (lastId !== undefined && !byteOrderLess(lastId, t.itemId)) {
      stop(`snapshot ids not in byte order at ${JSON.stringify(t.itemId.slice(0, 100))}`);
      return undefined;
    }
    lastId = t.itemId;
    links?.row(t);
    vectors.set(f, ids.length * VECTOR_DIM);
    ids.push(t.itemId);
    keys.push(artistKey(t.artist));
    names.push(t.artist);
    fedTracks.push(t);
  }
  if (ids.length === 0) return meta;
  if (meta) {
    // The columns `streamMetadata` reads back (tempo and energy as the copy's real columns return them).
    const base = rows.count;
    if (base + ids.length > meta.size) meta = meta.grownTo(Math.max(2 * meta.size, base + ids.length));
    const store = meta;
    fedTracks.forEach((t, i) => store.set(base + i, metaOfSnapshotTrack(t)));
  }
  if (semantic) {
    // The text search's columns as the copy stores them (tags bytes, other_scores real[], tempo and energy real).
    const base = rows.count;
    fedTracks.forEach((t, i) => semantic.set(base + i, tagBytesOf(t.learned), otherFeaturesOf(t.learned)?.split(',').map(Number) ?? null, t.tempo, t.energy));
  }
  match?.add(ids, vectors.subarray(0, ids.length * VECTOR_DIM));
  rows.add(ids, keys, names);
  feed.push({ ids, vectors: vectors.subarray(0, ids.length * VECTOR_DIM) });
  return meta;
}

/**
 * Feeds one batch of the delta snapshot's merge (rows already checked and in build order, snapshot-delta.ts) into the
 * fed build: the same bookkeeping as `feedPage` (rows and artists, display metadata, the serving-generation match, the
 * feed). Kept rows' metadata is copied as record bytes from the serving store, one `copyRows` per run of consecutive
 * base rows, and their artists read from the copied records; kept rows are matched by their base row (`RowMatcher.add`).
 * @returns the metadata store to use for the next batch
 */
export function feedDelta(batch: DeltaBatch, feed: SnapshotFeed, rows: BuildRows, meta: TrackMetaStore, match?: RowMatcher): TrackMetaStore {
  const { ids, vectors, baseRows, sources, baseMeta } = batch;
  const n = ids.length;
  if (n === 0) return meta;
  const base = rows.count;
  if (base + n > meta.size) meta = meta.grownTo(Math.max(2 * meta.size, base + n));
  const names: string[] = [];
  for (let i = 0; i < n; ) {
    const from = baseRows[i]!;
    if (from < 0) {
      const t = sources[i] as SnapshotTrackBytes;
      meta.set(base + i, metaOfSnapshotTrack(t));
      names.push(t.artist);
      i++;
      continue;
    }
    let end = i + 1;
    while (end < n && baseRows[end] === baseRows[end - 1]! + 1) end++;
    meta.copyRows(baseMeta, from, base + i, end - i, names);
    i = end;
  }
  match?.add(ids, vectors, baseRows);
  rows.add(ids, names.map(artistKey), names);
  feed.push({ ids, vectors });
  return meta;
}
