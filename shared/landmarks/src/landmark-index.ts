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
    const counts = new Uint32Array(HASH_SPACE + 1);
    let total = 0;
    let rowCount = 0;
    for (const [row, lm] of source()) {
      for (let i = 0; i < lm.hashes.length; i++) counts[lm.hashes[i]! + 1]!++;
      total += lm.hashes.length;
      if (row + 1 > rowCount) rowCount = row + 1;
    }
    for (let h = 0; h < HASH_SPACE; h++) counts[h + 1]! += counts[h]!;
    const offsets = counts;
    const cursor = offsets.slice(0, HASH_SPACE);
    const rows = new Uint32Array(total);
    const times = new Uint16Array(total);
    let filled = 0;
    for (const [row, lm] of source()) {
      for (let i = 0; i < lm.hashes.length; i++) {
        const at = cursor[lm.hashes[i]!]!++;
        rows[at] = row;
        times[at] = lm.times[i]!;
      }
      filled += lm.hashes.length;
    }
    if (filled !== total) throw new Error(`landmark source yielded ${filled} landmarks on the second pass, ${total} on the first`);
    return new LandmarkIndex(offsets, rows, times, rowCount);
  }
}
