import request from 'supertest';
import { LANDMARK_CODEC_VERSION, LANDMARK_PARAMS } from '@polyphony/landmarks';
import { addNoise, syntheticNotesPcm, wavBytes, type TestDatabase } from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { API_TOKEN, loginCookie, startTestStack } from './helpers';
import { internalRequest, rebuildIndex, seedRecordingLibrary, seededItemId } from './recording-seed';

/**
 * Search by recording through the gateway (bearer token and a cookie, `server=`), on a seeded catalogue of 8
 * synthetic songs whose fingerprints are stored through the catalogue's internal route: Alpha holds songs 0-5 as
 * `a-<i>`, Beta songs 3-7 as `b-<i>`; song 6 has no fingerprint; song 7 repeats 15 s of song 2. Clips are WAV
 * files made here (a 10 s excerpt with noise at 10 dB SNR). Checked: identification and offset in each server's
 * ids, the availability mask, n_results, the 400/413/415 paths, by_track, status and warmup, search_tracks with
 * index=neural, /api/models and the dashboard counts (which leave out a print of an older codec version).
 */
const SR = LANDMARK_PARAMS.sampleRateHz;
const N = 8;
/** Upload limit of this stack (small, so a 413 needs no large body). */
const MAX_UPLOAD = 600 * 1024;

