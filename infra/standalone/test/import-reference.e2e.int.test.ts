import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { argon2id } from 'hash-wasm';
import { MusicnnAnalyser, computeChromaprint, decodeToPcm, penultimateMean } from '@polyphony/analysis-worker/engine';
import { computeSignature, formatCanonicalId } from '@polyphony/catalogue-identity/identity';
import { createMediaServerClient, type ProviderTrack } from '@polyphony/media-servers';
import {
  createTestDatabase, insertReferenceRows, referenceChromaprintBytes, referenceSchemaSql, referenceVectorBytes, startSupysonic, WESNOTH_MUSIC_DIR,
  type StartedSupysonic, type TestDatabase,
} from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { API_TOKEN, startTestStack, waitForTask } from './helpers';

/**
 * Import from the reference (issue 34) end to end. supysonic serves three Wesnoth tracks (real provider ids); the
 * reference's vectors are computed from the files as the reference stores them (MusiCNN MSD `model/dense/BiasAdd`,
 * mean over every 3 s patch of a center=False mel: MusicnnAnalyser.referenceVector), except the third song's, which is
 * another layer's (polyphony's BN(ReLU(dense)) mean): the import's agreement check must pass the first two and flag
 * the third. Two reference databases are built in its schema:
 * - v3.x multi-server: the supysonic server (default) and a second server holding a copy of one song that the
 *   reference merged (one score row, two track_server_map rows), a Chromaprint, an exclusion, a clustering
 *   playlist, an anchor with a radio, a cron schedule and two users (Argon2 hashes);
 * - single-server (older): provider ids as item_id, server settings in app_config; read from pg_dump files.
 * Checked: the dry run writes nothing; the import gives every song, mapping and user data; similar songs equal
 * the brute-force order over the imported vectors; an imported user logs in with the reference password (then
 * re-hashed); importing again changes nothing; the plain and custom dumps import the same; then a file added to the
 * server after the import and an analysis run with the model: the new file is analysed in the run that switches, the
 * imported songs are re-analysed and the catalogue switches embedder without touching ids, mappings or playlists. Skips (saying why) when the MusiCNN
 * weights are absent.
 */
const MODELS = process.env.MODELS_DIR ? resolve(process.env.MODELS_DIR) : resolve(__dirname, '../../../..', 'shared', 'models');
const present = existsSync(join(MODELS, 'musicnn', 'MSD_musicnn.h5'));
if (!present) console.warn(`import from the reference: SKIPPED, MusiCNN weights not found at ${MODELS}`);
const d = present ? describe : describe.skip;

const STEMS = ['defeat', 'defeat2', 'elf-land'];
/** Added to the server after the import, before the analysis run that switches the embedder. */
const NEW_STEM = 'sad';
const auth = { Authorization: `Bearer ${API_TOKEN}` };
const cos = (a: Float32Array, b: Float32Array) => {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return ab / Math.sqrt(aa * bb);
};

