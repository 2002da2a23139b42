/**
 * Pre-sorted postings of the text search (issue 35 "Text search at 1M"): per feature column the rows of the
 * best values, best first, and a threshold-algorithm top-k (Fagin's TA) that reads them instead of scoring
 * every row. Answers are the ones of the full scan (same scores, same tie order): see `thresholdTopK`.
 */
import { TopScored, type ScoredRow } from './top-scored';
import { kthSmallest } from './table-passes';

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
  /** True when rows of equal value come in canonical-id order (the table's rows are in id order, as a full build numbers them). */
  tiesById: boolean;
}

/**
 * The `cap` rows where `has(row)` with the highest score above 0, best first, rows of equal score in row order, for a
 * column of bytes whose score is a function of the byte (`scoreOfByte`, non-negative): a counting sort over the
 * distinct scores of the 256 bytes, O(size + 256).
 */
export function bytePosting(bytes: Uint8Array, size: number, has: (row: number) => boolean, scoreOfByte: (b: number) => number, cap: number, rowsInIdOrder = false): Posting {
  // Bucket of each byte: rank of its score among the distinct positive scores, best first (-1 = scores 0).
  const byScore = [...Array(256).keys()].map((b) => ({ b, s: scoreOfByte(b) })).filter((x) => x.s > 0).sort((x, y) => y.s - x.s);
  const bucket = new Int32Array(256).fill(-1);
  let buckets = 0;
  byScore.forEach((x, i) => (bucket[x.b] = i > 0 && byScore[i - 1]!.s === x.s ? buckets - 1 : buckets++));
  const count = new Int32Array(buckets + 1);
  let total = 0;
  for (let r = 0; r < size; r++) {
    if (!has(r)) continue;
    const k = bucket[bytes[r]!]!;
    if (k < 0) continue;
    count[k]!++;
    total++;
  }
  const take = Math.min(cap, total);
  const start = new Int32Array(buckets);
  for (let k = 0, at = 0; k < buckets; k++) {
    start[k] = at;
    at += count[k]!;
  }
  const rows = new Int32Array(take);
  for (let r = 0; r < size && take > 0; r++) {
    if (!has(r)) continue;
    const k = bucket[bytes[r]!]!;
    if (k < 0) continue;
    const o = start[k]!++;
    if (o < take) rows[o] = r;
  }
  return { rows, complete: take === total, tiesById: rowsInIdOrder };
}

/**
 * The `cap` rows where `has(row)` with the highest `score` above 0, best first, rows of equal score in row order:
 * O(size) for the cut (the cap-th best score by quickselect, `kthSmallest`), then a sort of the kept rows.
 */
export function scorePosting(size: number, has: (row: number) => boolean, score: (row: number) => number, cap: number, rowsInIdOrder = false): Posting {
  const rows = new Int32Array(size);
  const scores = new Float64Array(size);
  let total = 0;
  for (let r = 0; r < size; r++) {
    if (!has(r)) continue;
    const s = score(r);
    if (s > 0) {
      rows[total] = r;
      scores[total++] = s;
    }
  }
  const take = Math.min(cap, total);
  let kept: number[] = [];
  if (take < total) {
    const cut = kthSmallest(scores, total, total - take);
    for (let i = 0; i < total; i++) if (scores[i]! >= cut) kept.push(i);
  } else kept = Array.from({ length: total }, (_, i) => i);
  kept.sort((a, b) => scores[b]! - scores[a]! || rows[a]! - rows[b]!);
  return { rows: Int32Array.from(kept.slice(0, take), (i) => rows[i]!), complete: take === total, tiesById: rowsInIdOrder };
}

/** One sorted source of a channel: a posting list and the channel's value of its rows (non-increasing along the list). */
export interface Source {
  rows: Int32Array;
  complete: boolean;
  /** Rows of equal value come in canonical-id order (lets a one-channel query stop inside a tie). */
  tiesById?: boolean;
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
 * above t (an unseen row tying the worst could sort before it by id). A one-channel query also stops when the worst
 * kept row scores exactly t and every source whose next value is t lists ties in id order with a next row whose id
 * sorts after the worst kept one's: an unseen row scoring t takes that value from one such source (a maximum is
 * exact), after its next row, so it sorts after the worst kept row (the top tie of a popular tag holds 1% of the
 * songs: without this rule all of them are read). When a source runs out before that while its
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
    if (worst !== undefined && worst === t && n === 1 && !stuck && tiesAfter(channels[0]!, pos[0]!, t, best.worstId()!, idOf)) return { top: best.sorted(), scored };
    if (stuck) {
      // Stuck only matters once every readable source is read: otherwise keep reading.
      let readable = false;
      for (let c = 0; c < n && !readable; c++) for (let j = 0; j < channels[c]!.sources.length; j++) if (pos[c]![j]! < channels[c]!.sources[j]!.rows.length) readable = true;
      if (!readable) return { top: undefined, scored };
    }
  }
}

/** One-channel tie rule of `thresholdTopK`: every source whose next value is `t` has a next row sorting after `worstId`. */
function tiesAfter(ch: Channel, pos: readonly number[], t: number, worstId: string, idOf: (row: number) => string): boolean {
  for (let j = 0; j < ch.sources.length; j++) {
    const src = ch.sources[j]!;
    const p = pos[j]!;
    if (p >= src.rows.length) {
      if (!src.complete && src.rows.length > 0 && src.value(src.rows[src.rows.length - 1]!) === t) return false;
      continue;
    }
    if (src.value(src.rows[p]!) !== t) continue;
    if (!src.tiesById || !(idOf(src.rows[p]!) > worstId)) return false;
  }
  return true;
}

/**
 * True when the generation's rows are numbered in canonical-id order (a full build numbers them so; rows appended
 * later break it): the postings then list ties in id order. One id decode per row (O(size)).
 */
export function rowsInIdOrder(gen: { index: { size: number; idOf?: (row: number) => string } }): boolean {
  const index = gen.index;
  if (typeof index.idOf !== 'function') return false;
  let prev = '';
  for (let r = 0; r < index.size; r++) {
    const id = index.idOf(r);
    if (r > 0 && !(prev < id)) return false;
    prev = id;
  }
  return true;
}
