import fc from 'fast-check';
import qs from 'qs';
import request from 'supertest';
import { z } from 'zod';
import type { RouteDef } from '@polyphony/contracts';
import { CALLERS } from './__tests__/callers';
import { signIdentity } from './internal-auth';
import { createLogger } from './logger';
import { Metrics } from './metrics';
import { splitSimpleUrl } from './pipeline';
import { mountRoutes, routeHandlers } from './routes';
import { createServiceHttp } from './service-http';

const SECRET = 'pipeline-test-secret';
const ECHO: RouteDef = {
  method: 'get',
  path: '/echo/:id',
  summary: 'echo',
  tags: [],
  service: 'index',
  access: 'user',
  params: z.object({ id: z.string().regex(/^\d+$/) }),
  query: z.object({ n: z.coerce.number().int().min(1).max(5).optional() }).passthrough(),
};
const ADMIN: RouteDef = { method: 'get', path: '/admin', summary: 'admin', tags: [], service: 'index', access: 'admin' };
const BOOM: RouteDef = { method: 'get', path: '/boom', summary: 'throws', tags: [], service: 'index', access: 'user' };
const FALLS: RouteDef = { method: 'get', path: '/falls', summary: 'calls next()', tags: [], service: 'index', access: 'user' };
const POSTED: RouteDef = { method: 'post', path: '/posted', summary: 'post', tags: [], service: 'index', access: 'user', body: z.object({ a: z.number() }) };
const DEFS = [ECHO, ADMIN, BOOM, FALLS, POSTED];
const USER = signIdentity(CALLERS['cookie user']!, SECRET);

/** A service's HTTP side with the test routes; `owns` makes /echo paths the pipeline's own (404/405 answered there). */
function service(owns = false) {
  const metrics = new Metrics('test');
  const http = createServiceHttp({ service: 'index', logger: createLogger({ service: 'test', level: 'error' }), metrics, internalSecret: SECRET, readiness: [], ownsPath: owns ? (p) => p.startsWith('/echo') : undefined });
  const r = routeHandlers()
    .on(ECHO, (req, res) => void res.json({ params: req.params, query: req.query, requestId: req.requestId, sub: req.identity?.sub }))
    .json(ADMIN, () => ({ ok: true }))
    .on(BOOM, () => {
      throw new Error('handler bug at /secret/path');
    })
    .on(FALLS, (_req, _res, next) => next())
    .json(POSTED, ({ body }) => ({ got: body.a }));
  mountRoutes(http.app, DEFS, r);
  http.finish();
  return { ...http, metrics };
}

describe('splitSimpleUrl: a flat query read as qs reads it, or undefined for the full parser', () => {
  it('When the query is a flat list, then keys and values are decoded (+ is a space) and the path is kept raw', () => {
    expect(splitSimpleUrl('/api/x%20y?item_id=a%2Fb&n=10&title=Hello+World&flag')).toEqual({ path: '/api/x%20y', query: { item_id: 'a/b', n: '10', title: 'Hello World', flag: '' } });
    expect(splitSimpleUrl('/api/x')).toEqual({ path: '/api/x', query: {} });
    expect(splitSimpleUrl('/api/x?a=1&&b=2')).toEqual({ path: '/api/x', query: { a: '1', b: '2' } });
  });

  it.each([
    ['a repeated key (qs makes an array)', '/x?a=1&a=2'],
    ['brackets (qs nests)', '/x?a[b]=1'],
    ['an empty key', '/x?=1'],
    ['a prototype key', '/x?constructor=1'],
    ['a malformed escape in the query', '/x?a=%E0%A4%A'],
    ['a NUL in the query', '/x?a=%00'],
    ['a malformed escape in the path', '/x%E0%A4%A'],
    ['a NUL in the path', '/x%00y'],
  ])('When the URL has %s, then it is left to the full parser', (_what, url) => {
    expect(splitSimpleUrl(url)).toBeUndefined();
  });

  it('When it answers, then its query is the one qs (express\'s extended parser) gives (fast-check)', () => {
    const chars = ['a', 'b', '%', '2', '0', 'B', 'F', 'C', '3', '+', '=', '&', '/', ' ', 'é', '\u0000', '['];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...chars), { maxLength: 30 }), (cs) => {
        const url = '/p?' + cs.join('');
        const simple = splitSimpleUrl(url);
        if (simple) expect(simple.query).toEqual(qs.parse(url.slice(3), { allowPrototypes: true }));
      }),
      { numRuns: 3000, seed: 19 },
    );
  });
});

