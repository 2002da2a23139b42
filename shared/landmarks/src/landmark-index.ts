import { closeSync, mkdirSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { HASH_SPACE } from './params';
import type { Landmarks } from './extract';

/** Rows per shard: a posting keeps its row's low 16 bits, the shard gives the rest. */
export const SHARD_ROWS = 1 << 16;

/** Build options of a {@link LandmarkIndex}. */
export interface LandmarkIndexOptions {
  /**
   * Stop-list: the most common hashes, which together hold at most this fraction of all postings, are not
   * stored. Such a hash is a pattern many songs share (a short, narrow pair of peaks): its postings are the
   * longest lists to walk and vote for many songs alike, so they cost query time and memory and add little to
   * the decision (audfprint caps its hash buckets for the same reason). The fraction is the memory and walk saved,
   * whatever the library size. 0 keeps every hash. Default {@link LANDMARK_INDEX_DEFAULTS}.
   */
  stopFraction?: number;
  /**
   * A hash with at most this many postings is never stop-listed: its list is short to walk and small to hold, and
   * in a small library the most common hashes are often the ones two versions of one song share (by_track would
   * lose them). Default 8: below the 12 postings of the least common hash the 0.2 stop-list leaves out of the
   * 94-song benchmark library, so its figures hold.
   */
  stopMinPostings?: number;
}

/** Defaults of {@link LandmarkIndexOptions}, chosen on the benchmark (package README "Figures"). */
export const LANDMARK_INDEX_DEFAULTS = Object.freeze({ stopFraction: 0.2, stopMinPostings: 8 });

/** One shard's view of the postings: rows `base .. base + SHARD_ROWS - 1`. */
export interface LandmarkShard {
  /**
   * First row of the shard.
   */
  readonly base: number;
  /**
   * `HASH_SPACE + 1` positions in the postings: the shard's postings of hash h start at `offsets[h]` and end where
   * the next shard's postings of h start (the last shard's: where the first shard's of h + 1 start). Postings are
   * hash-major (all shards' postings of one hash are contiguous, shard by shard), so a query reads one range per hash.
   */
  readonly offsets: Uint32Array;
}

/** Closes the descriptor of a file-backed index once the index is garbage-collected (and not closed before). */
const fileCloser = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
});
let fileSequence = 0;

/**
 * Inverted index from landmark hash to postings (row, anchor frame), in compressed-sparse-row form, 4 bytes per
 * posting: `packed[k] = (row - shard base) << 16 | frame`, with one offsets table (`HASH_SPACE + 1` Uint32,
 * 4 MiB) per shard of 65,536 rows (100k songs: 2 shards, 8 MiB). A row is the caller's dense song number (the
 * engine knows no songs). Hashes of the stop-list ({@link LandmarkIndexOptions}) have no postings. The postings
 * are held in memory after a build, or in an unlinked file after {@link LandmarkIndex.toFile} (then only the
 * offsets tables stay in the process). Immutable once built: a library change builds a new one.
 */
export class LandmarkIndex {
  private closed = false;

  private constructor(
    /** Shards that hold at least one row, by base. */
    readonly shards: readonly LandmarkShard[],
    /** Postings in memory (`(row - base) << 16 | frame`), or undefined when they live in a file ({@link toFile}). */
    private readonly memory: Uint32Array | undefined,
    /** Descriptor of the unlinked postings file, or -1 when they are in memory. */
    private readonly fd: number,
    /** Number of postings. */
    readonly size: number,
    /** One past the largest row stored. */
    readonly rowCount: number,
    /** Hashes left out by the stop-list, and the postings they held. */
    readonly stopped: { hashes: number; postings: number },
  ) {}

  /** Postings in memory, `(row - base) << 16 | frame`. @throws Error when the postings live in a file */
  get packed(): Uint32Array {
    if (!this.memory) throw new Error('the postings of this landmark index live in a file: read them with readPostings');
    return this.memory;
  }

  /** True when the postings are held in memory (else one positional read per query hash). */
  get resident(): boolean {
    return this.memory !== undefined;
  }

  /** Bytes held in the process's memory: the offsets tables, plus the postings when they are resident. */
  get bytes(): number {
    return (this.memory?.byteLength ?? 0) + this.shards.reduce((a, s) => a + s.offsets.byteLength, 0);
  }

  /** Bytes of the postings file (0 when resident). */
  get fileBytes(): number {
    return this.memory ? 0 : this.size * 4;
  }

