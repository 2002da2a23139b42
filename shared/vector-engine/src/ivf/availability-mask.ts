import { popcount32 } from '@polyphony/vectors';
import { IvfInputError } from './errors';

/**
 * Availability mask: a fixed-size bitset over the row numbers of one index generation. Bit `row` is set
 * when the item in that row is available on the server the query is scoped to (spec "Shared index" 1; the
 * reference keeps a bool array over its item ids, `PagedIvfIndex._availability_mask`). The index applies
 * it to every candidate before computing its distance, so unavailable rows are never ranked or returned.
 *
 * Memory: `ceil(size / 32) * 4` bytes (125 KB for 1M rows). Immutable after construction, so one mask can be
 * cached per (server, index generation) and shared by concurrent requests.
 */
export class AvailabilityMask {
  /** Number of rows the mask covers; must equal the index size it is used with. */
  readonly size: number;
  /** Number of set bits (available rows). */
  readonly count: number;
  private readonly words: Uint32Array;

  private constructor(size: number, words: Uint32Array) {
    this.size = size;
    this.words = words;
    let count = 0;
    for (let i = 0; i < words.length; i++) count += popcount32(words[i]!);
    this.count = count;
  }

  /**
   * Mask with exactly the given rows set. Duplicates are harmless.
   * @param size number of rows of the index generation (>= 0)
   * @throws IvfInputError when a row is not an integer in [0, size)
   * Complexity O(size / 32 + number of rows).
   */
  static fromRows(size: number, rows: Iterable<number>): AvailabilityMask {
    const words = allocWords(size);
    for (const row of rows) {
      if (!Number.isInteger(row) || row < 0 || row >= size) throw new IvfInputError(`mask row ${row} outside [0, ${size})`);
      words[row >>> 5]! |= 1 << (row & 31);
    }
    return new AvailabilityMask(size, words);
  }

  /** Mask with every row available (useful as the identity; queries without a mask are cheaper). */
  static all(size: number): AvailabilityMask {
    const words = allocWords(size);
    words.fill(0xffffffff);
    const tail = size & 31;
    if (tail !== 0) words[words.length - 1] = (1 << tail) - 1;
    return new AvailabilityMask(size, words);
  }

  /**
   * Mask from a previously exported word array (see `toWords`), e.g. from a cache.
   * @throws IvfInputError when the word count does not match `size` or bits beyond `size` are set.
   */
  static fromWords(size: number, words: Uint32Array): AvailabilityMask {
    const expected = allocWords(size);
    if (words.length !== expected.length) throw new IvfInputError(`mask of ${size} rows needs ${expected.length} words, got ${words.length}`);
    expected.set(words);
    const tail = size & 31;
    if (tail !== 0 && (expected[expected.length - 1]! >>> tail) !== 0) throw new IvfInputError('mask has bits set beyond its size');
    return new AvailabilityMask(size, expected);
  }

  /** True when `row` is available. Rows outside [0, size) are reported unavailable. O(1). */
  has(row: number): boolean {
    if (row < 0 || row >= this.size) return false;
    return ((this.words[row >>> 5]! >>> (row & 31)) & 1) === 1;
  }

  /** Fraction of rows available, in [0, 1] (0 for an empty index). */
  get density(): number {
    return this.size === 0 ? 0 : this.count / this.size;
  }

  /** Calls `visit(row)` for every available row in increasing order. O(size / 32 + count). */
  forEachRow(visit: (row: number) => void): void {
    const words = this.words;
    for (let w = 0; w < words.length; w++) {
      let bits = words[w]!;
      while (bits !== 0) {
        const low = bits & -bits;
        visit((w << 5) + (31 - Math.clz32(low)));
        bits = (bits ^ low) >>> 0;
      }
    }
  }

  /** The available rows, ascending. */
  toRows(): Int32Array {
    const out = new Int32Array(this.count);
    let n = 0;
    this.forEachRow((row) => {
      out[n++] = row;
    });
    return out;
  }

  /** A copy of the underlying 32-bit words (bit `row & 31` of word `row >>> 5`), for caching. */
  toWords(): Uint32Array {
    return this.words.slice();
  }

  /** Raw word read without copying; internal to the index scan loops. */
  wordAt(index: number): number {
    return this.words[index]!;
  }
}

function allocWords(size: number): Uint32Array {
  if (!Number.isInteger(size) || size < 0) throw new IvfInputError(`mask size must be a non-negative integer, got ${size}`);
  return new Uint32Array(Math.ceil(size / 32));
}
