const NO_ROW = -1;

/**
 * A uint32 value per row of a generation (0 = none), for `ServerMap`'s row -> primary id offset (issue 35, replica
 * RSS): while at most 1/4 of the rows have a value it is an open-addressing table keyed by row (linear probing,
 * Fibonacci hashing, load <= 0.5, backward-shift deletion: 16 bytes a valued row, so a server holding 1% of a 1M
 * library costs ~0.2 MiB instead of 3.8), past that a dense `Uint32Array` of the rows (4 bytes a row; it stays
 * dense). Reads and writes are O(1) on average in both forms.
 */
export class RowOffsets {
  private dense: Uint32Array | undefined;
  private keys = new Int32Array(16).fill(NO_ROW);
  private vals = new Uint32Array(16);
  private shift = 28;
  private count = 0;

  /** @param size rows of the generation (values are kept for rows in [0, size)) */
  constructor(readonly size: number) {
    if (size <= 64) this.dense = new Uint32Array(size);
  }

  /** Rows with a value. */
  get valued(): number {
    return this.count;
  }

  /** True once the values are a dense array of every row. */
  get isDense(): boolean {
    return this.dense !== undefined;
  }

  /** Bytes held (array capacities). */
  get bytes(): number {
    return this.dense ? this.dense.byteLength : this.keys.byteLength + this.vals.byteLength;
  }

  /** The value of `row` (0 = none). `row` must be in [0, size). */
  get(row: number): number {
    if (this.dense) return this.dense[row]!;
    const keys = this.keys;
    const mask = keys.length - 1;
    for (let i = Math.imul(row, 0x9e3779b1) >>> this.shift; ; i = (i + 1) & mask) {
      const k = keys[i]!;
      if (k === row) return this.vals[i]!;
      if (k === NO_ROW) return 0;
    }
  }

  /** Sets the value of `row` (0 removes it). `row` must be in [0, size). */
  set(row: number, value: number): void {
    if (this.dense) {
      const had = this.dense[row]! !== 0;
      this.dense[row] = value;
      this.count += (value !== 0 ? 1 : 0) - (had ? 1 : 0);
      return;
    }
    const keys = this.keys;
    const mask = keys.length - 1;
    let i = Math.imul(row, 0x9e3779b1) >>> this.shift;
    for (; keys[i] !== NO_ROW && keys[i] !== row; i = (i + 1) & mask);
    if (keys[i] === row) {
      if (value !== 0) this.vals[i] = value;
      else this.removeAt(i);
      return;
    }
    if (value === 0) return;
    if ((this.count + 1) * 4 > this.size) {
      this.toDense();
      this.set(row, value);
      return;
    }
    if ((this.count + 1) * 2 > keys.length) {
      this.resize(keys.length * 2);
      this.set(row, value);
      return;
    }
    keys[i] = row;
    this.vals[i] = value;
    this.count++;
  }

  /** Calls `fn(row, value)` for every row with a value (dense: in row order; sparse: in table order). */
  forEach(fn: (row: number, value: number) => void): void {
    if (this.dense) {
      const d = this.dense;
      for (let r = 0; r < d.length; r++) if (d[r] !== 0) fn(r, d[r]!);
      return;
    }
    for (let i = 0; i < this.keys.length; i++) if (this.keys[i] !== NO_ROW) fn(this.keys[i]!, this.vals[i]!);
  }

  /** A copy over `size` rows (>= this.size; the rows after this one's have no value). */
  grownTo(size: number): RowOffsets {
    const out = new RowOffsets(size);
    if (this.dense && out.dense) out.dense.set(this.dense);
    else this.forEach((row, v) => out.set(row, v));
    return out;
  }

  /**
   * A copy over `size` rows in which row r's value moves to row `newRowOf[r]` (-1, or r at or past `newRowOf.length`:
   * dropped). The targets must be distinct rows in [0, size) (ServerMap.remapped checks that). Dense when more than
   * 1/4 of `size` rows keep a value (allocated once, not grown through the table). O(size + valued rows).
   */
  remapped(size: number, newRowOf: Int32Array): RowOffsets {
    const out = new RowOffsets(size);
    const n = newRowOf.length;
    let kept = 0;
    this.forEach((row) => {
      if (row < n && newRowOf[row]! >= 0) kept++;
    });
    if (!out.dense) {
      if (kept * 4 > size) out.toDense();
      else if (kept * 2 > out.keys.length) out.resize(2 ** Math.ceil(Math.log2(kept * 2)));
    }
    this.forEach((row, v) => {
      const to = row < n ? newRowOf[row]! : -1;
      if (to >= 0) out.set(to, v);
    });
    return out;
  }

  /** Empties slot `i` and shifts the following entries of its probe run back (no tombstones). */
  private removeAt(i: number): void {
    const keys = this.keys;
    const vals = this.vals;
    const mask = keys.length - 1;
    keys[i] = NO_ROW;
    this.count--;
    for (let j = (i + 1) & mask; keys[j] !== NO_ROW; j = (j + 1) & mask) {
      const home = Math.imul(keys[j]!, 0x9e3779b1) >>> this.shift;
      // Entry j may move to the hole at i when its home is not cyclically within (i, j].
      const stays = i <= j ? home > i && home <= j : home > i || home <= j;
      if (stays) continue;
      keys[i] = keys[j]!;
      vals[i] = vals[j]!;
      keys[j] = NO_ROW;
      i = j;
    }
  }

  private resize(capacity: number): void {
    const keys = this.keys;
    const vals = this.vals;
    this.keys = new Int32Array(capacity).fill(NO_ROW);
    this.vals = new Uint32Array(capacity);
    this.shift = 32 - Math.log2(capacity);
    this.count = 0;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== NO_ROW) this.set(keys[i]!, vals[i]!);
  }

  private toDense(): void {
    const dense = new Uint32Array(this.size);
    this.forEach((row, v) => (dense[row] = v));
    this.dense = dense;
    this.keys = new Int32Array(0);
    this.vals = new Uint32Array(0);
  }
}