  /** Range `[start, end)` of every posting of `hash`, all shards together (shard by shard, see {@link LandmarkShard}). */
  hashRange(hash: number): readonly [number, number] {
    const first = this.shards[0];
    return first ? [first.offsets[hash]!, first.offsets[hash + 1]!] : [0, 0];
  }

  /** End of shard `s`'s postings of `hash` (its start is `shards[s].offsets[hash]`). */
  shardEnd(s: number, hash: number): number {
    const next = this.shards[s + 1];
    return next ? next.offsets[hash]! : this.shards[0]!.offsets[hash + 1]!;
  }

  /**
   * Copies postings `[start, end)` into `out` from index `at` (one positional read when they live in a file).
   * @throws Error when the index is closed or the file ends early
   */
  readPostings(start: number, end: number, out: Uint32Array, at: number): void {
    if (end <= start) return;
    if (this.memory) {
      out.set(this.memory.subarray(start, end), at);
      return;
    }
    if (this.closed) throw new Error('landmark index is closed');
    const bytes = new Uint8Array(out.buffer, out.byteOffset + at * 4, (end - start) * 4);
    let done = 0;
    while (done < bytes.length) {
      const n = readSync(this.fd, bytes, done, bytes.length - done, start * 4 + done);
      if (n === 0) throw new Error(`landmark postings file ended at byte ${start * 4 + done}`);
      done += n;
    }
  }

  /**
   * The same index with its postings moved to an unlinked file in `dir` (created if missing; the file never
   * outlives the process): the process then holds only the offsets tables (4 MiB per 65,536 rows), and a query
   * reads each of its hashes' postings with one positional read (the OS page cache keeps the hot ones). This
   * index's in-memory postings are released once it is no longer referenced. The file's descriptor is closed by
   * {@link close} or when the returned index is garbage-collected.
   * @throws Error when the directory or the file cannot be written
   */
  toFile(dir: string): LandmarkIndex {
    const memory = this.packed;
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `landmarks-${process.pid}-${Date.now()}-${fileSequence++}.u32`);
    const fd = openSync(path, 'w+');
    unlinkSync(path);
    try {
      const bytes = new Uint8Array(memory.buffer, memory.byteOffset, memory.byteLength);
      const chunk = 1 << 24;
      for (let at = 0; at < bytes.length; ) {
        const n = writeSync(fd, bytes, at, Math.min(chunk, bytes.length - at), at);
        at += n;
      }
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    const out = new LandmarkIndex(this.shards, undefined, fd, this.size, this.rowCount, this.stopped);
    fileCloser.register(out, fd, out);
    return out;
  }

  /** Closes the postings file of a file-backed index now (no effect on a resident one); later reads throw. */
  close(): void {
    if (this.memory || this.closed) return;
    this.closed = true;
    fileCloser.unregister(this);
    closeSync(this.fd);
  }

  /**
   * Builds the index from `source`, called twice (a counting pass, then a filling pass, so the songs'
   * landmarks are never all held at once): it yields `[row, landmarks]` with rows < 2^32. Postings of one hash
   * in one shard are in the order the source yields them.
   */
  static build(source: () => Iterable<readonly [number, Landmarks]>, options: LandmarkIndexOptions = {}): LandmarkIndex {
    const b = new TwoPassBuilder(options);
    for (const [row, lm] of source()) b.count(row, lm);
    b.allocate();
    for (const [row, lm] of source()) b.fill(row, lm);
    return b.finish();
  }

  /**
   * {@link build} over an asynchronous source (e.g. pages of stored fingerprints read from a database or a
   * peer service), called twice likewise: both passes must yield the same landmarks (a source that changed in
   * between is an error, so the caller retries on a consistent snapshot or pins it, e.g. by an upper key).
   */
  static async buildAsync(source: () => AsyncIterable<readonly [number, Landmarks]>, options: LandmarkIndexOptions = {}): Promise<LandmarkIndex> {
    const b = new TwoPassBuilder(options);
    for await (const [row, lm] of source()) b.count(row, lm);
    b.allocate();
    for await (const [row, lm] of source()) b.fill(row, lm);
    return b.finish();
  }

  /** @internal used by the builder */
  static fromParts(shards: LandmarkShard[], packed: Uint32Array, rowCount: number, stopped: { hashes: number; postings: number }): LandmarkIndex {
    return new LandmarkIndex(shards, packed, -1, packed.length, rowCount, stopped);
  }
}

