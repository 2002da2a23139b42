import { changeSpeed, extractPeaks, pairPeaks, scalePeaks, sortLandmarks, type Landmarks, type Peak } from './extract';
import type { LandmarkIndex } from './landmark-index';
import { bestWindow, sharedCount, topRows } from './voting';

export { topRows } from './voting';
import { FRAME_SECONDS, LANDMARK_PARAMS, type Density } from './params';

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
export const MATCH_DEFAULTS = Object.freeze({ minVotes: 10, minLead: 6, maxResults: 10, candidates: 32, earlyExitVotes: 24, earlyExitLead: 12, shifts: 4, gridShifts: 4, gridCandidates: 64, gridRefine: 2 });

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
  /**
   * Sub-frame time shifts of the query (audfprint's `--shifts`): the clip is analysed `shifts` times, starting
   * 0, 1/shifts, 2/shifts... of a hop (32 ms) later, and the landmarks of all are searched together, so a clip
   * whose frames fall between the stored song's frames still finds the peaks the stored side picked. A stored
   * landmark counts once however many shifts find it. Default {@link MATCH_DEFAULTS}.shifts.
   */
  shifts?: number;
  /**
   * Sub-frame shifts at the speeds other than 1 (default MATCH_DEFAULTS.gridShifts, 4). With the peak-mapped grid
   * they cost no spectrogram (the peaks of every shift are found once at speed 1), only their extra landmarks'
   * postings. At 1 shift the -2 % clips lost accuracy (issue 33, session 15: 38/40 against 40/40 with 4, both the
   * peak-mapped and the resampled grid, the same clips); see the package README "Figures".
   */
  gridShifts?: number;
  /** Stop searching further speeds once the best song has this many votes... (default MATCH_DEFAULTS.earlyExitVotes) */
  earlyExitVotes?: number;
  /** ...and leads the next by this many (default MATCH_DEFAULTS.earlyExitLead). */
  earlyExitLead?: number;
  /**
   * How a speed of the grid is analysed: false (default) maps the peaks found at speed 1 to that speed
   * ({@link scalePeaks}: one spectrogram per clip); true resamples the clip and analyses it again at every speed
   * (the method before issue 33's latency work, ~9 spectrograms per missed clip; kept for the benchmark's A/B).
   */
  gridResample?: boolean;
  /**
   * How the speeds other than 1 are searched when speed 1 gives no clear answer: false (default) one speed after the
   * other with the early exit (two walks per speed); true all together in one two-walk search over the union of their
   * hashes' postings (each posting read and counted once, the {@link MATCH_DEFAULTS}.gridCandidates rows with the most
   * raw hits over all of them get an offset histogram per speed). Measured at 100,094 songs with the postings on file
   * (session 15, package README): together was slower (p99 276 against 198 ms over 80 clips: no early exit, and the
   * union of 8 speeds x 4 shifts is large) and lost a -2 % clip (the right song fell out of the union's candidates),
   * so it is off; kept for the benchmark's A/B (`together=1`).
   */
  gridTogether?: boolean;
  /**
   * Coarse-to-fine speed grid (0 = off): the speeds other than 1 are first searched at one sub-frame shift each (a
   * quarter of the postings of 4 shifts' landmarks), then the `gridRefine` speeds whose best song gathered the most
   * votes are searched again at `gridShifts` shifts; the early exit is checked after each. The speed of a clip is
   * found at one shift (its song leads at its speed), the 4 shifts recover the votes that one shift misses.
   * Default {@link MATCH_DEFAULTS}.gridRefine, 2. Measured (issue 33, session 16, package README): at 100,094 songs
   * with the postings in a file, 600 library clips (10 s: clean, 10 dB + band-pass, +-2 %) and 240 outside clips, CPU
   * per query p50 107 -> 86 ms, p99 218 -> 175 ms (library clips) and 268 -> 216 ms (outside clips), the same right
   * answers except one more +2 % clip (149 against 148 of 150) and one wrong +2 % answer more (11 votes, lead 6:
   * the runner-up's votes come from fewer speeds at 4 shifts, so leads can grow); outside identified 1/240 both.
   */
  gridRefine?: number;
  /** Query-side density (default LANDMARK_PARAMS.query); `gridResample` analyses at the default. For the benchmark's A/B. */
  query?: Density;
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
  /**
   * For results after the first: most of the query landmarks that vote for this song (at least
   * {@link SAME_MATERIAL_SHARE}) also vote for the first, i.e. the clip's material is in both songs (another copy of the
   * same recording); such a result is left out of the first result's `lead`. False for the first result.
   */
  sameMaterial: boolean;
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
  /** The query landmarks (hash * 2^16 + query frame) whose hits are the votes, sorted, distinct. */
  material: readonly number[];
}

