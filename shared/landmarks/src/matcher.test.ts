import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { addNoise, syntheticNotesPcm } from '@polyphony/testkit';
import { changeSpeed, extractLandmarks, extractPeaks, scalePeaks, type Landmarks } from './extract';
import { LandmarkIndex } from './landmark-index';
import { LandmarkMatcher, queryLandmarks, SAME_MATERIAL_MIN_VOTES } from './matcher';
import { FRAME_SECONDS, LANDMARK_PARAMS } from './params';

const SR = LANDMARK_PARAMS.sampleRateHz;
const SONGS = 8;
const songs = Array.from({ length: SONGS }, (_, i) => syntheticNotesPcm(100 + i, 30));
const stored: Landmarks[] = songs.map((pcm) => extractLandmarks(pcm));
const index = LandmarkIndex.build(() => stored.map((lm, row) => [row, lm] as const));
const matcher = new LandmarkMatcher(index);

function clip(pcm: Float32Array, startSeconds: number, seconds: number): Float32Array {
  return pcm.slice(Math.round(startSeconds * SR), Math.round((startSeconds + seconds) * SR));
}

describe('landmark extraction', () => {
  it('When a song is fingerprinted twice, then the landmarks are identical, sorted, and about 5-15 per second', () => {
    const again = extractLandmarks(songs[0]!);
    expect(Array.from(again.hashes)).toEqual(Array.from(stored[0]!.hashes));
    const perSecond = again.hashes.length / 30;
    expect(perSecond).toBeGreaterThan(5);
    expect(perSecond).toBeLessThan(16);
    for (let i = 1; i < again.times.length; i++) expect(again.times[i]! >= again.times[i - 1]!).toBe(true);
  });

  it('When the level changes by -12 dB, then nearly all landmarks stay the same', () => {
    const quiet = extractLandmarks(songs[1]!.map((v) => v / 4));
    const keys = new Set(Array.from(stored[1]!.hashes, (h, i) => `${h}@${stored[1]!.times[i]}`));
    const shared = Array.from(quiet.hashes, (h, i) => `${h}@${quiet.times[i]}`).filter((k) => keys.has(k)).length;
    expect(shared / stored[1]!.hashes.length).toBeGreaterThan(0.95);
  });

  it('When the audio is digital silence or shorter than one frame, then there are no landmarks', () => {
    expect(extractLandmarks(new Float32Array(SR * 5)).hashes.length).toBe(0);
    expect(extractLandmarks(new Float32Array(100)).hashes.length).toBe(0);
  });
});