describe('RequestPipeline: one path for every request of the table', () => {
  const s = service();

  it('When a route is called through the listener or through the express app, then the answer is the same (one pipeline)', async () => {
    for (const target of [s.handler, s.app]) {
      const res = await request(target).get('/echo/42?n=3&q=a+b%26c').set(USER).set('x-request-id', 'req-p-1');
      expect(res.status).toBe(200);
      expect(res.headers['x-request-id']).toBe('req-p-1');
      expect(res.body).toEqual({ params: { id: '42' }, query: { n: '3', q: 'a b&c' }, requestId: 'req-p-1', sub: 'u1' });
    }
  });

  it('When the query is not a flat list, then it is parsed as express would (nested and repeated keys)', async () => {
    const res = await request(s.handler).get('/echo/1?a[b]=1&c=2&c=3').set(USER);
    expect(res.body.query).toEqual({ a: { b: '1' }, c: ['2', '3'] });
  });

  it('When the caller is refused or the input is bad, then the answer is the error envelope with the right status', async () => {
    const cases: Array<[string, Record<string, string>, number, string]> = [
      ['/echo/1', {}, 401, 'unauthorized'],
      ['/admin', USER, 403, 'forbidden'],
      ['/echo/x', USER, 400, 'validation_failed'],
      ['/echo/1?n=99', USER, 400, 'validation_failed'],
      ['/echo/1?a=%00', USER, 400, 'malformed_request'],
      ['/boom', USER, 500, 'internal_error'],
      ['/falls', USER, 404, 'not_found'],
    ];
    for (const [path, headers, status, code] of cases) {
      const res = await request(s.handler).get(path).set(headers).set('x-request-id', 'req-e');
      expect([path, res.status, res.body]).toEqual([path, status, expect.objectContaining({ error: expect.any(String), code, request_id: 'req-e' })]);
      expect(JSON.stringify(res.body)).not.toContain('/secret/path');
    }
    const bad = await request(s.handler).get('/echo/1?n=99').set(USER);
    expect(bad.body.details).toEqual([expect.objectContaining({ path: ['n'] })]);
  });

  it('When a body is posted, then it is parsed after the access decision and validated', async () => {
    expect((await request(s.handler).post('/posted').set(USER).send({ a: 2 })).body).toEqual({ got: 2 });
    expect((await request(s.handler).post('/posted').send({ a: 2 })).status).toBe(401);
    expect((await request(s.handler).post('/posted').set(USER).set('content-type', 'application/json').send('{"a":')).body.code).toBe('malformed_body');
  });

  it('When a path is outside the table, then the host app answers it once (health, 401 without signature, else 404)', async () => {
    expect((await request(s.handler).get('/healthz')).body).toEqual({ status: 'ok', service: 'index' });
    expect((await request(s.handler).get('/nope')).status).toBe(401);
    const res = await request(s.handler).get('/nope').set(USER).set('x-request-id', 'req-n');
    expect([res.status, res.body]).toEqual([404, { error: 'No route for GET /nope', code: 'not_found', request_id: 'req-n' }]);
    // Counted once in the histogram although the request went listener -> host app -> pipeline middleware.
    const metrics = await s.metrics.registry.getSingleMetricAsString('http_request_duration_seconds');
    expect(metrics).toMatch(/http_request_duration_seconds_count\{service="test",method="GET",route="unmatched",status="404"\} 1$/m);
  });

  it('When a plain chain serves a GET without body or cookie, then it runs on node objects (no express prototypes); errors still answer the envelope', async () => {
    const http = createServiceHttp({ service: 'index', logger: createLogger({ service: 'test', level: 'error' }), metrics: new Metrics('test'), internalSecret: SECRET, readiness: [] });
    const PLAIN: RouteDef = { method: 'get', path: '/plain', summary: 'plain', tags: [], service: 'index', access: 'user' };
    http.pipeline.add(PLAIN, [(req, res, next) => {
      if (req.query.fail) return next(new Error('boom'));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ express: typeof req.is === 'function', sub: req.identity?.sub }));
    }], { plain: true });
    http.finish();
    expect((await request(http.handler).get('/plain').set(USER)).body).toEqual({ express: false, sub: 'u1' });
    expect((await request(http.handler).get('/plain').set(USER).set('cookie', 'a=b')).body).toEqual({ express: true, sub: 'u1' });
    const failed = await request(http.handler).get('/plain?fail=1').set(USER);
    expect([failed.status, failed.body.code]).toEqual([500, 'internal_error']);
  });

  it('When the pipeline owns a path, then an unknown route there is 404 and another method 405 with Allow, after authentication', async () => {
    const owner = service(true);
    expect((await request(owner.handler).get('/echo/1/x')).status).toBe(401);
    const missing = await request(owner.handler).get('/echo/1/x').set(USER);
    expect([missing.status, missing.body.code]).toEqual([404, 'not_found']);
    const wrong = await request(owner.handler).delete('/echo/1').set(USER);
    expect([wrong.status, wrong.body.code, wrong.headers.allow]).toEqual([405, 'method_not_allowed', 'GET, HEAD']);
  });
});