/** One candidate row of a {@link LandmarkMatcher} walk: votes and offset of its best window, and the query landmarks voting there. */
interface Candidate {
  row: number;
  votes: number;
  offset: number;
  material: number[];
}

/**
 * A runner-up counts as the same material as the best song, and not as a competitor for the lead, when at least this
 * share of the query landmarks voting for it also vote for the best song (and it has at least
 * {@link SAME_MATERIAL_MIN_VOTES}): two copies
 * of one recording in a library (a remaster, the same piece on two albums) each gather the clip's landmarks, so the
 * lead between them is near 0 though either answer names that recording. Issue 33, session 17: measured in the
 * package README ("Same recording twice").
 */
export const SAME_MATERIAL_SHARE = 0.5;

/** ...and only a runner-up with at least this many votes (the default `minVotes`: fewer is no evidence of a copy). */
export const SAME_MATERIAL_MIN_VOTES = 10;

/**
 * Searches clips in a {@link LandmarkIndex} (Wang 2003's offset-histogram voting). Holds per-row scratch arrays
 * sized to the index (4 bytes per row), so one matcher serves one query at a time; create one per index.
 */
export class LandmarkMatcher {
  private readonly hitCount: Uint32Array;
  /** Rows with at least one hit in the current walk. */
  private readonly touched: Uint32Array;
  private mask?: Uint8Array;
  /** Postings read from a file-backed index for the current walk. */
  private scratch = new Uint32Array(1 << 16);
  private blockHash = new Uint32Array(1024);
  private blockKeys = new Uint32Array(1025);
  private blockSrc = new Float64Array(1024);
  private blockEnd = new Uint32Array(1024);
  /** Posting -> hits of it in the current window (best-window scratch). */
  private readonly inWindow = new Map<number, number>();

  constructor(private readonly index: LandmarkIndex) {
    this.hitCount = new Uint32Array(Math.max(1, index.rowCount));
    this.touched = new Uint32Array(Math.max(1, index.rowCount));
  }

  /** Bytes of this matcher's scratch arrays (per-row counts, the mask, read buffers): part of a replica's memory. */
  get bytes(): number {
    return this.hitCount.byteLength + this.touched.byteLength + (this.mask?.byteLength ?? 0) + this.scratch.byteLength + this.blockHash.byteLength + this.blockKeys.byteLength + this.blockSrc.byteLength + this.blockEnd.byteLength;
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
    const shifts = Math.max(1, options.shifts ?? MATCH_DEFAULTS.shifts);
    const gridShifts = Math.max(1, options.gridShifts ?? MATCH_DEFAULTS.gridShifts);
    const exitVotes = options.earlyExitVotes ?? MATCH_DEFAULTS.earlyExitVotes;
    const exitLead = options.earlyExitLead ?? MATCH_DEFAULTS.earlyExitLead;
    const mask = this.maskOf(options.allow);
    const qd: Density = options.query ?? LANDMARK_PARAMS.query;
    const best = new Map<number, Best>();
    // Peaks of each sub-frame shift at the clip's own speed, found once; the grid maps them to its speeds.
    const peaks: Peak[][] = [];
    const peaksOf = (shift: number): Peak[] => (peaks[shift] ??= extractPeaks(shiftedPcm(pcm, shift, shifts), qd));
    const landmarksAt = (speed: number): Landmarks => {
      if (speed === 1) return mergeLandmarks(Array.from({ length: shifts }, (_, s) => pairPeaks(peaksOf(s), qd.fanOut, qd.maxDt)));
      if (options.gridResample) return queryLandmarks(changeSpeed(pcm, speed), gridShifts);
      return mergeLandmarks(Array.from({ length: gridShifts }, (_, s) => pairPeaks(scalePeaks(peaksOf(Math.round((s * shifts) / gridShifts)), speed), qd.fanOut, qd.maxDt)));
    };
    const clear = (): boolean => {
      let top = 0;
      let second = 0;
      for (const b of best.values()) {
        if (b.votes > top) [top, second] = [b.votes, top];
        else if (b.votes > second) second = b.votes;
      }
      return top >= exitVotes && top - second >= exitLead;
    };
    const keep = (sets: readonly Landmarks[], setSpeeds: readonly number[], found: Candidate[][]): void => {
      found.forEach((cands, i) => {
        for (const c of cands) {
          const prev = best.get(c.row);
          if (!prev || c.votes > prev.votes) best.set(c.row, { votes: c.votes, offset: c.offset, speed: setSpeeds[i]!, queryCount: sets[i]!.hashes.length, material: c.material });
        }
      });
    };
    let queryCount = 0;
    let searched = 0;
    const together = options.gridTogether ?? false;
    const refine = options.gridResample || together ? 0 : Math.max(0, options.gridRefine ?? MATCH_DEFAULTS.gridRefine);
    for (let i = 0; i < speeds.length; i++) {
      const speed = speeds[i]!;
      if (speed !== 1 && refine > 0 && gridShifts > 1) {
        // Coarse: every remaining speed at one shift (its landmarks mapped from the speed-1 peaks of shift 0).
        const rest = speeds.slice(i).filter((v) => v !== 1);
        const topAt: Array<[number, number]> = [];
        let clearNow = false;
        for (const v of rest) {
          const lm = pairPeaks(scalePeaks(peaksOf(0), v), qd.fanOut, qd.maxDt);
          const found = this.search([lm], mask, MATCH_DEFAULTS.candidates);
          keep([lm], [v], found);
          searched++;
          topAt.push([v, found[0]!.reduce((m, c) => Math.max(m, c.votes), 0)]);
          if (clear()) {
            clearNow = true;
            break;
          }
        }
        if (!clearNow) {
          // Fine: the most promising speeds again with every shift's peaks.
          topAt.sort((a, b) => b[1] - a[1]);
          for (const [v] of topAt.slice(0, refine)) {
            const lm = landmarksAt(v);
            keep([lm], [v], this.search([lm], mask, MATCH_DEFAULTS.candidates));
            if (clear()) break;
          }
        }
        break;
      }
      if (speed !== 1 && together) {
        // Every remaining speed at once: one walk over the union of their hashes (at most 16 sets a walk).
        const rest = speeds.slice(i).filter((v) => v !== 1);
        for (let k = 0; k < rest.length; k += 16) {
          const part = rest.slice(k, k + 16);
          const sets = part.map(landmarksAt);
          keep(sets, part, this.search(sets, mask, MATCH_DEFAULTS.gridCandidates));
        }
        searched += rest.length;
        break;
      }
      const lm = landmarksAt(speed);
      if (speed === 1) queryCount = lm.hashes.length;
      searched++;
      keep([lm], [speed], this.search([lm], mask, MATCH_DEFAULTS.candidates));
      if (clear()) break;
    }
    return { results: this.rank(best, maxResults, minVotes, minLead), queryLandmarks: queryCount, speedsSearched: searched };
  }

