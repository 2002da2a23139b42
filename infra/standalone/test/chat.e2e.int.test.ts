import request from 'supertest';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collectText, createFakeLlm, sseDataFrames, startSupysonic, WESNOTH_MUSIC_DIR, type StartedFake, type StartedSupysonic, type TestDatabase } from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { API_TOKEN, startTestStack } from './helpers';

/**
 * Instant playlists on real analyzed music (10 Wesnoth tracks served by supysonic), through the
 * gateway with a bearer token: the rule-based interpreter without an LLM, then the real OpenAI
 * adapter against a scripted fake LLM (tool use, invalid and looping calls, timeouts, 429).
 */
describe('instant playlist from a chat and clustering (real analysis, fake LLM)', () => {
  jest.setTimeout(15 * 60_000);
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  let supysonic: StartedSupysonic;
  let musicDir: string;
  let stack: Stack;
  let db: TestDatabase;
  let url: string;
  const llm = createFakeLlm();
  let llmServer: StartedFake;
  let providerIds: Set<string>;

  const chat = (userInput: unknown, extra: Record<string, unknown> = {}) => request(url).post('/chat/api/chatPlaylist').set(auth).send({ userInput, ...extra });

  beforeAll(async () => {
    musicDir = await mkdtemp(join(tmpdir(), 'polyphony-chat-music-'));
    const files = (await readdir(WESNOTH_MUSIC_DIR)).filter((f) => f.endsWith('.ogg')).sort().slice(0, 10);
    for (const f of files) await copyFile(join(WESNOTH_MUSIC_DIR, f), join(musicDir, f));
    supysonic = await startSupysonic({ musicDir, user: 'alice', password: 'alice-pass' });
    llmServer = await llm.start();
    ({ stack, db, url } = await startTestStack());
    await request(url).post('/api/servers').set(auth).send({ name: 'Supysonic', server_type: 'navidrome', creds: { url: supysonic.url, user: 'alice', password: 'alice-pass' } }).expect(201);
    const run = await request(url).post('/api/analysis/start').set(auth).send({}).expect(202);
    const deadline = Date.now() + 10 * 60_000;
    for (;;) {
      const s = await request(url).get(`/api/status/${run.body.task_id}`).set(auth);
      if (s.body.state === 'SUCCESS') break;
      if (['FAIL', 'REVOKED'].includes(s.body.state) || Date.now() > deadline) throw new Error(`analysis: ${JSON.stringify(s.body)}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    providerIds = new Set((await db.query(`SELECT provider_id FROM catalogue.track_server_map`)).map((r: { provider_id: string }) => r.provider_id));
    expect(providerIds.size).toBe(10);
    // The index serves every song once its rebuild after the run is live.
    for (const until = Date.now() + 120_000; Date.now() < until; ) {
      const res = await request(url).get('/api/search_tracks?search_query=frantic').set(auth);
      if (res.status === 200 && res.body.length === 2) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
  });
  afterAll(async () => {
    await stack?.stop();
    await db?.drop();
    await supysonic?.close();
    await llmServer?.close();
    await rm(musicDir, { recursive: true, force: true });
  });

  const onServer = (rows: Array<{ item_id: string }>) => rows.every((r) => providerIds.has(r.item_id));

  it('When no LLM is configured, then song, artist, mood, tempo and year requests still give playlists of this server', async () => {
    const cases: Array<[string, RegExp]> = [
      ['calm orchestral music like Battle Epic', /sound like "Battle Epic"/],
      ['something by Aleksi Aubry-Carlson', /the artist Aleksi Aubry-Carlson/],
      ['energetic music', /energetic/],
      ['slow songs', /slow/],
      ['music from the 2000s', /2000-2009/],
      ['Frantic', /matching "frantic"/],
    ];
    for (const [text, understood] of cases) {
      const res = await chat(text).expect(200);
      expect(res.body.response.ai_provider_used).toBe('NONE');
      expect(res.body.response.query_results.length).toBeGreaterThan(0);
      expect(onServer(res.body.response.query_results)).toBe(true);
      expect(res.body.response.message).toMatch(understood);
      expect(res.body.response.message).toMatch(/AI_MODEL_PROVIDER/);
      for (const row of res.body.response.query_results) for (const k of ['item_id', 'title', 'author']) expect(typeof row[k]).toBe('string');
    }
    const artist = await chat('something by Aleksi Aubry-Carlson').expect(200);
    expect(artist.body.response.query_results.filter((r: { author: string }) => r.author === 'Aleksi Aubry-Carlson').length).toBeGreaterThanOrEqual(2);
    const like = await chat('like Battle Epic').expect(200);
    expect(like.body.response.query_results[0].title).toBe('Battle Epic');
  });

  it('When the input is empty, too long or names an unknown server, then 400 says why', async () => {
    expect((await chat('').expect(400)).body.error).toMatch(/userInput/);
    expect((await chat('x'.repeat(10_000)).expect(400)).body.error).toMatch(/longer than/);
    await chat(42).expect(400);
    await request(url).post('/chat/api/chatPlaylist').set(auth).send({}).expect(400);
    const unknown = await chat('calm music', { server: 'No Such Server' });
    expect(unknown.status).toBeGreaterThanOrEqual(400);
    expect(unknown.status).toBeLessThan(500);
  });

  it('When an OpenAI-compatible model calls tools, then they run on this server and bad, unknown and repeated calls are refused and reported', async () => {
    await request(url).put('/api/config').set(auth).send({ AI_MODEL_PROVIDER: 'OPENAI', OPENAI_SERVER_URL: `${llmServer.url}/v1`, OPENAI_MODEL_NAME: 'fake-gpt', OPENAI_API_KEY: 'sk-fake-chat-key', AI_REQUEST_TIMEOUT_SECONDS: 2 }).expect(200);
    llm.setScript([
      { toolCalls: [{ name: 'delete_everything', arguments: {} }, { name: 'song_similarity', arguments: '{"title": "Elf Land"' }] },
      { toolCalls: [{ name: 'song_similarity', arguments: { title: 'Elf Land', n: 5 } }, { name: 'search_database', arguments: { artist: 'Doug Kaufman' } }] },
      { content: 'Gentle elvish pieces and two by Doug Kaufman.' },
    ]);
    llm.core.clearRequests();
    const res = await chat('gentle music like Elf Land and some Doug Kaufman').expect(200);
    const r = res.body.response;
    expect(r).toMatchObject({ ai_provider_used: 'OPENAI', ai_model_used: 'fake-gpt', message: 'Gentle elvish pieces and two by Doug Kaufman.' });
    expect(r.tool_calls).toEqual([
      expect.objectContaining({ tool: 'delete_everything', error: expect.stringMatching(/unknown tool/) }),
      expect.objectContaining({ tool: 'song_similarity', error: expect.stringMatching(/not valid JSON/) }),
      expect.objectContaining({ tool: 'song_similarity', songs: expect.any(Number) }),
      expect.objectContaining({ tool: 'search_database', songs: 2 }),
    ]);
    expect(r.query_results.length).toBeGreaterThan(2);
    expect(onServer(r.query_results)).toBe(true);
    expect(r.query_results.map((s: { title: string }) => s.title)).toContain('Elf Land');
    // The model saw the tools and our error messages; the key went only to the model's endpoint.
    expect(JSON.stringify(llm.bodies[0])).toContain('search_database');
    expect(JSON.stringify(llm.bodies[1])).toMatch(/unknown tool/);
    expect(llm.core.requests[0]!.headers.authorization).toBe('Bearer sk-fake-chat-key');
    expect(JSON.stringify(res.body)).not.toContain('sk-fake-chat-key');

    // A model that repeats itself is stopped.
    llm.setScript([{ toolCalls: [{ name: 'search_database', arguments: { artist: 'Doug Kaufman' } }] }]);
    const loop = await chat('Doug Kaufman forever').expect(200);
    expect(loop.body.response.ai_provider_used).toBe('OPENAI');
    expect(loop.body.response.message).toMatch(/repeated a call/);
    expect(loop.body.response.tool_calls.filter((c: { error?: string }) => c.error === 'repeated call: stopped')).toHaveLength(1);
  });

  it('When the model times out, rate-limits or answers garbage, then the rule-based interpreter answers and says why', async () => {
    llm.setScript([{ delayMs: 5000, content: 'too late' }]);
    const slow = await chat('energetic music').expect(200);
    expect(slow.body.response.ai_provider_used).toBe('NONE');
    expect(slow.body.response.query_results.length).toBeGreaterThan(0);
    expect(slow.body.response.message).toMatch(/did not answer in time/);
    llm.setScript([{ status: 429 }]);
    const limited = await chat('slow songs').expect(200);
    expect(limited.body.response.message).toMatch(/rate limiting/);
    llm.setScript([{ malformed: true }]);
    const garbage = await chat('slow songs').expect(200);
    expect(garbage.body.response.ai_provider_used).toBe('NONE');
  });

  it('When the stream endpoint is used, then log frames (status, then model text) come before one done frame carrying the chatPlaylist response; the result can be saved as a playlist', async () => {
    llm.setScript([{ toolCalls: [{ name: 'song_similarity', arguments: { title: 'Defeat' } }] }, { content: 'Sombre pieces after a defeat.' }]);
    const res = await request(url)
      .post('/chat/api/chatPlaylistStream')
      .set(auth)
      .send({ userInput: 'music like Defeat' })
      .buffer(true)
      .parse(collectText)
      .expect(200);
    expect(res.headers['content-type']).toMatch(/text\/event-stream/);
    // As the reference's clients read it: frames split on a blank line, their data: lines joined, JSON with a type.
    const frames = sseDataFrames(res.body as string);
    expect(frames[0]).toMatchObject({ type: 'log', kind: 'status', message: expect.any(String) });
    expect(frames.some((f) => f.type === 'log' && f.kind === 'text')).toBe(true);
    expect(frames.slice(0, -1).every((f) => f.type === 'log')).toBe(true);
    const result = { data: frames.at(-1) as { type: string; response: { ai_provider_used: string; query_results: Array<{ item_id: string }> } } };
    expect(result.data.type).toBe('done');
    expect(result.data.response.ai_provider_used).toBe('OPENAI');
    const ids = result.data.response.query_results.map((s: { item_id: string }) => s.item_id);
    const saved = await request(url).post('/chat/api/create_playlist').set(auth).send({ playlist_name: 'After defeat', item_ids: [...ids, 'not-on-this-server'] }).expect(201);
    expect(saved.body).toMatchObject({ mapped: ids.length, skipped: 1 });
    await request(url).post('/chat/api/create_playlist').set(auth).send({ playlist_name: 'Nothing', item_ids: ['not-on-this-server'] }).expect(400);
    await request(url).put('/api/config').set(auth).send({ AI_MODEL_PROVIDER: 'NONE' }).expect(200);
  });

  it('When an admin tests the AI provider, then reachability and latency are reported', async () => {
    await request(url).put('/api/config').set(auth).send({ AI_MODEL_PROVIDER: 'OPENAI' }).expect(200);
    llm.setScript([{ content: 'ok' }]);
    const ok = await request(url).post('/api/config/ai/test').set(auth).send({}).expect(200);
    expect(ok.body).toMatchObject({ ok: true, provider: 'OPENAI', model: 'fake-gpt', error: null });
    llm.setScript([{ status: 401 }]);
    const refused = await request(url).post('/api/config/ai/test').set(auth).send({}).expect(200);
    expect(refused.body).toMatchObject({ ok: false, error: expect.stringMatching(/refused the credentials/) });
    await request(url).put('/api/config').set(auth).send({ AI_MODEL_PROVIDER: 'NONE' }).expect(200);
    expect((await request(url).post('/api/config/ai/test').set(auth).send({}).expect(200)).body).toMatchObject({ ok: false, provider: 'NONE' });
  });

  async function cluster(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const start = await request(url).post('/api/clustering/start').set(auth).send(body).expect(202);
    for (const until = Date.now() + 5 * 60_000; Date.now() < until; ) {
      const s = await request(url).get(`/api/status/${start.body.task_id}`).set(auth);
      if (['SUCCESS', 'FAIL', 'REVOKED'].includes(s.body.state)) return s.body;
      await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error('clustering did not finish');
  }
  const supysonicPlaylists = async (): Promise<Array<{ name: string; songCount: number }>> => {
    const res = await fetch(`${supysonic.url}/rest/getPlaylists.view?u=alice&p=alice-pass&v=1.16.1&c=test&f=json`);
    const body = (await res.json()) as { 'subsonic-response': { playlists?: { playlist?: Array<{ name: string; songCount: number }> } } };
    return body['subsonic-response'].playlists?.playlist ?? [];
  };

  it.each(['kmeans', 'gmm', 'dbscan'])('When the library is clustered with %s, then named _automatic playlists appear on supysonic and the results list names and sizes', async (method) => {
    const status = await cluster({ clustering_method: method, num_clusters_min: 2, num_clusters_max: 4, min_songs_per_playlist: 2, dbscan_min_samples: 2 });
    expect(status.state).toBe('SUCCESS');
    const [report] = (status.details as { clustering: Array<Record<string, unknown>> }).clustering;
    expect(report).toMatchObject({ status: 'done', algorithm: method, naming: 'descriptors' });
    expect(report!.candidatesTried as number).toBeGreaterThanOrEqual(1);
    const names = report!.playlists as string[];
    const sizes = report!.playlistSizes as number[];
    expect(names.length).toBeGreaterThanOrEqual(1);
    expect(sizes).toHaveLength(names.length);
    const onServer = await supysonicPlaylists();
    for (const [i, name] of names.entries()) {
      expect(onServer).toContainEqual(expect.objectContaining({ name: `${name}_automatic`, songCount: sizes[i] }));
    }
    // A re-run replaces our playlists; nothing else is there to lose, and no duplicates pile up.
    expect(onServer.filter((p) => p.name.endsWith('_automatic'))).toHaveLength(names.length);
  });

  it('When an LLM is configured, then clusters are named by it, and invalid or duplicate names fall back to descriptor names', async () => {
    await request(url).put('/api/config').set(auth).send({ AI_MODEL_PROVIDER: 'OPENAI', OPENAI_SERVER_URL: `${llmServer.url}/v1`, OPENAI_MODEL_NAME: 'fake-gpt', OPENAI_API_KEY: 'sk-fake-chat-key' }).expect(200);
    llm.setScript([{ content: '"Moonlit Strings."' }, { content: '<b>bad</b>' }, { content: 'Moonlit Strings' }]);
    const status = await cluster({ clustering_method: 'kmeans', num_clusters: 3, min_songs_per_playlist: 1 });
    expect(status.state).toBe('SUCCESS');
    const [report] = (status.details as { clustering: Array<Record<string, unknown>> }).clustering;
    expect(report!.naming).toBe('llm');
    const names = report!.playlists as string[];
    expect(names[0]).toBe('Moonlit Strings');
    expect(names.slice(1).some((n) => n === 'Moonlit Strings')).toBe(false);
    expect(new Set(names.map((n) => n.toLowerCase())).size).toBe(names.length);
    const prompt = JSON.stringify(llm.bodies.at(-1));
    expect(prompt).toMatch(/Songs:/);
    expect((await supysonicPlaylists()).map((p) => p.name)).toContain('Moonlit Strings_automatic');
    await request(url).put('/api/config').set(auth).send({ AI_MODEL_PROVIDER: 'NONE' }).expect(200);
  });
});
