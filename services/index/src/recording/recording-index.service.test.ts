/**
 * The fingerprint index of a generation (search by recording): loaded from the catalogue's pages in two passes,
 * queried under the selected server's availability mask and answered in its provider ids; 503 while nothing is
 * loaded; by_track leaves the seed out.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FingerprintPage, StoredFingerprint } from '@polyphony/contracts';
import { LANDMARK_CODEC_VERSION, LANDMARK_PARAMS, encodeLandmarks, extractLandmarks } from '@polyphony/landmarks';
import { AppError, createLogger } from '@polyphony/platform';
import { AvailabilityMask } from '@polyphony/vector-engine';
import { syntheticNotesPcm } from '@polyphony/testkit';
import { IndexState, emptyGeneration, type Generation } from '../core/generation';
import { RequestScope } from '../core/scope';
import type { TrackMeta } from '../core/ports';
import { RecordingIndexService, type FingerprintSource } from './recording-index.service';

const SR = LANDMARK_PARAMS.sampleRateHz;
const LIMITS = { maxUploadBytes: 1 << 20, maxClipSeconds: 60, minClipSeconds: 2 };

const N = 6;
const ids = Array.from({ length: N }, (_, i) => `fp_song${i}`);
const songs = ids.map((_, i) => syntheticNotesPcm(100 + i, 40));
// Song 5 repeats 15 s of song 2 (from 10 s) at its own 20 s: a song sharing recorded material.
songs[5]!.set(songs[2]!.subarray(10 * SR, 25 * SR), 20 * SR);

function blobOf(pcm: Float32Array): string {
  return Buffer.from(encodeLandmarks(extractLandmarks(pcm, LANDMARK_PARAMS.store))).toString('base64');
}

/** A generation of N rows; server "A" holds rows 0-4 as `a<row>`, server "B" rows 3-5 as `b<row>`. */
function generation(n: number): Generation {
  const base = emptyGeneration();
  const on = (server: string | undefined, row: number) => (server === 'A' ? row <= 4 : server === 'B' ? row >= 3 : true);
  const fake = {
    ...base,
    generation: n,
    index: { size: N, rowOf: (id: string) => ids.indexOf(id), idOf: (row: number) => ids[row]! },
    maps: {
      mask: (server: string | undefined) => AvailabilityMask.fromRows(N, Array.from({ length: N }, (_, r) => r).filter((r) => on(server, r))),
      providerOf: (server: string | undefined, row: number) => (on(server, row) ? `${(server ?? 'a').toLowerCase()}${row}` : undefined),
      rowOfProvider: (server: string | undefined, provider: string) => {
        const row = Number(provider.slice(1));
        return provider[0] === (server ?? 'a').toLowerCase() && on(server, row) ? row : -1;
      },
    },
    meta: { get: (row: number, itemId: string): TrackMeta => ({ itemId, title: `Song ${row}`, artist: 'Artist', album: 'Album', albumArtist: null, moodVector: null, otherFeatures: null, tempo: null, energy: null }) },
  };
  return fake as unknown as Generation;
}