describe(LandmarkMatcher.name, () => {
  it('When a 10-second clip of a stored song is searched, then that song is identified at the clip offset', () => {
    for (const [row, start] of [[3, 12.3], [7, 0], [6, 19.5]] as const) {
      const report = matcher.match(clip(songs[row]!, start, 10));
      expect(report.results[0]).toMatchObject({ row, identified: true, speed: 1 });
      expect(Math.abs(report.results[0]!.offsetSeconds - start)).toBeLessThan(2 * FRAME_SECONDS);
    }
  });

  it('When the clip carries noise at 5 dB SNR, then the song is still identified', () => {
    const report = matcher.match(addNoise(clip(songs[5]!, 8, 10), 5, 9));
    expect(report.results[0]).toMatchObject({ row: 5, identified: true });
  });

  it('When the clip plays 1.5 % fast, then the speed grid finds the song and reports the speed that undid it', () => {
    const fast = changeSpeed(clip(songs[2]!, 10, 12), 1.015);
    const report = matcher.match(fast);
    expect(report.results[0]).toMatchObject({ row: 2, identified: true });
    expect(Math.abs(report.results[0]!.speed * 1.015 - 1)).toBeLessThan(0.006);
    const atOwnSpeed = matcher.match(fast, { speeds: [1] });
    expect(atOwnSpeed.results[0]?.votes ?? 0).toBeLessThan(report.results[0]!.votes);
  });

  it('When the clip comes from a song that is not in the index, then the answer is "no match"', () => {
    for (let seed = 900; seed < 903; seed++) {
      const report = matcher.match(clip(syntheticNotesPcm(seed, 20), 5, 10));
      expect(report.results[0]?.identified ?? false).toBe(false);
    }
  });

  it('When the availability filter hides the song, then it is neither identified nor listed', () => {
    const report = matcher.match(clip(songs[4]!, 15, 10), { allow: (row) => row !== 4 });
    expect(report.results.map((r) => r.row)).not.toContain(4);
    expect(report.results[0]?.identified ?? false).toBe(false);
  });

  it('When the clip starts between two stored frames, then sub-frame shifts find more aligned landmarks, each stored landmark counted once', () => {
    const half = LANDMARK_PARAMS.hopSamples / 2;
    const start = Math.round(9 * SR) + half;
    const pcm = addNoise(songs[3]!.slice(start, start + 10 * SR), 10, 4);
    const one = matcher.match(pcm, { speeds: [1], shifts: 1 }).results[0]!;
    const four = matcher.match(pcm, { speeds: [1], shifts: 4 }).results[0]!;
    expect(four).toMatchObject({ row: 3, identified: true });
    expect(four.votes).toBeGreaterThanOrEqual(one.votes);
    // Votes are distinct stored landmarks: never more than the song stores within the clip's span.
    const first = Math.floor(start / LANDMARK_PARAMS.hopSamples) - 2;
    const last = first + Math.ceil((10 * SR) / LANDMARK_PARAMS.hopSamples) + 4;
    const storedInSpan = Array.from(stored[3]!.times).filter((t) => t >= first && t <= last).length;
    expect(four.votes).toBeLessThanOrEqual(storedInSpan);
  });

  it('When query landmarks are taken over 4 shifts, then they include the unshifted ones, sorted and without duplicates', () => {
    const pcm = clip(songs[0]!, 3, 5);
    const one = queryLandmarks(pcm, 1);
    const four = queryLandmarks(pcm, 4);
    const keys = new Set(Array.from(four.hashes, (h, i) => `${h}@${four.times[i]}`));
    expect(keys.size).toBe(four.hashes.length);
    for (let i = 0; i < one.hashes.length; i++) expect(keys.has(`${one.hashes[i]}@${one.times[i]}`)).toBe(true);
    expect(four.hashes.length).toBeGreaterThan(one.hashes.length);
    for (let i = 1; i < four.times.length; i++) expect(four.times[i]! >= four.times[i - 1]!).toBe(true);
  });

  it('When the postings are moved to a file, then the process keeps only the offsets and every answer is the same', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'landmarks-test-'));
    try {
      const onFile = index.toFile(dir);
      expect(onFile.resident).toBe(false);
      expect(onFile.bytes).toBe(index.bytes - index.size * 4);
      expect(onFile.fileBytes).toBe(index.size * 4);
      const fileMatcher = new LandmarkMatcher(onFile);
      const clips = [clip(songs[3]!, 12.3, 10), addNoise(clip(songs[5]!, 8, 10), 5, 9), changeSpeed(clip(songs[2]!, 10, 12), 1.015), clip(syntheticNotesPcm(901, 20), 5, 10)];
      for (const pcm of clips) expect(fileMatcher.match(pcm, { allow: (r) => r !== 6 })).toEqual(matcher.match(pcm, { allow: (r) => r !== 6 }));
      expect(fileMatcher.matchLandmarks(stored[1]!)).toEqual(matcher.matchLandmarks(stored[1]!));
      onFile.close();
      expect(() => fileMatcher.match(clips[0]!)).toThrow(/closed/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('When peaks are mapped to another speed, then they agree with the peaks of the resampled clip as well as two analyses of one clip half a hop apart do', () => {
    const pcm = clip(songs[6]!, 4, 8);
    const agree = (a: readonly { t: number; f: number }[], b: readonly { t: number; f: number }[]) => b.filter((p) => a.some((m) => Math.abs(m.t - p.t) <= 1 && m.f === p.f)).length / b.length;
    const peaks = extractPeaks(pcm, LANDMARK_PARAMS.query);
    // Peak picking itself moves with the analysis grid: the same clip half a hop later keeps only part of its peaks.
    const baseline = agree(peaks, extractPeaks(pcm.subarray(LANDMARK_PARAMS.hopSamples / 2), LANDMARK_PARAMS.query));
    for (const speed of [0.98, 1.015]) {
      const resampled = extractPeaks(changeSpeed(pcm, speed), LANDMARK_PARAMS.query);
      const mapped = agree(scalePeaks(peaks, speed), resampled);
      expect(mapped).toBeGreaterThan(0.8 * baseline);
      // The mapping matters: the speed-1 peaks as they are agree less with the resampled clip's.
      expect(agree(peaks, resampled)).toBeLessThan(mapped);
    }
  });

  it('When the grid maps the speed-1 peaks instead of resampling the clip, then a clip 2 % slow is identified either way', () => {
    const slow = changeSpeed(clip(songs[1]!, 6, 12), 0.98);
    const mapped = matcher.match(slow);
    const resampled = matcher.match(slow, { gridResample: true });
    expect(mapped.results[0]).toMatchObject({ row: 1, identified: true });
    expect(resampled.results[0]).toMatchObject({ row: 1, identified: true });
    expect(mapped.results[0]!.votes).toBeGreaterThanOrEqual(0.7 * resampled.results[0]!.votes);
  });

  it('When the grid is searched coarse-to-fine, then speed-changed clips get the full grid\'s song, speed, votes and offset', () => {
    const noExit = { earlyExitVotes: Number.POSITIVE_INFINITY };
    for (const [row, pcm] of [[1, changeSpeed(clip(songs[1]!, 6, 12), 0.98)], [2, changeSpeed(clip(songs[2]!, 10, 12), 1.015)], [4, addNoise(changeSpeed(clip(songs[4]!, 3, 10), 1.01), 10, 3)]] as const) {
      const full = matcher.match(pcm, { ...noExit, gridRefine: 0 });
      const refined = matcher.match(pcm, { ...noExit, gridRefine: 2 });
      expect(full.results[0]).toMatchObject({ row, identified: true });
      // The refined speed is searched with the same 4 shifts' landmarks as the full grid's: the same song, speed,
      // votes and offset (the lead may differ: other songs' best speeds need not be among the refined ones).
      const { row: r, votes, speed, offsetSeconds } = full.results[0]!;
      expect(refined.results[0]).toMatchObject({ row: r, votes, speed, offsetSeconds, identified: true });
      expect(refined.speedsSearched).toBe(full.speedsSearched);
    }
    // Music not in the index stays "no match".
    expect(matcher.match(clip(syntheticNotesPcm(903, 20), 5, 10), { gridRefine: 2 }).results[0]?.identified ?? false).toBe(false);
  });

  it('When the grid speeds are searched together in one walk, then with every row a candidate the answer equals searching them one after the other', () => {
    // 8 rows: all are candidates either way, so the union walk must give each row's votes, offset and speed exactly.
    const noExit = { earlyExitVotes: Number.POSITIVE_INFINITY, speeds: [1, 0.98, 0.99, 1.01, 1.02] };
    for (const pcm of [changeSpeed(clip(songs[1]!, 6, 12), 0.98), changeSpeed(clip(songs[2]!, 10, 12), 1.015), clip(syntheticNotesPcm(902, 20), 5, 10)]) {
      const together = matcher.match(pcm, { ...noExit, gridTogether: true, allow: (r) => r !== 7 });
      // The per-speed loop at every speed's 4 shifts (gridRefine 0; the default refines only the 2 best speeds).
      const oneByOne = matcher.match(pcm, { ...noExit, gridTogether: false, gridRefine: 0, allow: (r) => r !== 7 });
      expect(together.speedsSearched).toBe(5);
      expect(together).toEqual(oneByOne);
    }
    expect(matcher.match(changeSpeed(clip(songs[1]!, 6, 12), 0.98)).results[0]).toMatchObject({ row: 1, identified: true });
  });
  it('When the library holds the same recording twice, then a clip of it is identified as either copy and the other is listed as the same material, not as a competitor', () => {
    // Row 8 is song 3 again (its stored landmarks under a second row), as a remaster or a second album's copy would be.
    const twinIndex = LandmarkIndex.build(() => [...stored.map((lm, row) => [row, lm] as const), [SONGS, stored[3]!] as const]);
    const twinMatcher = new LandmarkMatcher(twinIndex);
    const pcm = addNoise(clip(songs[3]!, 12.3, 10), 10, 5);
    const report = twinMatcher.match(pcm);
    const [first, second, third] = report.results;
    expect([first!.row, second!.row].sort()).toEqual([3, SONGS]);
    expect(second!.votes).toBe(first!.votes);
    expect(second!.sameMaterial).toBe(true);
    expect(first!.sameMaterial).toBe(false);
    // The lead is over the best song that is not a copy.
    expect(first!.lead).toBe(first!.votes - (third?.votes ?? 0));
    expect(first!.identified).toBe(true);
    // Without the copy the answer and its lead are the same.
    const alone = matcher.match(pcm).results[0]!;
    expect(alone).toMatchObject({ row: 3, votes: first!.votes, lead: first!.lead, identified: true });
    // Different songs are not the same material: in the single-copy index no runner-up is marked (their votes are
    // chance hits, under SAME_MATERIAL_MIN_VOTES here, so this holds by the vote floor as well as by the share).
    expect(matcher.match(pcm).results.slice(1).filter((r) => r.sameMaterial)).toEqual([]);
    expect(SAME_MATERIAL_MIN_VOTES).toBeGreaterThan(0);
    // Music not in the index stays "no match" in the index with the copy.
    expect(twinMatcher.match(clip(syntheticNotesPcm(903, 20), 5, 10)).results[0]?.identified ?? false).toBe(false);
  });
});

