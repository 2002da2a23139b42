import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import request from 'supertest';
import { MSD_TAGS, parseLabelScores } from '@polyphony/contracts';
import { startSupysonic, WESNOTH_MUSIC_DIR, type StartedSupysonic, type TestDatabase } from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { API_TOKEN, startTestStack } from './helpers';

/**
 * MusiCNN through the whole product (issue 13): supysonic serves three short Wesnoth tracks.
 * 1. Without a model the worker runs DSP-only: songs are stored without tags and GET /api/analysis/model
 *    says the model is missing and how to install it.
 * 2. The model is installed (MODELS_DIR, MUSICNN_PATCHES=2 to keep CPU low, MUSICNN_MTT=1) and the stack restarted on the
 *    same database: the next normal analysis run re-analyses the three songs (the embedder switch); song ids and
 *    mappings are unchanged, every song gets 50 MSD + 50 MTT probabilities, a mood_vector, other_features and
 *    a learned vector; once all three have one the catalogue serves the learned version (the dsp-v1 vectors
 *    kept as alternates) and the index generation built at the run's end holds it; the run's status shows
 *    the switch.
 * Skips (saying why) only when the weights folder (MODELS_DIR, else <repo>/../shared/models) is absent.
 */
const MODELS = process.env.MODELS_DIR ? resolve(process.env.MODELS_DIR) : resolve(__dirname, '../../../..', 'shared', 'models');
const present = existsSync(join(MODELS, 'musicnn', 'MSD_musicnn.h5'));
if (!present) console.warn(`MusiCNN end to end: SKIPPED, weights not found at ${join(MODELS, 'musicnn', 'MSD_musicnn.h5')}`);
const d = present ? describe : describe.skip;