describe('search by recording through the gateway (seeded fingerprints)', () => {
  jest.setTimeout(300_000);
  let stack: Stack;
  let db: TestDatabase;
  let url: string;
  let cookie: string;
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  const itemId = seededItemId;
  const songs = Array.from({ length: N }, (_, i) => syntheticNotesPcm(500 + i, 40));
  songs[7]!.set(songs[2]!.subarray(10 * SR, 25 * SR), 20 * SR);

  const internal = (method: 'put' | 'get', path: string) => internalRequest(stack, method, path);
  const search = (query: string, clip: Buffer, headers: Record<string, string> = auth, filename = 'clip.wav') => request(url).post(`/api/recording_search/search${query}`).set(headers).attach('clip', clip, { filename, contentType: 'audio/wav' });

  beforeAll(async () => {
    ({ stack, db, url } = await startTestStack({ RECORDING_MAX_UPLOAD_BYTES: String(MAX_UPLOAD), RECORDING_MAX_CLIP_SECONDS: '15' }));
    await seedRecordingLibrary(stack, db, url, songs);
    await request(url).post('/api/users').set(auth).send({ username: 'listener', password: 'listener-pw-1', role: 'user' }).expect(201);
    cookie = await loginCookie(url, 'listener', 'listener-pw-1');
    await internal('put', `/internal/tracks/${itemId(99)}/fingerprint`).send({ codec: LANDMARK_CODEC_VERSION, landmarks: 0, seconds: 1, blob: Buffer.from([LANDMARK_CODEC_VERSION, 0]).toString('base64') }).expect(404);
    await internal('put', `/internal/tracks/${itemId(1)}/fingerprint`).send({ codec: LANDMARK_CODEC_VERSION, landmarks: 0, seconds: 1, blob: '!!not base64!!' }).expect(400);
    await rebuildIndex(url, N);
  }, 300_000);
  afterAll(async () => {
    await stack?.stop();
    await db?.drop();
  });

  it('When warmup is called, then the fingerprint index of the live generation is ready and status counts the songs with a fingerprint per server', async () => {
    const warm = await request(url).post('/api/recording_search/warmup?server=Alpha').set(auth).send({}).expect(200);
    expect(warm.body).toMatchObject({ status: 'ready', fingerprinted_songs: N - 1, available_songs: 6, total_songs: N, limits: { max_upload_bytes: MAX_UPLOAD, max_clip_seconds: 15, min_clip_seconds: 2 } });
    const beta = await request(url).get('/api/recording_search/status?server=Beta').set({ Cookie: cookie }).expect(200);
    // Beta holds songs 3-7; song 6 has no fingerprint.
    expect(beta.body).toMatchObject({ status: 'ready', fingerprinted_songs: N - 1, available_songs: 4 });
    expect(beta.body.landmarks).toBeGreaterThan(0);
    expect(beta.body.loaded_at).toEqual(expect.any(String));
  });

  it('When a noisy 10 s WAV clip of a song is sent, then the song is identified in the selected server ids with its offset, for a token and a cookie', async () => {
    const clip = wavBytes(addNoise(songs[4]!.slice(17 * SR, 27 * SR), 10, 1));
    for (const [query, id, headers] of [['?server=Alpha', 'a-4', auth], ['?server=Beta', 'b-4', { Cookie: cookie }]] as const) {
      const res = await search(query, clip, headers).expect(200);
      expect(Object.keys(res.body).sort()).toEqual(['clip_level_db', 'clip_seconds', 'count', 'results']);
      expect(res.body.clip_seconds).toBeCloseTo(10, 1);
      expect(res.body.clip_level_db).toBeLessThan(0);
      expect(res.body.count).toBe(res.body.results.length);
      const top = res.body.results[0];
      expect(Object.keys(top).sort()).toEqual(['album', 'author', 'identified', 'item_id', 'lead', 'offset_seconds', 'score', 'title', 'votes']);
      expect(top).toMatchObject({ item_id: id, title: 'Synth Song 4', author: 'Synth Artist', album: 'Synth Album', identified: true });
      expect(Math.abs(top.offset_seconds - 17)).toBeLessThan(0.2);
      for (const r of res.body.results.slice(1)) expect(r.identified).toBe(false);
    }
    // n_results as a form field bounds the rows.
    const one = await request(url).post('/api/recording_search/search?server=Alpha').set(auth).field('n_results', '1').attach('clip', clip, { filename: 'clip.wav', contentType: 'audio/wav' }).expect(200);
    expect(one.body.count).toBe(1);
  });

  it('When the song of the clip is not on the selected server, or the clip is of unknown music, then the answer is no match', async () => {
    const ofSong1 = wavBytes(songs[1]!.slice(5 * SR, 15 * SR));
    const beta = await search('?server=Beta', ofSong1).expect(200);
    expect(beta.body.results.map((r: { item_id: string }) => r.item_id)).not.toContain('b-1');
    expect(beta.body.results.some((r: { identified: boolean }) => r.identified)).toBe(false);
    const unknown = await search('?server=Alpha', wavBytes(syntheticNotesPcm(4242, 10))).expect(200);
    expect(unknown.body.results.some((r: { identified: boolean }) => r.identified)).toBe(false);
  });

  it('When the clip is missing, not audio, too short, too long or too large, or the body is not multipart, then 400/413/415 in the error envelope', async () => {
    const noClip = await request(url).post('/api/recording_search/search').set(auth).field('n_results', '5').expect(400);
    expect(noClip.body).toMatchObject({ code: 'bad_clip', request_id: expect.any(String) });
    expect((await search('', Buffer.from('definitely not audio '.repeat(100)), auth, 'x.wav').expect(400)).body.code).toBe('bad_clip');
    expect((await search('', wavBytes(songs[0]!.slice(0, SR))).expect(400)).body.code).toBe('clip_too_short');
    expect((await search('', wavBytes(new Float32Array(3 * SR))).expect(400)).body.code).toBe('clip_silent');
    // 16 s of 16 kHz 16-bit WAV: 512 kB, under the upload limit, over the 15 s length limit.
    expect((await search('', wavBytes(songs[0]!.slice(0, 16 * SR))).expect(413)).body.code).toBe('clip_too_long');
    expect((await search('', wavBytes(songs[0]!.slice(0, 20 * SR))).expect(413)).body.code).toBe('payload_too_large');
    const badN = await request(url).post('/api/recording_search/search').set(auth).field('n_results', '0').attach('clip', wavBytes(songs[0]!.slice(0, 5 * SR)), { filename: 'c.wav', contentType: 'audio/wav' }).expect(400);
    expect(badN.body.error).toMatch(/n_results/);
    const json = await request(url).post('/api/recording_search/search').set(auth).send({ clip: 'abc' }).expect(415);
    expect(json.body.code).toBe('unsupported_media_type');
    await request(url).post('/api/recording_search/search').attach('clip', wavBytes(songs[0]!.slice(0, 5 * SR)), 'c.wav').expect(401);
  });

  it('When by_track names a song, then songs sharing its material come back without the song itself, in the server ids', async () => {
    const res = await request(url).post('/api/recording_search/by_track?server=Beta').set(auth).send({ item_id: 'b-7', n_results: 10 }).expect(200);
    // Song 2 (the source of song 7's material) is not on Beta: nothing shares material there.
    expect(res.body).toEqual({ item_id: 'b-7', count: 0, results: [] });
    const alpha = await request(url).post('/api/recording_search/by_track').set(auth).send({ item_id: itemId(7), n_results: 10, server: 'Alpha' }).expect(200);
    expect(alpha.body.results.map((r: { item_id: string }) => r.item_id)).toEqual(['a-2']);
    await request(url).post('/api/recording_search/by_track?server=Beta').set(auth).send({ item_id: 'b-6' }).expect(404);
    await request(url).post('/api/recording_search/by_track').set(auth).send({ item_id: 'nope' }).expect(404);
    await request(url).post('/api/recording_search/by_track').set(auth).send({}).expect(400);
  });

  it('When search_tracks asks index=neural, then only songs with a fingerprint come back; /api/models and the dashboard count them per server, not a print of an older codec', async () => {
    // Song 6 (on Beta only) gets the print an older analysis worker would have stored, which the index ignores. Stored
    // before the first dashboard read (the registry reuses a summary for 30 s).
    const stale = LANDMARK_CODEC_VERSION - 1;
    await internal('put', `/internal/tracks/${itemId(6)}/fingerprint`).send({ codec: stale, landmarks: 0, seconds: 1, blob: Buffer.from([stale, 0]).toString('base64') }).expect(204);
    expect((await internal('get', `/internal/tracks/${itemId(6)}/fingerprint`).expect(200)).body.codec).toBe(stale);
    const neural = (await request(url).get('/api/search_tracks?search_query=synth&index=neural&limit=50&server=Beta').set(auth).expect(200)).body as Array<{ item_id: string }>;
    expect(neural.map((r) => r.item_id).sort()).toEqual(['b-3', 'b-4', 'b-5', 'b-7']);
    const models = await request(url).get('/api/models?server=Beta').set(auth).expect(200);
    expect(models.body.recording).toEqual({ enabled: true, global: { count: 7, total: 8, percentage: 87.5 }, local: { count: 4, total: 5, percentage: 80 } });
    const dash = await request(url).get('/api/dashboard/summary').set(auth).expect(200);
    expect(dash.body.content.fingerprinted).toBe(7);
    const perServer = Object.fromEntries(dash.body.content.music_servers.map((m: { name: string; fingerprinted: number }) => [m.name, m.fingerprinted]));
    expect(perServer).toEqual({ Alpha: 6, Beta: 4 });
  });
});