/** The two passes of a build: count postings per (shard, hash), stop the common hashes, then place each posting at its cursor. */
class TwoPassBuilder {
  /** Per shard number: counts of hash h at [h] in the first pass, then the shard's write cursors. */
  private readonly counts: Array<Uint32Array | undefined> = [];
  private offsets: Array<Uint32Array | undefined> = [];
  private stop?: Uint8Array;
  private total = 0;
  private kept = 0;
  private rowCount = 0;
  private packed?: Uint32Array;
  private filled = 0;
  private stopped = { hashes: 0, postings: 0 };

  constructor(private readonly options: LandmarkIndexOptions) {}

  count(row: number, lm: Landmarks): void {
    const s = Math.floor(row / SHARD_ROWS);
    const counts = (this.counts[s] ??= new Uint32Array(HASH_SPACE));
    for (let i = 0; i < lm.hashes.length; i++) counts[lm.hashes[i]!]!++;
    this.total += lm.hashes.length;
    if (row + 1 > this.rowCount) this.rowCount = row + 1;
  }

  allocate(): void {
    const stopFraction = this.options.stopFraction ?? LANDMARK_INDEX_DEFAULTS.stopFraction;
    const stopMin = this.options.stopMinPostings ?? LANDMARK_INDEX_DEFAULTS.stopMinPostings;
    const shards = this.counts.map((c, s) => [s, c] as const).filter((e): e is readonly [number, Uint32Array] => e[1] !== undefined);
    const stop = new Uint8Array(HASH_SPACE);
    if (stopFraction > 0) {
      const perHash = new Uint32Array(HASH_SPACE);
      for (const [, c] of shards) for (let h = 0; h < HASH_SPACE; h++) perHash[h]! += c[h]!;
      // Most common first; stop while the stopped postings stay within the fraction.
      const order = Uint32Array.from({ length: HASH_SPACE }, (_, h) => h).sort((a, b) => perHash[b]! - perHash[a]!);
      const budget = stopFraction * this.total;
      for (const h of order) {
        const c = perHash[h]!;
        if (c <= stopMin || this.stopped.postings + c > budget) break;
        stop[h] = 1;
        this.stopped.hashes++;
        this.stopped.postings += c;
      }
    }
    this.stop = stop;
    // Hash-major: all shards' postings of hash h are contiguous (shard by shard), so a query reads one range per hash.
    let at = 0;
    const tables = shards.map(([s]) => (this.offsets[s] = new Uint32Array(HASH_SPACE + 1)));
    for (let h = 0; h < HASH_SPACE; h++) {
      for (let i = 0; i < shards.length; i++) {
        tables[i]![h] = at;
        if (stop[h] === 0) at += shards[i]![1][h]!;
      }
    }
    for (let i = 0; i < shards.length; i++) {
      tables[i]![HASH_SPACE] = at;
      shards[i]![1].set(tables[i]!.subarray(0, HASH_SPACE)); // the counts become the shard's write cursors
    }
    this.kept = at;
    this.packed = new Uint32Array(at);
  }

  fill(row: number, lm: Landmarks): void {
    const s = Math.floor(row / SHARD_ROWS);
    const cursor = this.counts[s];
    const packed = this.packed!;
    const stop = this.stop!;
    if (!cursor || this.filled + lm.hashes.length > this.total) throw new Error(`landmark source yielded more landmarks on the second pass than the ${this.total} of the first`);
    const low = (row - s * SHARD_ROWS) << 16;
    for (let i = 0; i < lm.hashes.length; i++) {
      const h = lm.hashes[i]!;
      if (stop[h] === 1) continue;
      packed[cursor[h]!++] = (low | lm.times[i]!) >>> 0;
    }
    this.filled += lm.hashes.length;
  }

  finish(): LandmarkIndex {
    if (this.filled !== this.total) throw new Error(`landmark source yielded ${this.filled} landmarks on the second pass, ${this.total} on the first`);
    // A second pass that yields other landmarks with the same total overfills one hash's range: the ranges no longer end where the next begins.
    const shards: LandmarkShard[] = [];
    for (let s = 0; s < this.offsets.length; s++) {
      const offsets = this.offsets[s];
      if (offsets) shards.push({ base: s * SHARD_ROWS, offsets });
    }
    for (let i = 0; i < shards.length; i++) {
      const cursor = this.counts[shards[i]!.base / SHARD_ROWS]!;
      const next = shards[i + 1]?.offsets;
      for (let h = 0; h < HASH_SPACE; h++) {
        const end = next ? next[h]! : shards[0]!.offsets[h + 1]!;
        if (this.stop![h] === 0 && cursor[h] !== end) throw new Error('landmark source yielded other landmarks on the second pass than on the first');
      }
    }
    return LandmarkIndex.fromParts(shards, this.packed!, this.rowCount, this.stopped);
  }
}
