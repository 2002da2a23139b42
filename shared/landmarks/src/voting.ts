/**
 * Voting primitives of {@link LandmarkMatcher} (Wang 2003's offset histogram): the best offset window of a candidate
 * row's hits, the overlap of two candidates' query landmarks, and the selection of candidate rows by raw hits.
 */

/**
 * The window of 3 consecutive frames (offsets within 2 of each other) holding the most distinct postings among
 * hits (`offsets[i]`, `posts[i]`, `query[i]` the query landmark of the hit): [votes, offset at the window's middle
 * hit, the distinct query landmarks of the window's hits (sorted)]; [0, 0, []] without hits.
 */
export function bestWindow(offsets: readonly number[], posts: readonly number[], query: readonly number[], inWindow: Map<number, number>): [number, number, number[]] {
  const hits = Array.from({ length: offsets.length }, (_, i) => i);
  hits.sort((a, b) => offsets[a]! - offsets[b]!);
  let bestVotes = 0;
  let bestOffset = 0;
  let bestLo = 0;
  let bestHi = -1;
  let lo = 0;
  inWindow.clear();
  for (let hi = 0; hi < hits.length; hi++) {
    const ph = posts[hits[hi]!]!;
    inWindow.set(ph, (inWindow.get(ph) ?? 0) + 1);
    while (offsets[hits[hi]!]! - offsets[hits[lo]!]! > 2) {
      const pl = posts[hits[lo]!]!;
      const c = inWindow.get(pl)!;
      if (c === 1) inWindow.delete(pl);
      else inWindow.set(pl, c - 1);
      lo++;
    }
    if (inWindow.size > bestVotes) {
      bestVotes = inWindow.size;
      bestOffset = offsets[hits[lo + ((hi - lo) >> 1)]!]!;
      bestLo = lo;
      bestHi = hi;
    }
  }
  const material = [...new Set(hits.slice(bestLo, bestHi + 1).map((i) => query[i]!))].sort((a, b) => a - b);
  return [bestVotes, bestOffset, bestVotes === 0 ? [] : material];
}

/** Number of values two sorted arrays of distinct numbers share. */
export function sharedCount(a: readonly number[], b: readonly number[]): number {
  let n = 0;
  for (let i = 0, j = 0; i < a.length && j < b.length; ) {
    if (a[i]! < b[j]!) i++;
    else if (a[i]! > b[j]!) j++;
    else {
      n++;
      i++;
      j++;
    }
  }
  return n;
}

/**
 * The `k` rows of `touched` with the highest `count` (ties: lower row first), the same set as sorting every touched
 * row by (count desc, row asc) and taking `k`, in O(touched) plus a sort of the rows tied at the cut: a histogram of
 * the counts finds the cut (at 100k songs a noisy clip touches tens of thousands of rows, and sorting them all was
 * the larger part of a query's CPU).
 */
export function topRows(touched: ArrayLike<number> & Iterable<number>, count: Uint32Array, k: number): number[] {
  if (touched.length <= k) return [...touched];
  let maxCount = 0;
  for (const row of touched) if (count[row]! > maxCount) maxCount = count[row]!;
  const histogram = new Uint32Array(maxCount + 1);
  for (const row of touched) histogram[count[row]!]!++;
  // The cut: the count c such that fewer than k rows have more than c and at least k have c or more.
  let above = 0;
  let cut = maxCount;
  while (cut > 0 && above + histogram[cut]! < k) above += histogram[cut--]!;
  const keep: number[] = [];
  const tied: number[] = [];
  for (const row of touched) {
    const c = count[row]!;
    if (c > cut) keep.push(row);
    else if (c === cut) tied.push(row);
  }
  tied.sort((a, b) => a - b);
  for (let i = 0; keep.length < k && i < tied.length; i++) keep.push(tied[i]!);
  return keep;
}
