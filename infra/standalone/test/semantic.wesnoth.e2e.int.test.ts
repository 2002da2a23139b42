import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import request from 'supertest';
import { startSupysonic, WESNOTH_MUSIC_DIR, type StartedSupysonic, type TestDatabase } from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { API_TOKEN, loginCookie, startTestStack } from './helpers';

/**
 * The semantic endpoints on real MusiCNN tags (issue 14 "Tests and measures"): supysonic serves seven short
 * Wesnoth tracks, the stack analyzes them with the model installed (MUSICNN_PATCHES=2 to keep CPU low), and
 * every tag-based endpoint is called through the gateway as the plugins and clients call it: bearer token
 * and a non-admin cookie, `server=` naming the server, ids in supysonic's ids. Checked: text search (steered too,
 * with the concepts list and GET /api/track's tags), mood
 * centroids and mood seeds (with centroid_index), anchors as seeds of similar_tracks / find_path / alchemy
 * with their exclusions, a radio run writing its playlist on supysonic, SemGrove, the dashboard counts.
 * Skips (saying why) only when the weights folder (MODELS_DIR, else <repo>/../shared/models) is absent.
 */
const MODELS = process.env.MODELS_DIR ? resolve(process.env.MODELS_DIR) : resolve(__dirname, '../../../..', 'shared', 'models');
const present = existsSync(join(MODELS, 'musicnn', 'MSD_musicnn.h5'));
if (!present) console.warn(`Semantic endpoints on Wesnoth: SKIPPED, weights not found at ${join(MODELS, 'musicnn', 'MSD_musicnn.h5')}`);
const d = present ? describe : describe.skip;
const TRACKS = ['victory', 'defeat', 'defeat2', 'elf-land', 'revelation', 'victory2', 'sad'];
/** label:prob pairs with 3 decimals, the reference's string format. */
const LABEL_SCORES = /^[^:,]+:[01]\.\d{3}(,[^:,]+:[01]\.\d{3})*$/;

