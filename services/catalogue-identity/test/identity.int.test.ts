/**
 * Catalogue identity on real PostgreSQL through the internal HTTP API: resolution and its gates,
 * idempotent redelivery, next free id, concurrency, translation batch forms, availability, server
 * deletion, orphan re-bind, snapshot, lyrics, duration back-fill, artists, auth and validation.
 */
import request from 'supertest';
import { MSD_TAGS, SNAPSHOT_PAGE_BINARY_TYPE, SNAPSHOT_STREAM_TYPE, SnapshotStreamReader, decodeSnapshotPageBinary, moodVectorOf, RoutingKeys, MappingChangedEvent, ServerCountedEvent, type MappingChangedEvent as MappingChanged, type ServerCountedEvent as ServerCounted } from '@polyphony/contracts';
import { DEFAULT_IDENTITY_CONFIG } from '../src/domain/identity/constants';
import { cosineDistance } from '@polyphony/vectors';
import { computeSignature, formatCanonicalId, nextCode, signatureToHex, unsignableCanonicalId } from '../src/domain/identity/signature';
import { LARGE_JSON_CONTENT_TYPE } from '../src';
import { decodeVector } from '../src/store/codec';
import { collidingEmbeddings, copyOf, resolveRequest, songEmbedding, startCatalogue, type StartedCatalogue } from './helpers';

const FP4 = /^fp_4[0-9a-f]{50}$/;

function sigHex(embedding: readonly number[]): string {
  const s = computeSignature(Float32Array.from(embedding));
  if (!s.ok) throw new Error('test embedding is unsignable');
  return signatureToHex(s.code);
}

