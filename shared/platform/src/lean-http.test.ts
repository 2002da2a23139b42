import type { IncomingMessage, ServerResponse } from 'node:http';
import fc from 'fast-check';
import request from 'supertest';
import { z } from 'zod';
import type { RouteAccess, RouteDef } from '@polyphony/contracts';
import { accessLogLevel, createServiceHttp } from './http';
import { CALLERS, type Caller } from './__tests__/callers';
import { IdentitySigner, IdentityVerifier, signIdentity, IDENTITY_HEADER, SIGNATURE_HEADER } from './internal-auth';
import { leanServiceRoutes, splitSimpleUrl, withLeanPath } from './lean-http';
import { createLogger } from './logger';
import { Metrics } from './metrics';
import { mountRoutes, routeHandlers } from './routes';

const SECRET = 'lean-test-secret';
const ACCESSES: RouteAccess[] = ['public', 'user', 'admin', 'bearer', 'internal'];
const defOf = (access: RouteAccess): RouteDef => ({ method: 'get', path: `/t/${access}`, summary: access, tags: [], service: 'index', access });
const ECHO: RouteDef = {
  method: 'get',
  path: '/echo/:id',
  summary: 'echo',
  tags: [],
  service: 'index',
  access: 'user',
  params: z.object({ id: z.string().regex(/^\d+$/) }),
  query: z.object({ n: z.coerce.number().int().min(1).max(5).optional(), q: z.string().optional() }).passthrough(),
};
const BOOM: RouteDef = { method: 'get', path: '/boom', summary: 'throws', tags: [], service: 'index', access: 'user' };
const FALLS: RouteDef = { method: 'get', path: '/falls', summary: 'calls next()', tags: [], service: 'index', access: 'user' };
const POSTED: RouteDef = { method: 'post', path: '/echo/:id', summary: 'post', tags: [], service: 'index', access: 'user' };
const INTERNAL_ECHO: RouteDef = { method: 'get', path: '/internal/echo', summary: 'service-to-service', tags: [], service: 'index', access: 'internal' };
const BY_ACCESS = ACCESSES.map(defOf);
const DEFS = [...BY_ACCESS, ECHO, BOOM, FALLS, POSTED, INTERNAL_ECHO];

/** A service app with every route mounted, its lean path, and a counter of the requests the lean path took. */
function service(secret: string | undefined = SECRET, logger = createLogger({ service: 'test', level: 'error' }), accessLogSample = 1) {
  const metrics = new Metrics('test');
  const http = createServiceHttp({ service: 'index', logger, metrics, internalSecret: secret, readiness: [] });
  const r = routeHandlers();
  for (const def of BY_ACCESS) r.on(def, (req, res) => void res.json({ ok: true, sub: req.identity?.sub ?? null }));
  r.on(ECHO, (req, res) => void res.json({ params: req.params, query: req.query, requestId: req.requestId, path: req.path }));
  r.on(BOOM, () => {
    throw new Error('handler bug');
  });
  r.on(FALLS, (_req, _res, next) => next());
  r.on(POSTED, (_req, res) => void res.json({ posted: true }));
  r.on(INTERNAL_ECHO, (_req, res) => void res.json({ internal: true }));
  const mounted = mountRoutes(http.app, DEFS, r);
  http.finish();
  const lean = leanServiceRoutes({ app: http.app, mounted, verifier: http.verifier, logger, metrics, accessLogSample });
  const taken = { count: 0 };
  const counted = (req: IncomingMessage, res: ServerResponse) => {
    const took = lean(req, res);
    if (took) taken.count++;
    return took;
  };
  return { app: http.app, handler: withLeanPath(http.app, counted), taken, metrics };
}

const USER = signIdentity(CALLERS['cookie user']!, SECRET);