d('semantic endpoints on real MusiCNN tags of Wesnoth tracks (supysonic, gateway, bearer and non-admin cookie)', () => {
  jest.setTimeout(10 * 60_000);
  let supysonic: StartedSupysonic;
  let stack: Stack | undefined;
  let db: TestDatabase;
  let url: string;
  let music: string;
  let userCookie: string;
  let ids: string[];
  const bearer = { Authorization: `Bearer ${API_TOKEN}` };
  const callers = () => [bearer, { Cookie: userCookie }];
  const S = 'server=Supysonic';

  beforeAll(async () => {
    music = mkdtempSync(join(tmpdir(), 'semantic-wesnoth-'));
    for (const stem of TRACKS) copyFileSync(join(WESNOTH_MUSIC_DIR, `${stem}.ogg`), join(music, `${stem}.ogg`));
    supysonic = await startSupysonic({ musicDir: music, user: 'alice', password: 'alice-pass' });
    ({ stack, db, url } = await startTestStack({ MODELS_DIR: MODELS, MUSICNN_PATCHES: '2' }));
    await request(url).post('/api/servers').set(bearer).send({ name: 'Supysonic', server_type: 'navidrome', creds: { url: supysonic.url, user: 'alice', password: 'alice-pass' } }).expect(201);
    await request(url).post('/api/users').set(bearer).send({ username: 'listener', password: 'listener-pw-1', role: 'user' }).expect(201);
    userCookie = await loginCookie(url, 'listener', 'listener-pw-1');
    const start = await request(url).post('/api/analysis/start').set(bearer).send({}).expect(202);
    for (const deadline = Date.now() + 8 * 60_000; ; ) {
      const status = await request(url).get(`/api/status/${start.body.task_id}`).set(bearer);
      if (status.status === 200 && ['SUCCESS', 'FAIL', 'REVOKED'].includes(status.body.state)) {
        expect(status.body.state).toBe('SUCCESS');
        break;
      }
      if (Date.now() > deadline) throw new Error(`analysis did not finish: ${JSON.stringify(status.body)}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    const rows: Array<{ provider_id: string; tags_model: string | null }> = await db.query(
      `SELECT m.provider_id, s.tags_model FROM catalogue.track_server_map m JOIN catalogue.score s USING (item_id) ORDER BY m.provider_id`,
    );
    expect(rows).toHaveLength(TRACKS.length);
    expect(rows.every((r) => r.tags_model !== null)).toBe(true);
    ids = rows.map((r) => r.provider_id);
    // A fresh install with the model (MSD + MTT) stores and serves the learned embedding, with the dsp-v1 vector kept aside.
    const versions: Array<{ served: string; alt: string[] }> = await db.query(
      `SELECT e.embedder_version AS served, ARRAY(SELECT a.embedder_version FROM catalogue.embedding_alt a WHERE a.item_id = e.item_id) AS alt FROM catalogue.embedding e`,
    );
    expect(versions).toHaveLength(TRACKS.length);
    expect(versions.every((v) => v.served === 'tfjs:musicnn-fusion-v1' && v.alt.length === 1 && v.alt[0] === 'dsp-v1')).toBe(true);
    expect((await db.query(`SELECT DISTINCT embedder_version AS v FROM index.tracks`)).map((r: { v: string }) => r.v)).toEqual(['tfjs:musicnn-fusion-v1']);
  }, 10 * 60_000);
  afterAll(async () => {
    await stack?.stop();
    await db?.drop();
    await supysonic?.close();
    rmSync(music, { recursive: true, force: true });
  });

  it('When the library is described in words, then text search ranks its songs by their tags in supysonic ids, for a token and a non-admin', async () => {
    for (const h of callers()) {
      const res = await request(url).post(`/api/clap/search?${S}`).set(h).send({ query: 'calm orchestral music', limit: 5 }).expect(200);
      expect(res.body.query).toBe('calm orchestral music');
      expect(res.body.count).toBe(res.body.results.length);
      expect(res.body.results.length).toBeGreaterThan(0);
      const sims = res.body.results.map((r: { similarity: number }) => r.similarity);
      expect([...sims].sort((a, b) => b - a)).toEqual(sims);
      for (const r of res.body.results) {
        expect(ids).toContain(r.item_id);
        expect(r.similarity).toBeGreaterThan(0);
        expect(r.similarity).toBeLessThanOrEqual(1);
        expect(typeof r.title).toBe('string');
      }
    }
    const warm = await request(url).post('/api/clap/warmup').set(bearer).send({}).expect(200);
    expect(warm.body).toMatchObject({ status: 'ready', tagged_songs: TRACKS.length });
    expect((await request(url).get('/api/clap/top_queries').set(bearer).expect(200)).body.queries).toContain('calm orchestral music');
    await request(url).post('/api/clap/search?server=Nope').set(bearer).send({ query: 'calm' }).expect(400);
    await request(url).post('/api/clap/search').set(bearer).send({ query: 'ab' }).expect(400);
  });

  it('When text search is steered on the real tags, then a steerable concept re-ranks the answer towards its songs in supysonic ids, concepts are listed per server, and GET /api/track gives every tag', async () => {
    const listed = (await request(url).get(`/api/clap/concepts?${S}`).set({ Cookie: userCookie }).expect(200)).body as { concepts: Array<{ name: string; kind: string; songs: number; steerable: boolean }>; tagged_songs: number };
    expect(listed.tagged_songs).toBe(TRACKS.length);
    expect(listed.concepts.length).toBeGreaterThan(80);
    for (const c of listed.concepts) {
      expect(c.songs).toBeGreaterThanOrEqual(0);
      expect(c.songs).toBeLessThanOrEqual(TRACKS.length);
    }
    const steerable = listed.concepts.filter((c) => c.steerable);
    expect(steerable.length).toBeGreaterThan(0);
    // Each song's tags as GET /api/track gives them (every MSD and MTT label with its probability).
    const tags = new Map<string, Record<string, number>>();
    for (const id of ids) {
      const t = (await request(url).get(`/api/track?item_id=${id}&${S}`).set(bearer).expect(200)).body as { item_id: string; tags: Record<string, number>; mood_vector: string };
      expect(t.item_id).toBe(id);
      expect(Object.keys(t.tags)).toHaveLength(92);
      for (const p of Object.values(t.tags)) expect(p >= 0 && p <= 1).toBe(true);
      // The mood_vector's top MSD tag is among the tags at its probability (the tags' is stored as a byte: within half a
      // step, 0.002, plus two roundings to 3 decimals), or higher when the MTT model carries the same label higher.
      const [top, p] = t.mood_vector.split(',')[0]!.split(':');
      expect(t.tags[top!]!).toBeGreaterThanOrEqual(Number(p) - 0.003);
      tags.set(id, t.tags);
    }
    // The steerable concept most songs carry: "more" of it puts songs higher on its tag first, "less" of it last.
    const concept = steerable.sort((a, b) => b.songs - a.songs)[0]!;
    const search = async (weight?: number) =>
      (await request(url).post(`/api/clap/search?${S}`).set(bearer).send({ query: 'calm orchestral music', limit: TRACKS.length, ...(weight === undefined ? {} : { steering: [{ concept: concept.name, weight }] }) }).expect(200)).body as {
        results: Array<{ item_id: string; similarity: number }>;
        steering?: Array<{ concept: string; weight: number }>;
      };
    const plain = await search();
    const more = await search(1);
    const less = await search(-1);
    expect(more.steering).toEqual([{ concept: concept.name, weight: 1 }]);
    for (const a of [plain, more, less]) for (const r of a.results) expect(ids).toContain(r.item_id);
    expect(more.results.map((r) => r.item_id).sort()).toEqual(plain.results.map((r) => r.item_id).sort());
    // Probability of the concept's label (a shared MSD/MTT label: the higher) of the first half of each answer.
    const label = Object.keys(tags.get(ids[0]!)!).find((l) => l.toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim() === concept.name)!;
    const firstHalf = (a: { results: Array<{ item_id: string }> }) => a.results.slice(0, Math.ceil(a.results.length / 2)).reduce((sum, r) => sum + tags.get(r.item_id)![label]!, 0);
    expect(firstHalf(more)).toBeGreaterThan(firstHalf(less));
    await request(url).post(`/api/clap/search?${S}`).set(bearer).send({ query: 'battle', steering: [{ concept: 'bagpipes', weight: 1 }] }).expect(400);
  });

  it('When moods seed similar_tracks (with centroid_index), then rows are supysonic songs with the reference mood fields', async () => {
    const centroids = (await request(url).get(`/api/mood_centroids?${S}`).set(bearer).expect(200)).body as Record<string, Array<{ index: number; n_songs: number; top_tags: string[] }>>;
    expect(Object.keys(centroids).sort()).toEqual(['aggressive', 'danceable', 'happy', 'party', 'relaxed', 'sad']);
    for (const clusters of Object.values(centroids)) {
      expect(clusters[0]!.n_songs).toBe(5);
      expect(clusters[0]!.index).toBe(0);
      expect(clusters[0]!.top_tags).toHaveLength(3);
    }
    for (const h of callers()) {
      const rows = (await request(url).get(`/api/similar_tracks?mood=sad&centroid_index=0&n=3&${S}`).set(h).expect(200)).body as Array<Record<string, unknown>>;
      expect(rows).toHaveLength(3);
      for (const r of rows) {
        expect(ids).toContain(r.item_id);
        expect(r.mood_vector).toMatch(LABEL_SCORES);
        expect(r.other_features).toMatch(/^danceable:[01]\.\d{3},aggressive:/);
      }
    }
    expect((await request(url).get(`/api/similar_tracks?mood=sad&centroid_index=1&${S}`).set(bearer).expect(400)).body.error).toBe("Invalid centroid_index 1 for mood 'sad' (0-0)");
  });

  it('When an anchor is saved from a mood and songs, then it seeds similar_tracks, find_path and alchemy, its exclusion applied; a radio on it writes <name>_radio on supysonic', async () => {
    const [keep, drop, end] = [ids[0]!, ids[1]!, ids[2]!];
    const made = await request(url)
      .post(`/api/anchors?${S}`)
      .set({ Cookie: userCookie })
      .send({ name: 'Wesnoth calm', items: [{ id: 'relaxed', op: 'ADD', type: 'mood' }, { id: keep, op: 'ADD', type: 'song' }, { id: drop, op: 'SUBTRACT', type: 'song' }] })
      .expect(200);
    expect(made.body.anchor).toMatchObject({ name: 'Wesnoth calm', points: 2, exclusions: 1, unresolved: [] });
    const anchorId = made.body.anchor.id as number;
    for (const h of callers()) {
      const similar = (await request(url).get(`/api/similar_tracks?anchor_id=${anchorId}&n=5&max_songs_per_artist=0&${S}`).set(h).expect(200)).body as Array<{ item_id: string }>;
      expect(similar.length).toBeGreaterThan(0);
      expect(similar.map((r) => r.item_id)).not.toContain(drop);
      for (const r of similar) expect(ids).toContain(r.item_id);
      const blend = (await request(url).post(`/api/alchemy?${S}`).set(h).send({ items: [{ id: String(anchorId), op: 'ADD', type: 'anchor' }], n: 4, temperature: 0 }).expect(200)).body;
      expect(blend.results.map((r: { item_id: string }) => r.item_id)).not.toContain(drop);
      const path = (await request(url).get(`/api/find_path?start_anchor=${anchorId}&end_song_id=${end}&max_steps=4&${S}`).set(h).expect(200)).body;
      expect(path.path.at(-1).item_id).toBe(end);
    }
    await request(url).get(`/api/similar_tracks?anchor_id=424242&${S}`).set(bearer).expect(404);

    const radio = (await request(url).post('/api/radios').set(bearer).send({ anchor_id: anchorId, n_results: 3, temperature: 0 }).expect(200)).body.radio;
    expect(radio).toMatchObject({ name: 'Wesnoth calm', n_results: 3, enabled: true });
    const run = (await request(url).post('/api/radios/run').set(bearer).send({}).expect(200)).body;
    expect(run).toMatchObject({ playlists_created: 1, radios_enabled: 1, failed: [], status: 'SUCCESS' });
    const q = new URLSearchParams({ u: 'alice', p: 'alice-pass', v: '1.16.1', c: 'test', f: 'json' });
    const lists = (await (await fetch(`${supysonic.url}/rest/getPlaylists.view?${q}`)).json()) as { 'subsonic-response': { playlists: { playlist?: Array<{ id: string; name: string; songCount: number }> } } };
    const written = (lists['subsonic-response'].playlists.playlist ?? []).filter((p) => p.name === 'Wesnoth calm_radio');
    expect(written).toHaveLength(1);
    expect(written[0]!.songCount).toBe(3);
  });

  it('When SemGrove and the dashboard are asked, then the seed comes first and the counts show the tagged songs', async () => {
    const grove = (await request(url).post(`/api/sem_grove/search?${S}`).set(bearer).send({ item_id: ids[0], limit: 3 }).expect(200)).body;
    expect(grove.results[0]).toMatchObject({ item_id: ids[0], is_seed: true });
    for (const r of grove.results) expect(ids).toContain(r.item_id);
    const dash = (await request(url).get('/api/dashboard/summary').set({ Cookie: userCookie }).expect(200)).body;
    expect(dash.content).toMatchObject({ songs: TRACKS.length, analyzed: TRACKS.length, tagged: TRACKS.length, clap_indexed: TRACKS.length });
  });
});