/** The catalogue's pages over songs 0-4 (song 5 has no fingerprint until `withSong5`). */
function source(options: { pageSize?: number; block?: Promise<void>; staleCodec?: string } = {}): FingerprintSource & { withSong5(): void; pages: number } {
  const stored = new Map<string, string>(ids.slice(0, 5).map((id, i) => [id, blobOf(songs[i]!)]));
  // `staleCodec`: that song's print is of the previous codec (its version byte and its page entry say so).
  const codecOf = (itemId: string) => (itemId === options.staleCodec ? LANDMARK_CODEC_VERSION - 1 : LANDMARK_CODEC_VERSION);
  if (options.staleCodec) {
    const bytes = Buffer.from(stored.get(options.staleCodec)!, 'base64');
    bytes[0] = LANDMARK_CODEC_VERSION - 1;
    stored.set(options.staleCodec, bytes.toString('base64'));
  }
  const src = {
    pages: 0,
    withSong5: () => stored.set(ids[5]!, blobOf(songs[5]!)),
    async fingerprintPage(after: string | null, limit: number): Promise<FingerprintPage> {
      await options.block;
      src.pages++;
      const keys = [...stored.keys()].sort().filter((k) => after === null || k > after);
      const page = keys.slice(0, limit);
      return { items: page.map((itemId) => ({ itemId, codec: codecOf(itemId), blob: stored.get(itemId)! })), next: page.length === limit && keys.length > limit ? page[page.length - 1]! : null };
    },
    async fingerprint(itemId: string): Promise<StoredFingerprint | undefined> {
      const blob = stored.get(itemId);
      return blob === undefined ? undefined : { itemId, codec: codecOf(itemId), landmarks: 0, seconds: 40, blob };
    },
  };
  return src;
}

const logger = createLogger({ service: 'test', level: 'error' });
const deps = { tracks: {} as never };

