/**
 * Worker-thread side of recording matching (`MatchThread` in match-thread.ts): holds the fingerprint indexes the main
 * thread sends (`load`: a `LandmarkIndexShape`, the offsets copied, the postings file's descriptor shared) and
 * answers `match` (a clip's PCM, transferred) and `matchLandmarks` (a stored song's landmarks) with the matcher's
 * report, under the availability mask the main thread evaluated (one byte per row, 1 = visible). `drop` releases an
 * index. Errors are answered as `{ id, error }`.
 */
import { parentPort } from 'node:worker_threads';
import { LandmarkIndex, LandmarkMatcher, type LandmarkIndexShape, type Landmarks, type MatchOptions } from '@polyphony/landmarks';
import type { MatchRequest } from './match-thread';

const matchers = new Map<number, LandmarkMatcher>();

parentPort?.on('message', (msg: MatchRequest) => {
  try {
    if (msg.kind === 'load') {
      matchers.set(msg.handle, new LandmarkMatcher(LandmarkIndex.fromShape(msg.shape as LandmarkIndexShape)));
      parentPort!.postMessage({ id: msg.id, report: null });
      return;
    }
    if (msg.kind === 'drop') {
      matchers.delete(msg.handle);
      return;
    }
    const matcher = matchers.get(msg.handle);
    if (!matcher) throw new Error(`no fingerprint index ${msg.handle} in the match thread`);
    const mask = msg.mask;
    const options: MatchOptions = { ...msg.options, ...(mask ? { allow: (row: number) => mask[row] === 1 } : {}) };
    const report = msg.kind === 'match' ? matcher.match(msg.pcm, options) : matcher.matchLandmarks(msg.landmarks as Landmarks, options);
    parentPort!.postMessage({ id: msg.id, report });
  } catch (err) {
    parentPort!.postMessage({ id: 'id' in msg ? msg.id : -1, error: (err as Error).message });
  }
});