describe('catalogue identity (PostgreSQL, HTTP API)', () => {
  let c: StartedCatalogue;
  const changed: MappingChanged[] = [];
  const counted: ServerCounted[] = [];

  beforeAll(async () => {
    c = await startCatalogue();
    await c.bus.consume({
      queue: 'test.mapping-changed',
      bindings: [RoutingKeys.mappingChanged],
      schema: MappingChangedEvent,
      handler: async (e) => {
        changed.push(e);
      },
    });
    await c.bus.consume({ queue: 'test.server-counted', bindings: [RoutingKeys.serverCounted], schema: ServerCountedEvent, handler: async (e) => void counted.push(e) });
  });
  afterAll(async () => {
    await c?.stop();
    await c?.db.drop();
  });

  const resolve = async (body: unknown, status = 200) => (await c.post('/internal/identity/resolve', body).expect(status)).body;

  describe('resolution', () => {
    it('When new content is resolved, then it is stored under fp_4 + its signature with one mapping row', async () => {
      const e = songEmbedding(1);
      const res = await resolve(resolveRequest('srv-a', 'a-1', e, { metadata: { title: 'One', artist: 'Band', artistId: 'art-1', filePath: '/music/x/one.flac' } }));
      expect(res).toEqual({ itemId: `fp_4${sigHex(e)}`, outcome: 'new' });
      const track = (await c.get(`/internal/tracks/${res.itemId}`).expect(200)).body;
      expect(track).toMatchObject({ itemId: res.itemId, title: 'One', artist: 'Band', durationSeconds: 200, embedderVersion: 'test-v1' });
      expect(track.mappings).toEqual([{ serverId: 'srv-a', providerId: 'a-1', filePath: '/music/x/one.flac', artistId: 'art-1', matchTier: 'analysis', durationSeconds: 200 }]);
      // The stored vector is the float32 rounding of what was sent.
      expect(Array.from(decodeVector(Buffer.from(track.embedding, 'base64')))).toEqual(Array.from(Float32Array.from(e)));
    });

    it('When a copy arrives from another server, then it maps onto the same id and nothing else is stored', async () => {
      const e = songEmbedding(2);
      const first = await resolve(resolveRequest('srv-a', 'a-2', e));
      const copy = copyOf(e, 99);
      expect(cosineDistance(e, copy)).toBeLessThan(DEFAULT_IDENTITY_CONFIG.duplicateDistanceThresholdCosine);
      const second = await resolve(resolveRequest('srv-b', 'b-2', copy, { durationSeconds: 200.4 }));
      expect(second).toEqual({ itemId: first.itemId, outcome: 'existing' });
      const rows = await c.sql<{ n: string }>(`SELECT count(*) AS n FROM catalogue.score WHERE item_id = $1`, [first.itemId]);
      expect(rows[0]?.n).toBe('1');
      const track = (await c.get(`/internal/tracks/${first.itemId}`).expect(200)).body;
      expect(track.mappings.map((m: { serverId: string; matchTier: string }) => [m.serverId, m.matchTier])).toEqual([
        ['srv-a', 'analysis'],
        ['srv-b', 'fingerprint'],
      ]);
    });

    it('When the same provider file is resolved again (redelivery), then the answer repeats and no row is added', async () => {
      const e = songEmbedding(3);
      const first = await resolve(resolveRequest('srv-a', 'a-3', e));
      const merged = await resolve(resolveRequest('srv-b', 'b-3', copyOf(e, 5)));
      // Redelivery of the analysed file says 'new' again (its pipeline may re-run); of the merged file 'existing'.
      expect(await resolve(resolveRequest('srv-a', 'a-3', e))).toEqual({ itemId: first.itemId, outcome: 'new' });
      expect(await resolve(resolveRequest('srv-b', 'b-3', songEmbedding(4444)))).toEqual({ itemId: merged.itemId, outcome: 'existing' });
      const n = await c.sql<{ n: string }>(`SELECT count(*) AS n FROM catalogue.track_server_map WHERE item_id = $1`, [first.itemId]);
      expect(n[0]?.n).toBe('2');
    });

    it('When durations differ beyond the tolerance or one is unknown, then the copy is kept apart', async () => {
      const e = songEmbedding(4);
      const base = await resolve(resolveRequest('srv-a', 'a-4', e, { durationSeconds: 180 }));
      const trimmed = await resolve(resolveRequest('srv-b', 'b-4', copyOf(e, 6), { durationSeconds: 180 - (DEFAULT_IDENTITY_CONFIG.durationToleranceSeconds + 0.5) }));
      const unknown = await resolve(resolveRequest('srv-c', 'c-4', copyOf(e, 7), { durationSeconds: undefined }));
      expect(trimmed.outcome).toBe('new');
      expect(unknown.outcome).toBe('new');
      expect(new Set([base.itemId, trimmed.itemId, unknown.itemId]).size).toBe(3);
    });

    it('When two different files sit in one folder of one server, then they are never merged; in another folder they are', async () => {
      const e = songEmbedding(5);
      const a = await resolve(resolveRequest('srv-a', 'a-5', e, { metadata: { title: 't', artist: 'x', filePath: '/m/album/01.flac' } }));
      const sameFolder = await resolve(resolveRequest('srv-a', 'a-5b', copyOf(e, 8), { metadata: { title: 't', artist: 'x', filePath: '/m/album/01 (copy).flac' } }));
      const otherFolder = await resolve(resolveRequest('srv-a', 'a-5c', copyOf(e, 9), { metadata: { title: 't', artist: 'x', filePath: '/m/best-of/01.flac' } }));
      expect(sameFolder.itemId).not.toBe(a.itemId);
      expect(otherFolder).toEqual({ itemId: a.itemId, outcome: 'existing' });
    });

    it('When Chromaprints disagree the copy splits; an equal print merges; a missing print abstains', async () => {
      const e = songEmbedding(6);
      const print = Array.from({ length: 300 }, (_, i) => (Math.imul(i + 1, 2654435761) >>> 0));
      const other = Array.from({ length: 300 }, (_, i) => (Math.imul(i + 7, 40503) ^ 0x5bd1e995) >>> 0);
      const base = await resolve(resolveRequest('srv-a', 'a-6', e, { chromaprint: print }));
      const bad = await resolve(resolveRequest('srv-b', 'b-6', copyOf(e, 10), { chromaprint: other }));
      const good = await resolve(resolveRequest('srv-c', 'c-6', copyOf(e, 11), { chromaprint: print }));
      const none = await resolve(resolveRequest('srv-d', 'd-6', copyOf(e, 12)));
      expect(bad.itemId).not.toBe(base.itemId);
      expect(good).toEqual({ itemId: base.itemId, outcome: 'existing' });
      expect(none).toEqual({ itemId: base.itemId, outcome: 'existing' });
      // Unsigned words above 2^31 are stored as their signed twin.
      const rows = await c.sql<{ fingerprint: number[] }>(`SELECT fingerprint FROM catalogue.chromaprint WHERE server_id = 'srv-a' AND provider_id = 'a-6'`);
      expect(rows[0]?.fingerprint).toEqual(print.map((w) => w | 0));
    });

    it('When different audio has the same signature, then the second song gets the next free id', async () => {
      const [x, y] = collidingEmbeddings(77, 2) as [number[], number[]];
      expect(sigHex(x)).toBe(sigHex(y));
      expect(cosineDistance(x, y)).toBeGreaterThan(DEFAULT_IDENTITY_CONFIG.duplicateDistanceThresholdCosine);
      const first = await resolve(resolveRequest('srv-a', 'a-7', x));
      const second = await resolve(resolveRequest('srv-b', 'b-7', y));
      const code = computeSignature(Float32Array.from(x));
      if (!code.ok) throw new Error('unsignable');
      expect(first.itemId).toBe(formatCanonicalId(4, code.code));
      expect(second).toEqual({ itemId: formatCanonicalId(4, nextCode(code.code)), outcome: 'new' });
    });

    it('When the embedding is constant (unsignable), then the file gets its own fp_0 id', async () => {
      const flat = new Array(200).fill(0.5);
      const a = await resolve(resolveRequest('srv-a', 'a-8', flat));
      const b = await resolve(resolveRequest('srv-b', 'b-8', flat));
      expect(a).toEqual({ itemId: unsignableCanonicalId('srv-a', 'a-8'), outcome: 'new' });
      expect(b).toEqual({ itemId: unsignableCanonicalId('srv-b', 'b-8'), outcome: 'new' });
      const bands = await c.sql<{ n: string }>(`SELECT count(*) AS n FROM catalogue.signature_band b JOIN catalogue.score s ON s.song_no = b.song_no WHERE s.item_id = $1`, [a.itemId]);
      expect(bands[0]?.n).toBe('0');
    });

    it('When a request is malformed or unsigned or not admin, then it is refused (400 / 401 / 403)', async () => {
      const bad = await c.post('/internal/identity/resolve', { ...resolveRequest('s', 'p', songEmbedding(9)), embedding: [1, 2, 3] }).expect(400);
      expect(bad.body.code).toBe('validation_failed');
      await c.post('/internal/identity/resolve', resolveRequest('s', 'p', songEmbedding(9)), 'user').expect(403);
      await request(c.svc.http).post('/internal/identity/resolve').send(resolveRequest('s', 'p', songEmbedding(9))).expect(401);
    });
  });

  describe('concurrency', () => {
    it('When 8 workers resolve the same new content at once, then all get one id and one score row exists', async () => {
      const e = songEmbedding(100);
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => resolve(resolveRequest(`srv-${i}`, `conc-${i}`, copyOf(e, 1000 + i)))));
      const ids = new Set(results.map((r) => r.itemId));
      expect(ids.size).toBe(1);
      expect(results.filter((r) => r.outcome === 'new')).toHaveLength(1);
      const [id] = [...ids];
      const rows = await c.sql<{ scores: string; maps: string }>(
        `SELECT (SELECT count(*) FROM catalogue.score WHERE item_id = $1) AS scores, (SELECT count(*) FROM catalogue.track_server_map WHERE item_id = $1) AS maps`,
        [id],
      );
      expect(rows[0]).toEqual({ scores: '1', maps: '8' });
    });

    it('When the same provider file is delivered 6 times at once, then one mapping row and one id result', async () => {
      const e = songEmbedding(101);
      const results = await Promise.all(Array.from({ length: 6 }, () => resolve(resolveRequest('srv-dup', 'same-file', e))));
      expect(new Set(results.map((r) => r.itemId)).size).toBe(1);
      const rows = await c.sql<{ n: string }>(`SELECT count(*) AS n FROM catalogue.track_server_map WHERE server_id = 'srv-dup'`);
      expect(rows[0]?.n).toBe('1');
    });

    it('When 20 different songs are resolved at once, then they get 20 different ids', async () => {
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => resolve(resolveRequest('srv-many', `many-${i}`, songEmbedding(2000 + i)))));
      expect(new Set(results.map((r) => r.itemId)).size).toBe(20);
      expect(results.every((r) => r.outcome === 'new')).toBe(true);
    });

    it('When 6 different songs with one colliding signature are resolved at once, then each gets its own id', async () => {
      const songs = collidingEmbeddings(4242, 6);
      const results = await Promise.all(songs.map((e, i) => resolve(resolveRequest(`srv-col-${i}`, `col-${i}`, e))));
      const ids = results.map((r) => r.itemId);
      expect(new Set(ids).size).toBe(6);
      expect(ids.every((id) => FP4.test(id))).toBe(true);
      const base = computeSignature(Float32Array.from(songs[0] as number[]));
      if (!base.ok) throw new Error('unsignable');
      // The ids are the signature id and the next five free ids after it.
      const expected = new Set<string>();
      let code = base.code;
      for (let k = 0; k < 6; k++, code = nextCode(code)) expected.add(formatCanonicalId(4, code));
      expect(new Set(ids)).toEqual(expected);
    });
  });

  describe('translation, availability, snapshot', () => {
    const SERVER = 'srv-batch';
    const OTHER = 'srv-batch-2';
    const N = 3000;
    const itemId = (i: number) => `fp_4${i.toString(16).padStart(50, '0')}`;

    beforeAll(async () => {
      // Bulk rows straight in SQL (3000 resolves through HTTP would test nothing more here).
      await c.sql(
        `INSERT INTO catalogue.score (item_id, title, artist, embedder_version)
         SELECT 'fp_4' || lpad(to_hex(i), 50, '0'), 'T' || i, 'A', 'test-v1' FROM generate_series(1, ${N}) AS i`,
      );
      await c.sql(
        `INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id)
         SELECT '${SERVER}', 'p' || i, 'fp_4' || lpad(to_hex(i), 50, '0') FROM generate_series(1, ${N}) AS i`,
      );
      // Item 1 has a second file on SERVER ('a-dup' sorts before 'p1'); items 1..10 are also on OTHER.
      await c.sql(`INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id) VALUES ('${SERVER}', 'a-dup', '${itemId(1)}')`);
      await c.sql(
        `INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id)
         SELECT '${OTHER}', 'o' || i, 'fp_4' || lpad(to_hex(i), 50, '0') FROM generate_series(1, 10) AS i`,
      );
    });

    it('When thousands of ids are resolved on input, then provider ids become canonical and the rest pass through in order', async () => {
      const ids: string[] = [];
      for (let i = 1; i <= N; i++) ids.push(`p${i}`);
      ids.push(itemId(5), 'unknown-id', 'o3', 'p7');
      const res = (await c.post('/internal/ids/resolve-input', { serverId: SERVER, ids }).expect(200)).body;
      expect(res.ids).toHaveLength(ids.length);
      for (let i = 1; i <= N; i++) expect(res.ids[i - 1]).toBe(itemId(i));
      // canonical passes through, unknown passes through, another server's provider id passes through.
      expect(res.ids.slice(N)).toEqual([itemId(5), 'unknown-id', 'o3', itemId(7)]);
      // Without a server nothing is translated.
      const none = (await c.post('/internal/ids/resolve-input', { ids: ['p1', 'x'] }).expect(200)).body;
      expect(none.ids).toEqual(['p1', 'x']);
    });

    it('When thousands of ids are mapped on output, then absent tracks are dropped and duplicates pick the smallest provider id', async () => {
      const itemIds = Array.from({ length: N }, (_, i) => itemId(i + 1));
      itemIds.push('fp_4' + 'f'.repeat(50));
      const res = (await c.post('/internal/ids/map-output', { serverId: SERVER, itemIds }).expect(200)).body;
      expect(Object.keys(res.map)).toHaveLength(N);
      expect(res.map[itemId(1)]).toBe('a-dup');
      expect(res.map[itemId(2)]).toBe('p2');
      expect(res.map['fp_4' + 'f'.repeat(50)]).toBeUndefined();
      const other = (await c.post('/internal/ids/map-output', { serverId: OTHER, itemIds: [itemId(3), itemId(11)] }).expect(200)).body;
      expect(other.map).toEqual({ [itemId(3)]: 'o3' });
    });

    it('When the mapping lookup gets thousands of provider ids, then it returns exactly the mapped ones', async () => {
      const providerIds = Array.from({ length: N }, (_, i) => `p${i + 1}`).concat(['nope', 'o1']);
      const res = (await c.post('/internal/mappings/lookup', { serverId: SERVER, providerIds }).expect(200)).body;
      expect(res.mapped).toHaveLength(N);
      expect(res.mapped).not.toContain('nope');
      expect(res.mapped).not.toContain('o1');
    });

    it('When availability is read, then it lists the distinct songs of the server', async () => {
      const res = (await c.get(`/internal/availability/${OTHER}`).expect(200)).body;
      expect(res.serverId).toBe(OTHER);
      expect(res.itemIds).toEqual(Array.from({ length: 10 }, (_, i) => itemId(i + 1)).sort());
      const unknown = (await c.get('/internal/availability/nobody').expect(200)).body;
      expect(unknown).toEqual({ serverId: 'nobody', version: 0, itemIds: [] });
    });

    it('When resolves add mappings, then the availability version grows and the new song is listed', async () => {
      const before = (await c.get('/internal/availability/srv-avail/version').expect(200)).body.version;
      const r1 = await resolve(resolveRequest('srv-avail', 'v-1', songEmbedding(300)));
      const r2 = await resolve(resolveRequest('srv-avail', 'v-2', songEmbedding(301)));
      const after = (await c.get('/internal/availability/srv-avail').expect(200)).body;
      expect(after.version).toBe(before + 2);
      expect(after.itemIds).toEqual([r1.itemId, r2.itemId].sort());
      expect(changed.some((e) => e.serverId === 'srv-avail' && e.reason === 'analysis')).toBe(true);
      for (let i = 0; i < 50 && !counted.some((e) => e.serverId === 'srv-avail' && e.matchedCount === 2); i++) await new Promise((r) => setTimeout(r, 20));
      expect(counted).toContainEqual({ serverId: 'srv-avail', trackCount: null, matchedCount: 2 });
    });

    it('When the snapshot is paged, then every song with an embedding comes exactly once with its mappings', async () => {
      const seen: string[] = [];
      let after: string | undefined;
      let pages = 0;
      for (;;) {
        const page = (await c.get(`/internal/snapshot/tracks?limit=7${after ? `&after=${after}` : ''}`).expect(200)).body;
        pages++;
        for (const t of page.tracks) {
          seen.push(t.itemId);
          expect(decodeVector(Buffer.from(t.embedding, 'base64'))).toHaveLength(200);
        }
        if (!page.next) break;
        after = page.next;
      }
      const rows = await c.sql<{ item_id: string }>(`SELECT item_id FROM catalogue.embedding ORDER BY item_id`);
      expect(seen).toEqual(rows.map((r) => r.item_id));
      expect(pages).toBeGreaterThan(2);
      const first = (await c.get(`/internal/snapshot/tracks?limit=1`).expect(200)).body.tracks[0];
      const detail = (await c.get(`/internal/tracks/${first.itemId}`).expect(200)).body;
      expect(first.mappings).toEqual(detail.mappings.map((m: { serverId: string; providerId: string; artistId: string | null }) => ({ serverId: m.serverId, providerId: m.providerId, artistId: m.artistId })));
    });

    it('When the snapshot is asked for as binary pages, then every page holds the tracks of the JSON page and the exact vector bytes', async () => {
      const binary = (path: string) =>
        c
          .get(path)
          .set('accept', `${SNAPSHOT_PAGE_BINARY_TYPE}, application/json;q=0.5`)
          .buffer(true)
          .parse((res, done) => {
            const chunks: Buffer[] = [];
            res.on('data', (d: Buffer) => chunks.push(d));
            res.on('end', () => done(null, Buffer.concat(chunks)));
          })
          .expect(200)
          .expect('content-type', SNAPSHOT_PAGE_BINARY_TYPE);
      let after: string | undefined;
      let pages = 0;
      for (;;) {
        const path = `/internal/snapshot/tracks?limit=7${after ? `&after=${after}` : ''}`;
        const json = (await c.get(path).expect(200)).body as { tracks: Array<{ embedding: string } & Record<string, unknown>>; next: string | null; total?: number };
        const page = decodeSnapshotPageBinary(new Uint8Array((await binary(path)).body as Buffer));
        pages++;
        expect(page.next).toEqual(json.next);
        expect(page.total).toEqual(json.total);
        expect(page.tracks).toEqual(json.tracks.map(({ embedding: _e, ...t }) => t));
        page.vectors.forEach((v, i) => expect(Buffer.from(v).equals(Buffer.from(json.tracks[i]!.embedding, 'base64'))).toBe(true));
        if (!json.next) break;
        after = json.next;
      }
      expect(pages).toBeGreaterThan(2);
      // The first page counts the snapshot; JSON stays the default without an Accept header.
      const rows = await c.sql<{ n: string }>(`SELECT count(*) AS n FROM catalogue.score s JOIN catalogue.embedding e ON e.item_id = s.item_id`);
      expect((await c.get('/internal/snapshot/tracks?limit=3').expect(200).expect('content-type', /json/)).body.total).toBe(Number(rows[0]!.n));
    });

    it('When the snapshot is asked for as a stream, then one answer holds every binary page from `after` on, each as the page requests serve it', async () => {
      const bytes = (path: string, accept: string) =>
        c
          .get(path)
          .set('accept', accept)
          .buffer(true)
          .parse((res, done) => {
            const chunks: Buffer[] = [];
            res.on('data', (d: Buffer) => chunks.push(d));
            res.on('end', () => done(null, Buffer.concat(chunks)));
          })
          .expect(200);
      const pageAccept = `${SNAPSHOT_PAGE_BINARY_TYPE}, application/json;q=0.5`;
      const streamAccept = `${SNAPSHOT_STREAM_TYPE}, ${SNAPSHOT_PAGE_BINARY_TYPE};q=0.9, application/json;q=0.5`;
      // The pages one request each.
      const expected: Buffer[] = [];
      let after: string | undefined;
      for (;;) {
        const body = (await bytes(`/internal/snapshot/tracks?limit=7${after ? `&after=${after}` : ''}`, pageAccept)).body as Buffer;
        expected.push(body);
        const next = decodeSnapshotPageBinary(new Uint8Array(body)).next as string | null;
        if (!next) break;
        after = next;
      }
      expect(expected.length).toBeGreaterThan(2);
      // The same pages, framed, in one answer (the last page has next: null).
      const streamed = await bytes('/internal/snapshot/tracks?limit=7', streamAccept).expect('content-type', SNAPSHOT_STREAM_TYPE);
      const reader = new SnapshotStreamReader();
      const frames = reader.push(new Uint8Array(streamed.body as Buffer));
      expect(reader.pendingBytes).toBe(0);
      expect(frames.map((f) => Buffer.from(f).toString('hex'))).toEqual(expected.map((b) => b.toString('hex')));
      // From `after` on: the pages after the first one.
      const second = decodeSnapshotPageBinary(new Uint8Array(expected[0]!)).next as string;
      const rest = await bytes(`/internal/snapshot/tracks?limit=7&after=${encodeURIComponent(second)}`, streamAccept);
      const restFrames = new SnapshotStreamReader().push(new Uint8Array(rest.body as Buffer));
      expect(restFrames.map((f) => Buffer.from(f).toString('hex'))).toEqual(expected.slice(1).map((b) => b.toString('hex')));
      // A caller that asks for the binary page only still gets one page.
      await bytes('/internal/snapshot/tracks?limit=7', pageAccept).expect('content-type', SNAPSHOT_PAGE_BINARY_TYPE);
    });

    it('When snapshot rows are asked for by content id, then each known song comes once, in the asked order, as the snapshot page holds it', async () => {
      const all: Array<{ itemId: string } & Record<string, unknown>> = [];
      let after: string | undefined;
      for (;;) {
        const page = (await c.get(`/internal/snapshot/tracks?limit=5000${after ? `&after=${after}` : ''}`).expect(200)).body;
        all.push(...page.tracks);
        if (!page.next) break;
        after = page.next;
      }
      const [x, y] = [all[all.length - 1]!, all[1]!];
      const res = (await c.post('/internal/snapshot/tracks/by-ids', { itemIds: [x.itemId, 'nope', y.itemId, x.itemId] }).expect(200)).body;
      expect(res.tracks).toEqual([x, y]);
      expect((res.tracks[0] as { mappings: unknown[] }).mappings.length).toBeGreaterThan(0);
      // Bad input is a 400 in the error envelope: no ids, or more than 1000.
      const empty = await c.post('/internal/snapshot/tracks/by-ids', { itemIds: [] }).expect(400);
      expect(empty.body).toMatchObject({ code: expect.any(String), request_id: expect.any(String) });
      await c.post('/internal/snapshot/tracks/by-ids', { itemIds: Array.from({ length: 1001 }, (_, i) => `id-${i}`) }).expect(400);
    });

    it('When tracks are looked up in a batch, then known ones come back in the asked order', async () => {
      const res = (await c.post('/internal/tracks/lookup', { itemIds: [itemId(3), 'nope', itemId(1)] }).expect(200)).body;
      expect(res.tracks.map((t: { itemId: string }) => t.itemId)).toEqual([itemId(3), itemId(1)]);
      expect(res.tracks[1].mappings).toHaveLength(3);
      expect(res.tracks[0].embedding).toBeUndefined();
    });
  });

  describe('server deletion and orphans', () => {
    it('When a server is deleted, then only its mapping, Chromaprint and artist rows go; songs stay; late resolves are refused', async () => {
      const shared = songEmbedding(500);
      const only = songEmbedding(501);
      const print = Array.from({ length: 100 }, (_, i) => i * 7919);
      const s = await resolve(resolveRequest('srv-del', 'd-1', shared, { chromaprint: print, metadata: { title: 'S', artist: 'Gone Band', artistId: 'ga-1' } }));
      await resolve(resolveRequest('srv-keep', 'k-1', copyOf(shared, 3), { chromaprint: print }));
      const o = await resolve(resolveRequest('srv-del', 'd-2', only));
      const versionBefore = (await c.get('/internal/availability/srv-del/version').expect(200)).body.version;
      changed.length = 0;

      await c.bus.publish(RoutingKeys.serverDeleted, { serverId: 'srv-del' });
      for (let i = 0; i < 100 && !changed.some((e) => e.serverId === 'srv-del'); i++) await new Promise((r) => setTimeout(r, 50));
      expect(changed).toContainEqual({ serverId: 'srv-del', reason: 'server_deleted' });

      const counts = await c.sql<Record<string, string>>(
        `SELECT (SELECT count(*) FROM catalogue.track_server_map WHERE server_id = 'srv-del') AS maps,
                (SELECT count(*) FROM catalogue.chromaprint WHERE server_id = 'srv-del') AS prints,
                (SELECT count(*) FROM catalogue.artist_server_map WHERE server_id = 'srv-del') AS artists,
                (SELECT count(*) FROM catalogue.track_server_map WHERE server_id = 'srv-keep') AS kept_maps,
                (SELECT count(*) FROM catalogue.chromaprint WHERE server_id = 'srv-keep') AS kept_prints,
                (SELECT count(*) FROM catalogue.score WHERE item_id IN ($1, $2)) AS scores`,
        [s.itemId, o.itemId],
      );
      expect(counts).toEqual([{ maps: '0', prints: '0', artists: '0', kept_maps: '1', kept_prints: '1', scores: '2' }]);
      const avail = (await c.get('/internal/availability/srv-del').expect(200)).body;
      expect(avail.itemIds).toEqual([]);
      expect(avail.version).toBeGreaterThan(versionBefore);
      const late = await c.post('/internal/identity/resolve', resolveRequest('srv-del', 'd-3', songEmbedding(502))).expect(409);
      expect(late.body.code).toBe('server_deleted');
    });

    it('When an orphaned song returns on another server, then it is re-bound to its old id', async () => {
      const e = songEmbedding(600);
      const orphan = await resolve(resolveRequest('srv-gone', 'g-1', e));
      await c.bus.publish(RoutingKeys.serverDeleted, { serverId: 'srv-gone' });
      for (let i = 0; i < 100; i++) {
        const rows = await c.sql<{ n: string }>(`SELECT count(*) AS n FROM catalogue.track_server_map WHERE server_id = 'srv-gone'`);
        if (rows[0]?.n === '0') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const detail = (await c.get(`/internal/tracks/${orphan.itemId}`).expect(200)).body;
      expect(detail.mappings).toEqual([]);
      const back = await resolve(resolveRequest('srv-new', 'n-1', copyOf(e, 4)));
      expect(back).toEqual({ itemId: orphan.itemId, outcome: 'existing' });
      expect((await c.get('/internal/availability/srv-new').expect(200)).body.itemIds).toEqual([orphan.itemId]);
    });
  });

  describe('learned features (MusiCNN tags, mood_vector, other_features)', () => {
    const msd = MSD_TAGS.map((_, i) => (i === 23 ? 0.91 : i === 28 ? 0.62 : i / 1000));
    const learned = {
      tagsModel: 'musicnn-msd@412a832c',
      tags: { msd },
      moodVector: moodVectorOf(msd),
      otherFeatures: 'danceable:0.100,aggressive:0.020,happy:0.300,party:0.050,relaxed:0.700,sad:0.200',
    };

    it('When a new song arrives with learned features, then the track and the snapshot carry them; without them they are null', async () => {
      const withTags = await resolve(resolveRequest('srv-ml', 'ml-1', songEmbedding(900), { learned }));
      const plain = await resolve(resolveRequest('srv-ml', 'ml-2', songEmbedding(901)));
      const t = (await c.get(`/internal/tracks/${withTags.itemId}?embedding=0`).expect(200)).body;
      expect(t.learned).toEqual({ ...learned, tags: { msd: msd.map((p) => expect.closeTo(p, 12)) } });
      expect(t.learned.moodVector.startsWith('instrumental:0.910,ambient:0.620,')).toBe(true);
      expect((await c.get(`/internal/tracks/${plain.itemId}?embedding=0`).expect(200)).body.learned).toBeNull();
      const lookup = (await c.post('/internal/tracks/lookup', { itemIds: [withTags.itemId, plain.itemId] }).expect(200)).body.tracks;
      expect(lookup.map((x: { learned: unknown }) => x.learned === null)).toEqual([false, true]);
      const snap: Array<{ itemId: string; learned: unknown }> = [];
      for (let after: string | null = null; ; ) {
        const page: { tracks: typeof snap; next: string | null } = (await c.get(`/internal/snapshot/tracks?limit=5000${after ? `&after=${after}` : ''}`).expect(200)).body;
        snap.push(...page.tracks);
        if (!page.next) break;
        after = page.next;
      }
      expect(snap.find((x) => x.itemId === withTags.itemId)?.learned).toMatchObject({ tagsModel: learned.tagsModel, moodVector: learned.moodVector });
      expect(snap.find((x) => x.itemId === plain.itemId)?.learned).toBeNull();
    });

    it('When an existing song is re-analysed, then PUT learned replaces its features and leaves id, mappings and embedding alone', async () => {
      const e = songEmbedding(902);
      const r = await resolve(resolveRequest('srv-ml', 'ml-3', e));
      const before = (await c.get(`/internal/tracks/${r.itemId}`).expect(200)).body;
      await c.put(`/internal/tracks/${r.itemId}/learned`, learned).expect(204);
      const after = (await c.get(`/internal/tracks/${r.itemId}`).expect(200)).body;
      expect(after.learned.otherFeatures).toBe(learned.otherFeatures);
      expect(after.embedding).toBe(before.embedding);
      expect(after.mappings).toEqual(before.mappings);
      expect((await c.put(`/internal/tracks/fp_4${'f'.repeat(50)}/learned`, learned).expect(404)).body.code).toBe('not_found');
    });

    it('When another copy of a stored song is analysed (keepExisting), then the song keeps its tags of that model and gains them only where it had none or another model\'s', async () => {
      const tagged = await resolve(resolveRequest('srv-ml', 'ml-6', songEmbedding(905), { learned }));
      const copy = { ...learned, tags: { msd: msd.map((p) => p / 2) }, moodVector: moodVectorOf(msd.map((p) => p / 2)), otherFeatures: 'danceable:0.200,aggressive:0.040,happy:0.100,party:0.010,relaxed:0.500,sad:0.300' };
      await c.put(`/internal/tracks/${tagged.itemId}/learned`, { ...copy, keepExisting: true }).expect(204);
      expect((await c.get(`/internal/tracks/${tagged.itemId}?embedding=0`).expect(200)).body.learned).toMatchObject({ moodVector: learned.moodVector, otherFeatures: learned.otherFeatures });
      // Another model's tags, or none: filled.
      await c.put(`/internal/tracks/${tagged.itemId}/learned`, { ...copy, tagsModel: 'musicnn-msd@00000000', keepExisting: true }).expect(204);
      expect((await c.get(`/internal/tracks/${tagged.itemId}?embedding=0`).expect(200)).body.learned).toMatchObject({ tagsModel: 'musicnn-msd@00000000', otherFeatures: copy.otherFeatures });
      const plain = await resolve(resolveRequest('srv-ml', 'ml-7', songEmbedding(906)));
      await c.put(`/internal/tracks/${plain.itemId}/learned`, { ...copy, keepExisting: true }).expect(204);
      expect((await c.get(`/internal/tracks/${plain.itemId}?embedding=0`).expect(200)).body.learned).toMatchObject({ tagsModel: learned.tagsModel, moodVector: copy.moodVector });
      expect((await c.put(`/internal/tracks/fp_4${'e'.repeat(50)}/learned`, { ...copy, keepExisting: true }).expect(404)).body.code).toBe('not_found');
    });

    it('When learned features are malformed, then resolve and PUT answer 400 and store nothing', async () => {
      const r = await resolve(resolveRequest('srv-ml', 'ml-4', songEmbedding(903)));
      for (const bad of [
        { ...learned, tags: { msd: msd.slice(0, 49) } },
        { ...learned, tags: { msd: msd.map(() => 1.5) } },
        { ...learned, moodVector: 'rock=0.5' },
        { ...learned, otherFeatures: 'happy:2' },
      ]) {
        expect((await c.put(`/internal/tracks/${r.itemId}/learned`, bad).expect(400)).body.code).toBe('validation_failed');
        await c.post('/internal/identity/resolve', resolveRequest('srv-ml', 'ml-5', songEmbedding(904), { learned: bad })).expect(400);
      }
      expect((await c.get(`/internal/tracks/${r.itemId}?embedding=0`).expect(200)).body.learned).toBeNull();
      await c.put(`/internal/tracks/${r.itemId}/learned`, learned, 'user').expect(403);
    });
  });

  describe('lyrics, durations, artists', () => {
    it('When lyrics are stored, then the track shows them; an unknown track is 404', async () => {
      const r = await resolve(resolveRequest('srv-ly', 'l-1', songEmbedding(700)));
      await c.put(`/internal/tracks/${r.itemId}/lyrics`, { status: 'found', text: 'la la la', sourceServerId: 'srv-ly', sourceKind: 'navidrome' }).expect(204);
      expect((await c.get(`/internal/tracks/${r.itemId}?embedding=0`).expect(200)).body).toMatchObject({ lyrics: 'la la la' });
      expect((await c.get(`/internal/tracks/${r.itemId}?embedding=0`).expect(200)).body.embedding).toBeUndefined();
      const missing = await c.put(`/internal/tracks/fp_4${'e'.repeat(50)}/lyrics`, { status: 'found', text: 'x' }).expect(404);
      expect(missing.body.code).toBe('not_found');
      // A later lookup replaces the earlier one; text without status found is refused.
      await c.put(`/internal/tracks/${r.itemId}/lyrics`, { status: 'none' }).expect(204);
      expect((await c.get(`/internal/tracks/${r.itemId}?embedding=0`).expect(200)).body.lyrics).toBeNull();
      await c.put(`/internal/tracks/${r.itemId}/lyrics`, { status: 'none', text: 'x' }).expect(400);
    });

    it('When a listing is back-filled, then mapping durations are set and songs without a duration get one', async () => {
      const a = await resolve(resolveRequest('srv-dur', 'u-1', songEmbedding(800), { durationSeconds: undefined }));
      const b = await resolve(resolveRequest('srv-dur', 'u-2', songEmbedding(801), { durationSeconds: undefined }));
      const k = await resolve(resolveRequest('srv-dur', 'u-3', songEmbedding(802), { durationSeconds: 150 }));
      const res = (
        await c
          .post('/internal/durations/backfill', {
            serverId: 'srv-dur',
            tracks: [
              { providerId: 'u-1', durationSeconds: 201.5 },
              { providerId: 'u-2', durationSeconds: -1 },
              { providerId: 'u-3', durationSeconds: 149.9 },
              { providerId: 'not-mapped', durationSeconds: 100 },
            ],
          })
          .expect(200)
      ).body;
      expect(res).toEqual({ mappingsUpdated: 2, scoresFilled: 1, rejectedEntries: 1, conflictingItems: 0 });
      const rows = await c.sql<{ item_id: string; duration_seconds: number | null }>(`SELECT item_id, duration_seconds FROM catalogue.score WHERE item_id = ANY($1) ORDER BY item_id`, [
        [a.itemId, b.itemId, k.itemId],
      ]);
      const byId = Object.fromEntries(rows.map((r) => [r.item_id, r.duration_seconds]));
      expect(byId).toEqual({ [a.itemId]: 201.5, [b.itemId]: null, [k.itemId]: 150 });
    });

    it('When a whole-catalogue listing exceeds the 10 MB JSON limit, then it is accepted with the large-JSON content type', async () => {
      const r = await resolve(resolveRequest('srv-big', 'big-1', songEmbedding(850), { durationSeconds: undefined }));
      const tracks = Array.from({ length: 200_000 }, (_, i) => ({ providerId: `missing-provider-${i}`, durationSeconds: 100 + (i % 300) }));
      tracks.push({ providerId: 'big-1', durationSeconds: 321 });
      const body = JSON.stringify({ serverId: 'srv-big', tracks });
      expect(body.length).toBeGreaterThan(10 * 1024 * 1024);
      await request(c.svc.http).post('/internal/durations/backfill').set(c.headers()).set('content-type', 'application/json').send(body).expect(413);
      const res = await request(c.svc.http).post('/internal/durations/backfill').set(c.headers()).set('content-type', LARGE_JSON_CONTENT_TYPE).send(body).expect(200);
      expect(res.body).toEqual({ mappingsUpdated: 1, scoresFilled: 1, rejectedEntries: 0, conflictingItems: 0 });
      expect((await c.get(`/internal/tracks/${r.itemId}?embedding=0`).expect(200)).body.durationSeconds).toBe(321);
    });

    it('When an artist is resolved by provider id or by name, then both directions work; unknown passes through', async () => {
      await resolve(resolveRequest('srv-art', 'ar-1', songEmbedding(900), { metadata: { title: 't', artist: 'Björk  Guðmundsdóttir', artistId: 'artist-77' } }));
      expect((await c.get('/internal/artists/resolve?serverId=srv-art&value=artist-77').expect(200)).body).toEqual({ artistName: 'Björk  Guðmundsdóttir', providerArtistId: 'artist-77' });
      expect((await c.get(`/internal/artists/resolve?serverId=srv-art&value=${encodeURIComponent('björk guðmundsdóttir')}`).expect(200)).body).toEqual({
        artistName: 'Björk  Guðmundsdóttir',
        providerArtistId: 'artist-77',
      });
      expect((await c.get('/internal/artists/resolve?serverId=srv-art&value=Nobody').expect(200)).body).toEqual({ artistName: 'Nobody', providerArtistId: null });
      const map = (await c.post('/internal/artists/map-output', { serverId: 'srv-art', names: ['BJÖRK GUÐMUNDSDÓTTIR', 'Nobody'] }).expect(200)).body;
      expect(map).toEqual({ map: { 'BJÖRK GUÐMUNDSDÓTTIR': 'artist-77' } });
    });
  });
});
