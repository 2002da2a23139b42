import request from 'supertest';
import { MSD_TAGS, MTT_TAGS, OTHER_FEATURE_LABELS, formatLabelScores, moodVectorOf } from '@polyphony/contracts';
import { buildIndex, loadIndexConfig } from '@polyphony/index';
import { createLogger, InMemoryBus, signIdentity } from '@polyphony/platform';
import type { TestDatabase } from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { API_TOKEN, startTestStack } from './helpers';

/**
 * Text search, lyrics search, SemGrove, moods and the dashboard through the gateway (bearer token,
 * `server=`), on a seeded catalogue of 60 songs in three styles on two servers:
 *   style 0 "storm" (rock, metal, loud; lyrics about fire and thunder), style 1 "calm" (ambient, chill,
 *   mellow; lyrics about the ocean and sleep), style 2 "party" (dance, party, happy; lyrics about dancing).
 * Alpha (navidrome) holds songs 0-49 as `a-<i>`, Beta (jellyfin) songs 10-59 as `b-<i>`.
 * Song 4 is tagged instrumental. Song 7 has French lyrics.
 */
describe('semantic endpoints through the gateway (seeded catalogue)', () => {
  jest.setTimeout(300_000);
  let stack: Stack;
  let db: TestDatabase;
  let url: string;
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  const N = 60;
  const styleOf = (i: number) => i % 3;
  const itemId = (i: number) => `fp_4${i.toString(16).padStart(50, '0')}`;
  const onAlpha = (i: number) => i < 50;
  const onBeta = (i: number) => i >= 10;

  const LYRICS = [
    (i: number) => `Thunder and fire in the night, the storm is burning bright, we ride the fire road ${i}, thunder in my veins, fire fire fire`,
    (i: number) => `The ocean waves are calling me to sleep, I dream of the quiet sea ${i}, waves and waves, the ocean keeps my dreams so deep`,
    (i: number) => `Dance all night at the party tonight, move your body to the beat ${i}, dance dance with me, the party never ends`,
  ];

  function tagsFor(i: number): { msd: number[]; mtt: number[] } {
    const s = styleOf(i);
    const msd = MSD_TAGS.map((_, k) => 0.02 + ((i * 7 + k * 13) % 10) / 200);
    const mtt = MTT_TAGS.map((_, k) => 0.02 + ((i * 5 + k * 11) % 10) / 200);
    const setMsd = (label: string, p: number) => (msd[MSD_TAGS.indexOf(label as (typeof MSD_TAGS)[number])] = p);
    const setMtt = (label: string, p: number) => (mtt[MTT_TAGS.indexOf(label as (typeof MTT_TAGS)[number])] = p);
    const j = (i % 7) / 100;
    if (s === 0) {
      setMsd('rock', 0.8 + j);
      setMsd('metal', 0.6 + j);
      setMtt('loud', 0.7);
      setMtt('fast', 0.6);
    } else if (s === 1) {
      setMsd('ambient', 0.75 + j);
      setMsd('chill', 0.6 + j);
      setMsd('Mellow', 0.55);
      setMtt('quiet', 0.7);
      setMtt('slow', 0.7);
    } else {
      setMsd('dance', 0.8 + j);
      setMsd('party', 0.7 + j);
      setMsd('happy', 0.6);
      setMtt('dance', 0.7);
    }
    if (i === 4) setMsd('instrumental', 0.99);
    return { msd, mtt };
  }

  function otherFor(i: number): string {
    const s = styleOf(i);
    const j = (i % 5) / 100;
    const v: Record<string, number> = { danceable: 0.2, aggressive: 0.1, happy: 0.2, party: 0.1, relaxed: 0.2, sad: 0.1 };
    if (s === 0) v.aggressive = 0.8 + j;
    if (s === 1) v.relaxed = 0.8 + j;
    if (s === 2) Object.assign(v, { danceable: 0.85 + j, happy: 0.7 + j, party: 0.75 });
    return formatLabelScores(OTHER_FEATURE_LABELS.map((l) => [l, v[l]!] as const));
  }

  function vectorFor(i: number): Buffer {
    const s = styleOf(i);
    const v = new Float32Array(200);
    for (let d = 0; d < 200; d++) v[d] = Math.sin(d * (s + 1) * 0.37) + 0.15 * Math.cos(d * 0.11 * (i + 1));
    return Buffer.from(v.buffer);
  }

  function internal(method: 'put' | 'get', path: string, body?: object) {
    const headers = signIdentity({ sub: 'test', username: 'test', role: 'admin', via: 'internal' }, stack.internalSecret);
    const req = request(stack.peers().catalogue)[method](path).set(headers);
    return body ? req.send(body) : req;
  }

  async function rebuildIndex(expectItems: number) {
    await request(url).post('/api/index/rebuild').set(auth).send({}).expect(202);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const s = await request(url).get('/api/index/status').set(auth).expect(200);
      if (!s.body.building && s.body.items === expectItems && s.body.generation > 0) return s.body.generation as number;
      if (Date.now() > deadline) throw new Error(`index not rebuilt: ${JSON.stringify(s.body)}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  let alphaId: string;
  let betaId: string;

  beforeAll(async () => {
    ({ stack, db, url } = await startTestStack());
    const a = await request(url).post('/api/servers').set(auth).send({ name: 'Alpha', server_type: 'navidrome', creds: { url: 'http://127.0.0.1:9', user: 'u', password: 'p' } }).expect(201);
    const b = await request(url).post('/api/servers').set(auth).send({ name: 'Beta', server_type: 'jellyfin', creds: { url: 'http://127.0.0.1:9', user_id: 'u', token: 't' } }).expect(201);
    alphaId = a.body.id;
    betaId = b.body.id;
    const all = Array.from({ length: N }, (_, i) => i);
    const tags = all.map(tagsFor);
    await db.query(
      `INSERT INTO catalogue.score (item_id, title, artist, album, year, tempo, energy, embedder_version, mood_vector, other_features, tag_scores, tags_model)
       SELECT u.id, u.title, u.artist, u.album, u.year, u.tempo, u.energy, 'test-v1', u.mv, u.ofs, u.tags::jsonb, 'test-model'
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::real[], $7::real[], $8::text[], $9::text[], $10::text[])
           AS u(id, title, artist, album, year, tempo, energy, mv, ofs, tags)`,
      [
        all.map(itemId),
        all.map((i) => `${['Storm', 'Ocean', 'Groove'][styleOf(i)]} Song ${i}`),
        all.map((i) => `Artist ${i % 6}`),
        all.map((i) => `Album ${styleOf(i)}`),
        all.map((i) => 1990 + (i % 20)),
        all.map((i) => [160, 70, 124][styleOf(i)]),
        all.map((i) => [-8, -30, -12][styleOf(i)]),
        all.map((i) => moodVectorOf(tags[i]!.msd)),
        all.map(otherFor),
        all.map((i) => JSON.stringify(tags[i])),
      ],
    );
    await db.query(`INSERT INTO catalogue.embedding (item_id, vector, embedder_version) SELECT id, decode(v, 'base64'), 'test-v1' FROM unnest($1::text[], $2::text[]) AS u(id, v)`, [
      all.map(itemId),
      all.map((i) => vectorFor(i).toString('base64')),
    ]);
    const maps = [...all.filter(onAlpha).map((i) => [alphaId, `a-${i}`, itemId(i)]), ...all.filter(onBeta).map((i) => [betaId, `b-${i}`, itemId(i)])];
    await db.query(`INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`, [
      maps.map((m) => m[0]),
      maps.map((m) => m[1]),
      maps.map((m) => m[2]),
    ]);
    for (let i = 0; i < N; i++) {
      if (i === 4) {
        await internal('put', `/internal/tracks/${itemId(i)}/lyrics`, { status: 'instrumental' }).expect(204);
        continue;
      }
      const text = i === 7 ? 'Je danse avec toi dans la nuit, et nous chantons les chansons de la mer, que la vie est belle avec toi' : LYRICS[styleOf(i)]!(i);
      await internal('put', `/internal/tracks/${itemId(i)}/lyrics`, { status: 'found', text, sourceServerId: alphaId, sourceKind: 'navidrome' }).expect(204);
    }
    await rebuildIndex(N);
  }, 300_000);
  afterAll(async () => {
    await stack?.stop();
    await db?.drop();
  });

  const alphaIds = new Set(Array.from({ length: N }, (_, i) => i).filter(onAlpha).map((i) => `a-${i}`));
  const betaIds = new Set(Array.from({ length: N }, (_, i) => i).filter(onBeta).map((i) => `b-${i}`));
  const indexOf = (id: string) => Number(id.split('-')[1]);

  it('lyrion+jellyfin.clap_search: POST /api/clap/search {query,limit} answers {query,count,results:[{item_id,title,author,album,similarity}]} ranked by the described style, in the default server ids', async () => {
    const res = await request(url).post('/api/clap/search').set(auth).send({ query: 'calm ambient music', limit: 10 }).expect(200);
    expect(res.body.query).toBe('calm ambient music');
    expect(res.body.count).toBe(res.body.results.length);
    expect(res.body.results).toHaveLength(10);
    expect(res.body.understood).toEqual(expect.arrayContaining(['calm', 'ambient']));
    for (const r of res.body.results) {
      expect(Object.keys(r).sort()).toEqual(['album', 'album_artist', 'author', 'item_id', 'similarity', 'title']);
      expect(typeof r.item_id).toBe('string');
      expect(alphaIds.has(r.item_id)).toBe(true);
      expect(r.similarity).toBeGreaterThan(0);
      expect(r.similarity).toBeLessThanOrEqual(1);
      expect(styleOf(indexOf(r.item_id))).toBe(1);
    }
    const sims = res.body.results.map((r: { similarity: number }) => r.similarity);
    expect([...sims].sort((x, y) => y - x)).toEqual(sims);
  });

  it('When server=Beta is given (query or body), then text search answers only Beta songs in Beta ids', async () => {
    for (const req of [
      request(url).post('/api/clap/search?server=Beta').set(auth).send({ query: 'party dance', limit: 500 }),
      request(url).post('/api/clap/search').set(auth).send({ query: 'party dance', limit: 500, server: 'Beta' }),
    ]) {
      const res = await req.expect(200);
      // Every Beta song scores above 0 (no tag is exactly at its column's floor), none of Alpha's own.
      expect(res.body.results.length).toBe(betaIds.size);
      for (const r of res.body.results) expect(betaIds.has(r.item_id)).toBe(true);
      for (const r of res.body.results.slice(0, 10)) expect(styleOf(indexOf(r.item_id))).toBe(2);
    }
  });

  it('When the query names a title word, tempo or energy, then metadata and descriptors rank too', async () => {
    const res = await request(url).post('/api/clap/search').set(auth).send({ query: 'storm loud', limit: 5 }).expect(200);
    for (const r of res.body.results) expect(styleOf(indexOf(r.item_id))).toBe(0);
    const slow = await request(url).post('/api/clap/search').set(auth).send({ query: 'slow', limit: 5 }).expect(200);
    for (const r of slow.body.results) expect(styleOf(indexOf(r.item_id))).toBe(1);
    const none = await request(url).post('/api/clap/search').set(auth).send({ query: 'qwertyuiop', limit: 5 }).expect(200);
    expect(none.body).toMatchObject({ count: 0, results: [], ignored: ['qwertyuiop'] });
  });

  it('When the text query is short or the limit out of range, then 400 in the error shape', async () => {
    for (const body of [{ query: 'ab' }, { query: 'calm', limit: 0 }, { query: 'calm', limit: 10000 }, {}, { query: 42 }]) {
      const res = await request(url).post('/api/clap/search').set(auth).send(body).expect(400);
      expect(res.body).toMatchObject({ code: 'validation_failed' });
    }
    await request(url).post('/api/clap/search?server=Nope').set(auth).send({ query: 'calm' }).expect(400);
  });

  it('lyrion.clap_warmup and lyrion.clap_top_queries: warmup answers 200 at once, top_queries lists past queries by frequency (strings)', async () => {
    const warm = await request(url).post('/api/clap/warmup').set(auth).send({}).expect(200);
    expect(warm.body).toMatchObject({ status: 'ready', tagged_songs: N });
    const top = await request(url).get('/api/clap/top_queries').set(auth).expect(200);
    expect(top.body.queries).toEqual(expect.arrayContaining(['party dance', 'calm ambient music']));
    expect(top.body.queries[0]).toBe('party dance');
    for (const q of top.body.queries) expect(typeof q).toBe('string');
  });

  it('When a query matches two styles alike and is steered by a concept, then more of it ranks its songs first, less of it last, and the answer echoes the steering', async () => {
    const ask = async (steering?: Array<{ concept: string; weight: number }>) =>
      (await request(url).post('/api/clap/search').set(auth).send({ query: 'rock party', limit: 40, ...(steering ? { steering } : {}) }).expect(200)).body as {
        results: Array<{ item_id: string; similarity: number }>;
        steering?: unknown;
      };
    const styles = (answer: { results: Array<{ item_id: string }> }, n: number) => answer.results.slice(0, n).map((r) => styleOf(indexOf(r.item_id)));
    const rockOnAlpha = Array.from({ length: N }, (_, i) => i).filter((i) => onAlpha(i) && styleOf(i) === 0).length;
    const plain = await ask();
    expect(plain.steering).toBeUndefined();
    // Unsteered: the party songs (party is an MSD tag and an other feature) edge out the rock songs, which follow.
    expect(new Set(styles(plain, rockOnAlpha))).not.toEqual(new Set([0]));
    expect(styles(plain, 40).filter((s) => s === 0)).toHaveLength(rockOnAlpha);
    const more = await ask([{ concept: 'Rock', weight: 1 }]);
    expect(more.steering).toEqual([{ concept: 'rock', weight: 1 }]);
    expect(styles(more, rockOnAlpha)).toEqual(Array(rockOnAlpha).fill(0));
    const partyOnAlpha = Array.from({ length: N }, (_, i) => i).filter((i) => onAlpha(i) && styleOf(i) === 2).length;
    const less = await ask([{ concept: 'rock', weight: -1 }]);
    expect(styles(less, partyOnAlpha)).toEqual(Array(partyOnAlpha).fill(2));
    for (const answer of [more, less]) {
      const sims = answer.results.map((r) => r.similarity);
      expect([...sims].sort((x, y) => y - x)).toEqual(sims);
      for (const r of answer.results) expect(alphaIds.has(r.item_id)).toBe(true);
    }
    // A zero weight changes nothing.
    const zero = await ask([{ concept: 'dance', weight: 0 }]);
    expect(zero.results).toEqual(plain.results);
  });

  it('When the concepts are listed for a server, then each has its kind, the songs of that server carrying it, and whether it can steer', async () => {
    const list = async (server: string) =>
      (await request(url).get(`/api/clap/concepts?server=${server}`).set(auth).expect(200)).body as { concepts: Array<{ name: string; kind: string; songs: number; steerable: boolean }>; tagged_songs: number };
    const alpha = await list('Alpha');
    const beta = await list('Beta');
    expect(alpha.tagged_songs).toBe(alphaIds.size);
    expect(beta.tagged_songs).toBe(betaIds.size);
    const byName = (l: typeof alpha) => new Map(l.concepts.map((c) => [c.name, c]));
    // Rock songs (style 0) carry "rock": 17 of songs 0-49, 16 of songs 10-59.
    const styleCount = (on: (i: number) => boolean, style: number) => Array.from({ length: N }, (_, i) => i).filter((i) => on(i) && styleOf(i) === style).length;
    expect(byName(alpha).get('rock')).toEqual({ name: 'rock', kind: 'genre', songs: styleCount(onAlpha, 0), steerable: true });
    expect(byName(beta).get('rock')).toMatchObject({ songs: styleCount(onBeta, 0), steerable: true });
    expect(byName(alpha).get('party')).toMatchObject({ kind: 'mood', songs: styleCount(onAlpha, 2), steerable: true });
    // No song is strong on piano (noise only): listed, carried by none, not steerable.
    expect(byName(alpha).get('piano')).toEqual({ name: 'piano', kind: 'instrument', songs: 0, steerable: false });
    expect(alpha.concepts.map((c) => c.kind)).toEqual([...alpha.concepts.map((c) => c.kind)].sort((a, b) => ['genre', 'instrument', 'voice', 'mood', 'era', 'tempo', 'dynamics', 'rhythm'].indexOf(a) - ['genre', 'instrument', 'voice', 'mood', 'era', 'tempo', 'dynamics', 'rhythm'].indexOf(b)));
    await request(url).get('/api/clap/concepts?server=Nope').set(auth).expect(400);
  });

  it('When steering names an unknown or non-steerable concept, a weight out of range or a concept twice, then 400 in the error shape saying why', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [[{ concept: 'bagpipes', weight: 1 }], /unknown concept 'bagpipes'/],
      [[{ concept: 'piano', weight: 2 }], /weight must be between -1 and 1/],
      [[{ concept: 'piano', weight: -1.01 }], /weight must be between -1 and 1/],
      [[{ concept: 'rock', weight: 0.5 }, { concept: 'ROCK', weight: -0.5 }], /only once/],
      [{ concept: 'rock', weight: 1 }, /array/i],
    ];
    for (const [steering, why] of cases) {
      const res = await request(url).post('/api/clap/search').set(auth).send({ query: 'calm ambient', steering }).expect(400);
      expect(res.body).toMatchObject({ code: 'validation_failed', request_id: expect.any(String) });
      expect(JSON.stringify(res.body)).toMatch(why);
    }
    const res = await request(url).post('/api/clap/search').set(auth).send({ query: 'calm ambient', steering: [{ concept: 'piano', weight: 0.5 }] }).expect(400);
    expect(res.body).toMatchObject({ code: 'validation_failed' });
    expect(res.body.error).toMatch(/concept 'piano' cannot steer on this index: 0 of 60 tagged songs carry it/);
  });

  it('When a song is asked for (GET /api/track), then it carries every learned tag with its probability beside the top-5 mood_vector', async () => {
    const track = (await request(url).get('/api/track?item_id=a-0').set(auth).expect(200)).body as { mood_vector: string; tags: Record<string, number> };
    const { msd, mtt } = tagsFor(0);
    expect(Object.keys(track.tags).sort()).toEqual([...new Set([...MSD_TAGS, ...MTT_TAGS])].sort());
    // Stored as bytes (p x 255), given with 3 decimals; "rock" is both an MSD and an MTT label: the higher.
    const q = (p: number) => Math.round((Math.round(p * 255) / 255) * 1000) / 1000;
    expect(track.tags['rock']).toBe(q(Math.max(msd[MSD_TAGS.indexOf('rock')]!, mtt[MTT_TAGS.indexOf('rock')]!)));
    expect(track.tags['loud']).toBe(q(0.7));
    expect(track.tags['Mellow']).toBe(q(msd[MSD_TAGS.indexOf('Mellow')]!));
    expect(track.mood_vector.split(',')[0]).toMatch(/^rock:/);
  });

  it('lyrion.lyrics_search: POST /api/lyrics/search/text {query,limit} answers {results:[rows]} of matching lyrics on the selected server; 200 {query, results: []} when nothing matches', async () => {
    const res = await request(url).post('/api/lyrics/search/text').set(auth).send({ query: 'ocean waves', limit: 50 }).expect(200);
    expect(res.body.results.length).toBeGreaterThan(5);
    for (const r of res.body.results) {
      expect(alphaIds.has(r.item_id)).toBe(true);
      expect(styleOf(indexOf(r.item_id))).toBe(1);
      expect(typeof r.title).toBe('string');
      expect(typeof r.author).toBe('string');
      expect(r.snippet).toMatch(/<b>/);
      expect(r.score).toBeGreaterThan(0);
      expect(r.score).toBeLessThan(1);
    }
    const beta = await request(url).post('/api/lyrics/search/text?server=Beta').set(auth).send({ query: '"fire road"', limit: 500 }).expect(200);
    for (const r of beta.body.results) expect(betaIds.has(r.item_id)).toBe(true);
    expect(beta.body.results.length).toBe([...betaIds].filter((id) => styleOf(indexOf(id)) === 0).length);
    // French lyrics are stored and matched in French (stemming: "chanson" finds "chansons").
    const [{ language }] = await db.query(`SELECT language::text AS language FROM catalogue.lyrics WHERE item_id = $1`, [itemId(7)]);
    expect(language).toBe('french');
    const fr = await request(url).post('/api/lyrics/search/text').set(auth).send({ query: 'chanson', limit: 5 }).expect(200);
    expect(fr.body.results.map((r: { item_id: string }) => r.item_id)).toEqual(['a-7']);
    const miss = await request(url).post('/api/lyrics/search/text').set(auth).send({ query: 'xylophone zebra', limit: 5 }).expect(200);
    expect(miss.body).toEqual({ query: 'xylophone zebra', count: 0, results: [] });
    await request(url).post('/api/lyrics/search/text').set(auth).send({ query: 'ab' }).expect(400);
    await request(url).post('/api/lyrics/search/text').set(auth).send({ query: 'ocean', limit: 501 }).expect(400);
  });

  it('lyrion.sem_grove: POST /api/sem_grove/search {item_id,limit} answers {results:[rows with is_seed], count}, seed first, neighbours in lyrics and audio', async () => {
    const res = await request(url).post('/api/sem_grove/search').set(auth).send({ item_id: 'a-13', limit: 8 }).expect(200);
    expect(res.body.mode).toBe('lyrics+audio');
    expect(res.body.results[0]).toMatchObject({ item_id: 'a-13', is_seed: true });
    expect(res.body.count).toBe(res.body.results.length);
    expect(res.body.results).toHaveLength(9);
    for (const r of res.body.results.slice(1)) {
      expect(r.is_seed).toBe(false);
      expect(alphaIds.has(r.item_id)).toBe(true);
      expect(styleOf(indexOf(r.item_id))).toBe(1);
      expect(r.similarity).toBeCloseTo(0.75 * r.lyrics_similarity + 0.25 * r.audio_similarity, 5);
      expect(typeof r.distance).toBe('number');
    }
    // Instrumental seed (no lyrics): audio alone.
    const inst = await request(url).post('/api/sem_grove/search').set(auth).send({ item_id: 'a-4', limit: 5 }).expect(200);
    expect(inst.body.mode).toBe('audio');
    await request(url).post('/api/sem_grove/search').set(auth).send({ item_id: 'nope', limit: 5 }).expect(404);
    await request(url).post('/api/sem_grove/search').set(auth).send({ item_id: 'a-13', limit: 0 }).expect(400);
    await request(url).post('/api/sem_grove/search').set(auth).send({ limit: 5 }).expect(400);
    // A Beta-only song asked on Alpha is not there.
    await request(url).post('/api/sem_grove/search').set(auth).send({ item_id: 'b-55', limit: 5 }).expect(404);
  });

  it('Moods: GET /api/mood_centroids is keyed by the six moods; similar_tracks?mood= seeds with one; an unknown mood is a 400', async () => {
    const c = await request(url).get('/api/mood_centroids').set(auth).expect(200);
    expect(Object.keys(c.body).sort()).toEqual(['aggressive', 'danceable', 'happy', 'party', 'relaxed', 'sad']);
    const relaxed = await request(url).get('/api/similar_tracks?mood=relaxed&n=5&server=Beta').set(auth).expect(200);
    expect(Array.isArray(relaxed.body)).toBe(true);
    expect(relaxed.body.length).toBe(5);
    for (const r of relaxed.body) {
      expect(betaIds.has(r.item_id)).toBe(true);
      expect(styleOf(indexOf(r.item_id))).toBe(1);
      expect(typeof r.distance).toBe('number');
    }
    const bad = await request(url).get('/api/similar_tracks?mood=furious').set(auth).expect(400);
    expect(bad.body.error).toMatch(/mood must be one of/);
  });

  it('Mood seeds: find_path from a mood to a song and alchemy with a mood item answer songs of the selected server', async () => {
    const end = [...betaIds][0]!;
    const path = await request(url).get(`/api/find_path?start_mood=relaxed&end_song_id=${end}&max_steps=6&server=Beta`).set(auth).expect(200);
    expect(path.body.path.length).toBeGreaterThan(1);
    expect(path.body.path.at(-1).item_id).toBe(end);
    for (const r of path.body.path) expect(betaIds.has(r.item_id)).toBe(true);
    const alchemy = await request(url).post('/api/alchemy?server=Beta').set(auth).send({ items: [{ id: 'relaxed', op: 'ADD', type: 'mood' }], n: 5, temperature: 0 }).expect(200);
    expect(alchemy.body.results.length).toBe(5);
    for (const r of alchemy.body.results) {
      expect(betaIds.has(r.item_id)).toBe(true);
      expect(styleOf(indexOf(r.item_id))).toBe(1);
    }
  });

  it('Instant playlist: the text search tool serves mood words to the rule-based interpreter', async () => {
    const res = await request(url).post('/chat/api/chatPlaylist?server=Beta').set(auth).send({ userInput: 'some relaxed music' }).expect(200);
    expect(res.body.response.ai_provider_used).toBe('NONE');
    expect(res.body.response.tool_calls.map((c: { tool: string }) => c.tool)).toContain('text_search');
    const fromText = res.body.response.tool_calls.find((c: { tool: string }) => c.tool === 'text_search');
    expect(fromText.songs).toBeGreaterThan(0);
    for (const r of res.body.response.query_results) expect(betaIds.has(r.item_id)).toBe(true);
  });

  it('lyrion.dashboard_summary: GET /api/dashboard/summary answers content counts, moods coverage, servers and last tasks', async () => {
    const res = await request(url).get('/api/dashboard/summary').set(auth).expect(200);
    expect(res.body.content).toMatchObject({ songs: N, analyzed: N, tagged: N, lyrics: N - 1, clap_indexed: N, distinct_artists: 6, distinct_albums: 6 });
    expect(res.body.content.gmm_indexed).toBeGreaterThanOrEqual(0);
    expect(res.body.content.moods_coverage.map((m: { label: string }) => m.label)).toEqual([...OTHER_FEATURE_LABELS]);
    for (const m of res.body.content.moods_coverage) expect(typeof m.score).toBe('number');
    expect(res.body.servers.map((s: { name: string }) => s.name).sort()).toEqual(['Alpha', 'Beta']);
    expect(res.body.tasks.index_build).toMatchObject({ status: 'SUCCESS' });
    expect(res.body.unavailable).toEqual([]);
  });

  it('When a radio runs over two servers whose media servers are down, then each server is tried on its own and both failures are reported', async () => {
    const anchor = (await request(url).post('/api/anchors?server=Beta').set(auth).send({ name: 'Calm radio', items: [{ id: 'relaxed', op: 'ADD', type: 'mood' }, { id: 'b-13', op: 'ADD', type: 'song' }] }).expect(200)).body.anchor;
    expect(anchor.items).toContainEqual({ id: itemId(13), op: 'ADD', type: 'song' });
    await request(url).post('/api/radios').set(auth).send({ anchor_id: anchor.id, n_results: 5 }).expect(200);
    const run = (await request(url).post('/api/radios/run').set(auth).send({}).expect(200)).body;
    expect(run).toMatchObject({ playlists_created: 0, radios_enabled: 1, servers_enabled: 2, status: 'SUCCESS' });
    expect([...run.failed].sort()).toEqual(['Calm radio@Alpha', 'Calm radio@Beta']);
    expect(run.message).toMatch(/2 failed/);
  });

  it('When a replica keeps its metadata and text-search columns on disk (INDEX_TABLE_RESIDENT_MIB=0), then it answers byte-identically to the in-memory replica', async () => {
    const env = { DATABASE_URL: db.url, INTERNAL_SECRET: stack.internalSecret, PORT: '0', INDEX_TABLE_RESIDENT_MIB: '0' };
    const onDisk = buildIndex(loadIndexConfig(env), { bus: new InMemoryBus(), peers: stack.peers, rebuildOnStart: false, logger: createLogger({ service: 'index-disk', level: process.env.LOG_LEVEL ?? 'error' }) });
    try {
      await onDisk.start();
      const live = onDisk.state.current();
      expect(live.index.size).toBe(N);
      expect(live.meta.onDisk).toBe(true);
      const as = (serverId: string) => signIdentity({ sub: 'u-1', username: 'tester', role: 'admin', via: 'bearer', serverId }, stack.internalSecret);
      const ask = async (target: Parameters<typeof request>[0], method: 'get' | 'post', path: string, serverId: string, body?: object) => {
        const req = request(target)[method](path).set(as(serverId));
        const res = await (body ? req.send(body) : req);
        return { status: res.status, text: res.text };
      };
      const calls: Array<['get' | 'post', string, string, object?]> = [
        ['post', '/api/clap/search', alphaId, { query: 'calm ambient music', limit: 10 }],
        ['post', '/api/clap/search', betaId, { query: 'party dance', limit: 500 }],
        ['post', '/api/clap/search', alphaId, { query: 'storm loud', limit: 20 }],
        ['post', '/api/clap/search', alphaId, { query: 'slow quiet instrumental', limit: 30 }],
        ['post', '/api/clap/search', betaId, { query: 'fast rock', limit: 30 }],
        ['get', '/api/mood_centroids', alphaId],
        ['get', '/api/similar_tracks?mood=happy&n=8', alphaId],
        ['get', '/api/similar_tracks?item_id=a-13&n=10', alphaId],
        ['get', '/api/similar_tracks?item_id=b-22&n=30&eliminate_duplicates=true', betaId],
        ['post', '/api/sem_grove/search', alphaId, { item_id: 'a-13', limit: 5 }],
        ['get', '/api/map?n=50', betaId],
      ];
      for (const [method, path, serverId, body] of calls) {
        const want = await ask(stack.peers().index, method, path, serverId, body);
        expect(want.status).toBe(200);
        expect(await ask(onDisk.http, method, path, serverId, body)).toEqual(want);
      }
    } finally {
      await onDisk.stop();
    }
  });

  it('When no song has tags (model missing), then the tag-based endpoints answer 503 tags_unavailable with the reason', async () => {
    await db.query(`UPDATE catalogue.score SET tag_scores = NULL, mood_vector = NULL, other_features = NULL, tags_model = NULL`);
    await rebuildIndex(N);
    const res = await request(url).post('/api/clap/search').set(auth).send({ query: 'calm ambient' }).expect(503);
    expect(res.body).toMatchObject({ code: 'tags_unavailable' });
    expect(res.body.error).toMatch(/MusiCNN/);
    await request(url).get('/api/mood_centroids').set(auth).expect(503);
    expect((await request(url).get('/api/clap/concepts').set(auth).expect(503)).body).toMatchObject({ code: 'tags_unavailable' });
    await request(url).get('/api/similar_tracks?mood=happy').set(auth).expect(503);
    const warm = await request(url).post('/api/clap/warmup').set(auth).send({}).expect(200);
    expect(warm.body.status).toBe('no_tags');
    // Lyrics search and SemGrove do not need tags.
    await request(url).post('/api/lyrics/search/text').set(auth).send({ query: 'ocean' }).expect(200);
    await request(url).post('/api/sem_grove/search').set(auth).send({ item_id: 'a-13', limit: 3 }).expect(200);
  });
});
