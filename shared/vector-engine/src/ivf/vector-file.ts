import { DEFAULT_INDEX_FILE_DIR, closeUnlinkedFile, openUnlinkedFile, readFully, writeFully } from '../storage/unlinked-file';
import { IvfInputError } from './errors';

/**
 * The exact float32 unit vectors of one quantised index generation, on local disk in row order
 * (`row * dim * 4` bytes from the start), read back with positional `readSync` calls: the re-ranking
 * short list of a query and `getVector` read only the rows they need. The file is unlinked right after it
 * is opened, so it never outlives the process (no clean-up after a crash) and disappears when the
 * generation is garbage-collected (a FinalizationRegistry closes the descriptor) or `close()` is called.
 *
 * Memory: none in the process heap beyond a one-vector scratch buffer; the kernel page cache holds the
 * recently read pages (evictable, not counted in the process RSS). Size on disk: `count * dim * 4` bytes
 * (763 MiB at 1M x 200-d).
 *
 * Resident copy (issue 19 query CPU): when the file's size is at most `residentMaxBytes`, every written row is
 * also kept in one Float32Array (`resident`) and reads are served from it: the re-ranking of a similar-songs
 * query then makes no `readSync` call (50 per query at int8, ~9% of a 100k replica's CPU). The values are the
 * same float32 bits the file holds, so answers are unchanged. The file is still written (worker threads of an
 * encoding read it by descriptor). The budget bounds the extra RSS (`INDEX_VECTOR_RESIDENT_MIB`, default 128 MiB:
 * 100k x 200-d = 76 MiB is kept, 1M = 763 MiB stays on disk only).
 */
export class VectorFile {
  private readonly shared: SharedDescriptor;
  private readonly scratch: Buffer;
  private readonly scratchF32: Float32Array;
  private closed = false;
  /** Positional reads issued so far (benchmarks; reads served by the resident copy are not counted). */
  reads = 0;
  /** The in-memory copy of every row (`count * dim` floats, row order), when the file fits `residentMaxBytes`; dropped by `close`. */
  resident?: Float32Array;

  /**
   * Creates an empty file for `count` vectors of `dim` floats in `dir` (created if missing; default
   * `$TMPDIR/polyphony-index`), with a resident copy when `count * dim * 4 <= residentMaxBytes` (default 0: none).
   * @throws Error when the directory cannot be created or written
   */
  constructor(
    readonly dim: number,
    readonly count: number,
    dir: string = DEFAULT_INDEX_FILE_DIR,
    residentMaxBytes = 0,
    share?: SharedDescriptor,
  ) {
    if (share) {
      this.shared = share;
      share.views++;
    } else {
      this.shared = new SharedDescriptor(count);
      this.shared.fd = openUnlinkedFile(this.shared, dir, 'vectors', '.f32');
    }
    this.scratch = Buffer.allocUnsafeSlow(dim * 4);
    this.scratchF32 = new Float32Array(this.scratch.buffer, this.scratch.byteOffset, dim);
    if (count > 0 && count * dim * 4 <= residentMaxBytes) this.resident = new Float32Array(count * dim);
  }

  /**
   * A view of the SAME file holding `count` rows (more than this one's), for a generation grown by appended rows (issue
   * 35, the live library): rows `0 .. this.count - 1` are this file's (not copied), the caller writes the new ones after
   * them. This view keeps reading its own rows unchanged (writes past its `count` do not touch them). Refused
   * (undefined: copy the rows instead) when the file is closed or another view already grew past this one (its rows
   * there belong to that view). The resident copy, when this view has one and `count` rows still fit
   * `residentMaxBytes`, is copied in memory; otherwise the grown view reads from the file. The descriptor is closed when
   * every view was closed or collected.
   */
  grownTo(count: number, residentMaxBytes = 0): VectorFile | undefined {
    if (this.closed || count < this.count || this.shared.rows !== this.count || this.shared.fd < 0) return undefined;
    const grown = new VectorFile(this.dim, count, undefined, 0, this.shared);
    this.shared.rows = count;
    if (this.resident && count * this.dim * 4 <= residentMaxBytes) {
      grown.resident = new Float32Array(count * this.dim);
      grown.resident.set(this.resident);
    }
    return grown;
  }

  /** Bytes of the resident copy held in memory (0 without one). */
  get residentBytes(): number {
    return this.resident?.byteLength ?? 0;
  }

  /** The open descriptor (worker threads of this process may read it; never close it yourself). */
  get descriptor(): number {
    this.checkOpen();
    return this.shared.fd;
  }

  /** Bytes the file occupies once every row was written. */
  get bytes(): number {
    return this.count * this.dim * 4;
  }

  /** Writes `rows` consecutive vectors (`rows * dim` floats of `src` from `so`) starting at `firstRow`. */
  writeRows(firstRow: number, src: Float32Array, so: number, rows: number): void {
    this.checkOpen();
    if (firstRow < 0 || firstRow + rows > this.count) throw new IvfInputError(`rows [${firstRow}, ${firstRow + rows}) outside [0, ${this.count})`);
    this.resident?.set(src.subarray(so, so + rows * this.dim), firstRow * this.dim);
    const bytes = Buffer.from(src.buffer, src.byteOffset + so * 4, rows * this.dim * 4);
    writeFully(this.shared.fd, bytes, bytes.length, firstRow * this.dim * 4);
  }

  /** Reads the vector of `row` into `out[oo .. oo + dim)`. */
  readRow(row: number, out: Float32Array, oo = 0): void {
    this.checkOpen();
    if (!Number.isInteger(row) || row < 0 || row >= this.count) throw new IvfInputError(`row ${row} outside [0, ${this.count})`);
    if (this.resident) {
      out.set(this.resident.subarray(row * this.dim, (row + 1) * this.dim), oo);
      return;
    }
    this.readInto(row * this.dim * 4, this.scratch, this.dim * 4);
    out.set(this.scratchF32, oo);
  }

  /** Reads `rows` consecutive vectors from `firstRow` into `out` (which must hold `rows * dim` floats from `oo`). */
  readRows(firstRow: number, rows: number, out: Float32Array, oo = 0): void {
    this.checkOpen();
    if (firstRow < 0 || firstRow + rows > this.count) throw new IvfInputError(`rows [${firstRow}, ${firstRow + rows}) outside [0, ${this.count})`);
    if (this.resident) {
      out.set(this.resident.subarray(firstRow * this.dim, (firstRow + rows) * this.dim), oo);
      return;
    }
    const view = Buffer.from(out.buffer, out.byteOffset + oo * 4, rows * this.dim * 4);
    this.readInto(firstRow * this.dim * 4, view, view.length);
  }

  /** Releases this view now (later reads throw); the descriptor is closed with the last open view. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.resident = undefined;
    if (--this.shared.views === 0) {
      closeUnlinkedFile(this.shared, this.shared.fd);
      this.shared.fd = -1;
    }
  }

  private readInto(position: number, buf: Buffer, length: number): void {
    readFully(this.shared.fd, buf, 0, length, position, (at) => new IvfInputError(`vector file ends at byte ${at}`));
    this.reads++;
  }

  private checkOpen(): void {
    if (this.closed) throw new IvfInputError('vector file is closed');
  }
}

/**
 * The descriptor of one unlinked vector file and the views over it (`VectorFile.grownTo`): open views, and the row
 * count of the longest view (a view may grow only when it ends there). Its finaliser closes the descriptor once no view
 * references it.
 */
class SharedDescriptor {
  fd = -1;
  views = 1;
  constructor(public rows: number) {}
}
