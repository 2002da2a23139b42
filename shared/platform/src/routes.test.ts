import request from 'supertest';
import { z } from 'zod';
import type { RouteAccess, RouteDef } from '@polyphony/contracts';
import { createServiceHttp } from './service-http';
import { ACCESS_DECISIONS, CALLERS } from './__tests__/callers';
import { signIdentity } from './internal-auth';
import { createLogger } from './logger';
import { Metrics } from './metrics';
import { mountRoutes, routeHandlers } from './routes';

const SECRET = 'routes-test-secret';
const ACCESSES: RouteAccess[] = ['public', 'user', 'admin', 'bearer', 'internal'];
const defOf = (access: RouteAccess): RouteDef => ({ method: 'get', path: `/t/${access}`, summary: access, tags: [], service: 'index', access });
const DEFS = ACCESSES.map(defOf);

/** A service app with the platform's signed-identity check and one route per access kind. */
function app() {
  const http = createServiceHttp({ service: 'index', logger: createLogger({ service: 'test', level: 'error' }), metrics: new Metrics('test'), internalSecret: SECRET, readiness: [] });
  const r = routeHandlers();
  for (const def of DEFS) r.on(def, (_req, res) => void res.json({ ok: true }));
  mountRoutes(http.app, DEFS, r);
  http.finish();
  return http.app;
}


// A service's pipeline checks the signed header first ("no identity" is 401 on every route, public included),
// then decides with `decideAccess` (its whole table: ACCESS_DECISIONS, access.test.ts).
const EXPECTED: Record<string, number[]> = { ...ACCESS_DECISIONS, 'no identity': [401, 401, 401, 401, 401] };

describe('mountRoutes: access from the route table, decided by the service pipeline', () => {
  const server = app();
  for (const [caller, identity] of Object.entries(CALLERS)) {
    ACCESSES.forEach((access, i) => {
      it(`When a ${caller} calls a ${access} route, then the service answers ${EXPECTED[caller]![i]}`, async () => {
        const headers = identity ? signIdentity(identity, SECRET) : {};
        const res = await request(server).get(`/t/${access}`).set(headers);
        expect(res.status).toBe(EXPECTED[caller]![i]);
        if (res.status !== 200) expect(res.body).toMatchObject({ error: expect.any(String), code: res.status === 401 ? 'unauthorized' : 'forbidden', request_id: expect.any(String) });
      });
    });
  }

  it('When the identity is signed with another secret, then even an internal route refuses it (401)', async () => {
    const res = await request(server).get('/t/internal').set(signIdentity(CALLERS['service (internal admin)']!, 'other-secret'));
    expect(res.status).toBe(401);
  });

  it('When a service mounts its routes without the platform check (no identity at all), then only public routes answer', async () => {
    const http = createServiceHttp({ service: 'index', logger: createLogger({ service: 'test', level: 'error' }), metrics: new Metrics('test'), readiness: [] });
    const r = routeHandlers();
    for (const def of DEFS) r.on(def, (_req, res) => void res.json({ ok: true }));
    mountRoutes(http.app, DEFS, r);
    http.finish();
    const statuses = await Promise.all(ACCESSES.map(async (a) => (await request(http.app).get(`/t/${a}`)).status));
    expect(statuses).toEqual([200, 401, 401, 401, 401]);
  });
});

describe('RouteHandlers.json: typed input, a handler that writes its own answer', () => {
  const def: RouteDef = { method: 'get', path: '/t/items/:id', summary: 'item', tags: [], service: 'index', access: 'public', params: z.object({ id: z.coerce.number().int().min(1) }), query: z.object({ n: z.coerce.number().int().default(3) }) };
  function handleApp() {
    const http = createServiceHttp({ service: 'index', logger: createLogger({ service: 'test', level: 'error' }), metrics: new Metrics('test'), readiness: [] });
    const r = routeHandlers().json(def, ({ params, query }, _req, res) => {
      const { id } = params as { id: number };
      const { n } = query as { n: number };
      res.status(id === 1 ? 201 : 200).setHeader('Cache-Control', 'no-store');
      res.json({ id, n, types: [typeof id, typeof n] });
    });
    mountRoutes(http.app, [def], r);
    http.finish();
    return http.app;
  }

  it('When the input is valid, then the handler gets it parsed with the route schemas (coerced, defaults applied) and chooses status and headers', async () => {
    const res = await request(handleApp()).get('/t/items/1');
    expect(res.status).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({ id: 1, n: 3, types: ['number', 'number'] });
  });

  it('When the input breaks a route schema, then the handler never runs and the answer is 400', async () => {
    const res = await request(handleApp()).get('/t/items/0?n=x');
    expect(res.status).toBe(400);
    expect(res.body.id).toBeUndefined();
  });
});
