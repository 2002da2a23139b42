/** One scored row of a text search. */
export interface ScoredRow {
  row: number;
  s: number;
}

/**
 * The `k` best of a stream of scored rows, in the order of a full sort by score descending, then canonical id
 * ascending (`idOf`, compared as strings): the same rows in the same order as sorting every row and keeping the
 * first `k`, without sorting (or holding) the whole stream. A bounded heap whose root is the kept row that sorts
 * last; a new row replaces it only when it sorts before it. Ids are decoded only to break score ties with the
 * heap's rows and cached per kept row. O(n log k) comparisons; at 1M tagged songs and k = 20 it replaces a sort of
 * every song that scored above 0 (seconds of CPU at 1M, most of it decoding ids for ties).
 */
export class TopScored {
  private readonly heap: Array<ScoredRow & { id?: string }> = [];

  constructor(
    private readonly k: number,
    private readonly idOf: (row: number) => string,
  ) {}

  /** Offers a row with score `s`. */
  offer(row: number, s: number): void {
    const h = this.heap;
    if (this.k <= 0) return;
    if (h.length < this.k) {
      h.push({ row, s });
      this.up(h.length - 1);
      return;
    }
    const worst = h[0]!;
    // The new row must sort before the worst kept one: a higher score, or an equal score and a smaller id.
    if (s < worst.s) return;
    if (s === worst.s && !(this.idOf(row) < this.id(worst))) return;
    h[0] = { row, s };
    this.down(0);
  }

  /** Score of the kept row that sorts last once `k` rows are kept; undefined while fewer are kept. */
  worst(): number | undefined {
    return this.k > 0 && this.heap.length >= this.k ? this.heap[0]!.s : undefined;
  }

  /** Canonical id of the kept row that sorts last once `k` rows are kept; undefined while fewer are kept. */
  worstId(): string | undefined {
    return this.k > 0 && this.heap.length >= this.k ? this.id(this.heap[0]!) : undefined;
  }

  /** The kept rows, best first (score descending, id ascending). */
  sorted(): ScoredRow[] {
    return [...this.heap].sort((a, b) => (this.after(a, b) ? 1 : -1)).map(({ row, s }) => ({ row, s }));
  }

  private id(e: ScoredRow & { id?: string }): string {
    return (e.id ??= this.idOf(e.row));
  }

  /** True when `a` sorts after `b` (lower score, or equal score and larger id). */
  private after(a: ScoredRow & { id?: string }, b: ScoredRow & { id?: string }): boolean {
    if (a.s !== b.s) return a.s < b.s;
    return this.id(a) > this.id(b);
  }

  private up(i: number): void {
    const h = this.heap;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.after(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  private down(i: number): void {
    const h = this.heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.after(h[l]!, h[m]!)) m = l;
      if (r < h.length && this.after(h[r]!, h[m]!)) m = r;
      if (m === i) return;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}
