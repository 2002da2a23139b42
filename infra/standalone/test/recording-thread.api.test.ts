import request from 'supertest';
import { LANDMARK_PARAMS } from '@polyphony/landmarks';
import { addNoise, syntheticNotesPcm, wavBytes, type TestDatabase } from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { API_TOKEN, startTestStack } from './helpers';
import { rebuildIndex, seedRecordingLibrary } from './recording-seed';

/**
 * Search by recording with the matching in a worker thread (`RECORDING_MATCH_THREAD=1`, postings in a file:
 * `RECORDING_POSTINGS_RESIDENT_MIB=0`, as a large library holds them) through the gateway and the real API routes.
 * A second install on the same database with the matching on the event loop (the default) is the control: every
 * clip gets the same answer, row for row, from both. Checked besides: the documented 400/413/415 answers with the
 * thread on (503 `index_not_ready` before a load is the unit test's: here the empty first generation loads at once), by_track through the thread, and a match thread that stops
 * (as a crash stops it): between queries the next query is answered (the index is sent to a new thread), during a
 * query that query is a 503 `match_unavailable` in the error envelope, never a 500.
 * Seeded catalogue (recording-seed.ts): 8 synthetic 40 s songs, Alpha holds 0-5, Beta 3-7, song 6 unprinted,
 * song 7 repeats 15 s of song 2.
 */
const SR = LANDMARK_PARAMS.sampleRateHz;
const N = 8;

/** Roughly the 300-3400 Hz band a phone passes (one-pole high-pass and low-pass), so the thread is tested on a degraded clip too. */
function telephoneBand(pcm: Float32Array): Float32Array {
  const out = new Float32Array(pcm.length);
  const hp = Math.exp((-2 * Math.PI * 300) / SR);
  const lp = 1 - Math.exp((-2 * Math.PI * 3400) / SR);
  let x1 = 0, y1 = 0, z = 0;
  for (let i = 0; i < pcm.length; i++) {
    const y = hp * (y1 + pcm[i]! - x1);
    x1 = pcm[i]!;
    y1 = y;
    z += lp * (y - z);
    out[i] = z;
  }
  return out;
}

/** The part of the index service this test stops: its recording match thread (private; reached for the fault). */
interface MatchThreadHandle {
  match: (...args: unknown[]) => Promise<unknown>;
  close(): Promise<void>;
}

