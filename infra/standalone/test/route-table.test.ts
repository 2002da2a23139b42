import type { Express } from 'express';
import { ROUTE_SERVICES, buildOpenApiDocument, routeKey, routeTable, routesOf, type RouteService } from '@polyphony/contracts';
import { buildAnalysis, loadAnalysisConfig } from '@polyphony/analysis-worker';
import { buildCatalogue, loadCatalogueConfig } from '@polyphony/catalogue-identity';
import { bodyLimitFor, buildGateway, isAdminOnly, isSetupPath, loadGatewayConfig, matchRoute, serviceFor } from '@polyphony/gateway';

import { buildIndex, loadIndexConfig } from '@polyphony/index';
import request from 'supertest';
import { RequestPipeline, createBus, createLogger, signIdentity } from '@polyphony/platform';
import { buildPlaylist, loadPlaylistConfig } from '@polyphony/playlist';
import { buildRegistry, loadRegistryConfig } from '@polyphony/registry';

/**
 * The route table in shared/contracts is the only list of routes: this proves that the gateway's
 * routing, each service's mounted handlers and the OpenAPI document are the same set, and that
 * the behaviours the gateway's former regex tables encoded still hold.
 */

/** Platform endpoints every unit serves outside the API table (probes and metrics). */
const PLATFORM = new Set(['GET /healthz', 'GET /readyz', 'GET /metrics']);

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

/** `METHOD path` of every route a unit serves: its request pipeline's table routes and its host express app's own (routers included). */
function mounted(app: Express): string[] {
  const out: string[] = [];
  const walk = (stack: Layer[]) => {
    for (const l of stack) {
      if (l.route) {
        for (const m of Object.keys(l.route.methods)) if (m !== '_all') out.push(`${m.toUpperCase()} ${String(l.route.path)}`);
      } else if (l.handle?.stack) walk(l.handle.stack);
    }
  };
  walk((app as unknown as { _router: { stack: Layer[] } })._router.stack);
  return [...RequestPipeline.of(app).routes().map(routeKey), ...out].filter((k) => !PLATFORM.has(k));
}

/** A concrete path for a route pattern (`:id` -> `x1`). */
const sample = (path: string) => path.replace(/:(\w+)/g, 'x1');

