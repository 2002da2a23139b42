/** One search hit: an index row and its cosine distance `1 - cos(query, item)`, in [0, 2]. */
export interface Neighbour {
  row: number;
  distance: number;
}

/**
 * Keeps the `capacity` smallest (distance, row) pairs seen so far in a bounded binary max-heap.
 * Ties on distance are broken by the smaller row, so results are deterministic.
 * push is O(log capacity) when the pair enters the heap and O(1) when it is rejected.
 */
export class TopK {
  private readonly dist: Float64Array;
  private readonly rows: Int32Array;
  private n = 0;

  constructor(readonly capacity: number) {
    this.dist = new Float64Array(Math.max(1, capacity));
    this.rows = new Int32Array(Math.max(1, capacity));
  }

  /** Number of pairs held (<= capacity). */
  get size(): number {
    return this.n;
  }

  /** Largest distance held once full, +Infinity before; a candidate at or above it cannot enter. */
  get threshold(): number {
    return this.n < this.capacity ? Infinity : this.dist[0]!;
  }

  /** Offers a candidate. */
  push(row: number, distance: number): void {
    if (this.capacity === 0) return;
    if (this.n < this.capacity) {
      let i = this.n++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!worse(distance, row, this.dist[parent]!, this.rows[parent]!)) break;
        this.dist[i] = this.dist[parent]!;
        this.rows[i] = this.rows[parent]!;
        i = parent;
      }
      this.dist[i] = distance;
      this.rows[i] = row;
      return;
    }
    if (!worse(this.dist[0]!, this.rows[0]!, distance, row)) return;
    let i = 0;
    const n = this.n;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n && worse(this.dist[r]!, this.rows[r]!, this.dist[l]!, this.rows[l]!)) c = r;
      if (!worse(this.dist[c]!, this.rows[c]!, distance, row)) break;
      this.dist[i] = this.dist[c]!;
      this.rows[i] = this.rows[c]!;
      i = c;
    }
    this.dist[i] = distance;
    this.rows[i] = row;
  }

  /**
   * The held rows by ascending distance (then row), as `sorted().map(h => h.row)` without an object per pair:
   * the heap is emptied (repeated removal of its worst pair, written from the back). O(size log size).
   */
  drainRows(): Int32Array {
    const out = new Int32Array(this.n);
    const dist = this.dist;
    const rows = this.rows;
    while (this.n > 0) {
      const last = --this.n;
      out[last] = rows[0]!;
      if (last === 0) break;
      // Sift the last pair down from the root (the same order as `push`).
      const d = dist[last]!;
      const r = rows[last]!;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= last) break;
        const rr = l + 1;
        let c = l;
        if (rr < last && worse(dist[rr]!, rows[rr]!, dist[l]!, rows[l]!)) c = rr;
        if (!worse(dist[c]!, rows[c]!, d, r)) break;
        dist[i] = dist[c]!;
        rows[i] = rows[c]!;
        i = c;
      }
      dist[i] = d;
      rows[i] = r;
    }
    return out;
  }

  /** The held rows in no particular order (a copy). */
  rowsHeld(): Int32Array {
    return this.rows.slice(0, this.n);
  }

  /** The held pairs sorted by ascending distance (then row). Does not clear the heap. */
  sorted(): Neighbour[] {
    const out: Neighbour[] = [];
    for (let i = 0; i < this.n; i++) out.push({ row: this.rows[i]!, distance: this.dist[i]! });
    out.sort((a, b) => a.distance - b.distance || a.row - b.row);
    return out;
  }
}

/** True when (da, ra) ranks after (db, rb). */
function worse(da: number, ra: number, db: number, rb: number): boolean {
  return da > db || (da === db && ra > rb);
}