describe('splitSimpleUrl: the query as qs would read it, or undefined for the express path', () => {
  it('When the query is a flat list, then keys and values are decoded (+ is a space) and the path is kept raw', () => {
    expect(splitSimpleUrl('/api/x%20y?item_id=a%2Fb&n=10&title=Hello+World&flag')).toEqual({ path: '/api/x%20y', query: { item_id: 'a/b', n: '10', title: 'Hello World', flag: '' } });
    expect(splitSimpleUrl('/api/x')).toEqual({ path: '/api/x', query: {} });
    expect(splitSimpleUrl('/api/x?')).toEqual({ path: '/api/x', query: {} });
    expect(splitSimpleUrl('/api/x?a=1&&b=2')).toEqual({ path: '/api/x', query: { a: '1', b: '2' } });
  });

  it.each([
    ['a repeated key (qs makes an array)', '/x?a=1&a=2'],
    ['brackets (qs nests)', '/x?a[b]=1'],
    ['an array key', '/x?a[]=1'],
    ['an empty key', '/x?=1'],
    ['a prototype key', '/x?constructor=1'],
    ['a malformed escape in the query', '/x?a=%E0%A4%A'],
    ['a NUL in the query', '/x?a=%00'],
    ['a malformed escape in the path', '/x%E0%A4%A'],
    ['a NUL in the path', '/x%00y'],
  ])('When the URL has %s, then it is left to express', (_what, url) => {
    expect(splitSimpleUrl(url)).toBeUndefined();
  });

  it('When components hold no escape or plus, then skipping their decoding changes nothing (fast-check against the always-decoding form)', () => {
    // The form before the shortcut: every path, key and value through decodeURIComponent.
    const decodingAlways = (url: string): { path: string; query: Record<string, string> } | undefined => {
      const q = url.indexOf('?');
      const path = q < 0 ? url : url.slice(0, q);
      try {
        if (decodeURIComponent(path).includes('\u0000')) return undefined;
      } catch {
        return undefined;
      }
      const query: Record<string, string> = {};
      if (q < 0 || q === url.length - 1) return { path, query };
      for (const part of url.slice(q + 1).split('&')) {
        if (part === '') continue;
        const eq = part.indexOf('=');
        let key: string;
        let value: string;
        try {
          key = decodeURIComponent((eq < 0 ? part : part.slice(0, eq)).replace(/\+/g, ' '));
          value = decodeURIComponent((eq < 0 ? '' : part.slice(eq + 1)).replace(/\+/g, ' '));
        } catch {
          return undefined;
        }
        if (key === '' || key.includes('[') || key.includes(']') || key.includes('\u0000') || value.includes('\u0000')) return undefined;
        if (key in query || key in Object.prototype) return undefined;
        query[key] = value;
      }
      return { path, query };
    };
    const chars = ['a', 'b', '%', '2', '0', 'B', 'F', 'C', '3', '+', '=', '&', '?', '/', ' ', 'é', '\u0000', '['];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...chars), { maxLength: 30 }), (cs) => {
        const url = '/' + cs.join('');
        expect(splitSimpleUrl(url)).toEqual(decodingAlways(url));
      }),
      { numRuns: 3000, seed: 19 },
    );
  });
});

