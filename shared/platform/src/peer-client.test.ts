import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { SNAPSHOT_PAGE_BINARY_TYPE, SNAPSHOT_STREAM_TYPE, api } from '@polyphony/contracts';
import { AppError, StateUnavailableError, UpstreamUnavailableError } from './errors';
import { PeerClient } from './peer-client';
import { ServiceClient } from './service-client';

/** PeerClient.callBytes / ServiceClient.requestBytes against a real HTTP server (content negotiation, error mapping). */
describe('PeerClient.callBytes', () => {
  let server: Server;
  let peer: PeerClient;
  let mode: 'binary' | 'json' | 'unavailable' | 'state' | 'broken' | 'missing' | 'stream' | 'stream-cut' = 'binary';
  const seenAccept: string[] = [];

  beforeAll(async () => {
    const app = express();
    app.get(api.internal.snapshotTracks.path, (req, res) => {
      seenAccept.push(String(req.headers.accept));
      if (mode === 'unavailable') return void res.status(503).set('Retry-After', '5').json({ error: 'db down', code: 'upstream_unavailable', request_id: 'x' });
      if (mode === 'state') return void res.status(503).json({ error: 'install the model', code: 'tags_unavailable', request_id: 'x' });
      if (mode === 'broken') return void res.status(500).json({ error: 'Internal server error', code: 'internal_error', request_id: 'x' });
      if (mode === 'missing') return void res.status(404).json({ error: 'nope', code: 'not_found', request_id: 'x' });
      if (mode === 'json') return void res.json({ tracks: [], next: null, after: req.query.after ?? null });
      if (mode === 'stream' || mode === 'stream-cut') {
        // Three chunks with pauses between them; 'stream-cut' destroys the connection after the second.
        res.status(200).type(SNAPSHOT_STREAM_TYPE);
        res.write(Buffer.from([1, 2]));
        setTimeout(() => {
          res.write(Buffer.from([3]));
          setTimeout(() => (mode === 'stream-cut' ? res.destroy() : res.end(Buffer.from([4, 5]))), 50);
        }, 50);
        return;
      }
      res.type(SNAPSHOT_PAGE_BINARY_TYPE).send(Buffer.from([1, 2, 3, 250]));
    });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    peer = new PeerClient(new ServiceClient(() => url, 'peer-client-test-secret-0123456789abcdef', 'index', 5_000), 'catalogue', { maxAttempts: 1, initialDelayMs: 1, maxDelayMs: 1 });
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  test('asks for the alternate type first and JSON second, and returns the raw bytes and media type', async () => {
    mode = 'binary';
    const res = await peer.callBytes(api.internal.snapshotTracks, SNAPSHOT_PAGE_BINARY_TYPE, { query: { limit: 5 } });
    expect(res.contentType).toBe(SNAPSHOT_PAGE_BINARY_TYPE);
    expect(Array.from(res.body)).toEqual([1, 2, 3, 250]);
    expect(seenAccept.at(-1)).toBe(`${SNAPSHOT_PAGE_BINARY_TYPE}, application/json;q=0.5`);
  });

  test('a callee that answers JSON is returned as JSON bytes (the caller parses them); the query is sent', async () => {
    mode = 'json';
    const res = await peer.callBytes(api.internal.snapshotTracks, SNAPSHOT_PAGE_BINARY_TYPE, { query: { after: 'abc', limit: 5 } });
    expect(res.contentType).toBe('application/json');
    expect(JSON.parse(Buffer.from(res.body).toString('utf8'))).toEqual({ tracks: [], next: null, after: 'abc' });
  });

  test('error answers map to AppError like JSON calls (503 of a fault -> 503 with Retry-After, 503 of a state kept, other 5xx -> 502, 4xx kept)', async () => {
    mode = 'unavailable';
    const down = (await peer.callBytes(api.internal.snapshotTracks, SNAPSHOT_PAGE_BINARY_TYPE).catch((e: unknown) => e)) as AppError;
    expect(down).toBeInstanceOf(UpstreamUnavailableError);
    expect([down.httpStatus, down.code, down.message]).toEqual([503, 'upstream_unavailable', 'db down']);
    mode = 'state';
    const state = (await peer.callBytes(api.internal.snapshotTracks, SNAPSHOT_PAGE_BINARY_TYPE).catch((e: unknown) => e)) as AppError;
    expect(state).toBeInstanceOf(StateUnavailableError);
    expect([state.httpStatus, state.code, state.message]).toEqual([503, 'tags_unavailable', 'install the model']);
    mode = 'broken';
    const broken = (await peer.callBytes(api.internal.snapshotTracks, SNAPSHOT_PAGE_BINARY_TYPE).catch((e: unknown) => e)) as AppError;
    expect([broken.httpStatus, broken.code]).toEqual([502, 'internal_error']);
    mode = 'missing';
    const missing = (await peer.callBytes(api.internal.snapshotTracks, SNAPSHOT_PAGE_BINARY_TYPE).catch((e: unknown) => e)) as AppError;
    expect(missing).toBeInstanceOf(AppError);
    expect([missing.httpStatus, missing.code]).toEqual([404, 'not_found']);
  });

  test('callStream hands the body over as it arrives; a connection cut mid-answer throws a 503 from the iteration; errors before the body map as for callBytes', async () => {
    mode = 'stream';
    const res = await peer.callStream(api.internal.snapshotTracks, [SNAPSHOT_STREAM_TYPE, SNAPSHOT_PAGE_BINARY_TYPE], { query: { limit: 5 } });
    expect(res.contentType).toBe(SNAPSHOT_STREAM_TYPE);
    expect(seenAccept.at(-1)).toBe(`${SNAPSHOT_STREAM_TYPE}, ${SNAPSHOT_PAGE_BINARY_TYPE};q=0.9, application/json;q=0.5`);
    const got: number[] = [];
    let chunks = 0;
    for await (const c of res.chunks) {
      chunks++;
      got.push(...c);
    }
    expect(got).toEqual([1, 2, 3, 4, 5]);
    expect(chunks).toBeGreaterThanOrEqual(2);
    mode = 'stream-cut';
    const cut = await peer.callStream(api.internal.snapshotTracks, [SNAPSHOT_STREAM_TYPE]);
    const before: number[] = [];
    const err = await (async () => {
      for await (const c of cut.chunks) before.push(...c);
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect((err as AppError).httpStatus).toBe(503);
    expect(before).toEqual([1, 2, 3]);
    mode = 'unavailable';
    const down = (await peer.callStream(api.internal.snapshotTracks, [SNAPSHOT_STREAM_TYPE]).catch((e: unknown) => e)) as AppError;
    expect([down.httpStatus, down.code]).toEqual([503, 'upstream_unavailable']);
  });

  test('a type the route does not list in alternateTypes is a programming error', async () => {
    await expect(peer.callBytes(api.internal.mappingRows, SNAPSHOT_PAGE_BINARY_TYPE)).rejects.toThrow(/does not answer/);
  });
});
