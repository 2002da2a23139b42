import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import express from 'express';
import request from 'supertest';
import { createLogger, RETRY_AFTER_SECONDS, type CallerIdentity, type PeerClient } from '@polyphony/platform';
import type { ServiceName } from '../config';
import { Forwarder, Upstreams } from './forward';
import { listenStandIn } from './__tests__/stand-in';
import { ServerResolver } from './server-resolver';

const logger = createLogger({ service: 'test', level: 'error' });
const SECRET = 's'.repeat(32);

/** A stand-in replica answering `{ replica }` after `delayMs`. */
async function replica(name: string, delayMs = 0) {
  let seen = 0;
  const standIn = await listenStandIn((req, res) => {
    if (req.url === '/readyz') return void res.writeHead(200).end();
    seen++;
    setTimeout(() => {
      if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ replica: name }));
    }, delayMs);
  });
  return { ...standIn, seen: () => seen };
}

/** The forwarder of the index's routes behind a stand-in authentication step. */
function gateway(targets: Partial<Record<ServiceName, string>>) {
  const dead = 'http://127.0.0.1:1';
  const all: Record<ServiceName, string> = { registry: dead, catalogue: dead, analysis: dead, index: dead, playlist: dead, ...targets };
  const registry = { call: async () => ({ server: { id: 'srv-main', name: 'Main', server_type: 'jellyfin' } }) } as unknown as PeerClient;
  const upstreams = new Upstreams(() => all, SECRET, logger);
  const app = express();
  app.use((req, _res, next) => {
    const identity: CallerIdentity = { sub: 'api-token', username: 'api-token', role: 'admin', via: 'bearer', iat: Date.now() };
    Object.assign(req, { identity, requestId: 'req-1' });
    next();
  });
  app.use(new Forwarder(upstreams, new ServerResolver(registry), logger).handler('index'));
  return { app, upstreams };
}

describe('Forwarder over index replicas', () => {
  it('When one of two replicas is slow, then the forwarder counts its requests in flight (new ones go to the idle replica), and every count returns to zero, retries included', async () => {
    const slow = await replica('slow', 1500);
    const fast = await replica('fast');
    const gw = gateway({ index: `${slow.url},${fast.url}` });
    try {
      const held = request(gw.app).get('/api/similar_tracks?item_id=held').then((r) => r);
      for (let waited = 0; slow.seen() === 0 && waited < 2000; waited += 10) await new Promise((r) => setTimeout(r, 10));
      const pool = gw.upstreams.poolFor('index')!;
      expect(pool.inFlight()).toEqual([1, 0]);
      for (let i = 0; i < 4; i++) {
        const res = await request(gw.app).get(`/api/similar_tracks?item_id=${i}`);
        expect([res.status, res.body.replica]).toEqual([200, 'fast']);
      }
      expect((await held).body.replica).toBe('slow');
      await new Promise((r) => setTimeout(r, 20));
      expect(pool.inFlight()).toEqual([0, 0]);
      // A refused connection is retried on the other replica; both attempts are released.
      await fast.close();
      const retried = await request(gw.app).get('/api/similar_tracks?item_id=retry');
      expect(retried.body.replica).toBe('slow');
      await new Promise((r) => setTimeout(r, 20));
      expect(pool.inFlight()).toEqual([0, 0]);
    } finally {
      gw.upstreams.stop();
      await slow.close();
      await fast.close().catch(() => undefined);
    }
  });

  it('When no replica accepts the connection, then the answer is 503 upstream_unavailable in the envelope with Retry-After', async () => {
    const gw = gateway({ index: 'http://127.0.0.1:1,http://127.0.0.1:2' });
    try {
      const res = await request(gw.app).get('/api/similar_tracks?item_id=x');
      expect([res.status, res.body.code, res.headers['retry-after']]).toEqual([503, 'upstream_unavailable', String(RETRY_AFTER_SECONDS)]);
    } finally {
      gw.upstreams.stop();
    }
  });
});

describe('Forwarder over one kept-alive connection', () => {
  it('When the service has closed the idle kept-alive socket the next request goes out on, then that request is sent once more on a new connection and answered', async () => {
    let connections = 0;
    let requests = 0;
    const answer = (socket: Socket, n: number) => {
      const body = JSON.stringify({ n });
      socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: keep-alive\r\n\r\n${body}`);
    };
    // The first connection answers one request, then resets when the next one arrives on it: what a service whose
    // keep-alive timeout fired a moment before the gateway reused the socket does. Later connections answer everything.
    const server = net.createServer((socket) => {
      const mine = ++connections;
      let onThis = 0;
      socket.on('data', () => {
        onThis++;
        if (mine === 1 && onThis === 2) return void socket.resetAndDestroy();
        answer(socket, ++requests);
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const dead = 'http://127.0.0.1:1';
    const upstreams = new Upstreams(() => ({ registry: url, catalogue: dead, analysis: dead, index: dead, playlist: dead }), SECRET, logger);
    const app = express();
    app.use((req, _res, next) => {
      Object.assign(req, { identity: { sub: 'api-token', username: 'api-token', role: 'admin', via: 'bearer', iat: Date.now() } satisfies CallerIdentity, requestId: 'req-1' });
      next();
    });
    const registry = { call: async () => ({ server: null }) } as unknown as PeerClient;
    app.use(new Forwarder(upstreams, new ServerResolver(registry), logger).handler('registry'));
    try {
      expect((await request(app).get('/api/servers')).body).toEqual({ n: 1 });
      const second = await request(app).get('/api/servers');
      expect([second.status, second.body]).toEqual([200, { n: 2 }]);
      expect(connections).toBe(2);
    } finally {
      upstreams.stop();
      upstreams.agent.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('Forwarder while the event loop stalls', () => {
  it('When the event loop stalls longer than the agent idle time-out between opening an upstream connection and its connect, then the request is still answered (no spurious upstream timeout)', async () => {
    // What the one-process stack saw under an index build: a new socket carries the agent's 4 s idle time-out until
    // the request's own time-out replaces it; a 4.5 s stall in between fired it on a healthy connection (503).
    const service = await listenStandIn((_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    const dead = 'http://127.0.0.1:1';
    const upstreams = new Upstreams(() => ({ registry: service.url, catalogue: dead, analysis: dead, index: dead, playlist: dead }), SECRET, logger);
    const app = express();
    app.use((req, _res, next) => {
      Object.assign(req, { identity: { sub: 'api-token', username: 'api-token', role: 'admin', via: 'bearer', iat: Date.now() } satisfies CallerIdentity, requestId: 'req-1' });
      next();
    });
    app.use(new Forwarder(upstreams, new ServerResolver({ call: async () => ({ server: null }) } as unknown as PeerClient), logger).handler('registry'));
    const original = http.request;
    let stalled = 0;
    const spy = jest.spyOn(http, 'request').mockImplementation(((...args: Parameters<typeof http.request>) => {
      const made = (original as (...a: unknown[]) => http.ClientRequest)(...args);
      if ((args[0] as http.RequestOptions).agent === upstreams.agent) {
        stalled++;
        const until = Date.now() + 4500;
        while (Date.now() < until); // the event loop is busy, as in a long synchronous build step
      }
      return made;
    }) as typeof http.request);
    try {
      const res = await request(app).get('/api/servers');
      expect([stalled, res.status, res.body]).toEqual([1, 200, { ok: true }]);
    } finally {
      spy.mockRestore();
      upstreams.stop();
      upstreams.agent.destroy();
      await service.close();
    }
  }, 20_000);
});