  /** The availability filter as one byte per row (1 = visible), evaluated once per query; undefined = every row. */
  private maskOf(allow?: (row: number) => boolean): Uint8Array | undefined {
    if (!allow) return undefined;
    const mask = (this.mask ??= new Uint8Array(this.hitCount.length));
    for (let r = 0; r < mask.length; r++) mask[r] = allow(r) ? 1 : 0;
    return mask;
  }

  /**
   * Finds the songs that share landmarks with `lm` at one consistent offset, at its own speed only: for a query
   * that is already a set of landmarks, e.g. a stored song's own fingerprint (songs sharing recorded material
   * with it). Same ranking and decision as {@link match}; `speeds` is ignored.
   */
  matchLandmarks(lm: Landmarks, options: MatchOptions = {}): MatchReport {
    const best = new Map<number, Best>();
    for (const c of this.search([lm], this.maskOf(options.allow), MATCH_DEFAULTS.candidates)[0]!) best.set(c.row, { votes: c.votes, offset: c.offset, speed: 1, queryCount: lm.hashes.length, material: c.material });
    const results = this.rank(best, options.maxResults ?? MATCH_DEFAULTS.maxResults, options.minVotes ?? MATCH_DEFAULTS.minVotes, options.minLead ?? MATCH_DEFAULTS.minLead);
    return { results, queryLandmarks: lm.hashes.length, speedsSearched: 1 };
  }

