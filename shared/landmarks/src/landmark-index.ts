import { HASH_SPACE } from './params';
import type { Landmarks } from './extract';

/**
 * Inverted index from landmark hash to postings (row, anchor frame), in compressed-sparse-row form:
 * `offsets[h] .. offsets[h + 1]` index the postings of hash h in `rows` (Uint32) and `times` (Uint16).
 * A row is the caller's dense song number (the engine knows no songs); 6 bytes per posting plus a fixed
 * 4 MiB offsets table. Immutable once built: a library change builds a new one (or a delta index queried
 * beside it).
 */
export class LandmarkIndex {
  private constructor(
    /** `HASH_SPACE + 1` cumulative posting counts. */
    private readonly offsets: Uint32Array,
    private readonly rows: Uint32Array,
    private readonly times: Uint16Array,
    /** One past the largest row stored. */
    readonly rowCount: number,
  ) {}

  /** Number of postings (stored landmarks). */
  get size(): number {
    return this.rows.length;
  }

  /** Bytes held by the index's arrays. */
  get bytes(): number {
    return this.offsets.byteLength + this.rows.byteLength + this.times.byteLength;
  }

  /** Postings of `hash`: a view on the index's arrays (no copy); `start`/`end` bound them. */
  postings(hash: number): { rows: Uint32Array; times: Uint16Array; start: number; end: number } {
    return { rows: this.rows, times: this.times, start: this.offsets[hash]!, end: this.offsets[hash + 1]! };
  }

  /**
   * Builds the index from `source`, called twice (a counting pass, then a filling pass, so the songs'
   * landmarks are never all held at once): it yields `[row, landmarks]` with rows < 2^32. Postings of one hash
   * are in the order the source yields them.
   */
  static build(source: () => Iterable<readonly [number, Landmarks]>): LandmarkIndex {
    const b = new TwoPassBuilder();
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
  static async buildAsync(source: () => AsyncIterable<readonly [number, Landmarks]>): Promise<LandmarkIndex> {
    const b = new TwoPassBuilder();
    for await (const [row, lm] of source()) b.count(row, lm);
    b.allocate();
    for await (const [row, lm] of source()) b.fill(row, lm);
    return b.finish();
  }

  /** @internal used by the builder */
  static fromParts(offsets: Uint32Array, rows: Uint32Array, times: Uint16Array, rowCount: number): LandmarkIndex {
    return new LandmarkIndex(offsets, rows, times, rowCount);
  }
}

/** The two passes of a build: count postings per hash, then place each posting at its hash's cursor. */
class TwoPassBuilder {
  private readonly counts = new Uint32Array(HASH_SPACE + 1);
  private total = 0;
  private rowCount = 0;
  private cursor?: Uint32Array;
  private rows?: Uint32Array;
  private times?: Uint16Array;
  private filled = 0;

  count(row: number, lm: Landmarks): void {
    const counts = this.counts;
    for (let i = 0; i < lm.hashes.length; i++) counts[lm.hashes[i]! + 1]!++;
    this.total += lm.hashes.length;
    if (row + 1 > this.rowCount) this.rowCount = row + 1;
  }

  allocate(): void {
    const counts = this.counts;
    for (let h = 0; h < HASH_SPACE; h++) counts[h + 1]! += counts[h]!;
    this.cursor = counts.slice(0, HASH_SPACE);
    this.rows = new Uint32Array(this.total);
    this.times = new Uint16Array(this.total);
  }

  fill(row: number, lm: Landmarks): void {
    const cursor = this.cursor!;
    const rows = this.rows!;
    const times = this.times!;
    if (this.filled + lm.hashes.length > this.total) throw new Error(`landmark source yielded more landmarks on the second pass than the ${this.total} of the first`);
    for (let i = 0; i < lm.hashes.length; i++) {
      const at = cursor[lm.hashes[i]!]!++;
      rows[at] = row;
      times[at] = lm.times[i]!;
    }
    this.filled += lm.hashes.length;
  }

  finish(): LandmarkIndex {
    if (this.filled !== this.total) throw new Error(`landmark source yielded ${this.filled} landmarks on the second pass, ${this.total} on the first`);
    return LandmarkIndex.fromParts(this.counts, this.rows!, this.times!, this.rowCount);
  }
}
