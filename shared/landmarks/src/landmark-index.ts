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
  /**
   * Build the postings straight into an unlinked file in `dir` when they exceed `aboveBytes` (4 bytes a posting),
   * instead of filling them in memory and moving them with {@link LandmarkIndex.toFile}: the filling pass stages
   * each posting, with its final position, in a spill file (8 bytes a posting, also unlinked in `dir`), bucketed by
   * position; each bucket of `bufferBytes` is then placed in memory and written once (an external distribution
   * sort). Peak memory is then about the offsets tables (4 MiB per 65,536 rows), 4 MiB of hash counts, the bucket
   * (`bufferBytes`) and 256 KiB of staging per bucket, whatever the number of postings. The result is the same
   * index as `build(...).toFile(dir)` (same postings, same order). Absent: the postings are built in memory.
   */
  file?: { dir: string; aboveBytes: number; bufferBytes?: number };
}

/** Defaults of {@link LandmarkIndexOptions}, chosen on the benchmark (package README "Figures"). */
export const LANDMARK_INDEX_DEFAULTS = Object.freeze({ stopFraction: 0.2, stopMinPostings: 8 });

/** Default bucket of a build straight to a file ({@link LandmarkIndexOptions}.file): 32 MiB, 8 M postings. */
export const FILE_BUILD_BUFFER_BYTES = 32 * 2 ** 20;

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
/**
 * A {@link LandmarkIndex} as plain data that `postMessage` can copy to a worker thread ({@link LandmarkIndex.shape},
 * {@link LandmarkIndex.fromShape}): its offsets tables, its postings when resident, else the descriptor of its
 * postings file (descriptors are per process, so a worker thread can read it).
 */
export interface LandmarkIndexShape {
  shards: Array<{ base: number; offsets: Uint32Array }>;
  memory?: Uint32Array;
  fd: number;
  size: number;
  rowCount: number;
  stopped: { hashes: number; postings: number };
}

export class LandmarkIndex {
  private closed = false;
  /** True for an index rebuilt from a {@link LandmarkIndexShape}: it reads the file of another index and never closes it. */
  private borrowed = false;

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
    const fd = openUnlinked(dir, 'u32');
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
    return LandmarkIndex.onFile(this.shards, fd, this.size, this.rowCount, this.stopped);
  }

  /** A file-backed index over the open descriptor `fd` (closed with the index). */
  private static onFile(shards: readonly LandmarkShard[], fd: number, size: number, rowCount: number, stopped: { hashes: number; postings: number }): LandmarkIndex {
    const out = new LandmarkIndex(shards, undefined, fd, size, rowCount, stopped);
    fileCloser.register(out, fd, out);
    return out;
  }

  /**
   * This index as plain data for a worker thread (copied by `postMessage`: the offsets tables, 4 MiB per 65,536 rows,
   * and resident postings). The index rebuilt from it by {@link fromShape} reads this index's postings file, so this
   * index must stay open (and referenced) while that one is used.
   */
  shape(): LandmarkIndexShape {
    return { shards: this.shards.map((s) => ({ base: s.base, offsets: s.offsets })), ...(this.memory ? { memory: this.memory } : {}), fd: this.fd, size: this.size, rowCount: this.rowCount, stopped: this.stopped };
  }

  /** The index described by `shape` (see {@link shape}); its `close` never closes the borrowed postings file. */
  static fromShape(shape: LandmarkIndexShape): LandmarkIndex {
    const out = new LandmarkIndex(shape.shards, shape.memory, shape.memory ? -1 : shape.fd, shape.size, shape.rowCount, shape.stopped);
    out.borrowed = true;
    return out;
  }

  /** Closes the postings file of a file-backed index now (no effect on a resident one); later reads throw. */
  close(): void {
    if (this.memory || this.closed) return;
    this.closed = true;
    if (this.borrowed) return;
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
    try {
      for (const [row, lm] of source()) b.count(row, lm);
      b.allocate();
      for (const [row, lm] of source()) b.fill(row, lm);
      return b.finish();
    } finally {
      b.release();
    }
  }

  /**
   * {@link build} over an asynchronous source (e.g. pages of stored fingerprints read from a database or a
   * peer service), called twice likewise: both passes must yield the same landmarks (a source that changed in
   * between is an error, so the caller retries on a consistent snapshot or pins it, e.g. by an upper key).
   */
  static async buildAsync(source: () => AsyncIterable<readonly [number, Landmarks]>, options: LandmarkIndexOptions = {}): Promise<LandmarkIndex> {
    const b = new TwoPassBuilder(options);
    try {
      for await (const [row, lm] of source()) b.count(row, lm);
      b.allocate();
      for await (const [row, lm] of source()) b.fill(row, lm);
      return b.finish();
    } finally {
      b.release();
    }
  }

  /** @internal used by the builder: postings in memory (`packed`) or in the open file `fd` (`size` postings). */
  static fromParts(shards: LandmarkShard[], packed: Uint32Array | { fd: number; size: number }, rowCount: number, stopped: { hashes: number; postings: number }): LandmarkIndex {
    if (packed instanceof Uint32Array) return new LandmarkIndex(shards, packed, -1, packed.length, rowCount, stopped);
    return LandmarkIndex.onFile(shards, packed.fd, packed.size, rowCount, stopped);
  }
}