describe('leanServiceRoutes: the same chain from the route table, without the express router', () => {
  for (const [caller, identity] of Object.entries(CALLERS)) {
    it(`When a ${caller} calls every access kind, then the served answers equal the express app's`, async () => {
      const s = service();
      const headers = identity ? signIdentity(identity, SECRET) : {};
      for (const access of ACCESSES) {
        const lean = await request(s.handler).get(`/t/${access}`).set(headers);
        const plain = await request(s.app).get(`/t/${access}`).set(headers);
        expect([access, lean.status, lean.body.ok ?? lean.body.error?.code]).toEqual([access, plain.status, plain.body.ok ?? plain.body.error?.code]);
      }
      // A valid signature takes the lean path (access refused there too); a missing one is left to express (401).
      expect(s.taken.count).toBe(identity ? ACCESSES.length : 0);
    });
  }

  it('When a route has params and a query, then the handler reads them as express gives them, with the request id echoed', async () => {
    const s = service();
    const res = await request(s.handler).get('/echo/42?n=3&q=a+b%26c').set(USER).set('x-request-id', 'req-lean-1');
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toBe('req-lean-1');
    expect(res.body).toEqual({ params: { id: '42' }, query: { n: '3', q: 'a b&c' }, requestId: 'req-lean-1', path: '/echo/42' });
    const plain = await request(s.app).get('/echo/42?n=3&q=a+b%26c').set(USER).set('x-request-id', 'req-lean-1');
    expect(plain.body).toEqual(res.body);
    expect(s.taken.count).toBe(1);
  });

  it('When the query fails the route schema, then the answer is 400 in the error shape with the request id', async () => {
    const s = service();
    const res = await request(s.handler).get('/echo/42?n=99').set(USER).set('x-request-id', 'bad-n');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'validation_failed', requestId: 'bad-n' });
    expect(res.body.error.message).toMatch(/n/);
    const badParam = await request(s.handler).get('/echo/abc').set(USER);
    expect(badParam.status).toBe(400);
    expect(s.taken.count).toBe(2);
  });

  it('When a handler throws, then the answer is 500 internal_error without internals; a chain that falls through is 404', async () => {
    const s = service();
    const boom = await request(s.handler).get('/boom').set(USER);
    expect(boom.status).toBe(500);
    expect(boom.body.error.code).toBe('internal_error');
    expect(JSON.stringify(boom.body)).not.toContain('handler bug');
    const falls = await request(s.handler).get('/falls').set(USER);
    expect(falls.status).toBe(404);
    expect(falls.body.error.code).toBe('not_found');
    expect(s.taken.count).toBe(2);
  });

  it('When a request is not a plain GET of a table route, then express answers it (POST, repeated key, unknown path, HEAD, a body)', async () => {
    const s = service();
    expect((await request(s.handler).post('/echo/1').set(USER).send({})).body).toEqual({ posted: true });
    const repeated = await request(s.handler).get('/echo/1?q=a&q=b').set(USER);
    expect(repeated.status).toBe(400); // qs makes an array: the schema refuses it, as before
    expect((await request(s.handler).get('/nowhere').set(USER)).status).toBe(404);
    expect((await request(s.handler).head('/t/user').set(USER)).status).toBe(200);
    expect((await request(s.handler).get('/t/user').set(USER).set('content-type', 'application/json').send('{"a":1}')).status).toBe(200);
    expect((await request(s.handler).get('/echo/1?q=%00').set(USER)).status).toBe(400);
    expect(s.taken.count).toBe(0);
  });

  it('When the identity is signed with another secret, then the lean path leaves it to express, which refuses it (401)', async () => {
    const s = service();
    const res = await request(s.handler).get('/t/user').set(signIdentity(CALLERS['cookie user']!, 'other-secret'));
    expect(res.status).toBe(401);
    expect(s.taken.count).toBe(0);
  });

  it('When a request takes the lean path, then the latency histogram counts it under the route pattern', async () => {
    const s = service();
    await request(s.handler).get('/echo/7').set(USER);
    const text = await s.metrics.registry.metrics();
    expect(text).toMatch(/http_request_duration_seconds_count\{service="test",method="GET",route="\/echo\/:id",status="200"\} 1/);
  });
});

describe('access log of the lean path (ACCESS_LOG_SAMPLE)', () => {
  it('When the level lets info through, then a lean request gets the same access line fields as on the express path', async () => {
    const logger = createLogger({ service: 'test', level: 'info' });
    const log = jest.spyOn(logger, 'log').mockImplementation(() => logger);
    const s = service(SECRET, logger);
    await request(s.handler).get('/echo/5?q=secret-ish').set(USER).set('x-request-id', 'logged-1');
    const calls = log.mock.calls as unknown as Array<[string, string, Record<string, unknown>]>;
    const line = calls.find((c) => c[1] === 'http request');
    expect(line?.[0]).toBe('info');
    expect(line?.[2]).toMatchObject({ requestId: 'logged-1', method: 'GET', path: '/echo/5', status: 200, userId: 'u1' });
    expect(JSON.stringify(line)).not.toContain('secret-ish');
  });

  it('When successes are sampled at 0, then only error answers are logged; below info nothing is built', () => {
    const infoLogger = createLogger({ service: 'test', level: 'info' });
    const quiet = createLogger({ service: 'test', level: 'warn' });
    const at = (l: typeof infoLogger, status: number, sample: number) => accessLogLevel(l, '/api/similar_tracks', status, sample);
    expect([at(infoLogger, 200, 0), at(infoLogger, 404, 0), at(infoLogger, 500, 0), at(infoLogger, 200, 1)]).toEqual([undefined, 'info', 'info', 'info']);
    expect([at(quiet, 200, 1), at(quiet, 500, 1)]).toEqual([undefined, undefined]);
    const random = jest.spyOn(Math, 'random').mockReturnValueOnce(0.05).mockReturnValueOnce(0.5);
    try {
      expect([at(infoLogger, 200, 0.1), at(infoLogger, 200, 0.1)]).toEqual(['info', undefined]);
    } finally {
      random.mockRestore();
    }
  });

  it('When services call each other, then their successes are logged at debug only, their failures at info, probes never', () => {
    const infoLogger = createLogger({ service: 'test', level: 'info' });
    const debugLogger = createLogger({ service: 'test', level: 'debug' });
    expect([accessLogLevel(infoLogger, '/internal/mappings/changes', 200), accessLogLevel(debugLogger, '/internal/mappings/changes', 200)]).toEqual([undefined, 'debug']);
    expect([accessLogLevel(infoLogger, '/internal/identity/resolve', 503), accessLogLevel(infoLogger, '/internal/identity/resolve', 400)]).toEqual(['info', 'info']);
    expect(['/healthz', '/readyz', '/metrics'].flatMap((p) => [accessLogLevel(debugLogger, p, 200), accessLogLevel(debugLogger, p, 503)])).toEqual(Array(6).fill(undefined));
    // A user path that merely contains "internal" is a user path.
    expect(accessLogLevel(infoLogger, '/api/internal-looking', 200)).toBe('info');
  });

  it('When an internal route succeeds, then its access line is at debug on the lean and the express path alike', async () => {
    const logger = createLogger({ service: 'test', level: 'debug' });
    const log = jest.spyOn(logger, 'log').mockImplementation(() => logger);
    const s = service(SECRET, logger);
    const caller = signIdentity(CALLERS['service (internal admin)']!, SECRET);
    for (const target of [s.handler, s.app]) await request(target).get('/internal/echo').set(caller).expect(200);
    const lines = (log.mock.calls as unknown as Array<[string, string, Record<string, unknown>]>).filter((c) => c[1] === 'http request');
    expect(lines.map((c) => [c[0], c[2].path])).toEqual([
      ['debug', '/internal/echo'],
      ['debug', '/internal/echo'],
    ]);
  });
});