  /**
   * The best `maxResults` rows by votes (ties: lower row), with leads and the decision on the first. The first
   * result's lead is over the best later song that is not the same material ({@link SAME_MATERIAL_SHARE}): a copy of
   * the clip's recording is no competitor; the other results' leads are over the next result.
   */
  private rank(best: Map<number, Best>, maxResults: number, minVotes: number, minLead: number): MatchResult[] {
    const all = [...best.entries()].sort((a, b) => b[1].votes - a[1].votes || a[0] - b[0]);
    const same = all.map(([, b], i) => i > 0 && b.votes >= SAME_MATERIAL_MIN_VOTES && sharedCount(all[0]![1].material, b.material) >= SAME_MATERIAL_SHARE * b.material.length);
    const competitor = all.findIndex((_, i) => i > 0 && !same[i]);
    const ranked = all.slice(0, maxResults);
    const results = ranked.map(([row, b], i): MatchResult => {
      const next = i === 0 ? (competitor > 0 ? all[competitor]![1].votes : 0) : (ranked[i + 1]?.[1].votes ?? 0);
      return {
        row,
        votes: b.votes,
        score: b.queryCount === 0 ? 0 : b.votes / b.queryCount,
        // The clip's frame 0 sits `offset` frames into the clip-at-`speed`, which runs at the song's own speed.
        offsetSeconds: Math.max(0, b.offset) * FRAME_SECONDS,
        speed: b.speed,
        lead: b.votes - next,
        identified: false,
        sameMaterial: same[i]!,
      };
    });
    const first = results[0];
    if (first && first.votes >= minVotes && first.lead >= minLead) first.identified = true;
    return results;
  }

  /**
   * Candidate songs of one or more landmark sets (up to 16: e.g. a clip's landmarks at several speeds): per set, the
   * best time offset and its votes for the `candidates` most-hit rows. A vote is a distinct stored landmark
   * (posting) whose offset lies in the best window of 3 consecutive frames (+-1 frame of tolerance): query
   * landmarks of several sub-frame shifts, or of a sustained sound at adjacent frames, that find the same stored
   * landmark count once.
   *
   * Two walks over the postings of the distinct hashes of all sets together (each hash's postings read once, with
   * one positional read when they live in a file): the first only counts raw hits per visible row (one increment
   * per posting, by the number of query landmarks of all sets with its hash), which selects the `candidates` rows
   * worth an offset histogram; the second gathers the offsets of those rows only, per set. No per-posting record
   * is written for the other rows, which at 100k songs are nearly all of the hits. Returns one array per set, in
   * the order of `sets`, each with an entry per selected row.
   */
  private search(sets: readonly Landmarks[], mask: Uint8Array | undefined, candidates: number): Candidate[][] {
    const index = this.index;
    const shards = index.shards;
    const S = sets.length;
    if (S > 16) throw new RangeError(`at most 16 landmark sets per search, got ${S}`);
    let n = 0;
    for (const lm of sets) n += lm.hashes.length;
    if (shards.length === 0 || n === 0) return sets.map(() => []);
    // Query landmarks grouped by hash: key = hash * 2^20 + set * 2^16 + frame, sorted.
    const keys = new Float64Array(n);
    let at = 0;
    sets.forEach((lm, si) => {
      for (let i = 0; i < lm.hashes.length; i++) keys[at++] = lm.hashes[i]! * 1048576 + si * 65536 + lm.times[i]!;
    });
    keys.sort();
    // Blocks: one per distinct hash with postings; postings come from the resident array or the scratch buffer.
    const resident = index.resident;
    const src = resident ? index.packed : undefined;
    let blocks = 0;
    let read = 0;
    const blockHash = this.blockHash.length >= n ? this.blockHash : (this.blockHash = new Uint32Array(n));
    const blockKeys = this.blockKeys.length >= n + 1 ? this.blockKeys : (this.blockKeys = new Uint32Array(n + 1));
    const blockSrc = this.blockSrc.length >= n ? this.blockSrc : (this.blockSrc = new Float64Array(n));
    const blockEnd = this.blockEnd.length >= n ? this.blockEnd : (this.blockEnd = new Uint32Array(n));
    for (let i = 0; i < n; ) {
      const h = Math.floor(keys[i]! / 1048576);
      let j = i + 1;
      while (j < n && Math.floor(keys[j]! / 1048576) === h) j++;
      const [lo, hi] = index.hashRange(h);
      if (hi > lo) {
        blockHash[blocks] = h;
        blockKeys[blocks] = i;
        blockEnd[blocks] = j;
        if (resident) blockSrc[blocks] = lo;
        else {
          this.ensureScratch(read + hi - lo);
          index.readPostings(lo, hi, this.scratch, read);
          blockSrc[blocks] = read;
          read += hi - lo;
        }
        blocks++;
      }
      i = j;
    }
    const postings = src ?? this.scratch;
    const count = this.hitCount;
    const touched = this.touched;
    let nt = 0;
    // Walk 1: raw hits per visible row.
    for (let b = 0; b < blocks; b++) {
      const h = blockHash[b]!;
      const m = blockEnd[b]! - blockKeys[b]!;
      const [lo] = index.hashRange(h);
      const delta = blockSrc[b]! - lo; // position in `postings` of global posting k: k + delta
      for (let s = 0; s < shards.length; s++) {
        const base = shards[s]!.base;
        const end = index.shardEnd(s, h) + delta;
        for (let k = shards[s]!.offsets[h]! + delta; k < end; k++) {
          const row = base + (postings[k]! >>> 16);
          if (mask !== undefined && mask[row] === 0) continue;
          if (count[row] === 0) touched[nt++] = row;
          count[row] = count[row]! + m;
        }
      }
    }
    // The rows with the most raw hits are the only ones worth an offset histogram.
    const keep = topRows(touched.subarray(0, nt), count, candidates);
    for (let i = 0; i < nt; i++) count[touched[i]!] = 0;
    // count[] doubles as the slot of a kept row (1-based) while their hits are gathered, then is cleared again.
    for (let j = 0; j < keep.length; j++) count[keep[j]!] = j + 1;
    // Per (kept row, set): offsets and postings of its hits, at slot j * S + set.
    const slotOffsets: number[][] = Array.from({ length: keep.length * S }, () => []);
    const slotPostings: number[][] = Array.from({ length: keep.length * S }, () => []);
    const slotQuery: number[][] = Array.from({ length: keep.length * S }, () => []);
    // Walk 2: (offset, posting) of each hit of a kept row.
    for (let b = 0; b < blocks; b++) {
      const h = blockHash[b]!;
      const k0 = blockKeys[b]!;
      const k1 = blockEnd[b]!;
      const [lo] = index.hashRange(h);
      const delta = blockSrc[b]! - lo;
      for (let s = 0; s < shards.length; s++) {
        const base = shards[s]!.base;
        const start = shards[s]!.offsets[h]!;
        const end = index.shardEnd(s, h);
        for (let k = start; k < end; k++) {
          const p = postings[k + delta]!;
          const j = count[base + (p >>> 16)]!;
          if (j === 0) continue;
          const frame = p & 0xffff;
          for (let q = k0; q < k1; q++) {
            const low = keys[q]! - h * 1048576; // set * 2^16 + query frame
            const slot = (j - 1) * S + (low >>> 16);
            slotOffsets[slot]!.push(frame - (low & 0xffff));
            slotPostings[slot]!.push(k);
            slotQuery[slot]!.push(h * 65536 + (low & 0xffff));
          }
        }
      }
    }
    for (const row of keep) count[row] = 0;
    const out: Candidate[][] = sets.map(() => []);
    for (let j = 0; j < keep.length; j++) {
      for (let si = 0; si < S; si++) {
        const [votes, offset, material] = bestWindow(slotOffsets[j * S + si]!, slotPostings[j * S + si]!, slotQuery[j * S + si]!, this.inWindow);
        out[si]!.push({ row: keep[j]!, votes, offset, material });
      }
    }
    return out;
  }

