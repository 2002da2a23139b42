import express from 'express';
import request from 'supertest';
import { createLogger } from '@polyphony/platform';
import { Forwarder, Upstreams } from './forward';
import type { ServerResolver } from './server-resolver';
import { UpstreamPool } from './upstream-pool';
import { listenStandIn } from './__tests__/stand-in';

const logger = createLogger({ service: 'test', level: 'error' });

/** A stand-in index replica: answers who it is; /readyz follows `ready`. */
async function replica(name: string): Promise<{ url: string; ready: boolean; served: number; close(): Promise<void> }> {
  const state = { url: '', ready: true, served: 0, close: async () => undefined as void };
  const standIn = await listenStandIn((req, res) => {
    if (req.url === '/readyz') {
      res.writeHead(state.ready ? 200 : 503).end();
      return;
    }
    state.served++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ replica: name }));
  });
  state.url = standIn.url;
  state.close = standIn.close;
  return state;
}

function gatewayTo(indexUrl: string): express.Express {
  const app = express();
  app.use((req, _res, next) => {
    req.identity = { sub: 'u', username: 'u', role: 'user', via: 'bearer', iat: Date.now() };
    (req as unknown as { requestId: string }).requestId = 'req-1';
    next();
  });
  const resolver = { peek: () => undefined, resolve: async () => undefined } as unknown as ServerResolver;
  const url = 'http://127.0.0.1:1';
  const upstreams = new Upstreams(() => ({ registry: url, catalogue: url, analysis: url, index: indexUrl, playlist: url }), 'x'.repeat(32), logger);
  app.use(new Forwarder(upstreams, resolver, logger).handler('index'));
  return app;
}

describe('index replicas behind the gateway (UpstreamPool)', () => {
  it('When INDEX_URL lists two replicas, then requests alternate; when one dies or turns unready, every request still succeeds on the other', async () => {
    const a = await replica('a');
    const b = await replica('b');
    const app = gatewayTo(`${a.url}, ${b.url}`);
    try {
      const who = async () => {
        const res = await request(app).get('/api/similar_tracks?item_id=x');
        expect(res.status).toBe(200);
        return (res.body as { replica: string }).replica;
      };
      const first = [await who(), await who(), await who(), await who()];
      expect(first.filter((x) => x === 'a')).toHaveLength(2);
      await a.close();
      // Connection refused on a: marked down, the same request is retried on b.
      for (let i = 0; i < 10; i++) expect(await who()).toBe('b');
      // A draining replica (readyz 503) gets no traffic once probed.
      const c = await replica('c');
      const pool = new UpstreamPool([b.url, c.url], logger);
      b.ready = false;
      await pool.probeAll();
      expect([pool.pick(), pool.pick(), pool.pick()]).toEqual([c.url, c.url, c.url]);
      await c.close();
    } finally {
      await a.close().catch(() => undefined);
      await b.close();
    }
  });

  it('When every replica is down, then the answer is 503 upstream_unavailable', async () => {
    const a = await replica('a');
    const b = await replica('b');
    await a.close();
    await b.close();
    const res = await request(gatewayTo(`${a.url},${b.url}`)).get('/api/similar_tracks?item_id=x');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: 'The index service is unavailable', code: 'upstream_unavailable', request_id: 'req-1' });
  });

  it('When replicas are picked, then ready ones come first, round-robin, and tried ones are skipped', async () => {
    const pool = new UpstreamPool(UpstreamPool.parse('http://h1:1/, http://h2:2,,http://h3:3'), logger);
    expect(pool.urls).toEqual(['http://h1:1', 'http://h2:2', 'http://h3:3']);
    expect([pool.pick(), pool.pick(), pool.pick(), pool.pick()]).toEqual(['http://h1:1', 'http://h2:2', 'http://h3:3', 'http://h1:1']);
    pool.markDown('http://h2:2');
    expect([pool.pick(), pool.pick(), pool.pick()]).toEqual(['http://h3:3', 'http://h1:1', 'http://h3:3']);
    expect(pool.pick(new Set(['http://h1:1', 'http://h3:3']))).toBe('http://h2:2');
    expect(pool.pick(new Set(pool.urls))).toBeUndefined();
  });
});
