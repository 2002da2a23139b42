import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import express from 'express';
import request from 'supertest';
import { IdentityVerifier, Metrics, createLogger, errorHandler, withLeanPath, type CallerIdentity, type PeerClient } from '@polyphony/platform';
import type { AuthService } from '../auth/auth.service';
import type { ServiceName } from '../config';
import { securityHeaders } from '../http/security';
import { leanProxy, staticHeadersOf } from './lean-proxy';
import { Upstreams } from './proxy';
import { listenStandIn } from './__tests__/stand-in';
import { ServerResolver } from './server-resolver';

const logger = createLogger({ service: 'test', level: 'error' });
const SECRET = 's'.repeat(32);
const TOKEN = 'the-api-token';

/** A stand-in service: records what it received, answers `{ replica, url, identity }`; `delayMs` holds the answer back. */
async function upstream(name: string, delayMs = 0) {
  const seen: Array<{ url: string; headers: IncomingHttpHeaders; identity?: CallerIdentity }> = [];
  const verifier = new IdentityVerifier(SECRET);
  const state = { url: '', seen, closedEarly: 0, close: async () => undefined as void };
  const standIn = await listenStandIn((req, res) => {
    if (req.url === '/readyz') return void res.writeHead(200).end();
    const identity = verifier.verify(req.headers);
    seen.push({ url: req.url ?? '', headers: req.headers, identity });
    res.on('close', () => {
      if (!res.writableFinished) state.closedEarly++;
    });
    setTimeout(() => {
      if (res.destroyed) return;
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': String(req.headers['x-request-id']) }).end(JSON.stringify({ replica: name, url: req.url, identity }));
    }, delayMs);
  });
  state.url = standIn.url;
  state.close = standIn.close;
  return state;
}

/** The lean path in front of a stand-in express app that answers 599 for whatever the lean path leaves to it. */
function gateway(targets: Partial<Record<ServiceName, string>>, options: { authEnabled?: boolean } = {}) {
  const dead = 'http://127.0.0.1:1';
  const all: Record<ServiceName, string> = { registry: dead, catalogue: dead, analysis: dead, index: dead, playlist: dead, ...targets };
  const app = express();
  app.use((_req, res) => void res.status(599).json({ express: true }));
  app.use(errorHandler(logger));
  const auth = {
    authEnabled: options.authEnabled ?? true,
    authenticateBearer: (t: string): CallerIdentity | undefined => (t === TOKEN ? { sub: 'api-token', username: 'api-token', role: 'admin', via: 'bearer', iat: Date.now() } : undefined),
  } as unknown as AuthService;
  // The real resolver over a stand-in registry: `Main` (and no parameter) is srv-main, any other name is unknown.
  const registryCalls = { count: 0 };
  const registry = {
    call: async (_def: unknown, input: { query: { server?: string } }) => {
      registryCalls.count++;
      const server = input.query.server;
      return { server: server === undefined || server === 'Main' ? { id: 'srv-main', name: 'Main', server_type: 'jellyfin' } : null };
    },
  } as unknown as PeerClient;
  const resolver = new ServerResolver(registry);
  const upstreams = new Upstreams(() => all, SECRET, logger);
  const lean = leanProxy({ app, auth, upstreams, resolver, headers: staticHeadersOf(securityHeaders()), logger, metrics: new Metrics('gateway-test') });
  const taken = { count: 0 };
  const handler = withLeanPath(app, (req: IncomingMessage, res: ServerResponse) => {
    const took = lean(req, res);
    if (took) taken.count++;
    return took;
  });
  return { handler, taken, upstreams, registryCalls };
}

const bearer = { authorization: `Bearer ${TOKEN}` };

