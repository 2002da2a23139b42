import { changeSpeed, extractLandmarks, type Landmarks } from './extract';
import type { LandmarkIndex } from './landmark-index';
import { FRAME_SECONDS, LANDMARK_PARAMS } from './params';

/**
 * Speed factors a clip is searched at, in order: 1 first, then +-0.5 % steps out to +-2 %. A turntable, a
 * tape or a resampling error changes pitch and tempo together; a peak at 3.5 kHz moves by one 15.6 Hz bin per
 * 0.45 % of speed, so a grid step of 0.5 % (at most 0.25 % off) keeps the anchor bin of most peaks.
 */
export const SPEED_GRID: readonly number[] = Object.freeze([1, 0.995, 1.005, 0.99, 1.01, 0.985, 1.015, 0.98, 1.02]);

/**
 * Decision thresholds, chosen on the benchmark (`bench/src/landmarks/recording-search.ts`): a clip is
 * identified when its best song gathers at least `minVotes` landmarks at one time offset (+-1 frame) and
 * leads the next song by at least `minLead` votes; otherwise the answer is "no match".
 */
export const MATCH_DEFAULTS = Object.freeze({ minVotes: 10, minLead: 6, maxResults: 10, candidates: 32, earlyExitVotes: 24 });

/** Options of {@link LandmarkMatcher.match}. */
export interface MatchOptions {
  /** Rows the caller may see (e.g. the selected server's availability mask); absent = every row. */
  allow?: (row: number) => boolean;
  /** Speed factors to try, in order (default {@link SPEED_GRID}); `[1]` searches at the clip's own speed only. */
  speeds?: readonly number[];
  /** Results returned, best first (default 10). */
  maxResults?: number;
  /** See {@link MATCH_DEFAULTS}. */
  minVotes?: number;
  /** See {@link MATCH_DEFAULTS}. */
  minLead?: number;
}

/** One candidate song of a clip. */
export interface MatchResult {
  /** The index row (the caller's song number). */
  row: number;
  /** Query landmarks found in this song at one consistent offset (+-1 frame). */
  votes: number;
  /** `votes` over the query's landmark count at that speed (0..1). */
  score: number;
  /** Where the clip starts in the song, seconds (at the song's own speed). */
  offsetSeconds: number;
  /** The speed factor of the clip relative to the song at which it matched best. */
  speed: number;
  /** Votes above the next result's (the best result's lead decides "identified"). */
  lead: number;
  /** True only for the first result, when it passes the thresholds. */
  identified: boolean;
}

/** Outcome of one clip search. */
export interface MatchReport {
  results: MatchResult[];
  /** Landmarks extracted from the clip at speed 1 (0 for silence or a clip under 64 ms). */
  queryLandmarks: number;
  /** Speed factors searched before the answer was clear. */
  speedsSearched: number;
}

interface Best {
  votes: number;
  offset: number;
  speed: number;
  queryCount: number;
}

/**
 * Searches clips in a {@link LandmarkIndex} (Wang 2003's offset-histogram voting). Holds per-row scratch arrays
 * sized to the index (4 bytes per row), so one matcher serves one query at a time; create one per index.
 */
export class LandmarkMatcher {
  private readonly hitCount: Uint32Array;
  private hitRows = new Uint32Array(1 << 16);
  private hitOffsets = new Int32Array(1 << 16);

  constructor(private readonly index: LandmarkIndex) {
    this.hitCount = new Uint32Array(Math.max(1, index.rowCount));
  }

  /**
   * Finds the songs `pcm` (mono, 16 kHz, any level) was recorded from. Returns up to `maxResults` songs by
   * votes; `results[0].identified` says whether the best one is a match or the answer is "no match".
   */
  match(pcm: Float32Array, options: MatchOptions = {}): MatchReport {
    const speeds = options.speeds ?? SPEED_GRID;
    const minVotes = options.minVotes ?? MATCH_DEFAULTS.minVotes;
    const minLead = options.minLead ?? MATCH_DEFAULTS.minLead;
    const maxResults = options.maxResults ?? MATCH_DEFAULTS.maxResults;
    const best = new Map<number, Best>();
    let queryLandmarks = 0;
    let searched = 0;
    for (const speed of speeds) {
      const lm = extractLandmarks(changeSpeed(pcm, speed), LANDMARK_PARAMS.query);
      if (speed === 1) queryLandmarks = lm.hashes.length;
      searched++;
      for (const c of this.searchOnce(lm, options.allow)) {
        const prev = best.get(c.row);
        if (!prev || c.votes > prev.votes) best.set(c.row, { votes: c.votes, offset: c.offset, speed, queryCount: lm.hashes.length });
      }
      const ranked = [...best.values()].sort((a, b) => b.votes - a.votes);
      const top = ranked[0];
      if (top && top.votes >= MATCH_DEFAULTS.earlyExitVotes && top.votes - (ranked[1]?.votes ?? 0) >= 2 * minLead) break;
    }
    return { results: this.rank(best, maxResults, minVotes, minLead), queryLandmarks, speedsSearched: searched };
  }