d('Import from the reference (supysonic, both layouts)', () => {
  jest.setTimeout(12 * 60_000);
  let music: string;
  let supysonic: StartedSupysonic;
  let tracks: ProviderTrack[];
  const vectors = new Map<string, Float32Array>(); // provider id -> reference vector
  let chromaprint: number[];
  const dbs: TestDatabase[] = [];
  let stack: Stack | undefined;
  let db: TestDatabase;
  let url: string;
  const SUPY = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
  const JELLY = '0f1e2d3c4b5a69788796a5b4c3d2e1f0';
  const fpId = (v: Float32Array) => {
    const s = computeSignature(v);
    if (!s.ok) throw new Error('unsignable test vector');
    return formatCanonicalId(4, s.code);
  };

  async function buildReference(layout: 'multi-server' | 'single-server'): Promise<TestDatabase> {
    const ref = await createTestDatabase('reference');
    dbs.push(ref);
    const c = new Client({ connectionString: ref.url });
    await c.connect();
    try {
      for (const sql of referenceSchemaSql(layout)) await c.query(sql);
      const analysed = tracks.slice(0, 3);
      const idOf = (t: ProviderTrack) => (layout === 'multi-server' ? fpId(vectors.get(t.id)!) : t.id);
      await insertReferenceRows(c, 'score', analysed.map((t, i) => ({ item_id: idOf(t), title: t.title, author: t.artist, album: t.album ?? null, tempo: 100 + i, key: 'C', scale: 'major', energy: 0.4, mood_vector: 'ambient:0.53,rock:0.51', other_features: 'danceable:0.2,aggressive:0.1,happy:0.4,party:0.1,relaxed:0.6,sad:0.3', year: 2005, rating: 4, duration: t.durationSeconds ?? null, file_path: layout === 'single-server' ? t.path ?? null : null })));
      await insertReferenceRows(c, 'embedding', analysed.map((t) => ({ item_id: idOf(t), embedding: referenceVectorBytes(vectors.get(t.id)!) })));
      const users = [{ username: 'carol', role: 'admin', password_hash: await argon2id({ password: 'carol-secret-1', salt: Buffer.from('0123456789abcdef'), parallelism: 1, iterations: 2, memorySize: 1024, hashLength: 32, outputType: 'encoded' }) },
        { username: 'dave', role: 'user', password_hash: await argon2id({ password: 'dave-secret-22', salt: Buffer.from('fedcba9876543210'), parallelism: 1, iterations: 2, memorySize: 1024, hashLength: 32, outputType: 'encoded' }) }];
      await insertReferenceRows(c, 'audiomuse_users', users);
      const [a, b, third] = analysed as [ProviderTrack, ProviderTrack, ProviderTrack];
      const centroid = Array.from(vectors.get(a.id)!, (x, i) => (x + vectors.get(b.id)![i]!) / 2);
      await insertReferenceRows(c, 'alchemy_anchors', [{ name: 'Calm pair', centroid: JSON.stringify(centroid), exclusions: '[]' }]);
      await insertReferenceRows(c, 'alchemy_radios', [{ anchor_name: 'Calm pair', temperature: 0.5, n_results: 20, enabled: true }]);
      await insertReferenceRows(c, 'cron', [{ name: 'Nightly analysis', task_type: 'main_analysis', cron_expr: '0 3 * * *', enabled: true }, { name: 'Plugin job', task_type: 'unknown_task', cron_expr: '0 4 * * *', enabled: true }]);
      const pl = [a, third].map((t) => ({ playlist_name: 'Calm_automatic', item_id: idOf(t), title: t.title, author: t.artist, ...(layout === 'multi-server' ? { server_id: SUPY } : {}) }));
      await insertReferenceRows(c, 'playlist', pl);
      if (layout === 'multi-server') {
        await insertReferenceRows(c, 'music_servers', [
          { server_id: SUPY, name: 'Supysonic', server_type: 'navidrome', creds: JSON.stringify({ url: supysonic.url, user: 'alice', password: 'alice-pass' }), music_libraries: '', is_default: true },
          { server_id: JELLY, name: 'Jellyfin', server_type: 'jellyfin', creds: JSON.stringify({ url: 'http://127.0.0.1:9', user_id: 'u1', token: 'jf-token' }), music_libraries: 'Music', is_default: false },
        ]);
        await insertReferenceRows(c, 'track_server_map', [
          ...analysed.map((t) => ({ item_id: idOf(t), server_id: SUPY, provider_track_id: t.id, match_tier: 'analysis', file_path: t.path ?? null })),
          { item_id: idOf(a), server_id: JELLY, provider_track_id: 'jf-copy-1', match_tier: 'fingerprint', file_path: '/music/copy/defeat.ogg' },
        ]);
        await insertReferenceRows(c, 'artist_server_map', [{ artist_name: a.artist, server_id: SUPY, provider_artist_id: a.artistId ?? 'artist-1' }]);
        await insertReferenceRows(c, 'chromaprint', [{ server_id: SUPY, provider_track_id: a.id, fingerprint: referenceChromaprintBytes(chromaprint) }]);
        await insertReferenceRows(c, 'analysis_exclusions', [{ server_id: JELLY, provider_item_id: 'jf-broken-1', title: 'Broken', artist: 'Someone', reason_code: 'undecodable' }]);
      } else {
        await insertReferenceRows(c, 'app_config', [{ key: 'MEDIASERVER_TYPE', value: 'navidrome' }, { key: 'NAVIDROME_URL', value: supysonic.url }, { key: 'NAVIDROME_USER', value: 'alice' }, { key: 'NAVIDROME_PASSWORD', value: 'alice-pass' }]);
        await insertReferenceRows(c, 'chromaprint', [{ provider_track_id: a.id, fingerprint: referenceChromaprintBytes(chromaprint) }]);
        await insertReferenceRows(c, 'analysis_exclusions', [{ provider_item_id: 'deleted-file-1', title: 'Broken', artist: 'Someone', reason_code: 'too_short' }]);
      }
    } finally {
      await c.end();
    }
    return ref;
  }

  async function runImport(body: object | Buffer, dryRun = false): Promise<Record<string, any>> {
    const req = request(url).post(`/api/import/audiomuse${Buffer.isBuffer(body) ? `?dry_run=${dryRun}` : ''}`).set(auth);
    const res = Buffer.isBuffer(body) ? await req.set('content-type', 'application/octet-stream').send(body) : await req.send({ ...body, dry_run: dryRun });
    expect(res.status).toBe(202);
    const ended = await waitForTask(url, res.body.task_id, { timeoutMs: 5 * 60_000 });
    expect(ended).toMatchObject({ state: 'SUCCESS' });
    const status = await request(url).get('/api/import/audiomuse/status').set(auth).expect(200);
    expect(status.body.task_id).toBe(res.body.task_id);
    return status.body.report;
  }

  /** Everything the import writes, in a comparable form. */
  async function state() {
    const q = (sql: string) => db.query(sql);
    return {
      servers: await q(`SELECT name, server_type, creds, music_libraries, is_default FROM registry.music_servers ORDER BY name`),
      songs: await q(`SELECT s.item_id, s.title, s.tempo, s.mood_vector, s.embedder_version, encode(e.vector, 'hex') AS v FROM catalogue.score s JOIN catalogue.embedding e USING (item_id) ORDER BY 1`),
      mappings: await q(`SELECT m.provider_id, m.item_id, ms.name FROM catalogue.track_server_map m JOIN registry.music_servers ms ON ms.id::text = m.server_id ORDER BY 1`),
      prints: await q(`SELECT provider_id, fingerprint FROM catalogue.chromaprint ORDER BY 1`),
      exclusions: await q(`SELECT provider_id, reason_code FROM analysis.exclusions ORDER BY 1`),
      playlists: await q(`SELECT p.name, p.kind, t.position, t.item_id, t.provider_id FROM playlist.playlists p JOIN playlist.playlist_tracks t ON t.playlist_id = p.id ORDER BY 1, 3`),
      anchors: await q(`SELECT a.name, a.dim, a.embedder_version, r.temperature, r.n_results FROM "index".anchors a LEFT JOIN "index".radios r ON r.anchor_id = a.id ORDER BY 1`),
      schedules: await q(`SELECT name, kind, cron, enabled FROM registry.schedules WHERE name = 'Nightly analysis'`),
      users: await q(`SELECT username, role FROM auth.service_users ORDER BY 1`),
    };
  }

  beforeAll(async () => {
    music = mkdtempSync(join(tmpdir(), 'import-ref-'));
    for (const stem of STEMS) copyFileSync(join(WESNOTH_MUSIC_DIR, `${stem}.ogg`), join(music, `${stem}.ogg`));
    supysonic = await startSupysonic({ musicDir: music, user: 'alice', password: 'alice-pass' });
    const client = createMediaServerClient({ type: 'navidrome', creds: { url: supysonic.url, user: 'alice', password: 'alice-pass' } });
    tracks = [];
    for await (const page of client.iterateTracks()) tracks.push(...page);
    tracks.sort((x, y) => STEMS.findIndex((s) => (x.path ?? '').endsWith(`${s}.ogg`)) - STEMS.findIndex((s) => (y.path ?? '').endsWith(`${s}.ogg`)));
    expect(tracks).toHaveLength(3);
    const analyser = await MusicnnAnalyser.load({ modelsDir: MODELS, precision: 'float', useMtt: false });
    for (const [i, t] of tracks.slice(0, 3).entries()) {
      const pcm = (await decodeToPcm(join(music, `${STEMS[i]}.ogg`))).samples;
      // The reference's layer for the first two songs; another layer's vector for the third (the agreement check flags it).
      vectors.set(t.id, i < 2 ? (await analyser.referenceVector(pcm)).vector : Float32Array.from(penultimateMean((await analyser.analyse(pcm, 4)).msd)));
    }
    analyser.dispose();
    chromaprint = Array.from((await computeChromaprint(join(music, `${STEMS[0]}.ogg`))).fingerprint);
  });
  afterAll(async () => {
    await stack?.stop();
    await db?.drop();
    for (const r of dbs) await r.drop();
    await supysonic?.close();
    rmSync(music, { recursive: true, force: true });
  });

  it('When a v3.x multi-server reference database is imported, then similar songs answer from its vectors on the day, nothing is lost, a second import changes nothing, and the analysis run switches the embedder', async () => {
    const ref = await buildReference('multi-server');
    ({ stack, db, url } = await startTestStack({ MODELS_DIR: MODELS, MUSICNN_PATCHES: '2', MUSICNN_MTT: '1' }));

    const dry = await runImport({ connection_string: ref.url }, true);
    expect(dry).toMatchObject({ layout: 'multi-server', dry_run: true, embedder_version: 'audiomuse:musicnn-msd-200' });
    expect(dry.vector_agreement).toBeUndefined();
    expect(dry.tables.score).toMatchObject({ read: 3, imported: 3, existing: 0 });
    expect(await db.count(`SELECT count(*) FROM catalogue.score`)).toBe(0);
    expect(await db.count(`SELECT count(*) FROM auth.service_users WHERE username IN ('carol', 'dave')`)).toBe(0);

    const report = await runImport({ connection_string: ref.url });
    expect(report.tables).toMatchObject({
      music_servers: { read: 2, imported: 2 }, score: { read: 3, imported: 3, skipped: 0 }, track_server_map: { read: 4, imported: 4 },
      chromaprint: { imported: 1 }, analysis_exclusions: { imported: 1 }, playlist: { read: 2, imported: 2 }, alchemy_anchors: { imported: 1 },
      alchemy_radios: { imported: 1 }, cron: { read: 2, imported: 1, skipped: 1 }, audiomuse_users: { imported: 2 },
    });
    expect(report.skipped).toEqual([expect.objectContaining({ table: 'cron', reason: 'task unknown_task has no polyphony schedule kind', count: 1 })]);
    const after = await state();
    const ids = tracks.slice(0, 3).map((t) => fpId(vectors.get(t.id)!));
    // Agreement: the analysis worker computed the reference's vector of each song from the supysonic file (the copy on
    // the unreachable Jellyfin is not the one read): the two of the reference's layer agree, the other layer's does not.
    const agreement = report.vector_agreement;
    expect(agreement).toMatchObject({ status: 'measured', sampled: 3, agreeing: 2, failed: [], threshold: 0.98 });
    const cosineOf = (t: ProviderTrack) => agreement.songs.find((x: { provider_id: string }) => x.provider_id === t.id);
    for (const t of tracks.slice(0, 2)) expect(cosineOf(t)).toMatchObject({ ref_item_id: fpId(vectors.get(t.id)!), cosine: expect.any(Number) });
    expect(Math.min(cosineOf(tracks[0]!).cosine, cosineOf(tracks[1]!).cosine)).toBeGreaterThanOrEqual(0.98);
    expect(cosineOf(tracks[2]!).cosine).toBeLessThan(0.9);
    console.log(`vector agreement (${agreement.precision}): ${agreement.songs.map((x: { provider_id: string; cosine: number; patches: number }) => `${x.provider_id} ${x.cosine} (${x.patches} patches)`).join(', ')}`);
    expect(after.songs.map((s) => s.item_id)).toEqual([...ids].sort());
    expect(after.songs.every((s) => s.embedder_version === 'audiomuse:musicnn-msd-200' && s.mood_vector === 'ambient:0.53,rock:0.51')).toBe(true);
    expect(after.servers.map((s) => [s.name, s.is_default])).toEqual([['Jellyfin', false], ['Supysonic', true]]);
    expect(after.servers.find((s) => s.name === 'Jellyfin').music_libraries).toEqual(['Music']);
    // The copy the reference merged stays on the same song.
    expect(after.mappings.find((m) => m.provider_id === 'jf-copy-1')).toMatchObject({ item_id: ids[0], name: 'Jellyfin' });
    expect(after.mappings.filter((m) => m.name === 'Supysonic').map((m) => m.provider_id).sort()).toEqual(tracks.slice(0, 3).map((t) => t.id).sort());
    expect(after.prints).toEqual([{ provider_id: tracks[0]!.id, fingerprint: chromaprint.map((w) => w | 0) }]);
    expect(after.exclusions).toEqual([{ provider_id: 'jf-broken-1', reason_code: 'undecodable' }]);
    expect(after.playlists.map((p) => [p.name, p.kind, p.item_id, p.provider_id])).toEqual([['Calm_automatic', 'automatic', ids[0], tracks[0]!.id], ['Calm_automatic', 'automatic', ids[2], tracks[2]!.id]]);
    expect(after.anchors).toEqual([{ name: 'Calm pair', dim: 200, embedder_version: 'audiomuse:musicnn-msd-200', temperature: 0.5, n_results: 20 }]);
    expect(after.schedules).toEqual([{ name: 'Nightly analysis', kind: 'analysis', cron: '0 3 * * *', enabled: true }]);
    expect(after.users.map((u) => [u.username, u.role])).toEqual(expect.arrayContaining([['carol', 'admin'], ['dave', 'user']]));

    // Similar songs on the day of the import: the brute-force order over the imported vectors (answers carry the
    // default server's provider ids, as the reference's do).
    for (const [i, seed] of ids.entries()) {
      const res = await request(url).get('/api/similar_tracks').query({ item_id: seed, n: 2 }).set(auth).expect(200);
      const sv = vectors.get(tracks[i]!.id)!;
      const brute = tracks.slice(0, 3).map((t) => ({ id: t.id, distance: 1 - cos(sv, vectors.get(t.id)!) })).filter((x) => x.id !== tracks[i]!.id).sort((x, y) => x.distance - y.distance);
      expect(res.body.map((r: { item_id: string }) => r.item_id)).toEqual(brute.map((x) => x.id));
      res.body.forEach((r: { distance: number }, k: number) => expect(r.distance).toBeCloseTo(brute[k]!.distance, 3));
    }

    // An imported user signs in with the reference password; the Argon2 hash is replaced by ours.
    await request(url).post('/login').send({ username: 'dave', password: 'wrong-password' }).expect(401);
    await request(url).post('/login').send({ username: 'dave', password: 'dave-secret-22' }).expect(200);
    const [{ password_hash }] = await db.query(`SELECT password_hash FROM auth.service_users WHERE username = 'dave'`);
    expect(password_hash).toMatch(/^scrypt\$/);
    await request(url).post('/login').send({ username: 'dave', password: 'dave-secret-22' }).expect(200);

    // Twice in a row: the same state.
    const again = await runImport({ connection_string: ref.url });
    expect(again.tables.score).toMatchObject({ imported: 0, existing: 3 });
    expect(again.tables.track_server_map).toMatchObject({ imported: 0, existing: 4 });
    expect(await state()).toEqual(after);

    // A file added to the server after the import: the next run analyses it while the catalogue still serves the
    // reference's vectors (the switch is under way), so the worker sends the reference's vector of it too.
    copyFileSync(join(WESNOTH_MUSIC_DIR, `${NEW_STEM}.ogg`), join(music, `${NEW_STEM}.ogg`));
    await supysonic.rescan();

    // The background switch: one analysis run with the model re-analyses the imported songs (same ids, mappings, playlists).
    const run = await request(url).post('/api/analysis/start').set(auth).send({}).expect(202);
    const ended = await waitForTask(url, run.body.task_id, { timeoutMs: 8 * 60_000 });
    expect(ended.state).toBe('SUCCESS');
    const switched = await state();
    const added = switched.mappings.filter((m) => !after.mappings.some((o) => o.provider_id === m.provider_id));
    expect(added).toEqual([expect.objectContaining({ name: 'Supysonic' })]);
    expect(switched.mappings.filter((m) => m !== added[0])).toEqual(after.mappings);
    expect(switched.playlists).toEqual(after.playlists);
    expect(switched.songs.map((s) => s.item_id).filter((id) => id !== added[0]!.item_id)).toEqual(after.songs.map((s) => s.item_id));
    expect(new Set(switched.songs.map((s) => s.embedder_version)).size).toBe(1);
    const served: Array<{ served_version: string }> = await db.query(`SELECT served_version FROM catalogue.embedding_state`);
    expect(served[0]!.served_version).toBe('tfjs:musicnn-fusion-v1');
    // The imported songs keep their reference vectors as alternates. The new song was analysed in the run that switched:
    // it has one too when the worker resolved it before the switch committed (with the reference's vector, instead of
    // identity's former embedder_version_mismatch) and none when the switch came first; with three short imported songs
    // the order is not under the test's control (the worker-level test reference-switch.int.test.ts fixes it).
    const alt: Array<{ item_id: string }> = await db.query(`SELECT item_id FROM catalogue.embedding_alt WHERE embedder_version = 'audiomuse:musicnn-msd-200' ORDER BY 1`);
    expect(alt.map((r) => r.item_id).filter((id) => id !== added[0]!.item_id)).toEqual(after.songs.map((s) => s.item_id));
    const newRow: Array<{ outcome: string }> = await db.query(`SELECT outcome FROM analysis.run_tracks WHERE run_id = $1 AND provider_id = $2`, [run.body.task_id, added[0]!.provider_id]);
    expect(newRow).toEqual([{ outcome: 'analyzed' }]);
  });

  it('When the older single-server reference is uploaded as pg_dump files (plain, then custom format), then its provider-keyed songs come across on the server from app_config, once', async () => {
    const ref = await buildReference('single-server');
    await stack?.stop();
    await db?.drop();
    ({ stack, db, url } = await startTestStack({ MODELS_DIR: undefined }));
    const plain = execFileSync('pg_dump', ['--no-owner', '--data-only', '--schema=public', ref.url], { maxBuffer: 256 * 1024 ** 2 });
    const custom = execFileSync('pg_dump', ['--no-owner', '-Fc', ref.url], { maxBuffer: 256 * 1024 ** 2 });

    const dry = await runImport(plain, true);
    expect(dry).toMatchObject({ layout: 'single-server', dry_run: true });
    expect(await db.count(`SELECT count(*) FROM catalogue.score`)).toBe(0);

    const report = await runImport(plain);
    expect(report.tables).toMatchObject({ score: { read: 3, imported: 3 }, track_server_map: { imported: 3 }, chromaprint: { imported: 1 }, analysis_exclusions: { imported: 1 }, playlist: { imported: 2 }, audiomuse_users: { imported: 2 } });
    const once = await state();
    expect(once.servers).toEqual([{ name: 'Navidrome', server_type: 'navidrome', creds: { url: supysonic.url, user: 'alice', password: 'alice-pass' }, music_libraries: [], is_default: true }]);
    // Provider-keyed rows get content ids from their vectors; every provider id is mapped to its song.
    expect(once.mappings.map((m) => m.provider_id).sort()).toEqual(tracks.slice(0, 3).map((t) => t.id).sort());
    for (const m of once.mappings) expect(m.item_id).toBe(fpId(vectors.get(m.provider_id)!));

    const second = await runImport(custom);
    expect(second.tables.score).toMatchObject({ imported: 0, existing: 3 });
    expect(await state()).toEqual(once);
    // Not a dump: the task fails saying why, nothing changes; a JSON body without a connection string is a 400.
    const bad = await request(url).post('/api/import/audiomuse').set(auth).set('content-type', 'application/octet-stream').send(Buffer.from('not a dump')).expect(202);
    expect(await waitForTask(url, bad.body.task_id, { timeoutMs: 60_000 })).toMatchObject({ state: 'FAIL', status_message: expect.stringContaining('no COPY data') });
    const invalid = await request(url).post('/api/import/audiomuse').set(auth).send({ dry_run: true }).expect(400);
    expect(invalid.body.code).toBe('validation_failed');
    expect(await state()).toEqual(once);
  });
});
