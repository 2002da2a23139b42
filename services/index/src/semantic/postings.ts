/**
 * Pre-sorted postings of the text search (issue 35 "Text search at 1M"): per feature column the rows of the
 * best values, best first, and a threshold-algorithm top-k (Fagin's TA) that reads them instead of scoring
 * every row. Answers are the ones of the full scan (same scores, same tie order): see `thresholdTopK`.
 */
import { TopScored, type ScoredRow } from './top-scored';

/**
 * Rows kept per posting list: max(POSTINGS_MIN_ROWS, ceil(size / POSTINGS_DIVISOR)). At 1M songs 31,250 rows
 * (122 KiB) a list, 110 lists (106 feature columns + tempo and energy both ways) = 13 MiB. A query whose top-k
 * is not decided within them falls back to the full scan (same answer, old cost).
 */
export const POSTINGS_MIN_ROWS = 4096;
export const POSTINGS_DIVISOR = 32;

/** Length of every posting list of a table of `size` rows. */
export function postingsCap(size: number): number {
  return Math.min(size, Math.max(POSTINGS_MIN_ROWS, Math.ceil(size / POSTINGS_DIVISOR)));
}

/** One posting list: rows in descending order of the value they were sorted by (ties: lower row first). */
export interface Posting {
  rows: Int32Array;
  /** True when the list holds every row that has a value (the rest score 0 on this list). */
  complete: boolean;
}

/**
 * The `cap` rows with the largest byte among rows where `has(row)`, largest first (counting sort, O(size + 256)).
 * @param bytes one byte per row
 */
export function bytePosting(bytes: Uint8Array, size: number, has: (row: number) => boolean, cap: number): Posting {
  const count = new Int32Array(256);
  let total = 0;
  for (let r = 0; r < size; r++) {
    if (!has(r)) continue;
    count[bytes[r]!]!++;
    total++;
  }
  const take = Math.min(cap, total);
  // Start of each byte value's run in the output (descending byte order), clipped to `take`.
  const start = new Int32Array(256);
  let at = 0;
  for (let b = 255; b >= 0; b--) {
    start[b] = at;
    at += count[b]!;
  }
  const rows = new Int32Array(take);
  for (let r = 0; r < size; r++) {
    if (!has(r)) continue;
    const o = start[bytes[r]!]!++;
    if (o < take) rows[o] = r;
  }
  return { rows, complete: take === total };
}

/**
 * The `cap` rows with the largest (`descending`) or smallest finite value among rows where `has(row)`, in that
 * order (ties: lower row first). O(size log size) for the threshold, then a sort of the kept rows.
 */
export function floatPosting(values: Float32Array, size: number, has: (row: number) => boolean, cap: number, descending: boolean): Posting {
  const finite: number[] = [];
  for (let r = 0; r < size; r++) if (has(r) && Number.isFinite(values[r]!)) finite.push(r);
  const total = finite.length;
  const take = Math.min(cap, total);
  if (take === 0) return { rows: new Int32Array(0), complete: true };
  const sign = descending ? -1 : 1;
  const sorted = Float32Array.from(finite, (r) => sign * values[r]!).sort();
  const cut = sorted[take - 1]!;
  const kept = finite.filter((r) => sign * values[r]! <= cut);
  kept.sort((a, b) => sign * values[a]! - sign * values[b]! || a - b);
  return { rows: Int32Array.from(kept.slice(0, take)), complete: take === total };
}

/** One sorted source of a channel: a posting list and the channel's value of its rows (non-increasing along the list). */
export interface Source {
  rows: Int32Array;
  complete: boolean;
  value: (row: number) => number;
}

/** One query channel: its exact score of a row, and the sorted sources that together list every row it scores above 0. */
export interface Channel {
  score: (row: number) => number;
  sources: Source[];
}

/** Result of `thresholdTopK`: the kept rows, or undefined when the postings could not decide (run the full scan). */
export interface ThresholdResult {
  top: ScoredRow[] | undefined;
  /** Rows whose score was computed. */
  scored: number;
}

/** Rows read from each source between two threshold checks. */
const ROUND = 32;

/**
 * Top `k` rows by s(row) = (sum over channels of score(row)) / channels, score descending then canonical id
 * ascending (`idOf`), rows with s = 0 or outside `allowed` left out: the answer of scoring every row, found with
 * the threshold algorithm. Sources are read in parallel, ROUND rows at a time; every row met is scored exactly
 * (the same float operations as the full scan). After each round the threshold t = (sum of each channel's best
 * value still unread) / channels bounds every unseen row's score (float sums and quotients are monotone, so the
 * bound holds in float too). It stops when t = 0, or when k rows are kept and the worst of them scores strictly
 * above t (an unseen row tying the worst could sort before it by id). When a source runs out before that while its
 * next value could still be positive (a cut posting), the answer is undecided: `top` is undefined.
 */
export function thresholdTopK(channels: readonly Channel[], size: number, k: number, allowed: (row: number) => boolean, idOf: (row: number) => string): ThresholdResult {
  const n = channels.length;
  if (k <= 0 || n === 0) return { top: [], scored: 0 };
  const best = new TopScored(k, idOf);
  const seen = new Uint8Array(size);
  const pos = channels.map((ch) => ch.sources.map(() => 0));
  let scored = 0;
  const exact = (row: number): number => {
    let s = 0;
    for (const ch of channels) s += ch.score(row);
    return s / n;
  };
  for (;;) {
    let stuck = false;
    for (let c = 0; c < n; c++) {
      const ch = channels[c]!;
      for (let j = 0; j < ch.sources.length; j++) {
        const src = ch.sources[j]!;
        const end = Math.min(src.rows.length, pos[c]![j]! + ROUND);
        for (let i = pos[c]![j]!; i < end; i++) {
          const row = src.rows[i]!;
          if (seen[row]) continue;
          seen[row] = 1;
          if (!allowed(row)) continue;
          scored++;
          const s = exact(row);
          if (s > 0) best.offer(row, s);
        }
        pos[c]![j] = end;
      }
    }
    // Threshold: each channel's best unread value (max over its sources), summed in channel order.
    let t = 0;
    for (let c = 0; c < n; c++) {
      const ch = channels[c]!;
      let frontier = 0;
      for (let j = 0; j < ch.sources.length; j++) {
        const src = ch.sources[j]!;
        const p = pos[c]![j]!;
        let v: number;
        if (p < src.rows.length) v = src.value(src.rows[p]!);
        else if (src.complete || src.rows.length === 0) v = 0;
        else {
          // A cut list: the rows after it score at most its last value.
          v = src.value(src.rows[src.rows.length - 1]!);
          if (v > 0) stuck = true;
        }
        if (v > frontier) frontier = v;
      }
      t += frontier;
    }
    t /= n;
    if (t === 0) return { top: best.sorted(), scored };
    const worst = best.worst();
    if (worst !== undefined && worst > t) return { top: best.sorted(), scored };
    if (stuck) {
      // Stuck only matters once every readable source is read: otherwise keep reading.
      let readable = false;
      for (let c = 0; c < n && !readable; c++) for (let j = 0; j < channels[c]!.sources.length; j++) if (pos[c]![j]! < channels[c]!.sources[j]!.rows.length) readable = true;
      if (!readable) return { top: undefined, scored };
    }
  }
}
