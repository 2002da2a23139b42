/**
 * Issue 35, a file changed in place under the same provider id, on real PostgreSQL through the internal HTTP API:
 * `POST /internal/identity/resolve` with `changedFile` decides identity again from the new audio. Still the same song
 * (Chromaprint and vector agree): the mapping stays, its stamp follows. Another song: the mapping moves to a new or an
 * existing content id, the old song stays stored, the mapping log records the move. Redelivery and two concurrent
 * re-analyses of one file write once. `POST /internal/mappings/lookup` with `stamps` names the changed files.
 */
import { decodeVector } from '../src/store/codec';
import { copyOf, resolveRequest, songEmbedding, startCatalogue, type StartedCatalogue } from './helpers';

/** A deterministic raw Chromaprint (300 words) per seed: different seeds disagree on about half the bits. */
function printOf(seed: number): number[] {
  return Array.from({ length: 300 }, (_, i) => Math.imul(i + 1 + seed * 7919, 2654435761 + seed * 2) >>> 0);
}

describe('a file changed in place (issue 35; PostgreSQL, HTTP API)', () => {
  let c: StartedCatalogue;
  beforeAll(async () => {
    c = await startCatalogue();
  });
  afterAll(async () => {
    await c?.stop();
    await c?.db.drop();
  });

  const resolve = async (body: unknown, status = 200) => (await c.post('/internal/identity/resolve', body).expect(status)).body;
  const mapping = async (serverId: string, providerId: string) =>
    (await c.sql<{ item_id: string; file_stamp: string | null; match_tier: string; file_path: string | null }>(`SELECT item_id, file_stamp, match_tier, file_path FROM catalogue.track_server_map WHERE server_id = $1 AND provider_id = $2`, [serverId, providerId]))[0];
  const songExists = async (itemId: string) => (await c.sql(`SELECT 1 FROM catalogue.score WHERE item_id = $1`, [itemId])).length === 1;
  const songs = async () => Number((await c.sql<{ n: string }>(`SELECT count(*) AS n FROM catalogue.score`))[0]!.n);
  const logOf = async (serverId: string, providerId: string) => (await c.sql<{ item_id: string | null }>(`SELECT item_id FROM catalogue.mapping_log WHERE server_id = $1 AND provider_id = $2 ORDER BY seq`, [serverId, providerId])).map((r) => r.item_id);
  const storedPrint = async (serverId: string, providerId: string) => (await c.sql<{ fingerprint: number[] }>(`SELECT fingerprint FROM catalogue.chromaprint WHERE server_id = $1 AND provider_id = $2`, [serverId, providerId]))[0]?.fingerprint;
  const stamped = (stamp: string, extra: Record<string, unknown> = {}) => ({ metadata: { title: 'T', artist: 'A', filePath: '/music/a/track.flac', fileStamp: stamp }, ...extra });

  it('When a re-tagged file (same audio, new size) is re-analysed, then the mapping keeps its content id, gets the new stamp and print, and the song keeps its vector', async () => {
    const e = songEmbedding(101);
    const first = await resolve(resolveRequest('srv', 'p-same', e, { chromaprint: printOf(1), ...stamped('size:1000') }));
    const vectorBefore = (await c.sql<{ vector: Buffer }>(`SELECT vector FROM catalogue.embedding WHERE item_id = $1`, [first.itemId]))[0]!.vector;
    const n = await songs();
    const again = await resolve(resolveRequest('srv', 'p-same', copyOf(e, 5, 0.005), { chromaprint: printOf(1), changedFile: true, durationSeconds: 200.2, ...stamped('size:1200') }));
    expect(again).toEqual({ itemId: first.itemId, outcome: 'existing', reanalysis: 'same', previousItemId: first.itemId });
    expect(await mapping('srv', 'p-same')).toMatchObject({ item_id: first.itemId, file_stamp: 'size:1200', match_tier: 'analysis' });
    expect(await songs()).toBe(n);
    expect(await logOf('srv', 'p-same')).toEqual([first.itemId]);
    const vectorAfter = (await c.sql<{ vector: Buffer }>(`SELECT vector FROM catalogue.embedding WHERE item_id = $1`, [first.itemId]))[0]!.vector;
    expect(Array.from(decodeVector(vectorAfter))).toEqual(Array.from(decodeVector(vectorBefore)));
    expect(await storedPrint('srv', 'p-same')).toEqual(printOf(1).map((w) => w | 0));
  });

  it('When the file now holds a different song, then the mapping moves to a new content id, the old song stays, and the log records the move; redelivery writes nothing', async () => {
    const old = await resolve(resolveRequest('srv', 'p-new', songEmbedding(201), { chromaprint: printOf(2), ...stamped('size:2000') }));
    const n = await songs();
    const req = resolveRequest('srv', 'p-new', songEmbedding(202), { chromaprint: printOf(3), changedFile: true, ...stamped('size:3000') });
    const moved = await resolve(req);
    expect(moved).toMatchObject({ outcome: 'new', reanalysis: 'moved', previousItemId: old.itemId });
    expect(moved.itemId).not.toBe(old.itemId);
    expect(await songs()).toBe(n + 1);
    expect(await songExists(old.itemId)).toBe(true);
    expect(await mapping('srv', 'p-new')).toMatchObject({ item_id: moved.itemId, file_stamp: 'size:3000', match_tier: 'analysis' });
    expect(await logOf('srv', 'p-new')).toEqual([old.itemId, moved.itemId]);
    expect(await storedPrint('srv', 'p-new')).toEqual(printOf(3).map((w) => w | 0));
    // The new song was stored from this file: a redelivery is answered by the mapping, and nothing is written.
    expect(await resolve(req)).toEqual({ itemId: moved.itemId, outcome: 'new' });
    expect(await songs()).toBe(n + 1);
    expect(await logOf('srv', 'p-new')).toEqual([old.itemId, moved.itemId]);
  });

  it('When the vectors agree but the Chromaprints do not, then it is another recording: the mapping moves to a new id (the print decides)', async () => {
    const e = songEmbedding(301);
    const old = await resolve(resolveRequest('srv', 'p-print', e, { chromaprint: printOf(4), ...stamped('size:4000') }));
    const moved = await resolve(resolveRequest('srv', 'p-print', copyOf(e, 6), { chromaprint: printOf(5), changedFile: true, ...stamped('size:4100') }));
    expect(moved).toMatchObject({ outcome: 'new', reanalysis: 'moved', previousItemId: old.itemId });
    expect(moved.itemId).not.toBe(old.itemId);
    expect(await songExists(old.itemId)).toBe(true);
  });

  it('When the file now holds a song already stored from another server, then the mapping moves onto that song (tier fingerprint) and the old song keeps its other mapping', async () => {
    const other = songEmbedding(401);
    const there = await resolve(resolveRequest('srv-b', 'b-1', other, { chromaprint: printOf(6), metadata: { title: 'Other', artist: 'B', filePath: '/b/other.flac' } }));
    const mine = songEmbedding(402);
    const old = await resolve(resolveRequest('srv', 'p-exist', mine, { chromaprint: printOf(7), ...stamped('size:5000') }));
    await resolve(resolveRequest('srv-c', 'c-1', copyOf(mine, 8), { chromaprint: printOf(7), metadata: { title: 'Mine', artist: 'C', filePath: '/c/mine.flac' } }));
    const moved = await resolve(resolveRequest('srv', 'p-exist', copyOf(other, 9), { chromaprint: printOf(6), changedFile: true, ...stamped('size:5100') }));
    expect(moved).toEqual({ itemId: there.itemId, outcome: 'existing', reanalysis: 'moved', previousItemId: old.itemId });
    expect(await mapping('srv', 'p-exist')).toMatchObject({ item_id: there.itemId, match_tier: 'fingerprint', file_stamp: 'size:5100' });
    expect(await mapping('srv-c', 'c-1')).toMatchObject({ item_id: old.itemId });
  });

  it('When the request does not say changedFile, or the stored stamp already equals the new one, then the mapping answers and nothing changes', async () => {
    const old = await resolve(resolveRequest('srv', 'p-plain', songEmbedding(501), { chromaprint: printOf(10), ...stamped('size:6000') }));
    const other = songEmbedding(502);
    expect(await resolve(resolveRequest('srv', 'p-plain', other, { chromaprint: printOf(11), ...stamped('size:6100') }))).toEqual({ itemId: old.itemId, outcome: 'new' });
    expect(await resolve(resolveRequest('srv', 'p-plain', other, { chromaprint: printOf(11), changedFile: true, ...stamped('size:6000') }))).toEqual({ itemId: old.itemId, outcome: 'new' });
    expect(await mapping('srv', 'p-plain')).toMatchObject({ item_id: old.itemId, file_stamp: 'size:6000' });
  });

  it('When two workers re-analyse the same changed file at once, then one decision is written: one new song, both answers name it', async () => {
    const old = await resolve(resolveRequest('srv', 'p-race', songEmbedding(601), { chromaprint: printOf(12), ...stamped('size:7000') }));
    const n = await songs();
    const req = resolveRequest('srv', 'p-race', songEmbedding(602), { chromaprint: printOf(13), changedFile: true, ...stamped('size:7100') });
    const [a, b] = await Promise.all([resolve(req), resolve(req)]);
    expect(a.itemId).toBe(b.itemId);
    expect(a.itemId).not.toBe(old.itemId);
    expect([a.reanalysis, b.reanalysis].filter((x) => x === 'moved')).toHaveLength(1);
    expect(await songs()).toBe(n + 1);
    expect(await logOf('srv', 'p-race')).toEqual([old.itemId, a.itemId]);
  });

  it('When listed stamps are looked up, then only mapped files with a stored stamp that differs are named changed; unaligned stamps are 400', async () => {
    await resolve(resolveRequest('srv-l', 'l-1', songEmbedding(701), { metadata: { title: 'L1', artist: 'L', fileStamp: 'size:1' } }));
    await resolve(resolveRequest('srv-l', 'l-2', songEmbedding(702), { metadata: { title: 'L2', artist: 'L', fileStamp: 'size:2' } }));
    await resolve(resolveRequest('srv-l', 'l-3', songEmbedding(703), { metadata: { title: 'L3', artist: 'L' } }));
    const res = (await c.post('/internal/mappings/lookup', { serverId: 'srv-l', providerIds: ['l-1', 'l-2', 'l-3', 'l-4'], stamps: ['size:1', 'size:22', 'size:3', 'size:4'] }).expect(200)).body;
    expect(res).toEqual({ mapped: ['l-1', 'l-2', 'l-3'], changed: ['l-2'] });
    expect((await c.post('/internal/mappings/lookup', { serverId: 'srv-l', providerIds: ['l-1', 'l-2'], stamps: [null, null] }).expect(200)).body).toEqual({ mapped: ['l-1', 'l-2'], changed: [] });
    expect((await c.post('/internal/mappings/lookup', { serverId: 'srv-l', providerIds: ['l-1'] }).expect(200)).body).toEqual({ mapped: ['l-1'] });
    expect((await c.post('/internal/mappings/lookup', { serverId: 'srv-l', providerIds: ['l-1', 'l-2'], stamps: ['size:1'] }).expect(400)).body.code).toBe('validation_failed');
  });
});