describe('IdentityVerifier: cached verification with the same answers as verifyIdentity', () => {
  const caller = CALLERS['cookie user']!;

  it('When the same header arrives twice, then both verify, and a forged signature on a cached value is still refused', () => {
    const v = new IdentityVerifier(SECRET);
    const headers = signIdentity(caller, SECRET);
    expect(v.verify(headers)).toMatchObject({ sub: 'u1', role: 'user' });
    expect(v.verify(headers)).toMatchObject({ sub: 'u1', role: 'user' });
    const forged = { ...headers, [SIGNATURE_HEADER]: signIdentity(caller, 'other')[SIGNATURE_HEADER]! };
    expect(v.verify(forged)).toBeUndefined();
    expect(v.verify({ [IDENTITY_HEADER]: headers[IDENTITY_HEADER] })).toBeUndefined();
  });

  it('When a cached identity grows older than the maximum age, then it is refused', () => {
    const v = new IdentityVerifier(SECRET, 60_000);
    const headers = signIdentity({ ...caller, iat: Date.now() - 59_990 }, SECRET);
    expect(v.verify(headers)).toBeDefined();
    const later = jest.spyOn(Date, 'now').mockReturnValue(Date.now() + 1000);
    try {
      expect(v.verify(headers)).toBeUndefined();
    } finally {
      later.mockRestore();
    }
  });

  it('When a caller changes the returned identity, then the next verification is not affected', () => {
    const v = new IdentityVerifier(SECRET);
    const headers = signIdentity(caller, SECRET);
    v.verify(headers)!.serverId = 'changed';
    expect(v.verify(headers)!.serverId).toBeUndefined();
  });
});

describe('IdentitySigner: one signed header per identity for up to reuseMs', () => {
  it('When the same identity is signed within the window, then the header is reused; another server or an expired window signs anew', () => {
    const signer = new IdentitySigner(SECRET, 1000);
    const v = new IdentityVerifier(SECRET);
    const base: Caller = { sub: 'api-token', username: 'api-token', role: 'admin', via: 'bearer', serverId: 's1' };
    const a = signer.headers(base);
    expect(signer.headers({ ...base })).toBe(a);
    expect(v.verify(a)).toMatchObject({ sub: 'api-token', serverId: 's1', via: 'bearer' });
    const other = signer.headers({ ...base, serverId: 's2' });
    expect(other).not.toBe(a);
    expect(v.verify(other)!.serverId).toBe('s2');
    const later = jest.spyOn(Date, 'now').mockReturnValue(Date.now() + 1500);
    try {
      expect(signer.headers(base)).not.toBe(a);
    } finally {
      later.mockRestore();
    }
  });
});