/** Opens a new file in `dir` (created if missing) for reading and writing and unlinks it at once: it never outlives the process. */
function openUnlinked(dir: string, ext: string): number {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `landmarks-${process.pid}-${Date.now()}-${fileSequence++}.${ext}`);
  const fd = openSync(path, 'w+');
  unlinkSync(path);
  return fd;
}

/** Writes all of `bytes` at `position` of `fd`. */
function writeAll(fd: number, bytes: Uint8Array, position: number): void {
  for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at, position + at);
}

/** Reads exactly `bytes.length` bytes at `position` of `fd`. @throws Error when the file ends early */
function readAll(fd: number, bytes: Uint8Array, position: number): void {
  for (let at = 0; at < bytes.length; ) {
    const n = readSync(fd, bytes, at, bytes.length - at, position + at);
    if (n === 0) throw new Error(`landmark spill file ended at byte ${position + at}`);
    at += n;
  }
}

/** Records (position in bucket, posting) staged per bucket before they go to the spill file: at most 32,768 (256 KiB). */
const STAGE_RECORDS = 1 << 15;

/**
 * The filling pass of a build straight to a file: every posting's final position is known when it is filled (its
 * hash's cursor), so it is staged as (position within its bucket, posting) in its bucket's buffer, buffers go to
 * a spill file as chunks, and {@link finish} places each bucket's chunks in one buffer and writes it to the
 * postings file at the bucket's start.
 */
class FileFill {
  private readonly shift: number;
  private readonly mask: number;
  /** Records per staging buffer: {@link STAGE_RECORDS}, or a quarter of a small bucket. */
  private readonly stageRecords: number;
  private readonly stages: Uint32Array[];
  private readonly staged: Uint32Array;
  /** Per bucket: [byte position in the spill file, records] of each chunk written. */
  private readonly chunks: Array<Array<[number, number]>>;
  private spillEnd = 0;
  private spill: number;
  private out = -1;

  constructor(
    private readonly dir: string,
    private readonly size: number,
    bufferBytes: number,
  ) {
    // A power of two of postings (1,024 to 2^30) so a posting's bucket is one shift.
    this.shift = Math.min(30, Math.max(10, Math.floor(Math.log2(Math.max(1, bufferBytes / 4)))));
    this.mask = 2 ** this.shift - 1;
    this.stageRecords = Math.min(STAGE_RECORDS, 2 ** this.shift / 4);
    const buckets = Math.max(1, Math.ceil(size / 2 ** this.shift));
    this.stages = Array.from({ length: buckets }, () => new Uint32Array(2 * this.stageRecords));
    this.staged = new Uint32Array(buckets);
    this.chunks = Array.from({ length: buckets }, () => []);
    this.spill = openUnlinked(dir, 'spill');
  }

