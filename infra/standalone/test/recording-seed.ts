import request from 'supertest';
import { LANDMARK_CODEC_VERSION, LANDMARK_PARAMS, encodeLandmarks, extractLandmarks } from '@polyphony/landmarks';
import { signIdentity } from '@polyphony/platform';
import type { TestDatabase } from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { API_TOKEN } from './helpers';

/** The canonical id of seeded song `i` (a 52-character `fp_4...` id). */
export const seededItemId = (i: number) => `fp_4${i.toString(16).padStart(50, '0')}`;

/**
 * Seeds the search-by-recording catalogue of the API tests: servers Alpha (navidrome, songs 0-5 as `a-<i>`) and Beta
 * (jellyfin, songs 3-7 as `b-<i>`), one catalogue row per song of `songs` ("Synth Song <i>" by "Synth Artist" on
 * "Synth Album", a 200-d embedding), and the fingerprint of every song but 6 stored through the catalogue's internal
 * route (the PCM is 16 kHz mono, fingerprinted at the stored density). Returns the servers' ids.
 */
export async function seedRecordingLibrary(stack: Stack, db: TestDatabase, url: string, songs: readonly Float32Array[]): Promise<{ alpha: string; beta: string }> {
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  const a = await request(url).post('/api/servers').set(auth).send({ name: 'Alpha', server_type: 'navidrome', creds: { url: 'http://127.0.0.1:9', user: 'u', password: 'p' } }).expect(201);
  const b = await request(url).post('/api/servers').set(auth).send({ name: 'Beta', server_type: 'jellyfin', creds: { url: 'http://127.0.0.1:9', user_id: 'u', token: 't' } }).expect(201);
  const all = songs.map((_, i) => i);
  await db.query(
    `INSERT INTO catalogue.score (item_id, title, artist, album, embedder_version) SELECT u.id, u.title, 'Synth Artist', 'Synth Album', 'test-v1' FROM unnest($1::text[], $2::text[]) AS u(id, title)`,
    [all.map(seededItemId), all.map((i) => `Synth Song ${i}`)],
  );
  const vector = (i: number) => Buffer.from(new Float32Array(200).map((_, d) => Math.sin(d * 0.37 * (i + 1)) + 0.1).buffer).toString('base64');
  await db.query(`INSERT INTO catalogue.embedding (item_id, vector, embedder_version) SELECT id, decode(v, 'base64'), 'test-v1' FROM unnest($1::text[], $2::text[]) AS u(id, v)`, [all.map(seededItemId), all.map(vector)]);
  const maps = [...all.filter((i) => i <= 5).map((i) => [a.body.id, `a-${i}`, seededItemId(i)]), ...all.filter((i) => i >= 3).map((i) => [b.body.id, `b-${i}`, seededItemId(i)])];
  await db.query(`INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`, [maps.map((m) => m[0]), maps.map((m) => m[1]), maps.map((m) => m[2])]);
  for (const i of all) {
    if (i === 6) continue;
    const lm = extractLandmarks(songs[i]!, LANDMARK_PARAMS.store);
    const blob = Buffer.from(encodeLandmarks(lm)).toString('base64');
    await internalRequest(stack, 'put', `/internal/tracks/${seededItemId(i)}/fingerprint`).send({ codec: LANDMARK_CODEC_VERSION, landmarks: lm.hashes.length, seconds: songs[i]!.length / LANDMARK_PARAMS.sampleRateHz, blob }).expect(204);
  }
  return { alpha: a.body.id as string, beta: b.body.id as string };
}

/** A request to the catalogue's internal API, signed as an internal admin caller. */
export function internalRequest(stack: Stack, method: 'put' | 'get', path: string) {
  return request(stack.peers().catalogue)[method](path).set(signIdentity({ sub: 'test', username: 'test', role: 'admin', via: 'internal' }, stack.internalSecret));
}

/** Rebuilds the index generation through the API and waits until it serves `items` songs; returns its number. */
export async function rebuildIndex(url: string, items: number): Promise<number> {
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  await request(url).post('/api/index/rebuild').set(auth).send({}).expect(202);
  for (const deadline = Date.now() + 60_000; ; ) {
    const s = await request(url).get('/api/index/status').set(auth).expect(200);
    if (!s.body.building && s.body.items === items && s.body.generation > 0) return s.body.generation as number;
    if (Date.now() > deadline) throw new Error(`index not rebuilt: ${JSON.stringify(s.body)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}