d('MusiCNN end to end (supysonic, model installed on an existing catalogue)', () => {
  jest.setTimeout(10 * 60_000);
  let supysonic: StartedSupysonic;
  let stack: Stack | undefined;
  let db: TestDatabase;
  let url: string;
  let music: string;
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  const sql = (text: string, params: unknown[] = []) => db.query(text, params);

  async function runAnalysis(): Promise<Record<string, unknown>> {
    const start = await request(url).post('/api/analysis/start').set(auth).send({}).expect(202);
    const deadline = Date.now() + 8 * 60_000;
    for (;;) {
      const status = await request(url).get(`/api/status/${start.body.task_id}`).set(auth);
      if (status.status === 200 && ['SUCCESS', 'FAIL', 'REVOKED'].includes(status.body.state)) return status.body;
      if (Date.now() > deadline) throw new Error(`analysis did not finish: ${JSON.stringify(status.body)}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  beforeAll(async () => {
    music = mkdtempSync(join(tmpdir(), 'musicnn-e2e-'));
    for (const stem of ['defeat', 'defeat2', 'elf-land']) copyFileSync(join(WESNOTH_MUSIC_DIR, `${stem}.ogg`), join(music, `${stem}.ogg`));
    supysonic = await startSupysonic({ musicDir: music, user: 'alice', password: 'alice-pass' });
  });
  afterAll(async () => {
    await stack?.stop();
    await db?.drop();
    await supysonic?.close();
    rmSync(music, { recursive: true, force: true });
  });

  it('When the model is installed after a DSP-only analysis, then the next run adds tags to the same songs without touching ids or mappings', async () => {
    ({ stack, db, url } = await startTestStack({ MODELS_DIR: undefined }));
    const model0 = await request(url).get('/api/analysis/model').set(auth).expect(200);
    expect(model0.body).toMatchObject({ status: 'missing', reason: 'MODELS_DIR is not set' });
    expect(model0.body.howToInstall).toContain('MODELS_DIR');
    const config0 = await request(url).get('/api/config').set(auth).expect(200);
    expect(config0.body.learned_model).toMatchObject({ status: 'missing', model: null });
    expect(config0.body.learned_model.howToInstall).toContain('scripts/setup.sh');
    expect(config0.body.learned_model.reason).toBeUndefined(); // a token is not a session admin
    await request(url).post('/api/servers').set(auth).send({ name: 'Supysonic', server_type: 'navidrome', creds: { url: supysonic.url, user: 'alice', password: 'alice-pass' } }).expect(201);
    const first = await runAnalysis();
    expect(first.state).toBe('SUCCESS');
    const before: Array<{ item_id: string; provider_id: string; vector: Buffer; tags_model: string | null }> = await sql(
      `SELECT m.item_id, m.provider_id, e.vector, s.tags_model FROM catalogue.track_server_map m JOIN catalogue.embedding e USING (item_id) JOIN catalogue.score s USING (item_id) ORDER BY m.provider_id`,
    );
    expect(before).toHaveLength(3);
    expect(before.every((r) => r.tags_model === null)).toBe(true);
    const noTags = await request(url).post('/api/clap/search').set(auth).send({ query: 'calm ambient music', limit: 5 }).expect(503);
    expect(noTags.body.code).toBe('tags_unavailable');

    await stack.stop();
    stack = undefined;
    ({ stack, url } = await startTestStack({ MODELS_DIR: MODELS, MUSICNN_PATCHES: '2', MUSICNN_MTT: '1' }, db));
    const model1 = await request(url).get('/api/analysis/model').set(auth).expect(200);
    expect(model1.body).toMatchObject({ status: 'ready', model: 'musicnn-msd@412a832c+mtt@1a66a2e5', patchesPerTrack: 2, reason: null });
    expect((await request(url).get('/api/config').set(auth).expect(200)).body.learned_model).toMatchObject({ status: 'ready', model: 'musicnn-msd@412a832c+mtt@1a66a2e5' });
    const second = await runAnalysis();
    expect(second.state).toBe('SUCCESS');
    const servers = (second.details as { servers: Array<Record<string, number>> }).servers;
    expect(servers[0]).toMatchObject({ seen: 3, analyzed: 3, failed: 0 });

    const after: Array<{ item_id: string; provider_id: string; vector: Buffer; tags_model: string; mood_vector: string; other_features: string; tag_scores: { msd: number[]; mtt: number[] } }> = await sql(
      `SELECT m.item_id, m.provider_id, e.vector, s.tags_model, s.mood_vector, s.other_features, s.tag_scores FROM catalogue.track_server_map m JOIN catalogue.embedding e USING (item_id) JOIN catalogue.score s USING (item_id) ORDER BY m.provider_id`,
    );
    expect(after.map((r) => [r.item_id, r.provider_id])).toEqual(before.map((r) => [r.item_id, r.provider_id]));
    // The switch: the served vectors are the learned ones; the dsp-v1 vectors are kept unchanged aside.
    const alt: Array<{ item_id: string; embedder_version: string; vector: Buffer }> = await sql(`SELECT item_id, embedder_version, vector FROM catalogue.embedding_alt ORDER BY item_id`);
    expect(alt.map((a) => a.embedder_version)).toEqual(['dsp-v1', 'dsp-v1', 'dsp-v1']);
    const served: Array<{ v: string }> = await sql(`SELECT DISTINCT embedder_version AS v FROM catalogue.embedding`);
    expect(served.map((r) => r.v)).toEqual(['tfjs:musicnn-fusion-v1']);
    expect((second.details as { embeddingSwitch: Record<string, unknown> }).embeddingSwitch).toMatchObject({ servedVersion: 'tfjs:musicnn-fusion-v1', targetVersion: 'tfjs:musicnn-fusion-v1', covered: 3, total: 3, switching: false });
    const indexed: Array<{ v: string }> = await sql(`SELECT DISTINCT embedder_version AS v FROM index.tracks`);
    expect(indexed.map((r) => r.v)).toEqual(['tfjs:musicnn-fusion-v1']);
    after.forEach((r, i) => {
      expect(Buffer.compare(r.vector, before[i]!.vector)).not.toBe(0);
      expect(Buffer.compare(alt.find((a) => a.item_id === r.item_id)!.vector, before[i]!.vector)).toBe(0);
      expect(r.tags_model).toBe('musicnn-msd@412a832c+mtt@1a66a2e5');
      expect(r.tag_scores.msd).toHaveLength(50);
      expect(r.tag_scores.mtt).toHaveLength(50);
      const moods = parseLabelScores(r.mood_vector)!;
      expect(moods).toHaveLength(5);
      expect(moods[0]![1]).toBeCloseTo(Math.max(...r.tag_scores.msd), 3);
      expect(moods.map(([l]) => l)).not.toContain('Hip-Hop');
      expect(MSD_TAGS).toContain(moods[0]![0]);
      expect(parseLabelScores(r.other_features)!.map(([l]) => l)).toEqual(['danceable', 'aggressive', 'happy', 'party', 'relaxed', 'sad']);
    });
    const [{ n }] = await sql(`SELECT count(*)::int AS n FROM catalogue.score`);
    expect(n).toBe(3);
    // The run ended once the index served a generation built after it: tag search now answers.
    const search = await request(url).post('/api/clap/search').set(auth).send({ query: 'calm ambient music', limit: 5 }).expect(200);
    expect(search.body.count).toBeGreaterThan(0);

    // A third run finds nothing to do: the songs carry this model's tags.
    const third = await runAnalysis();
    expect((third.details as { servers: Array<Record<string, number>> }).servers[0]).toMatchObject({ seen: 3, analyzed: 0, skippedMapped: 3 });
  });
});
