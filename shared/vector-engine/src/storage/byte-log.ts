import { DEFAULT_INDEX_FILE_DIR, closeUnlinkedFile, openUnlinkedFile, readFully, writeFully } from './unlinked-file';

/** Bytes per in-memory chunk while the log is resident (1 MiB: above glibc's mmap threshold, returned to the system when freed). */
const CHUNK_BYTES = 1 << 20;
/** Appends after the spill are buffered and written in blocks of this many bytes. */
const WRITE_BLOCK = 1 << 20;

/**
 * Append-only bytes of one index generation (issue 19 "Bounded memory"): held in memory while the log is at
 * most `residentMaxBytes` long; past that, everything is written to an unlinked file in `dir` and the memory is
 * released ("spilled"), and later appends go to the file through a 1 MiB write buffer. Reads are positional
 * (`readSync`), so a query reads only the bytes it needs; the kernel page cache holds the recently read pages
 * (evictable, not part of the process RSS). The file is unlinked right after it is opened, so it never outlives
 * the process, and its descriptor is closed by `close()` or when the log is garbage-collected.
 *
 * Used by the per-generation tables that a query touches only a few entries of (display metadata of the result
 * rows, `TrackMetaStore`) or a few columns of (the text-search table, `SemanticTable`). Reads return the bytes
 * appended, whichever form the log has, so answers do not depend on the budget.
 */
export class ByteLog {
  private chunks: Buffer[] | undefined = [];
  private fd = -1;
  /** Bytes appended (logical length). */
  private length = 0;
  /** Bytes already in the file (spilled logs); `pending[0, length - flushed)` holds the rest. */
  private flushed = 0;
  private pending: Buffer | undefined;
  private closed = false;
  /** Positional reads issued to the file (benchmarks; reads from memory are not counted). */
  reads = 0;

  /**
   * @param dir directory of the file if the log spills (created if missing; default `$TMPDIR/polyphony-index`)
   * @param residentMaxBytes longest log kept in memory (0 = spill on the first append)
   * @param label part of the file name (for `ls /proc/<pid>/fd` while debugging)
   */
  constructor(
    private readonly dir: string = DEFAULT_INDEX_FILE_DIR,
    private readonly residentMaxBytes = 0,
    private readonly label = 'log',
  ) {}

  /** Bytes appended so far. */
  get bytes(): number {
    return this.length;
  }

  /** True once the log lives in a file. */
  get spilled(): boolean {
    return this.chunks === undefined;
  }

  /** Bytes held in process memory (the chunks of a resident log, the write buffer of a spilled one). */
  get residentBytes(): number {
    return this.chunks ? this.chunks.length * CHUNK_BYTES : (this.pending?.length ?? 0);
  }

  /**
   * Appends `b` and returns the position of its first byte.
   * @throws Error when the log is closed or the file cannot be written
   */
  append(b: Uint8Array): number {
    this.checkOpen();
    const at = this.length;
    if (this.chunks && at + b.length > this.residentMaxBytes) this.spill();
    if (this.chunks) {
      let done = 0;
      while (done < b.length) {
        const pos = at + done;
        const c = Math.floor(pos / CHUNK_BYTES);
        if (c === this.chunks.length) this.chunks.push(Buffer.allocUnsafeSlow(CHUNK_BYTES));
        const off = pos % CHUNK_BYTES;
        const n = Math.min(b.length - done, CHUNK_BYTES - off);
        this.chunks[c]!.set(b.subarray(done, done + n), off);
        done += n;
      }
    } else {
      let done = 0;
      while (done < b.length) {
        const used = at + done - this.flushed;
        const n = Math.min(b.length - done, WRITE_BLOCK - used);
        this.pending!.set(b.subarray(done, done + n), used);
        done += n;
        if (used + n === WRITE_BLOCK) this.flushTo(at + done);
      }
    }
    this.length = at + b.length;
    return at;
  }

  /**
   * Copies `length` bytes from `position` into `out[outOffset ..]`; returns the bytes copied (fewer only past the end).
   * @throws Error when the log is closed
   */
  read(position: number, length: number, out: Uint8Array, outOffset = 0): number {
    this.checkOpen();
    const n = Math.max(0, Math.min(length, this.length - position));
    if (this.chunks) {
      let done = 0;
      while (done < n) {
        const pos = position + done;
        const c = this.chunks[Math.floor(pos / CHUNK_BYTES)]!;
        const off = pos % CHUNK_BYTES;
        const k = Math.min(n - done, CHUNK_BYTES - off);
        out.set(c.subarray(off, off + k), outOffset + done);
        done += k;
      }
      return n;
    }
    // From the file up to `flushed`, the rest from the write buffer.
    const fromFile = Math.max(0, Math.min(n, this.flushed - position));
    if (fromFile > 0) {
      readFully(this.fd, out, outOffset, fromFile, position, (at) => new Error(`${this.label}: file ends at byte ${at}`));
      this.reads++;
    }
    if (fromFile < n) {
      const start = position + fromFile - this.flushed;
      out.set(this.pending!.subarray(start, start + n - fromFile), outOffset + fromFile);
    }
    return n;
  }

  /** Releases the memory and the descriptor now (later calls throw). Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.chunks = undefined;
    this.pending = undefined;
    if (this.fd >= 0) closeUnlinkedFile(this, this.fd);
  }

  /** Moves the log to its file and releases the chunks. */
  private spill(): void {
    this.fd = openUnlinkedFile(this, this.dir, this.label, '.bin');
    const chunks = this.chunks!;
    this.chunks = undefined;
    let written = 0;
    for (const c of chunks) {
      const n = Math.min(CHUNK_BYTES, this.length - written);
      writeFully(this.fd, c, n, written);
      written += n;
    }
    this.flushed = this.length;
    this.pending = Buffer.allocUnsafeSlow(WRITE_BLOCK);
  }

  /** Writes the write buffer (the bytes up to log position `end`) to the file. */
  private flushTo(end: number): void {
    writeFully(this.fd, this.pending!, end - this.flushed, this.flushed);
    this.flushed = end;
  }

  private checkOpen(): void {
    if (this.closed) throw new Error(`${this.label} is closed`);
  }
}