describe('one route table', () => {
  const logger = createLogger({ service: 'test', level: 'error' });
  const env = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/unused', INTERNAL_SECRET: 'i'.repeat(64), JWT_SECRET: 'j'.repeat(64), PORT: '0' };
  const bus = createBus({ logger });
  const peers = () => ({ registry: 'http://127.0.0.1:1', catalogue: 'http://127.0.0.1:1', analysis: 'http://127.0.0.1:1', index: 'http://127.0.0.1:1', playlist: 'http://127.0.0.1:1' });
  const common = { bus, peers, logger, queuePrefix: '' };
  // Built, never started: building mounts the routes (mountRoutes throws when a handler is missing).
  const apps: Record<RouteService, Express> = {
    registry: buildRegistry(loadRegistryConfig(env), common).http,
    catalogue: buildCatalogue(loadCatalogueConfig(env), common).http,
    index: buildIndex(loadIndexConfig(env), common).http,
    analysis: buildAnalysis(loadAnalysisConfig(env), common).http,
    playlist: buildPlaylist(loadPlaylistConfig(env), common).http,
    gateway: buildGateway(loadGatewayConfig(env), { logger, targets: peers }).http as Express,
  };
  afterAll(() => bus.close());

  it.each(ROUTE_SERVICES)('%s mounts exactly its routes of the table (the gateway: every non-internal route, its own or forwarded)', (service) => {
    const own = (service === 'gateway' ? routeTable().filter((d) => d.access !== 'internal') : routesOf(service)).map(routeKey);
    // Every route under an API prefix is in the table; the web UI's pages (/, /index.html, assets) are not API routes.
    const api = mounted(apps[service]).filter((k) => own.includes(k) || /^\w+ \/(api|external|chat\/api|internal)(\/|$)/.test(k));
    expect(api.sort()).toEqual(own.sort());
  });

  // Defence in depth: each service decides the route's access from the table itself (its pipeline's decideAccess), so a
  // request that reaches it directly, or through a faulty gateway, is refused before any handler runs.
  const secret = env.INTERNAL_SECRET;
  const user = () => signIdentity({ sub: 'u1', username: 'ann', role: 'user', via: 'cookie' }, secret);
  const cookieAdmin = () => signIdentity({ sub: 'u2', username: 'bob', role: 'admin', via: 'cookie' }, secret);
  const guarded = ROUTE_SERVICES.filter((s) => s !== 'gateway').flatMap((s) => routesOf(s).filter((d) => d.access === 'internal' || d.access === 'admin').map((d) => [s, d.access, routeKey(d), d] as const));
  const send = (service: RouteService, d: (typeof guarded)[number][3], headers: Record<string, string>) =>
    request(apps[service])[d.method](sample(d.path)).set(headers);

  it.each(guarded)('%s refuses %s route %s to a caller without a signed identity (401) and to a user (403)', async (service, access, _key, d) => {
    expect((await send(service, d, {})).status).toBe(401);
    expect((await send(service, d, user())).status).toBe(403);
    if (access === 'internal') expect((await send(service, d, cookieAdmin())).status).toBe(403);
  });

  it('every route has an owner and an access; internal routes are exactly the /internal paths', () => {
    for (const d of routeTable()) {
      expect(ROUTE_SERVICES).toContain(d.service);
      expect(['public', 'user', 'admin', 'bearer', 'internal']).toContain(d.access);
      expect(d.access === 'internal').toBe(d.path.startsWith('/internal/'));
    }
  });

  it('the OpenAPI document lists exactly the non-internal routes', () => {
    const doc = buildOpenApiDocument('test');
    const documented = Object.entries(doc.paths ?? {}).flatMap(([p, item]) =>
      Object.keys(item as object).filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m)).map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    const expected = routeTable().filter((d) => d.access !== 'internal').map(routeKey);
    expect(documented.sort()).toEqual(expected.sort());
  });

  it('the gateway routes every non-internal route to its owner and never an internal one', () => {
    for (const d of routeTable()) {
      const m = matchRoute(d.method, sample(d.path));
      if (d.access === 'internal') {
        expect(m.kind).not.toBe('found');
        continue;
      }
      expect(m.kind === 'found' && routeKey(m.def)).toBe(routeKey(d));
      expect(serviceFor(d.method, sample(d.path))).toBe(d.service === 'gateway' ? undefined : d.service);
    }
  });

  it('default deny: an unknown path is not found, a known path with another method lists the allowed ones', () => {
    expect(matchRoute('GET', '/api/nope')).toEqual({ kind: 'none' });
    expect(matchRoute('GET', '/api/setup/servers')).toEqual({ kind: 'none' });
    expect(matchRoute('DELETE', '/api/similar_tracks')).toEqual({ kind: 'method', allow: ['GET', 'HEAD'] });
    expect(matchRoute('HEAD', '/api/similar_tracks').kind).toBe('found');
    // A literal segment wins over a parameter: POST /api/servers/test is the connection test, PUT /api/servers/test an edit.
    const test = matchRoute('POST', '/api/servers/test');
    expect(test.kind === 'found' && test.def.path).toBe('/api/servers/test');
    const edit = matchRoute('PUT', '/api/servers/test');
    expect(edit.kind === 'found' && edit.def.path).toBe('/api/servers/:id');
  });

  it('keeps the rules the regex tables encoded', () => {
    // Admin-only reads and mutations.
    expect(isAdminOnly('GET', '/api/config/settings')).toBe(true);
    expect(isAdminOnly('GET', '/api/config')).toBe(false);
    expect(isAdminOnly('PUT', '/api/config')).toBe(true);
    expect(isAdminOnly('GET', '/api/servers')).toBe(false);
    expect(isAdminOnly('POST', '/api/servers')).toBe(true);
    expect(isAdminOnly('GET', '/api/tasks')).toBe(true);
    expect(isAdminOnly('GET', '/api/cron')).toBe(true);
    expect(isAdminOnly('GET', '/api/backup/abc')).toBe(true);
    expect(isAdminOnly('POST', '/api/analysis/start')).toBe(true);
    expect(isAdminOnly('GET', '/api/analysis/exclusions')).toBe(false);
    expect(isAdminOnly('POST', '/api/index/rebuild')).toBe(true);
    expect(isAdminOnly('GET', '/api/index/status')).toBe(false);
    expect(isAdminOnly('GET', '/api/users')).toBe(true);
    expect(isAdminOnly('PUT', '/api/users/x1/password')).toBe(false);
    // The first-run Setup window.
    for (const [m, p] of [['GET', '/api/servers'], ['POST', '/api/servers'], ['POST', '/api/servers/test'], ['POST', '/api/plex/pin'], ['GET', '/api/config'], ['GET', '/api/active_tasks'], ['GET', '/api/last_task'], ['GET', '/api/status/x1'], ['POST', '/api/cancel/x1'], ['POST', '/api/setup/admin']] as const) {
      expect(isSetupPath(m, p)).toBe(true);
    }
    expect(isSetupPath('GET', '/api/similar_tracks')).toBe(false);
    expect(isSetupPath('GET', '/api/tasks')).toBe(false);
    // Body limits.
    expect(bodyLimitFor('POST', '/login')).toBe(4096);
    expect(bodyLimitFor('POST', '/api/users')).toBe(4096);
    expect(bodyLimitFor('POST', '/api/alchemy')).toBe(256 * 1024);
    expect(bodyLimitFor('POST', '/api/create_playlist')).toBe(4 * 1024 * 1024);
    expect(bodyLimitFor('POST', '/api/anchors')).toBe(2 * 1024 * 1024);
    expect(bodyLimitFor('POST', '/api/clustering/start')).toBe(16 * 1024);
    // Owners: the registry resolves its own server ids; the others get the gateway's resolution.
    expect(serviceFor('GET', '/api/servers')).toBe('registry');
    expect(serviceFor('GET', '/chat/api/config_defaults')).toBe('registry');
    expect(serviceFor('POST', '/chat/api/create_playlist')).toBe('playlist');
    expect(serviceFor('POST', '/chat/api/chatPlaylist')).toBe('index');
    expect(serviceFor('GET', '/api/clap/stats')).toBe('catalogue');
    expect(serviceFor('POST', '/api/clap/search')).toBe('index');
    expect(serviceFor('GET', '/external/search')).toBe('index');
  });
});
