/**
 * "Same recording" test of the recording-search bench (issue 33, session 17): a clip's answer that names another
 * library song than the one the clip was cut from is counted right only when that song holds the clip's material,
 * decided from the stored fingerprints, not from a hand-written list.
 *
 * The test: the true song's stored landmarks whose anchors lie in the clip's span (the stored side of exactly the
 * audio the clip was cut from, about 100 landmarks for 10 s) are searched in the library index at speed 1 with the
 * true song hidden (`LandmarkMatcher.matchLandmarks`, the engine of `/api/recording_search/by_track`). The answer is
 * the same recording when it gathers at least `minVotes` of them at one consistent offset (+-1 frame) and at least
 * `minShare` of them. Unrelated songs share a few landmarks at one offset by chance (0-3 of ~100 in the corpus, the
 * bench prints the distribution); a copy of the same recording (a remaster, the same piece in two games' soundtracks)
 * shares a large part. The thresholds and the measured distribution are in the package README ("Same recording
 * twice").
 *
 * The song-level view (`sameRecordingPairs`) is printed as evidence: every pair of library songs whose whole stored
 * fingerprints share at least `minVotes` landmarks at one offset, with the share of the shorter song's landmarks.
 */
import { LANDMARK_PARAMS, type LandmarkIndex, LandmarkMatcher, type Landmarks } from '@polyphony/landmarks';

/** Default thresholds of the test: at least 10 aligned landmarks (the matcher's minVotes) and 10 % of the span's. */
export const SAME_RECORDING_DEFAULTS = Object.freeze({ minVotes: 10, minShare: 0.1 });

/** One evaluation of the test, kept for the report's distribution. */
export interface SameRecordingCheck {
  truth: number;
  answer: number;
  /** Stored landmarks of the true song in the clip's span. */
  spanLandmarks: number;
  /** Of those, aligned in the answer's stored landmarks at its best offset. */
  votes: number;
  same: boolean;
}

/** The stored landmarks of `lm` whose anchor frame lies in [from, to). */
function span(lm: Landmarks, from: number, to: number): Landmarks {
  let lo = 0;
  while (lo < lm.times.length && lm.times[lo]! < from) lo++;
  let hi = lo;
  while (hi < lm.times.length && lm.times[hi]! < to) hi++;
  return { hashes: lm.hashes.subarray(lo, hi), times: lm.times.subarray(lo, hi) };
}

/**
 * The test over a library: `stored[row]` are the library's stored landmarks and `index` their index (rows = positions
 * in `stored`). `same(truth, startSample, seconds, answer)` says whether `answer` holds the material of the clip of
 * `seconds` cut from song `truth` at `startSample` (16 kHz samples); every evaluation is appended to `checks`.
 */
export function sameRecordingTest(stored: readonly Landmarks[], index: LandmarkIndex, options = SAME_RECORDING_DEFAULTS) {
  const matcher = new LandmarkMatcher(index);
  const checks: SameRecordingCheck[] = [];
  const hop = LANDMARK_PARAMS.hopSamples;
  const same = (truth: number, startSample: number, seconds: number, answer: number): boolean => {
    if (answer === truth) return true;
    const from = Math.floor(startSample / hop);
    const to = Math.ceil((startSample + seconds * LANDMARK_PARAMS.sampleRateHz) / hop);
    const lm = span(stored[truth]!, from, to);
    const report = matcher.matchLandmarks(lm, { allow: (row) => row !== truth, maxResults: 64, minVotes: 0, minLead: 0 });
    const votes = report.results.find((r) => r.row === answer)?.votes ?? 0;
    const ok = votes >= options.minVotes && votes >= options.minShare * lm.hashes.length;
    checks.push({ truth, answer, spanLandmarks: lm.hashes.length, votes, same: ok });
    return ok;
  };
  return { same, checks };
}

/**
 * Song pairs of the library that share material: for every song, its whole stored fingerprint searched with the song
 * hidden; pairs (a < b) where either direction finds the other with at least `minVotes` aligned landmarks, with the
 * larger share of the searching song's landmarks. Evidence for the README, not used by the test.
 */
export function sameRecordingPairs(stored: readonly Landmarks[], index: LandmarkIndex, minVotes = SAME_RECORDING_DEFAULTS.minVotes): Array<{ a: number; b: number; votes: number; share: number }> {
  const matcher = new LandmarkMatcher(index);
  const pairs = new Map<string, { a: number; b: number; votes: number; share: number }>();
  stored.forEach((lm, row) => {
    const report = matcher.matchLandmarks(lm, { allow: (r) => r !== row, maxResults: 5, minVotes: 0, minLead: 0 });
    for (const r of report.results) {
      if (r.votes < minVotes) continue;
      const [a, b] = row < r.row ? [row, r.row] : [r.row, row];
      const share = r.votes / Math.max(1, lm.hashes.length);
      const prev = pairs.get(`${a}:${b}`);
      if (!prev || share > prev.share) pairs.set(`${a}:${b}`, { a, b, votes: r.votes, share: +share.toFixed(3) });
    }
  });
  return [...pairs.values()].sort((x, y) => y.share - x.share);
}