describe('RecordingIndexService', () => {
  it('When a generation is swapped in, then its fingerprints load in two passes of pages and a clip cut from a song identifies it in the server ids, at its offset', async () => {
    const state = new IndexState(emptyGeneration());
    const src = source();
    const service = new RecordingIndexService(state, src, deps, LIMITS, logger, 2);
    const gen = generation(7);
    state.swap(gen);
    const status = await service.warmup(new RequestScope(gen, 'A', deps));
    // 5 songs in pages of 2: 3 pages per pass, two passes.
    expect(src.pages).toBe(6);
    expect(status).toMatchObject({ status: 'ready', generation: 7, fingerprinted_songs: 5, available_songs: 5, total_songs: N });
    expect(status.landmarks).toBeGreaterThan(0);
    expect(status.memory_bytes).toBeGreaterThan(4 * 1024 * 1024);

    const clip = songs[3]!.slice(12 * SR, 22 * SR);
    const onA = await service.search(new RequestScope(gen, 'A', deps), clip, 100);
    expect(onA[0]).toMatchObject({ item_id: 'a3', title: 'Song 3', author: 'Artist', album: 'Album', identified: true });
    expect(onA[0]!.offset_seconds).toBeCloseTo(12, 0);
    expect(onA[0]!.votes).toBeGreaterThanOrEqual(10);
    expect(onA[0]!.score).toBeGreaterThan(0);
    expect(onA[0]!.score).toBeLessThanOrEqual(1);
    const onB = await service.search(new RequestScope(gen, 'B', deps), clip, 100);
    expect(onB[0]).toMatchObject({ item_id: 'b3', identified: true });
    // n_results bounds the rows.
    expect(await service.search(new RequestScope(gen, 'A', deps), clip, 1)).toHaveLength(1);
  });

  it('When a song\'s stored print is of an earlier codec, then the index leaves it out (not counted, never answered) until the backfill re-makes it', async () => {
    const gen = generation(8);
    const service = new RecordingIndexService(new IndexState(gen), source({ staleCodec: ids[4] }), deps, LIMITS, logger);
    const scope = new RequestScope(gen, 'A', deps);
    expect(await service.warmup(scope)).toMatchObject({ status: 'ready', fingerprinted_songs: 4 });
    const results = await service.search(scope, songs[4]!.slice(12 * SR, 22 * SR), 100);
    expect(results.find((r) => r.item_id === 'a4')).toBeUndefined();
    expect(results[0]?.identified ?? false).toBe(false);
    // The current songs are still found.
    expect((await service.search(scope, songs[3]!.slice(12 * SR, 22 * SR), 100))[0]).toMatchObject({ item_id: 'a3', identified: true });
  });

  it('When the postings exceed the resident budget, then they live in an unlinked file, memory_bytes drops by their size and the answers are the same', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'recording-postings-'));
    try {
      const gen = generation(9);
      const inMemory = new RecordingIndexService(new IndexState(gen), source(), deps, LIMITS, logger);
      const onDisk = new RecordingIndexService(new IndexState(gen), source(), deps, LIMITS, logger, 500, { residentMiB: 0, dir });
      const scope = new RequestScope(gen, 'A', deps);
      const [mem, disk] = [await inMemory.warmup(scope), await onDisk.warmup(scope)];
      expect(disk.landmarks).toBe(mem.landmarks);
      expect(mem.memory_bytes - disk.memory_bytes).toBe(4 * mem.landmarks);
      expect(readdirSync(dir)).toEqual([]); // the file is unlinked at once: nothing is left behind
      for (const [row, start] of [[3, 12], [0, 4], [4, 20]] as const) {
        const clip = songs[row]!.slice(start * SR, (start + 10) * SR);
        const answer = await onDisk.search(scope, clip, 10);
        expect(answer[0]).toMatchObject({ item_id: `a${row}`, identified: true });
        expect(answer).toEqual(await inMemory.search(scope, clip, 10));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('When matching runs in a worker thread on file-backed postings, then the answers are the same and the event loop serves other work while a match runs', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'recording-thread-'));
    const gen = generation(11);
    const onLoop = new RecordingIndexService(new IndexState(gen), source(), deps, LIMITS, logger);
    const threaded = new RecordingIndexService(new IndexState(gen), source(), deps, LIMITS, logger, 500, { residentMiB: 0, dir, matchThread: true });
    try {
      const scope = new RequestScope(gen, 'B', deps);
      await onLoop.warmup(scope);
      expect((await threaded.warmup(scope)).status).toBe('ready');
      for (const [row, start] of [[3, 12], [1, 5]] as const) {
        const clip = songs[row]!.slice(start * SR, (start + 10) * SR);
        expect(await threaded.search(scope, clip, 10)).toEqual(await onLoop.search(scope, clip, 10));
      }
      expect(await threaded.byTrack(new RequestScope(gen, undefined, deps), 'a2', 10)).toEqual(await onLoop.byTrack(new RequestScope(gen, undefined, deps), 'a2', 10));
      // A 30 s clip searched over the whole speed grid takes tens of ms: on the event loop, the answer would be settled
      // before the next turn of the loop; in the thread, the loop turns and answers a status request meanwhile.
      let settled = false;
      const pending = threaded.search(scope, syntheticNotesPcm(777, 30), 10).then((rows) => {
        settled = true;
        return rows;
      });
      await new Promise((r) => setImmediate(r));
      expect(threaded.status(scope).status).toBe('ready');
      expect(settled).toBe(false);
      expect((await pending).some((r) => r.identified)).toBe(false);
      let onLoopSettled = false;
      const blocking = onLoop.search(scope, syntheticNotesPcm(777, 30), 10).then(() => (onLoopSettled = true));
      await new Promise((r) => setImmediate(r));
      expect(onLoopSettled).toBe(true); // the control: on the event loop the match held the loop until it was done
      await blocking;
    } finally {
      await threaded.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('When the match thread stops during a query, then that query is a 503 match_unavailable and the next one is answered by a new thread with the index sent again', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'recording-thread-'));
    const gen = generation(12);
    const onLoop = new RecordingIndexService(new IndexState(gen), source(), deps, LIMITS, logger);
    const threaded = new RecordingIndexService(new IndexState(gen), source(), deps, LIMITS, logger, 500, { residentMiB: 0, dir, matchThread: true });
    const thread = (threaded as unknown as { thread: { close(): Promise<void> } }).thread;
    try {
      const scope = new RequestScope(gen, 'A', deps);
      await onLoop.warmup(scope);
      await threaded.warmup(scope);
      const clip = songs[2]!.slice(8 * SR, 18 * SR);
      const expected = await onLoop.search(scope, clip, 10);
      expect(expected[0]).toMatchObject({ item_id: 'a2', identified: true });
      // The worker is terminated while the query is in flight (as a crash would stop it): that query has no answer.
      const inFlight = threaded.search(scope, clip, 10);
      await thread.close();
      await expect(inFlight).rejects.toMatchObject({ code: 'match_unavailable', httpStatus: 503 });
      // The next queries start a new worker, which gets the index again (once for two concurrent queries).
      const [again, other] = await Promise.all([threaded.search(scope, clip, 10), threaded.byTrack(new RequestScope(gen, undefined, deps), 'a2', 10)]);
      expect(again).toEqual(expected);
      expect(other).toEqual(await onLoop.byTrack(new RequestScope(gen, undefined, deps), 'a2', 10));
      // A worker stopped between queries (not during one) costs no failed query.
      await thread.close();
      expect(await threaded.search(scope, clip, 10)).toEqual(expected);
    } finally {
      await threaded.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('When the song of a clip is not available on the selected server, then it neither appears nor is identified there', async () => {
    const state = new IndexState(emptyGeneration());
    const service = new RecordingIndexService(state, source(), deps, LIMITS, logger);
    const gen = generation(8);
    state.swap(gen);
    await service.warmup(new RequestScope(gen, 'B', deps));
    const clip = songs[1]!.slice(5 * SR, 15 * SR);
    const onB = await service.search(new RequestScope(gen, 'B', deps), clip, 100);
    expect(onB.map((r) => r.item_id)).not.toContain('b1');
    expect(onB.some((r) => r.identified)).toBe(false);
    // Music outside the library: no match.
    const foreign = await service.search(new RequestScope(gen, 'A', deps), syntheticNotesPcm(999, 10), 100);
    expect(foreign.some((r) => r.identified)).toBe(false);
  });

  it('When nothing is loaded yet, then a search is a 503 index_not_ready and the status says loading', async () => {
    const state = new IndexState(emptyGeneration());
    let release!: () => void;
    const block = new Promise<void>((r) => (release = r));
    const service = new RecordingIndexService(state, source({ block }), deps, LIMITS, logger);
    const before = new RequestScope(state.current(), 'A', deps);
    expect(service.status(before).status).toBe('not_loaded');
    const gen = generation(9);
    state.swap(gen);
    const scope = new RequestScope(gen, 'A', deps);
    expect(service.status(scope).status).toBe('loading');
    let err: unknown;
    try {
      await service.search(scope, songs[0]!.slice(0, 10 * SR), 10);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'index_not_ready', httpStatus: 503 });
    release();
    expect((await service.warmup(scope)).status).toBe('ready');
  });

  it('When by_track is asked for a song, then the song sharing its material comes back and the song itself never does', async () => {
    const state = new IndexState(emptyGeneration());
    const src = source();
    src.withSong5();
    const service = new RecordingIndexService(state, src, deps, LIMITS, logger);
    const gen = generation(10);
    state.swap(gen);
    await service.warmup(new RequestScope(gen, 'B', deps));
    // Song 2 is not on B, song 5 is: seeds are B's ids, so ask on the default server view (all rows, `a` ids).
    const rows = await service.byTrack(new RequestScope(gen, undefined, deps), 'a5', 10);
    expect(rows.map((r) => r.item_id)).toEqual(['a2']);
    expect(rows[0]!.offset_seconds).toBeCloseTo(0, 0);
    const back = await service.byTrack(new RequestScope(gen, undefined, deps), 'a2', 10);
    expect(back.map((r) => r.item_id)).toEqual(['a5']);
    await expect(service.byTrack(new RequestScope(gen, undefined, deps), 'zz', 10)).rejects.toMatchObject({ httpStatus: 404 });
    // Songs with a fingerprint, for search_tracks?index=neural.
    const printed = await service.printedRows(gen);
    expect([0, 1, 2, 3, 4, 5].map(printed)).toEqual([true, true, true, true, true, true]);
  });
});