describe('leanProxy: authenticated GETs of service routes without express', () => {
  it('When a bearer caller asks for similar songs, then the index gets the signed identity with the resolved server and no secrets, and the caller gets its answer with the security headers', async () => {
    const ix = await upstream('a');
    const gw = gateway({ index: ix.url });
    try {
      const res = await request(gw.handler).get('/api/similar_tracks?item_id=x&n=10&server=Main').set(bearer).set('cookie', 'polyphony_session=abc').set('x-request-id', 'lean-req-1').set('x-polyphony-identity', 'forged');
      expect(res.status).toBe(200);
      expect(res.body.replica).toBe('a');
      expect(res.body.url).toBe('/api/similar_tracks?item_id=x&n=10&server=Main');
      expect(res.headers['x-request-id']).toBe('lean-req-1');
      expect(res.headers['content-security-policy']).toContain("default-src 'self'");
      expect(res.headers['x-frame-options']).toBe('DENY');
      const got = ix.seen[0]!;
      expect(got.identity).toMatchObject({ sub: 'api-token', role: 'admin', via: 'bearer', serverId: 'srv-main' });
      expect(got.headers.cookie).toBeUndefined();
      expect(got.headers.authorization).toBeUndefined();
      expect(got.headers['x-request-id']).toBe('lean-req-1');
      expect(gw.taken.count).toBe(1);
      // Again within the resolver's cache time: forwarded from the cached resolution (no registry call), same identity.
      const again = await request(gw.handler).get('/api/similar_tracks?item_id=y&server=Main').set(bearer);
      expect(again.status).toBe(200);
      expect(ix.seen[1]!.identity).toMatchObject({ sub: 'api-token', via: 'bearer', serverId: 'srv-main' });
      expect(gw.registryCalls.count).toBe(1);
      expect(gw.taken.count).toBe(2);
    } finally {
      gw.upstreams.stop();
      await ix.close();
    }
  });

  it('When the request is not an authenticated plain GET of a service route, then the lean path leaves it to express', async () => {
    const ix = await upstream('a');
    const gw = gateway({ index: ix.url });
    try {
      const cases = [
        request(gw.handler).get('/api/similar_tracks?item_id=x'), // no credential (401 on the express path)
        request(gw.handler).get('/api/similar_tracks?item_id=x').set('cookie', 'polyphony_session=abc'), // cookie caller
        request(gw.handler).get('/api/similar_tracks?item_id=x').set('authorization', 'Bearer wrong'), // bad token (401)
        request(gw.handler).get('/api/similar_tracks?item_id=x').set('authorization', 'Basic abc'),
        request(gw.handler).post('/api/alchemy').set(bearer).send({ items: [] }), // a body
        request(gw.handler).get('/api/no_such_route').set(bearer), // 404
        request(gw.handler).get('/api/me').set(bearer), // the gateway's own route
        request(gw.handler).get('/api/similar_tracks?item_id=a&item_id=b').set(bearer), // qs would make an array
        request(gw.handler).get('/api/similar_tracks?item_id=%00').set(bearer), // NUL: 400 on the express path
        request(gw.handler).get('/assets/app.js').set(bearer), // not the API
      ];
      for (const r of cases) expect((await r).status).toBe(599);
      expect(gw.taken.count).toBe(0);
      expect(ix.seen).toHaveLength(0);
    } finally {
      gw.upstreams.stop();
      await ix.close();
    }
  });

  it('When authentication is off, then the anonymous caller is forwarded with the anonymous identity', async () => {
    const ix = await upstream('a');
    const gw = gateway({ index: ix.url }, { authEnabled: false });
    try {
      const res = await request(gw.handler).get('/api/similar_tracks?item_id=x');
      expect(res.status).toBe(200);
      expect(ix.seen[0]!.identity).toMatchObject({ sub: 'anonymous', via: 'anonymous', role: 'admin' });
    } finally {
      gw.upstreams.stop();
      await ix.close();
    }
  });

  it('When the server parameter names no configured server, then the answer is 400 in the error shape and nothing is forwarded', async () => {
    const ix = await upstream('a');
    const gw = gateway({ index: ix.url });
    try {
      // Twice: the second time the unknown name is cached (the registry is not asked again) and still a 400.
      for (const id of ['bad-server', 'bad-server-2']) {
        const res = await request(gw.handler).get('/api/similar_tracks?item_id=x&server=nope').set(bearer).set('x-request-id', id);
        expect(res.status).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'validation_failed', requestId: id });
        expect(res.body.error.message).toContain('Unknown server "nope"');
        expect(res.headers['x-frame-options']).toBe('DENY');
      }
      expect(gw.registryCalls.count).toBe(1);
      expect(ix.seen).toHaveLength(0);
    } finally {
      gw.upstreams.stop();
      await ix.close();
    }
  });

  it('When one of two index replicas refuses connections, then every request is answered by the other (retry), and with both down the answer is 503', async () => {
    const a = await upstream('a');
    const b = await upstream('b');
    const gw = gateway({ index: `${a.url},${b.url}` });
    try {
      await a.close();
      for (let i = 0; i < 6; i++) {
        const res = await request(gw.handler).get(`/api/similar_tracks?item_id=${i}`).set(bearer);
        expect([res.status, res.body.replica]).toEqual([200, 'b']);
      }
      await b.close();
      const down = await request(gw.handler).get('/api/similar_tracks?item_id=x').set(bearer).set('x-request-id', 'all-down');
      expect(down.status).toBe(503);
      expect(down.body.error).toEqual({ code: 'upstream_unavailable', message: 'The index service is unavailable', requestId: 'all-down' });
    } finally {
      gw.upstreams.stop();
      await a.close().catch(() => undefined);
      await b.close().catch(() => undefined);
    }
  });

  it('When one of two replicas is slow, then new requests go to the replica with fewer requests in flight, and every count returns to zero', async () => {
    const slow = await upstream('slow', 3000);
    const fast = await upstream('fast');
    const gw = gateway({ index: `${slow.url},${fast.url}` });
    try {
      // The first request takes the slow replica (both idle: round-robin order); while it is in flight (3 s), the
      // next six sequential requests all go to the fast one (plain round-robin would send three to the slow one).
      const held = request(gw.handler).get('/api/similar_tracks?item_id=held').set(bearer).then((r) => r);
      for (let waited = 0; slow.seen.length === 0 && waited < 2000; waited += 10) await new Promise((r) => setTimeout(r, 10));
      const pool = gw.upstreams.poolFor('index')!;
      expect(pool.inFlight()).toEqual([1, 0]);
      for (let i = 0; i < 6; i++) {
        const res = await request(gw.handler).get(`/api/similar_tracks?item_id=${i}`).set(bearer);
        expect([res.status, res.body.replica]).toEqual([200, 'fast']);
      }
      expect(pool.inFlight()).toEqual([1, 0]);
      expect((await held).body.replica).toBe('slow');
      await new Promise((r) => setTimeout(r, 20));
      expect(pool.inFlight()).toEqual([0, 0]);
      // Idle again: alternate (the slow replica's answers take 3 s each).
      const who = [];
      for (let i = 0; i < 2; i++) who.push((await request(gw.handler).get(`/api/similar_tracks?item_id=r${i}`).set(bearer)).body.replica);
      expect(who.sort()).toEqual(['fast', 'slow']);
      // A refused connection (retried on the other replica) and an abandoned request are released too.
      await fast.close();
      expect((await request(gw.handler).get('/api/similar_tracks?item_id=retry').set(bearer)).body.replica).toBe('slow');
      const front = await listenStandIn(gw.handler);
      try {
        await new Promise<void>((resolve) => {
          const req = http.get({ host: '127.0.0.1', port: Number(new URL(front.url).port), path: '/api/similar_tracks?item_id=gone', headers: bearer });
          req.on('error', () => resolve());
          setTimeout(() => {
            req.destroy();
            resolve();
          }, 80);
        });
        await new Promise((r) => setTimeout(r, 100));
      } finally {
        await front.close();
      }
      expect(pool.inFlight()).toEqual([0, 0]);
    } finally {
      gw.upstreams.stop();
      await slow.close();
      await fast.close().catch(() => undefined);
    }
  });

  it('When the caller goes away before the service answers, then the forwarded request is abandoned too', async () => {
    const ix = await upstream('slow', 300);
    const gw = gateway({ index: ix.url });
    const front = await listenStandIn(gw.handler);
    try {
      const port = Number(new URL(front.url).port);
      await new Promise<void>((resolve) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/api/similar_tracks?item_id=x', headers: bearer });
        req.on('error', () => resolve());
        setTimeout(() => {
          req.destroy();
          resolve();
        }, 80);
      });
      await new Promise((r) => setTimeout(r, 400));
      expect(ix.seen).toHaveLength(1);
      expect(ix.closedEarly).toBe(1);
    } finally {
      gw.upstreams.stop();
      await front.close();
      await ix.close();
    }
  });
});