  /**
   * Finds the songs that share landmarks with `lm` at one consistent offset, at its own speed only: for a query
   * that is already a set of landmarks, e.g. a stored song's own fingerprint (songs sharing recorded material
   * with it). Same ranking and decision as {@link match}; `speeds` is ignored.
   */
  matchLandmarks(lm: Landmarks, options: MatchOptions = {}): MatchReport {
    const best = new Map<number, Best>();
    for (const c of this.searchOnce(lm, options.allow)) best.set(c.row, { votes: c.votes, offset: c.offset, speed: 1, queryCount: lm.hashes.length });
    const results = this.rank(best, options.maxResults ?? MATCH_DEFAULTS.maxResults, options.minVotes ?? MATCH_DEFAULTS.minVotes, options.minLead ?? MATCH_DEFAULTS.minLead);
    return { results, queryLandmarks: lm.hashes.length, speedsSearched: 1 };
  }

  /** The best `maxResults` rows by votes (ties: lower row), with leads and the decision on the first. */
  private rank(best: Map<number, Best>, maxResults: number, minVotes: number, minLead: number): MatchResult[] {
    const ranked = [...best.entries()].sort((a, b) => b[1].votes - a[1].votes || a[0] - b[0]).slice(0, maxResults);
    const results = ranked.map(([row, b], i): MatchResult => {
      const next = ranked[i + 1]?.[1].votes ?? 0;
      return {
        row,
        votes: b.votes,
        score: b.queryCount === 0 ? 0 : b.votes / b.queryCount,
        // The clip's frame 0 sits `offset` frames into the clip-at-`speed`, which runs at the song's own speed.
        offsetSeconds: Math.max(0, b.offset) * FRAME_SECONDS,
        speed: b.speed,
        lead: b.votes - next,
        identified: false,
      };
    });
    const first = results[0];
    if (first && first.votes >= minVotes && first.lead >= minLead) first.identified = true;
    return results;
  }

  /** Candidate songs of one landmark set: the best time offset and its votes for the most-hit rows. */
  private searchOnce(lm: Landmarks, allow?: (row: number) => boolean): Array<{ row: number; votes: number; offset: number }> {
    const count = this.hitCount;
    const touched: number[] = []; // rows with at least one hit, each once
    let n = 0;
    for (let i = 0; i < lm.hashes.length; i++) {
      const { rows, times, start, end } = this.index.postings(lm.hashes[i]!);
      const tq = lm.times[i]!;
      for (let k = start; k < end; k++) {
        const row = rows[k]!;
        if (allow && !allow(row)) continue;
        if (n === this.hitRows.length) this.grow();
        this.hitRows[n] = row;
        this.hitOffsets[n] = times[k]! - tq;
        n++;
        if (count[row]!++ === 0) touched.push(row);
      }
    }
    // The rows with the most raw hits are the only ones worth an offset histogram.
    touched.sort((a, b) => count[b]! - count[a]! || a - b);
    const keep = touched.slice(0, MATCH_DEFAULTS.candidates);
    for (const row of touched) count[row] = 0;
    const slot = new Map<number, number[]>();
    for (const row of keep) slot.set(row, []);
    for (let i = 0; i < n; i++) slot.get(this.hitRows[i]!)?.push(this.hitOffsets[i]!);
    const out: Array<{ row: number; votes: number; offset: number }> = [];
    for (const [row, offsets] of slot) {
      offsets.sort((a, b) => a - b);
      // Largest number of offsets within a window of 3 consecutive frames (+-1 frame of tolerance).
      let bestVotes = 0;
      let bestOffset = 0;
      let lo = 0;
      for (let hi = 0; hi < offsets.length; hi++) {
        while (offsets[hi]! - offsets[lo]! > 2) lo++;
        const votes = hi - lo + 1;
        if (votes > bestVotes) {
          bestVotes = votes;
          bestOffset = offsets[lo + ((hi - lo) >> 1)]!;
        }
      }
      out.push({ row, votes: bestVotes, offset: bestOffset });
    }
    return out;
  }

  private grow(): void {
    const rows = new Uint32Array(this.hitRows.length * 2);
    rows.set(this.hitRows);
    const offsets = new Int32Array(this.hitOffsets.length * 2);
    offsets.set(this.hitOffsets);
    this.hitRows = rows;
    this.hitOffsets = offsets;
  }
}