describe('search by recording with RECORDING_MATCH_THREAD=1 through the gateway', () => {
  jest.setTimeout(300_000);
  let threaded: { stack: Stack; url: string };
  let onLoop: { stack: Stack; url: string };
  let db: TestDatabase;
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  const songs = Array.from({ length: N }, (_, i) => syntheticNotesPcm(500 + i, 40));
  songs[7]!.set(songs[2]!.subarray(10 * SR, 25 * SR), 20 * SR);
  const search = (url: string, query: string, clip: Buffer) => request(url).post(`/api/recording_search/search${query}`).set(auth).attach('clip', clip, { filename: 'clip.wav', contentType: 'audio/wav' });
  const threadOf = (stack: Stack): MatchThreadHandle => {
    const thread = (stack.units.index as unknown as { recording: { thread?: MatchThreadHandle } }).recording.thread;
    if (!thread) throw new Error('the index service runs no match thread: RECORDING_MATCH_THREAD=1 was not applied');
    return thread;
  };
  const clips: Array<[string, string, Buffer]> = [
    ['?server=Alpha', 'a-4', wavBytes(addNoise(songs[4]!.slice(17 * SR, 27 * SR), 10, 1))],
    ['?server=Beta', 'b-5', wavBytes(telephoneBand(addNoise(songs[5]!.slice(3 * SR, 13 * SR), 10, 2)))],
    ['?server=Alpha', 'a-0', wavBytes(songs[0]!.slice(25 * SR, 33 * SR))],
  ];

  beforeAll(async () => {
    const env = { RECORDING_MATCH_THREAD: '1', RECORDING_POSTINGS_RESIDENT_MIB: '0', RECORDING_MAX_CLIP_SECONDS: '15' };
    const started = await startTestStack(env);
    db = started.db;
    threaded = started;
    await seedRecordingLibrary(threaded.stack, db, threaded.url, songs);
    await rebuildIndex(threaded.url, N);
    onLoop = await startTestStack({ RECORDING_MAX_CLIP_SECONDS: '15' }, db);
    for (const { url } of [threaded, onLoop]) expect((await request(url).post('/api/recording_search/warmup?server=Alpha').set(auth).send({}).expect(200)).body).toMatchObject({ status: 'ready', fingerprinted_songs: N - 1 });
  }, 300_000);
  afterAll(async () => {
    await threaded?.stack.stop();
    await onLoop?.stack.stop();
    await db?.drop();
  });

  it('When clips are searched with the match thread on, then each answer equals the event loop install\'s, and the songs are identified in the server ids', async () => {
    for (const [query, id, clip] of clips) {
      const inThread = await search(threaded.url, query, clip).expect(200);
      const control = await search(onLoop.url, query, clip).expect(200);
      expect(inThread.body).toEqual(control.body);
      expect(inThread.body.results[0]).toMatchObject({ item_id: id, identified: true });
    }
    // Music outside the library: no match on both.
    const unknown = wavBytes(syntheticNotesPcm(4242, 10));
    const inThread = await search(threaded.url, '?server=Alpha', unknown).expect(200);
    expect(inThread.body).toEqual((await search(onLoop.url, '?server=Alpha', unknown).expect(200)).body);
    expect(inThread.body.results.some((r: { identified: boolean }) => r.identified)).toBe(false);
    // by_track (a stored song's own fingerprint as the query) through the thread too.
    const byTrack = await request(threaded.url).post('/api/recording_search/by_track?server=Alpha').set(auth).send({ item_id: 'a-2', n_results: 10 }).expect(200);
    expect(byTrack.body).toEqual((await request(onLoop.url).post('/api/recording_search/by_track?server=Alpha').set(auth).send({ item_id: 'a-2', n_results: 10 }).expect(200)).body);
  });

  it('When the clip is bad with the match thread on, then the documented 400/413/415 answers come back in the error envelope', async () => {
    const url = threaded.url;
    expect((await search(url, '', Buffer.from('definitely not audio '.repeat(100))).expect(400)).body).toMatchObject({ code: 'bad_clip', request_id: expect.any(String) });
    expect((await search(url, '', wavBytes(songs[0]!.slice(0, SR))).expect(400)).body.code).toBe('clip_too_short');
    expect((await search(url, '', wavBytes(new Float32Array(3 * SR))).expect(400)).body.code).toBe('clip_silent');
    expect((await search(url, '', wavBytes(songs[0]!.slice(0, 16 * SR))).expect(413)).body.code).toBe('clip_too_long');
    expect((await request(url).post('/api/recording_search/search').set(auth).send({ clip: 'abc' }).expect(415)).body.code).toBe('unsupported_media_type');
    await request(url).post('/api/recording_search/by_track').set(auth).send({ item_id: 'nope' }).expect(404);
  });

  it('When the match thread stops, then a query in flight is a 503 match_unavailable and the next queries are answered by a new thread', async () => {
    const [query, , clip] = clips[0]!;
    const expected = (await search(onLoop.url, query, clip).expect(200)).body;
    const thread = threadOf(threaded.stack);
    // Stopped between queries: the next query starts a new worker and sends it the index again.
    await thread.close();
    expect((await search(threaded.url, query, clip).expect(200)).body).toEqual(expected);
    // Stopped during a query (the worker terminated right after the clip was posted to it, as a crash would stop it).
    const match = thread.match;
    thread.match = (...args: unknown[]) => {
      const answer = match.apply(thread, args);
      void thread.close();
      return answer;
    };
    let failed: request.Response;
    try {
      failed = await search(threaded.url, query, clip);
    } finally {
      thread.match = match;
    }
    expect(failed.status).toBe(503);
    expect(failed.body).toMatchObject({ code: 'match_unavailable', request_id: expect.any(String) });
    expect(failed.headers['retry-after']).toBe('5'); // a fault's 503: the client may retry (docs/operations.md)
    expect((await search(threaded.url, query, clip).expect(200)).body).toEqual(expected);
    expect((await request(threaded.url).get('/api/recording_search/status?server=Alpha').set(auth).expect(200)).body.status).toBe('ready');
  });
});
