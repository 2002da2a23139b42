import request from 'supertest';
import { OTHER_FEATURE_LABELS, MSD_TAGS, formatLabelScores, moodVectorOf, type LearnedFeatures } from '@polyphony/contracts';
import { ServiceClient } from '@polyphony/platform';
import { cosineDistance } from '@polyphony/vectors';
import { createFakeSubsonic, syntheticCatalogue, type StartedFake, type TestDatabase } from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { API_TOKEN, loginCookie, startTestStack } from './helpers';
import { mulberry32 as prng } from '@polyphony/vectors';

/**
 * Issue "Every call the reference's API clients make": every route, probe, paging contract and seed kind
 * the reference's API clients use, through the gateway of the whole stack, called as clients call them:
 * with the API token (plugins, mobile and desktop players) and with a non-admin session cookie. Shapes are
 * checked field by field (names and JSON types). The catalogue is filled through the catalogue's internal
 * identity API with synthetic embeddings (no audio decoding), so the suite runs in seconds.
 */

const ARTISTS = 9;
const SONGS_PER_ARTIST = 5;
const N = ARTISTS * SONGS_PER_ARTIST;
/** Song 7 carries accented names for the title+artist seed test. */
const ACCENTED = 7;
const learnedSong = (i: number) => i % 2 === 0;
const lyricsSong = (i: number) => i % 3 === 0;
const titleOf = (i: number) => (i === ACCENTED ? 'Déjà Vu' : `Song ${i}`);
const artistNo = (i: number) => Math.floor(i / SONGS_PER_ARTIST);
const artistOf = (i: number) => (artistNo(i) === artistNo(ACCENTED) ? 'Beyoncé Knowles' : `Artist ${artistNo(i)}`);

/** Artist-clustered 200-d embeddings: artist direction + song noise. */
function embeddings(): number[][] {
  const rnd = prng(20);
  const gauss = () => Math.sqrt(-2 * Math.log(Math.max(rnd(), 1e-12))) * Math.cos(2 * Math.PI * rnd());
  const bases = Array.from({ length: ARTISTS }, () => Array.from({ length: 200 }, gauss));
  return Array.from({ length: N }, (_, i) => bases[artistNo(i)]!.map((b) => b + 0.6 * gauss()));
}

function learnedOf(i: number): LearnedFeatures {
  const rnd = prng(1000 + i);
  const msd = MSD_TAGS.map(() => Math.round(rnd() * 1000) / 1000);
  return {
    tagsModel: 'musicnn-test@0',
    tags: { msd },
    moodVector: moodVectorOf(msd),
    otherFeatures: formatLabelScores(OTHER_FEATURE_LABELS.map((l) => [l, Math.round(rnd() * 1000) / 1000] as const)),
  };
}

/** Polls until the check holds (at most 60 s). */
async function waitUntil(check: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 200));
  }
}

type FieldType = 'string' | 'number' | 'boolean' | 'array' | 'object' | 'string|null' | 'number|null';
/** Asserts that `obj` has exactly these JSON types for these fields (extra fields allowed). */
function expectShape(obj: unknown, shape: Record<string, FieldType>): void {
  expect(obj).toEqual(expect.any(Object));
  const o = obj as Record<string, unknown>;
  for (const [k, t] of Object.entries(shape)) {
    const v = o[k];
    const actual = v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
    expect({ field: k, type: t.split('|').includes(actual) ? t : actual }).toEqual({ field: k, type: t });
  }
}

/** label:prob pairs with 3 decimals, the reference's string format. */
const LABEL_SCORES = /^[^:,]+:[01]\.\d{3}(,[^:,]+:[01]\.\d{3})*$/;