  /** Stages the posting `value` for position `pos` of the postings. */
  put(pos: number, value: number): void {
    const b = pos >>> this.shift;
    const stage = this.stages[b]!;
    const n = this.staged[b]!;
    stage[2 * n] = pos & this.mask;
    stage[2 * n + 1] = value;
    if (n + 1 === this.stageRecords) this.flush(b, this.stageRecords);
    else this.staged[b] = n + 1;
  }

  private flush(b: number, records: number): void {
    if (records === 0) return;
    const stage = this.stages[b]!;
    writeAll(this.spill, new Uint8Array(stage.buffer, 0, records * 8), this.spillEnd);
    this.chunks[b]!.push([this.spillEnd, records]);
    this.spillEnd += records * 8;
    this.staged[b] = 0;
  }

  /** Writes the postings file from the spill file; returns its descriptor (the spill file is closed). */
  finish(): number {
    for (let b = 0; b < this.stages.length; b++) this.flush(b, this.staged[b]!);
    this.stages.length = 0;
    this.out = openUnlinked(this.dir, 'u32');
    const bucket = new Uint32Array(Math.min(this.size, 2 ** this.shift));
    const read = new Uint32Array(2 * this.stageRecords);
    for (let b = 0; b < this.chunks.length; b++) {
      const start = b * 2 ** this.shift;
      const length = Math.min(this.size - start, 2 ** this.shift);
      for (const [at, records] of this.chunks[b]!) {
        readAll(this.spill, new Uint8Array(read.buffer, 0, records * 8), at);
        for (let i = 0; i < records; i++) bucket[read[2 * i]!] = read[2 * i + 1]!;
      }
      if (length > 0) writeAll(this.out, new Uint8Array(bucket.buffer, 0, length * 4), start * 4);
    }
    closeSync(this.spill);
    this.spill = -1;
    const fd = this.out;
    this.out = -1;
    return fd;
  }

  /** Closes what is still open (after an error). */
  release(): void {
    for (const fd of [this.spill, this.out]) if (fd >= 0) closeSync(fd);
    this.spill = -1;
    this.out = -1;
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
  /** Set instead of `packed` when the postings are built straight to a file. */
  private fileFill?: FileFill;
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
    const file = this.options.file;
    if (file && at * 4 > file.aboveBytes) this.fileFill = new FileFill(file.dir, at, file.bufferBytes ?? FILE_BUILD_BUFFER_BYTES);
    else this.packed = new Uint32Array(at);
  }

  fill(row: number, lm: Landmarks): void {
    const s = Math.floor(row / SHARD_ROWS);
    const cursor = this.counts[s];
    const stop = this.stop!;
    if (!cursor || this.filled + lm.hashes.length > this.total) throw new Error(`landmark source yielded more landmarks on the second pass than the ${this.total} of the first`);
    const low = (row - s * SHARD_ROWS) << 16;
    const file = this.fileFill;
    if (file) {
      for (let i = 0; i < lm.hashes.length; i++) {
        const h = lm.hashes[i]!;
        if (stop[h] === 1) continue;
        const pos = cursor[h]!++;
        // A second pass with other landmarks can run a cursor past the postings: caught in finish (the file is not written then).
        if (pos < this.kept) file.put(pos, (low | lm.times[i]!) >>> 0);
      }
    } else {
      const packed = this.packed!;
      for (let i = 0; i < lm.hashes.length; i++) {
        const h = lm.hashes[i]!;
        if (stop[h] === 1) continue;
        packed[cursor[h]!++] = (low | lm.times[i]!) >>> 0;
      }
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
    if (this.fileFill) {
      const fd = this.fileFill.finish();
      this.fileFill = undefined;
      return LandmarkIndex.fromParts(shards, { fd, size: this.kept }, this.rowCount, this.stopped);
    }
    return LandmarkIndex.fromParts(shards, this.packed!, this.rowCount, this.stopped);
  }

  /** Closes the files of a build straight to a file that did not finish (no effect otherwise). */
  release(): void {
    this.fileFill?.release();
    this.fileFill = undefined;
  }
}