  private ensureScratch(length: number): void {
    if (this.scratch.length >= length) return;
    const grown = new Uint32Array(Math.max(length, this.scratch.length * 2));
    grown.set(this.scratch);
    this.scratch = grown;
  }
}


/** `pcm` from sub-frame shift `s` of `shifts` (s hops / shifts samples later). */
function shiftedPcm(pcm: Float32Array, s: number, shifts: number): Float32Array {
  return s === 0 ? pcm : pcm.subarray(Math.round((s * LANDMARK_PARAMS.hopSamples) / shifts));
}

/** Landmark sets merged, sorted by frame then hash, exact duplicates once. */
function mergeLandmarks(parts: readonly Landmarks[]): Landmarks {
  if (parts.length === 1) return parts[0]!;
  const total = parts.reduce((a, p) => a + p.hashes.length, 0);
  const hashes = new Uint32Array(total);
  const times = new Uint16Array(total);
  let at = 0;
  for (const p of parts) {
    hashes.set(p.hashes, at);
    times.set(p.times, at);
    at += p.hashes.length;
  }
  return sortLandmarks(hashes, times);
}

/**
 * Query landmarks of `pcm` (16 kHz mono) at the query density, over `shifts` sub-frame time shifts: the analysis
 * starts at 0, hop/shifts, 2 hop/shifts... samples, and the landmarks of every shift are merged (sorted by frame
 * then hash, exact duplicates once). Frame numbers of a shifted analysis are those of the unshifted one (the
 * shift is under one frame, inside the matcher's +-1-frame tolerance).
 */
export function queryLandmarks(pcm: Float32Array, shifts = 1): Landmarks {
  const n = Math.max(1, shifts);
  return mergeLandmarks(Array.from({ length: n }, (_, s) => pairPeaks(extractPeaks(shiftedPcm(pcm, s, n), LANDMARK_PARAMS.query), LANDMARK_PARAMS.query.fanOut)));
}