describe('reference API parity through the gateway (bearer token and non-admin cookie)', () => {
  let stack: Stack;
  let db: TestDatabase;
  let url: string;
  let fake: StartedFake;
  let serverId: string;
  let userCookie: string;
  let adminCookie: string;
  const bearer = { Authorization: `Bearer ${API_TOKEN}` };
  const fakeCatalogue = syntheticCatalogue(N);
  const sub = createFakeSubsonic({ catalogue: fakeCatalogue, user: 'nav-user', password: 'nav-secret-pw' });
  /** Provider (Navidrome) id of song i. */
  const pid = (i: number) => sub.idOf(fakeCatalogue.trackAt(i)!);
  const canonical = new Map<number, string>();
  const vectors = embeddings();
  const indexOfPid = (id: string) => Array.from({ length: N }, (_, i) => i).find((i) => pid(i) === id) ?? -1;

  /** The two kinds of caller every read route must serve. */
  const callers = () => [
    ['bearer token', bearer],
    ['non-admin cookie', { Cookie: userCookie }],
  ] as Array<[string, Record<string, string>]>;
  const get = (path: string, headers: Record<string, string> = bearer) => request(url).get(path).set(headers);
  const post = (path: string, body: unknown, headers: Record<string, string> = bearer) => request(url).post(path).set(headers).send(body as object);

  beforeAll(async () => {
    fake = await sub.start();
    ({ stack, db, url } = await startTestStack());
    const created = await post('/api/servers', { name: 'Navi', server_type: 'navidrome', creds: { url: fake.url, user: 'nav-user', password: 'nav-secret-pw' } }).expect(201);
    serverId = created.body.id;
    await post('/api/users', { username: 'listener', password: 'listener-pw-1', role: 'user' }).expect(201);
    userCookie = await loginCookie(url, 'listener', 'listener-pw-1');
    adminCookie = await loginCookie(url);
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await db?.drop();
    await fake?.close();
  });

  describe('on a fresh install (nothing analyzed)', () => {
    it('When clients probe the features, then every probe answers 200 in the reference shape with loaded false and song_count 0', async () => {
      for (const [, h] of callers()) {
        const clap = await get('/api/clap/stats', h).expect(200);
        expectShape(clap.body, { clap_enabled: 'boolean', loaded: 'boolean', song_count: 'number', embedding_dimension: 'number' });
        expect(clap.body).toMatchObject({ loaded: false, song_count: 0 });
        const lyrics = await get('/api/lyrics/stats', h).expect(200);
        expectShape(lyrics.body, { lyrics_enabled: 'boolean', loaded: 'boolean', song_count: 'number', embedding_dimension: 'number' });
        expect(lyrics.body).toMatchObject({ loaded: false, song_count: 0 });
        const grove = await get('/api/sem_grove/stats', h).expect(200);
        expectShape(grove.body, { loaded: 'boolean', song_count: 'number', audio_dim: 'number', lyrics_dim: 'number', w_audio: 'number', w_lyrics: 'number' });
        expect(grove.body).toMatchObject({ loaded: false, song_count: 0 });
        const models = await get('/api/models', h).expect(200);
        expectShape(models.body.musicnn, { enabled: 'boolean', global: 'object', local: 'object' });
        expect(models.body.musicnn).toEqual({ enabled: false, global: { count: 0, total: 0, percentage: 0 }, local: { count: 0, total: 0, percentage: 0 } });
        expect((await get('/api/map_cache_status', h).expect(200)).body).toEqual({ ok: false, reason: 'empty_cache', buckets: {} });
        expect((await get('/api/artist_projections', h).expect(200)).body).toEqual({ components: [], count: 0 });
        expect((await get('/api/search_artists?query=a&start=0&end=1', h).expect(200)).body).toEqual([]);
      }
    });

    it('When clients read the version and AI defaults, then they get the reference fields (provider NONE by default)', async () => {
      for (const [, h] of callers()) {
        expectShape((await get('/api/version', h).expect(200)).body, { app_version: 'string' });
        const chat = await get('/chat/api/config_defaults', h).expect(200);
        expectShape(chat.body, { default_ai_provider: 'string', default_ollama_model_name: 'string', default_openai_model_name: 'string', default_gemini_model_name: 'string', default_mistral_model_name: 'string' });
        expect(chat.body.default_ai_provider).toBe('NONE');
      }
      await request(url).get('/chat/api/config_defaults').expect(401);
      await request(url).get('/api/version').expect(401);
    });
  });

  describe('with an analyzed catalogue', () => {
    beforeAll(async () => {
      const catalogue = new ServiceClient(() => stack.peers().catalogue, stack.internalSecret, 'parity-test', 30_000);
      for (let i = 0; i < N; i++) {
        const res = await catalogue.post<{ itemId: string }>('/internal/identity/resolve', {
          serverId,
          providerId: pid(i),
          embedding: vectors[i],
          embedderVersion: 'dsp-v1',
          durationSeconds: 120 + 7 * i,
          metadata: { title: titleOf(i), artist: artistOf(i), artistId: `ar-${artistNo(i)}`, album: `Album ${artistNo(i)}`, albumArtist: artistOf(i) },
          descriptors: { tempo: 90 + i, key: 'C', scale: i % 2 ? 'minor' : 'major', energy: -20 },
          ...(learnedSong(i) ? { learned: learnedOf(i) } : {}),
        });
        canonical.set(i, res.itemId);
        if (lyricsSong(i)) await catalogue.request('PUT', `/internal/tracks/${encodeURIComponent(res.itemId)}/lyrics`, { status: 'found', text: `words of song ${i}` });
      }
      expect(new Set(canonical.values()).size).toBe(N);
      const before = (await get('/api/index/status').expect(200)).body.generation as number;
      await post('/api/index/rebuild', {}).expect(202);
      const deadline = Date.now() + 90_000;
      for (;;) {
        const s = (await get('/api/index/status').expect(200)).body;
        if (s.generation > before && !s.building && s.items === N) break;
        if (Date.now() > deadline) throw new Error(`index did not build: ${JSON.stringify(s)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      // The catalogue reuses probe counts for PROBE_CACHE_MS (5 s): the fresh-install probes above may
      // still be cached on a fast machine, so let them expire before asserting the new counts.
      await new Promise((r) => setTimeout(r, 5_500));
    }, 180_000);

    const learnedCount = Array.from({ length: N }, (_, i) => i).filter(learnedSong).length;
    const lyricsCount = Array.from({ length: N }, (_, i) => i).filter(lyricsSong).length;

    it('When clients probe the features, then the probes report what the catalogue holds', async () => {
      for (const [, h] of callers()) {
        expect((await get('/api/clap/stats', h).expect(200)).body).toEqual({ clap_enabled: true, loaded: true, song_count: learnedCount, embedding_dimension: 50 });
        expect((await get('/api/lyrics/stats', h).expect(200)).body).toEqual({ lyrics_enabled: true, loaded: true, song_count: lyricsCount, embedding_dimension: 0 });
        expect((await get('/api/sem_grove/stats', h).expect(200)).body).toMatchObject({ loaded: true, song_count: lyricsCount, audio_dim: 200, w_audio: 0.25, w_lyrics: 0.75 });
        const models = (await get('/api/models', h).expect(200)).body;
        const pct = Math.round((1000 * learnedCount) / N) / 10;
        expect(models.musicnn).toEqual({ enabled: true, global: { count: learnedCount, total: N, percentage: pct }, local: { count: learnedCount, total: N, percentage: pct } });
        expect(models.lyrics.global).toEqual({ count: lyricsCount, total: N, percentage: Math.round((1000 * lyricsCount) / N) / 10 });
      }
      expect((await get('/api/models?server=nope').expect(400)).body.error).toMatch(/Unknown server/);
    });

    it('When a token or a non-admin reads /api/config, then it gets the public reference fields and no media-server URL or user', async () => {
      for (const [, h] of callers()) {
        const res = await get('/api/config', h).expect(200);
        expectShape(res.body, {
          ai_model_provider: 'string',
          mood_labels: 'array',
          top_n_moods: 'number',
          alchemy_default_n_results: 'number',
          alchemy_max_n_results: 'number',
          alchemy_temperature: 'number',
          cluster_algorithm: 'string',
          num_clusters_min: 'number',
          num_clusters_max: 'number',
          max_songs_per_artist: 'number',
        });
        expect(res.body.mood_labels).toHaveLength(50);
        expect(res.body).toMatchObject({ ai_model_provider: 'NONE', top_n_moods: 5, alchemy_default_n_results: 100 });
        const text = JSON.stringify(res.body);
        for (const secret of [fake.url, 'nav-user', 'nav-secret-pw', 'NAVIDROME_URL', 'NAVIDROME_USER', 'MEDIASERVER_TYPE']) expect(text).not.toContain(secret);
      }
      const admin = await get('/api/config', { Cookie: adminCookie }).expect(200);
      expect(admin.body).toMatchObject({ ai_model_provider: 'NONE', MEDIASERVER_TYPE: 'navidrome', NAVIDROME_URL: fake.url });
      expect(JSON.stringify(admin.body)).not.toContain('nav-secret-pw');
    });

    it('When an admin sets the AI provider and a key, then config and chat defaults follow it and the key is never answered', async () => {
      await request(url).put('/api/config').set(bearer).send({ AI_MODEL_PROVIDER: 'OLLAMA', OLLAMA_MODEL_NAME: 'llama3.2:3b', OPENAI_API_KEY: 'sk-parity-secret-42' }).expect(200);
      try {
        for (const [, h] of [...callers(), ['admin cookie', { Cookie: adminCookie }] as [string, Record<string, string>]]) {
          const cfg = (await get('/api/config', h).expect(200)).body;
          expect(cfg).toMatchObject({ ai_model_provider: 'OLLAMA', ollama_model_name: 'llama3.2:3b' });
          expect(JSON.stringify(cfg)).not.toContain('sk-parity-secret-42');
          const chat = (await get('/chat/api/config_defaults', h).expect(200)).body;
          expect(chat).toMatchObject({ default_ai_provider: 'OLLAMA', default_ollama_model_name: 'llama3.2:3b' });
          expect(JSON.stringify(chat)).not.toContain('sk-parity-secret-42');
        }
      } finally {
        await request(url).put('/api/config').set(bearer).send({ AI_MODEL_PROVIDER: null, OLLAMA_MODEL_NAME: null, OPENAI_API_KEY: null }).expect(200);
      }
    });

    it('When /api/config/defaults is read, then it names the selected server kind and its user name (never a secret) for every caller', async () => {
      for (const h of [...callers().map(([, x]) => x), { Cookie: adminCookie }]) {
        const body = (await get('/api/config/defaults?server=Navi', h).expect(200)).body;
        expect(body).toEqual({ server_type: 'navidrome', default_user_id: null, default_user: 'nav-user' });
        expect(JSON.stringify(body)).not.toContain('nav-secret-pw');
        expect((await get('/api/config/defaults', h).expect(200)).body).toEqual(body);
      }
      expect((await get('/api/config/defaults?server=nope').expect(400)).body.error).toMatch(/Unknown server/);
    });

    it('When artists are searched the way clients probe (query=a&start=0&end=1) and page, then rows are {artist, artist_id, track_count}', async () => {
      for (const [, h] of callers()) {
        const probe = await get('/api/search_artists?query=a&start=0&end=1', h).expect(200);
        expect(probe.body).toHaveLength(1);
        expectShape(probe.body[0], { artist: 'string', artist_id: 'string|null', track_count: 'number' });
        const first = (await get('/api/search_artists?query=artist&start=0&end=4', h).expect(200)).body as Array<{ artist: string; artist_id: string; track_count: number }>;
        const second = (await get('/api/search_artists?query=ARTIST&start=4&end=20', h).expect(200)).body as typeof first;
        const all = [...first, ...second];
        expect(all).toHaveLength(ARTISTS - 1); // every "Artist k" once; Beyoncé does not contain "artist"
        expect(new Set(all.map((a) => a.artist)).size).toBe(all.length);
        for (const a of all) {
          expect(a.track_count).toBe(SONGS_PER_ARTIST);
          expect(a.artist_id).toBe(`ar-${a.artist.split(' ')[1]}`);
        }
        expect((await get('/api/search_artists?query=beyonce', h).expect(200)).body).toEqual([{ artist: 'Beyoncé Knowles', artist_id: `ar-${artistNo(ACCENTED)}`, track_count: SONGS_PER_ARTIST }]);
      }
      expect((await get('/api/search_artists?query=a&start=5&end=2').expect(400)).body.error).toMatch(/end/);
      expect((await get('/api/search_artists?query=a&start=0&end=501').expect(400)).body.error).toMatch(/500/);
    });

    it("When an artist's tracks are asked by name or provider artist id, then rows are {item_id, title, author} on the server", async () => {
      const byName = (await get('/api/artist_tracks?artist=artist%202', { Cookie: userCookie }).expect(200)).body as Array<Record<string, unknown>>;
      expect(byName).toHaveLength(SONGS_PER_ARTIST);
      for (const r of byName) expectShape(r, { item_id: 'string', title: 'string|null', author: 'string|null' });
      expect(new Set(byName.map((r) => r.item_id))).toEqual(new Set([10, 11, 12, 13, 14].map(pid)));
      const byId = (await get('/api/artist_tracks?artist=ar-2').expect(200)).body;
      expect(byId).toEqual(byName);
      expect((await get('/api/artist_tracks?artist=nobody-at-all').expect(404)).body.error).toMatch(/not found/i);
      expect((await get('/api/artist_tracks').expect(400)).body.error).toMatch(/artist/);
    });

    it('When the artist projections are read and rebuilt, then each component has the reference fields; rebuilding is admin-only', async () => {
      for (const [, h] of callers()) {
        const res = (await get('/api/artist_projections', h).expect(200)).body;
        expect(res.count).toBe(res.components.length);
        expect(res.count).toBeGreaterThanOrEqual(ARTISTS);
        for (const c of res.components) {
          expectShape(c, { artist_id: 'string', artist_name: 'string', component_idx: 'number', weight: 'number', projection: 'array' });
          expect(c.projection).toHaveLength(2);
        }
      }
      const built = await post('/api/build_artist_projection', {}).expect(200);
      expect(built.body).toMatchObject({ status: 'success' });
      await post('/api/build_artist_projection', {}, { Cookie: userCookie }).expect(403);
    });

    it('When the map cache is inspected and rebuilt, then status reports the cached buckets; rebuild is admin-only', async () => {
      await get('/api/map?percent=50', { Cookie: userCookie }).expect(200);
      const status = (await get('/api/map_cache_status', { Cookie: userCookie }).expect(200)).body;
      expect(status.ok).toBe(true);
      expectShape(status.buckets['50'], { count: 'number', json_bytes: 'number', projection: 'string' });
      await post('/api/rebuild_map_cache', {}, { Cookie: userCookie }).expect(403);
      const rebuilt = (await post('/api/rebuild_map_cache', {}).expect(200)).body;
      expect(rebuilt.ok).toBe(true);
      expect(Object.keys(rebuilt.buckets).sort()).toEqual(['100', '25', '50', '75']);
      expect(rebuilt.buckets['100'].count).toBe(N);
      const map = (await get('/api/map?percent=100').expect(200)).body;
      const row = map.items.find((it: { item_id: string }) => it.item_id === pid(0));
      expect(row.mood_vector).toMatch(LABEL_SCORES);
      expect(map.items.find((it: { item_id: string }) => it.item_id === pid(1)).mood_vector).toBeNull();
    });

    it('When a client walks /api/sync by page=N (and by cursor), then it sees every id exactly once and the walk ends', async () => {
      for (const fields of ['', '&fields=index']) {
        const seen: string[] = [];
        let page = 1;
        for (;;) {
          const res = (await get(`/api/sync?page=${page}&limit=7${fields}`).expect(200)).body;
          expect(res).toMatchObject({ total_tracks: N, provider_type: 'navidrome', page, total_pages: Math.ceil(N / 7) });
          seen.push(...res.tracks.map((t: { id: string }) => t.id));
          if (!res.has_more) break;
          page++;
          expect(page).toBeLessThanOrEqual(20);
        }
        expect(page).toBe(Math.ceil(N / 7));
        expect(seen).toHaveLength(N);
        expect(new Set(seen)).toEqual(new Set(Array.from({ length: N }, (_, i) => pid(i))));
        const past = (await get(`/api/sync?page=${page + 1}&limit=7${fields}`).expect(200)).body;
        expect(past).toMatchObject({ tracks: [], has_more: false, next_page: null });
      }
      const viaCursor: string[] = [];
      let cursor = '';
      for (;;) {
        const res = (await get(`/api/sync?limit=10${cursor ? `&next_page=${cursor}` : ''}`, { Cookie: userCookie }).expect(200)).body;
        viaCursor.push(...res.tracks.map((t: { id: string }) => t.id));
        if (!res.has_more) break;
        cursor = res.next_page;
      }
      expect(viaCursor.sort()).toEqual(Array.from({ length: N }, (_, i) => pid(i)).sort());
      expect((await get('/api/sync?page=2&next_page=abc').expect(400)).body.error).toMatch(/page/);
      expect((await get('/api/sync?page=0').expect(400)).body.code).toBe('validation_failed');
    });

    it('When full rows are read (/api/sync?ids=, /external/get_score, /api/track, similar rows), then they carry mood_vector and other_features in the reference format', async () => {
      const rows = (await get(`/api/sync?ids=${pid(0)},${pid(1)}`).expect(200)).body.tracks as Array<Record<string, unknown>>;
      const r0 = rows.find((r) => r.id === pid(0))!;
      const r1 = rows.find((r) => r.id === pid(1))!;
      expectShape(r0, { id: 'string', fp: 'string', title: 'string', mood_vector: 'string', other_features: 'string', tempo: 'number', key: 'string' });
      expect(r0.mood_vector).toBe(learnedOf(0).moodVector);
      expect(r0.other_features).toBe(learnedOf(0).otherFeatures);
      expect(r0.other_features).toMatch(/^danceable:[01]\.\d{3},aggressive:/);
      expect(r1).toMatchObject({ mood_vector: null, other_features: null });
      for (const [, h] of callers()) {
        const score = (await get(`/external/get_score?id=${pid(2)}`, h).expect(200)).body;
        expectShape(score, { item_id: 'string', title: 'string|null', author: 'string|null', mood_vector: 'string', other_features: 'string', energy: 'number|null' });
        expect(score.mood_vector).toMatch(LABEL_SCORES);
        const track = (await get(`/api/track?item_id=${pid(3)}`, h).expect(200)).body;
        expect(track).toMatchObject({ item_id: pid(3), mood_vector: null, other_features: null });
        const similar = (await get(`/api/similar_tracks?item_id=${pid(0)}&n=5`, h).expect(200)).body as Array<Record<string, unknown>>;
        expect(similar.length).toBeGreaterThan(0);
        for (const s of similar) expectShape(s, { item_id: 'string', distance: 'number', mood_vector: 'string|null', other_features: 'string|null' });
      }
    });

    it('When search_tracks names an index, then only songs that index holds come back; bad index or range is a 400', async () => {
      const ids = async (q: string) => ((await get(`/api/search_tracks?${q}`).expect(200)).body as Array<{ item_id: string }>).map((r) => r.item_id);
      const all = await ids('search_query=song&start=0&end=100');
      expect(all).toHaveLength(N - 1); // every "Song i" (not "Déjà Vu")
      const learned = await ids('search_query=song&index=musicnn&start=0&end=100');
      expect(new Set(learned)).toEqual(new Set(Array.from({ length: N }, (_, i) => i).filter((i) => i !== ACCENTED && learnedSong(i)).map(pid)));
      const grove = await ids('search_query=song&index=sem_grove&end=100');
      expect(new Set(grove)).toEqual(new Set(Array.from({ length: N }, (_, i) => i).filter((i) => i !== ACCENTED && lyricsSong(i)).map(pid)));
      expect(await ids('search_query=song&index=neural')).toEqual([]); // no song has a recording fingerprint: that index is empty
      const bad = await get('/api/search_tracks?search_query=song&index=clapx').expect(400);
      expect(bad.body.error).toMatch(/index must be one of/);
      // Autocomplete contract: 0-20, then 20-40, no duplicates; end - start <= 500.
      const p1 = await ids('search_query=song&start=0&end=20');
      const p2 = await ids('search_query=song&start=20&end=40');
      expect(p1).toHaveLength(20);
      expect(p2).toHaveLength(20);
      expect(new Set([...p1, ...p2]).size).toBe(40);
      expect(await ids('search_query=song&start=5&end=5')).toEqual([]);
      expect((await get('/api/search_tracks?search_query=song&start=10&end=5').expect(400)).body.error).toMatch(/end/);
      expect((await get('/api/search_tracks?search_query=song&start=0&end=501').expect(400)).body.error).toMatch(/500/);
    });

    it('When a Subsonic server delegates "similar" by title and artist, then names match case- and accent-insensitively; unknown names are a 404 with a message', async () => {
      for (const [, h] of callers()) {
        const byName = await get('/api/similar_tracks?title=DEJA%20VU&artist=beyonce%20knowles&n=5', h).expect(200);
        const byId = await get(`/api/similar_tracks?item_id=${pid(ACCENTED)}&n=5`, h).expect(200);
        expect(byName.body).toEqual(byId.body);
        expect(byName.body.length).toBeGreaterThan(0);
      }
      const missing = await get('/api/similar_tracks?title=No%20Such%20Song&artist=Nobody').expect(404);
      expect(missing.body.error).toMatch(/not found/i);
    });

    it('When alchemy gets artist and playlist items, then both seed the blend; unknown kinds are a 400 with a message', async () => {
      const playlistSongs = [20, 21, 22, 23];
      const created = await post('/api/create_playlist', { playlist_name: 'Road Trip', track_ids: playlistSongs.map(pid) }).expect(201);
      const listed = (await get('/api/search_playlists?query=road', { Cookie: userCookie }).expect(200)).body;
      expect(listed).toEqual([{ id: created.body.playlist_id, name: 'Road Trip_instant', count: playlistSongs.length }]);
      for (const r of listed) expectShape(r, { id: 'string', name: 'string', count: 'number|null' });
      expect((await get('/api/search_playlists?query=zzz').expect(200)).body).toEqual([]);
      for (const [, h] of callers()) {
        const byArtist = (await post('/api/alchemy', { items: [{ id: 'Artist 3', op: 'ADD', type: 'artist' }], n: 5, temperature: 0 }, h).expect(200)).body;
        expect(byArtist.results).toHaveLength(5);
        expect(byArtist.results.filter((r: { author: string }) => r.author === 'Artist 3').length).toBeGreaterThanOrEqual(3);
        for (const key of [created.body.playlist_id, 'Road Trip']) {
          const byPlaylist = (await post('/api/alchemy', { items: [{ id: key, op: 'ADD', type: 'playlist' }], n: 5, temperature: 0 }, h).expect(200)).body;
          expect(byPlaylist.unresolved).toEqual([]);
          expect(byPlaylist.add_points[0]).toMatchObject({ type: 'playlist', title: 'Road Trip_instant' });
          const resultIds = byPlaylist.results.map((r: { item_id: string }) => r.item_id);
          expect(resultIds).toHaveLength(5);
          for (const s of playlistSongs) expect(resultIds).not.toContain(pid(s));
          // The playlist's songs are by Artist 4: the blend lands there.
          expect(byPlaylist.results[0].author).toBe('Artist 4');
        }
      }
      const unknown = await post('/api/alchemy', { items: [{ id: 'No Such Playlist', op: 'ADD', type: 'playlist' }] }).expect(404);
      expect(unknown.body.error).toMatch(/ADD items/);
      const badKind = await post('/api/alchemy', { items: [{ id: 'x', op: 'ADD', type: 'genre' }] }).expect(400);
      expect(badKind.body.code).toBe('validation_failed');
    });

    it('When find_path ends are given, then each end is exactly one of song, mood or anchor; other combinations are a 400 with a message', async () => {
      for (const [, h] of callers()) {
        const path = (await get(`/api/find_path?start_song_id=${pid(0)}&end_song_id=${pid(40)}&max_steps=6&count=25`, h).expect(200)).body;
        expect(path.path[0].item_id).toBe(pid(0));
        expect(path.path[path.path.length - 1].item_id).toBe(pid(40));
        for (const r of path.path) expectShape(r, { item_id: 'string', distance: 'number', mood_vector: 'string|null' });
      }
      expect((await get(`/api/find_path?end_song_id=${pid(1)}`).expect(400)).body.error).toMatch(/exactly one of start_song_id, start_mood or start_anchor/);
      expect((await get(`/api/find_path?start_song_id=${pid(0)}&start_mood=happy&end_song_id=${pid(1)}`).expect(400)).body.error).toMatch(/exactly one/);
      expect((await get(`/api/find_path?start_mood=grumpy&end_song_id=${pid(1)}`).expect(400)).body.error).toMatch(/mood must be one of/);
    });

    it('When anchors are saved (recipe or ready centroid), then they seed similar_tracks, find_path and alchemy with their exclusions; bad input is a 4xx with a message', async () => {
      // Artist 6 (songs 30-34) minus song 30 with a 0.5 radius: the artist's other songs lie within ~0.3 of song 30.
      const artist6 = new Set([30, 31, 32, 33, 34].map(pid));
      const farFrom30 = (id: string) => cosineDistance(vectors[indexOfPid(id)]!, vectors[30]!) >= 0.5;
      const ids: number[] = [];
      for (const [who, h] of callers()) {
        const made = await post('/api/anchors', { name: `Artist six without 30 (${who})`, subtract_distance: 0.5, items: [{ id: 'Artist 6', op: 'ADD', type: 'artist' }, { id: 'happy', op: 'ADD', type: 'mood' }, { id: pid(30), op: 'SUBTRACT', type: 'song' }, { id: 'no-such-song', op: 'ADD', type: 'song' }] }, h).expect(200);
        expectShape(made.body.anchor, { id: 'number', name: 'string', points: 'number', exclusions: 'number', items: 'array', dim: 'number', created_at: 'string' });
        expect(made.body.anchor).toMatchObject({ points: 2, exclusions: 1, dim: 200, unresolved: ['no-such-song'] });
        // Songs of the recipe are stored by canonical id, never the caller's provider id.
        expect(made.body.anchor.items).toContainEqual({ id: canonical.get(30), op: 'SUBTRACT', type: 'song' });
        const id = made.body.anchor.id as number;
        ids.push(id);
        expect((await get(`/api/anchors/${id}`, h).expect(200)).body.anchor.name).toBe(`Artist six without 30 (${who})`);

        const similar = (await get(`/api/similar_tracks?anchor_id=${id}&n=8&max_songs_per_artist=0`, h).expect(200)).body as Array<Record<string, unknown>>;
        expect(similar).toHaveLength(8);
        for (const r of similar) {
          expectShape(r, { item_id: 'string', title: 'string|null', author: 'string|null', distance: 'number', mood_vector: 'string|null', other_features: 'string|null' });
          expect(artist6.has(r.item_id as string)).toBe(false);
          expect(farFrom30(r.item_id as string)).toBe(true);
        }
        // By name as well.
        expect((await get(`/api/similar_tracks?anchor_id=${encodeURIComponent(`artist six WITHOUT 30 (${who})`)}&n=8&max_songs_per_artist=0`, h).expect(200)).body).toEqual(similar);

        const blend = (await post('/api/alchemy', { items: [{ id: String(id), op: 'ADD', type: 'anchor' }], n: 6, temperature: 0 }, h).expect(200)).body;
        expect(blend.add_points[0]).toMatchObject({ item_id: String(id), type: 'anchor', title: `Artist six without 30 (${who})` });
        expect(blend.results).toHaveLength(6);
        for (const r of blend.results) expect(artist6.has(r.item_id)).toBe(false);

        const from = (await get(`/api/find_path?start_anchor=${id}&end_song_id=${pid(0)}&max_steps=5`, h).expect(200)).body;
        expect(from.path.at(-1).item_id).toBe(pid(0));
        const to = (await get(`/api/find_path?start_song_id=${pid(0)}&end_anchor=${id}&max_steps=5`, h).expect(200)).body;
        expect(to.path[0].item_id).toBe(pid(0));
        for (const r of [...from.path, ...to.path]) expect(typeof r.item_id).toBe('string');
      }
      const listed = (await get('/api/anchors', { Cookie: userCookie }).expect(200)).body.anchors as Array<{ id: number; name: string }>;
      expect(listed.map((a) => a.id).sort()).toEqual([...ids].sort());

      // A ready centroid, as the reference UI saves one (here: song 5's own vector).
      const ready = (await post('/api/anchors', { name: 'Song five', centroid: vectors[5], exclusions: [{ vector: vectors[30], distance: 0.1 }] }).expect(200)).body.anchor;
      expect(ready).toMatchObject({ points: 0, exclusions: 1, items: null });
      expect((await get(`/api/similar_tracks?anchor_id=${ready.id}&n=1`).expect(200)).body[0].item_id).toBe(pid(5));
      // An anchor is stored with the embedder version of the generation it was saved against. After an embedder switch
      // (e.g. the MusiCNN model installed: same 200 dimensions, another space) it is refused with a 409 naming both
      // versions, wherever it is used, instead of seeding results in the wrong space.
      expect(ready.embedder_version).toBe('dsp-v1');
      expect(await db.query(`SELECT embedder_version FROM "index".anchors WHERE id = $1`, [ready.id])).toEqual([{ embedder_version: 'dsp-v1' }]);
      await db.query(`UPDATE "index".anchors SET embedder_version = 'older-embedder-v0' WHERE id = $1`, [ready.id]);
      for (const res of [
        await get(`/api/similar_tracks?anchor_id=${ready.id}&n=1`).expect(409),
        await get(`/api/find_path?start_anchor=${ready.id}&end_song_id=${pid(1)}`).expect(409),
        await post('/api/alchemy', { items: [{ id: String(ready.id), op: 'ADD', type: 'anchor' }] }).expect(409),
      ]) {
        expect(res.body.code).toBe('embedder_version_mismatch');
        expect(res.body.error).toMatch(/saved against older-embedder-v0 vectors; the library is now analysed with dsp-v1/);
      }
      await db.query(`UPDATE "index".anchors SET embedder_version = 'dsp-v1' WHERE id = $1`, [ready.id]);
      expect((await get(`/api/similar_tracks?anchor_id=${ready.id}&n=1`).expect(200)).body[0].item_id).toBe(pid(5));

      // The reference UI's save flow: alchemy answers add_centroid_vector and exclusions, the anchor is saved from them.
      const blended = (await post('/api/alchemy', { items: [{ id: pid(20), op: 'ADD' }, { id: 'happy:0', op: 'ADD', type: 'mood' }, { id: pid(21), op: 'SUBTRACT' }], n: 5, temperature: 0 }).expect(200)).body;
      expect(blended.add_centroid_vector).toHaveLength(200);
      expect(blended.exclusions).toHaveLength(1);
      expect(blended.exclusions[0].distance).toBeCloseTo(0.2);
      const saved = (await post('/api/anchors', { name: 'From the alchemy page', centroid: blended.add_centroid_vector, exclusions: blended.exclusions }).expect(200)).body.anchor;
      const fromSaved = (await get(`/api/similar_tracks?anchor_id=${saved.id}&n=10&max_songs_per_artist=0`).expect(200)).body.map((r: { item_id: string }) => r.item_id);
      expect(fromSaved).not.toContain(pid(21));
      expect(fromSaved).toEqual(expect.arrayContaining(blended.results.map((r: { item_id: string }) => r.item_id).filter((id: string) => id !== pid(20))));
      expect((await post('/api/alchemy', { items: [{ id: 'happy:7', op: 'ADD', type: 'mood' }] }).expect(400)).body.error).toMatch(/Invalid centroid_index 7 for mood 'happy'/);
      // The largest anchor a client may save (500 exclusion vectors, about 1 MB of JSON) passes the gateway; more is a 400.
      const many = Array.from({ length: 500 }, (_, i) => ({ vector: vectors[i % N]!.map((x) => Math.round(x * 1e6) / 1e6), distance: 0.01 }));
      const big = (await post('/api/anchors', { name: 'Many exclusions', centroid: vectors[3], exclusions: many }).expect(200)).body.anchor;
      expect(big.exclusions).toBe(500);
      await post('/api/anchors', { name: 'Too many exclusions', centroid: vectors[3], exclusions: [...many, many[0]] }).expect(400);

      // Bad input: unknown anchor, two seeds, too many points, wrong dimension, taken name, bad ids.
      expect((await get('/api/similar_tracks?anchor_id=987654').expect(404)).body.error).toMatch(/Anchor "987654" not found/);
      expect((await get(`/api/find_path?start_anchor=987654&end_song_id=${pid(1)}`).expect(404)).body.error).toMatch(/not found/);
      expect((await post('/api/alchemy', { items: [{ id: '987654', op: 'ADD', type: 'anchor' }] }).expect(404)).body.error).toMatch(/not found/);
      expect((await get(`/api/similar_tracks?anchor_id=${ids[0]}&item_id=${pid(1)}`).expect(400)).body.error).toMatch(/one seed/);
      const tooMany = Array.from({ length: 17 }, (_, i) => ({ id: pid(i), op: 'ADD', type: 'song' }));
      expect((await post('/api/anchors', { name: 'too many', items: tooMany }).expect(400)).body.error).toMatch(/at most 16 anchor points/);
      expect((await post('/api/anchors', { name: 'short', centroid: [1, 2, 3] }).expect(400)).body.error).toMatch(/200 numbers/);
      expect((await post('/api/anchors', { name: 'both', centroid: vectors[1], items: [{ id: pid(1), op: 'ADD' }] }).expect(400)).body.error).toMatch(/either items/);
      expect((await post('/api/anchors', { items: [{ id: pid(1), op: 'ADD' }] }).expect(400)).body.error).toMatch(/name/);
      expect((await post('/api/anchors', { name: 'SONG FIVE', centroid: vectors[5] }).expect(409)).body.error).toMatch(/exists/);
      expect((await post('/api/anchors', { name: 'nothing known', items: [{ id: 'nope', op: 'ADD' }] }).expect(404)).body.error).toMatch(/ADD items/);
      expect((await get('/api/anchors/abc').expect(400)).body.code).toBe('validation_failed');
      expect((await get('/api/anchors/987654').expect(404)).body.error).toMatch(/not found/);
      // Rename, delete.
      expect((await request(url).put(`/api/anchors/${ready.id}`).set(bearer).send({ name: 'Song 5 renamed' }).expect(200)).body.anchor.name).toBe('Song 5 renamed');
      await request(url).put(`/api/anchors/${ready.id}`).set(bearer).send({ name: '' }).expect(400);
      expect((await request(url).delete(`/api/anchors/${ready.id}`).set({ Cookie: userCookie }).expect(200)).body).toEqual({ deleted: true });
      await request(url).delete(`/api/anchors/${ready.id}`).set(bearer).expect(404);
      await get(`/api/similar_tracks?anchor_id=${ready.id}`).expect(404);
    });

    it('When a mood seed names a centroid_index, then that centroid of the mood is used; an index the mood lacks is a 400 with the valid range', async () => {
      const centroids = (await get('/api/mood_centroids').expect(200)).body as Record<string, Array<{ index: number; n_songs: number; top_tags: string[] }>>;
      const happy = { clusters: centroids.happy! };
      expect(happy.clusters[0]).toMatchObject({ index: 0 });
      for (const c of happy.clusters) expectShape(c, { index: 'number', n_songs: 'number', top_tags: 'array' });
      for (const [, h] of callers()) {
        const whole = (await get('/api/similar_tracks?mood=happy&n=5', h).expect(200)).body;
        expect((await get('/api/similar_tracks?mood=happy&centroid_index=0&n=5', h).expect(200)).body).toEqual(whole);
        expect(whole).toHaveLength(5);
        for (const r of whole) expectShape(r, { item_id: 'string', distance: 'number', mood_vector: 'string|null', other_features: 'string|null' });
      }
      const last = happy.clusters.length - 1;
      expect((await get(`/api/similar_tracks?mood=happy&centroid_index=${last + 1}`).expect(400)).body.error).toBe(`Invalid centroid_index ${last + 1} for mood 'happy' (0-${last})`);
      expect((await get('/api/similar_tracks?mood=happy&centroid_index=-1').expect(400)).body.error).toMatch(/centroid_index/);
      expect((await get('/api/similar_tracks?mood=happy&centroid_index=x').expect(400)).body.error).toMatch(/centroid_index/);
      expect((await get('/api/similar_tracks?centroid_index=0').expect(400)).body.error).toMatch(/centroid_index needs mood/);
      expect((await get('/api/similar_tracks?mood=gloomy&centroid_index=0').expect(400)).body.error).toMatch(/mood must be one of/);
    });

    it('When radios are saved and run, then each enabled radio replaces its own <name>_radio playlist with songs of the server and user playlists are untouched', async () => {
      const anchor = (await post('/api/anchors', { name: 'Drive', items: [{ id: 'Artist 2', op: 'ADD', type: 'artist' }] }).expect(200)).body.anchor;
      const radio = (await post('/api/radios', { anchor_id: anchor.id, n_results: 5, temperature: 0 }, { Cookie: userCookie }).expect(200)).body.radio;
      expect(radio).toMatchObject({ anchor_id: anchor.id, name: 'Drive', n_results: 5, temperature: 0, enabled: true, playlist_name: 'Drive_radio' });
      expect((await post('/api/radios', { anchor_id: anchor.id }).expect(409)).body.error).toMatch(/already has a radio/);
      const evening = (await post('/api/radios', { name: 'Evening', items: [{ id: 'Artist 3', op: 'ADD', type: 'artist' }], n_results: 4 }).expect(200)).body.radio;
      expect(evening).toMatchObject({ name: 'Evening', n_results: 4, temperature: 1, enabled: true });
      await request(url).put(`/api/radios/${evening.id}`).set(bearer).send({ enabled: false }).expect(200);
      expect((await request(url).put(`/api/radios/${evening.id}`).set(bearer).send({ n_results: 0 }).expect(400)).body.error).toMatch(/n_results must be between 1 and/);
      await request(url).put('/api/radios/987654').set(bearer).send({ enabled: true }).expect(404);
      expect((await post('/api/radios', { anchor_id: 987654 }).expect(404)).body.error).toMatch(/Anchor 987654 not found/);
      expect((await post('/api/radios', { temperature: 1 }).expect(400)).body.error).toMatch(/anchor_id or a recipe/);
      for (const [, h] of callers()) {
        const list = (await get('/api/radios', h).expect(200)).body.radios as Array<Record<string, unknown>>;
        for (const r of list) expectShape(r, { name: 'string', enabled: 'boolean', n_results: 'number', id: 'number', anchor_id: 'number', temperature: 'number' });
        expect(list.map((r) => [r.name, r.enabled])).toEqual([['Drive', true], ['Evening', false]]);
      }
      // A user's own playlists, one even named like ours: never touched.
      const subsonic = (method: string, params: Record<string, string | string[]>) => {
        const q = new URLSearchParams({ u: 'nav-user', p: 'nav-secret-pw', v: '1.16.1', c: 'test', f: 'json' });
        for (const [k, v] of Object.entries(params)) for (const x of [v].flat()) q.append(k, x);
        return fetch(`${fake.url}/rest/${method}.view?${q}`).then((r) => r.json());
      };
      await subsonic('createPlaylist', { name: 'Drive_radio', songId: [pid(0), pid(1)] });
      await subsonic('createPlaylist', { name: 'My favourites', songId: [pid(2)] });
      const userLists = sub.playlists().map((p) => ({ id: p.id, trackIds: p.trackIds }));

      const first = (await post('/api/radios/run', {}, { Cookie: userCookie }).expect(200)).body;
      expectShape(first, { playlists_created: 'number', radios_enabled: 'number', message: 'string', task_id: 'string' });
      expect(first).toMatchObject({ playlists_created: 1, radios_enabled: 1, servers_enabled: 1, failed: [], status: 'SUCCESS' });
      const ours = () => sub.playlists().filter((p) => !userLists.some((u) => u.id === p.id));
      expect(ours()).toHaveLength(1);
      const written = ours()[0]!;
      expect(written.name).toBe('Drive_radio');
      expect(written.trackIds).toHaveLength(5);
      const artist2 = new Set([10, 11, 12, 13, 14].map(pid));
      expect(written.trackIds.filter((t) => artist2.has(t)).length).toBeGreaterThanOrEqual(4);
      const second = (await post('/api/radios/run', {}).expect(200)).body;
      expect(second.playlists_created).toBe(1);
      expect(ours()).toHaveLength(1);
      expect(ours()[0]!.id).not.toBe(written.id);
      for (const u of userLists) expect(sub.playlists().find((p) => p.id === u.id)?.trackIds).toEqual(u.trackIds);
      const listedOurs = (await get('/api/playlists').expect(200)).body.servers[0].playlists;
      expect(Object.keys(listedOurs)).toContain('Drive_radio');
      // The run is a task with progress on the board.
      const status = (await get(`/api/status/${second.task_id}`).expect(200)).body;
      expect(status).toMatchObject({ state: 'SUCCESS', progress: 100 });
      // The scheduler's start (wait: false) answers 202 with the task id at once.
      const started = (await post('/api/radios/run', { wait: false }).expect(202)).body;
      expect(started).toMatchObject({ task_type: 'radios', task_id: expect.any(String) });
      await waitUntil(async () => (await get(`/api/status/${started.task_id}`)).body.state === 'SUCCESS');
      await request(url).delete(`/api/radios/${evening.id}`).set(bearer).expect(200);
      await request(url).delete(`/api/radios/${evening.id}`).set(bearer).expect(404);
    });

    it('When a radios schedule is due, then the scheduler starts a radio run', async () => {
      const s = (await post('/api/cron', { name: 'radios every 2 s', kind: 'radios', cron: '*/2 * * * * *', timezone: 'UTC' }).expect(201)).body;
      let taskId: string | undefined;
      await waitUntil(async () => {
        const row = (await get('/api/cron').expect(200)).body.schedules.find((x: { id: string }) => x.id === s.id);
        taskId = row?.history.find((h: { outcome: string }) => h.outcome === 'started')?.task_id;
        return taskId !== undefined;
      });
      await request(url).delete(`/api/cron/${s.id}`).set(bearer).expect(200);
      await waitUntil(async () => (await get(`/api/status/${taskId}`)).body.state === 'SUCCESS');
      expect((await get(`/api/status/${taskId}`).expect(200)).body.status_message).toMatch(/Created 1 radio playlist/);
    });

    it('When a non-admin calls every read route the reference serves, then none answers 404 or 5xx', async () => {
      const paths = [
        '/api/config',
        '/api/config/defaults',
        '/api/version',
        '/chat/api/config_defaults',
        '/api/models',
        '/api/clap/stats',
        '/api/lyrics/stats',
        '/api/sem_grove/stats',
        '/api/search_artists?query=a&start=0&end=1',
        '/api/search_playlists?query=a',
        '/api/artist_tracks?artist=Artist%202',
        '/api/artist_projections',
        '/api/map_cache_status',
        '/api/anchors',
        '/api/radios',
        `/api/sync?page=1&limit=5`,
        `/external/get_score?id=${pid(4)}`,
        `/api/search_tracks?search_query=song&index=sem_grove&start=0&end=20`,
      ];
      for (const [, h] of callers()) for (const p of paths) expect({ p, status: (await get(p, h)).status }).toEqual({ p, status: 200 });
    });
  });

  describe('admin-editable query defaults (issue "Operations": settings)', () => {
    it('When an admin changes the similarity, path and alchemy defaults, then /api/config shows them and the index applies them within seconds; a request\'s own value still wins', async () => {
      const put = (body: object) => request(url).put('/api/config').set(bearer).send(body);
      expect((await put({ NUM_CLUSTERS_MIN: 0 }).expect(400)).body.error).toMatch(/NUM_CLUSTERS_MIN/);
      expect((await put({ ALCHEMY_DEFAULT_N_RESULTS: 501 }).expect(400)).body.error).toMatch(/ALCHEMY_DEFAULT_N_RESULTS/);
      const before = (await get(`/api/similar_tracks?item_id=${pid(0)}&n=20`).expect(200)).body as Array<{ author: string }>;
      expect(Math.max(...Object.values(countBy(before.map((r) => r.author))))).toBe(3);
      await put({ MAX_SONGS_PER_ARTIST: 1, PATH_DEFAULT_LENGTH: 5, ALCHEMY_DEFAULT_N_RESULTS: 4, TOP_N_CLUSTERING_PLAYLIST: 6 }).expect(200);
      try {
        const cfg = (await get('/api/config', { Cookie: userCookie }).expect(200)).body;
        expect(cfg).toMatchObject({ max_songs_per_artist: 1, path_default_length: 5, alchemy_default_n_results: 4, top_n_clustering_playlist: 6 });
        // The index reads its settings through a 5 s cache: wait for the change to arrive.
        const deadline = Date.now() + 15_000;
        let rows: Array<{ author: string }> = [];
        while (Date.now() < deadline) {
          rows = (await get(`/api/similar_tracks?item_id=${pid(0)}&n=20`).expect(200)).body;
          if (Math.max(...Object.values(countBy(rows.map((r) => r.author)))) === 1) break;
          await new Promise((r) => setTimeout(r, 500));
        }
        expect(Math.max(...Object.values(countBy(rows.map((r) => r.author))))).toBe(1);
        const alchemy = (await post('/api/alchemy', { items: [{ id: pid(0), op: 'ADD', type: 'song' }], temperature: 0 }).expect(200)).body;
        expect(alchemy.results).toHaveLength(4);
        const path = (await get(`/api/find_path?start_song_id=${pid(0)}&end_song_id=${pid(40)}`).expect(200)).body;
        expect(path.path.length).toBeLessThanOrEqual(5);
        const own = (await get(`/api/similar_tracks?item_id=${pid(0)}&n=20&max_songs_per_artist=3`).expect(200)).body as Array<{ author: string }>;
        expect(Math.max(...Object.values(countBy(own.map((r) => r.author))))).toBe(3);
      } finally {
        await put({ MAX_SONGS_PER_ARTIST: null, PATH_DEFAULT_LENGTH: null, ALCHEMY_DEFAULT_N_RESULTS: null, TOP_N_CLUSTERING_PLAYLIST: null }).expect(200);
      }
      expect((await get('/api/config').expect(200)).body).toMatchObject({ max_songs_per_artist: 3, path_default_length: 25, alchemy_default_n_results: 100 });
    });
  });
});

function countBy(values: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
