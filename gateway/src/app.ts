import path from 'node:path';
import cookieParser from 'cookie-parser';
import express from 'express';
import { APP_VERSION, api, buildOpenApiDocument, routesOf } from '@polyphony/contracts';
import {
  Metrics,
  PeerClient,
  ServiceClient,
  SettingsStore,
  assertSchemaCurrent,
  closeServer,
  createLogger,
  createServiceHttp,
  createServiceDataSource,
  databaseReachable,
  handleClientErrors,
  guardPoolErrors,
  listen,
  withLeanPath,
  metricsHandler,
  mountRoutes,
  routeHandlers,
  migrateSchema,
  UnauthorizedError,
  type Logger,
} from '@polyphony/platform';
import type { Server } from 'node:http';
import type { RequestHandler } from 'express';
import { AuthService } from './auth/auth.service';
import { authenticate } from './auth/authenticate.middleware';
import { loginRateLimiters } from './auth/rate-limit';
import type { GatewayConfig, ServiceName } from './config';
import { loginRoutes, userRoutes } from './http/users.routes';
import { docsPage } from './http/docs.page';
import { webUi } from './http/web-ui';
import { bodyParsing, csrfGuard, loginOriginGuard, securityHeaders } from './http/security';
import { leanProxy, staticHeadersOf } from './proxy/lean-proxy';
import { Upstreams, proxyDispatcher } from './proxy/proxy';
import { ServerResolver } from './proxy/server-resolver';
import { matchRoute } from './proxy/routes';
import { authMigrations } from './store/migrations';
import { SessionRepository } from './store/session.repository';
import { UserRepository } from './store/user.repository';

/** Runs `handler` for POST requests only (the credential routes' guards, mounted by path prefix). */
function onlyPost(handler: RequestHandler): RequestHandler {
  return (req, res, next) => (req.method === 'POST' && (req.path === '/' || req.path === '') ? handler(req, res, next) : next());
}

export interface GatewayDeps {
  logger?: Logger;
  /** Service base URLs; defaults to config.services (standalone passes the in-process ports). */
  targets?: () => Record<ServiceName, string>;
  /** Apply migrations at start (standalone, tests); otherwise refuse to start when behind. */
  migrateOnStart?: boolean;
}

/**
 * Composition root of the gateway: auth schema, user re-validation, server resolution, proxy
 * to the owning services, OpenAPI document, login page and the web UI.
 *
 * Middleware order (security-relevant): request id, access log, metrics timer, /healthz /readyz,
 * malformed-URL guard (400), security headers, cookies; public pages; the credential routes
 * (origin check, per-address rate limit, 4 kB body, per-account rate limit); then for /api and
 * /external authentication BEFORE any body is read, CSRF guard for cookie callers, body parsing
 * with per-route limits (413), and only then the routes and the proxy.
 */
export function buildGateway(config: GatewayConfig, deps: GatewayDeps = {}) {
  const logger = deps.logger ?? createLogger({ service: 'gateway', level: config.logLevel, pretty: config.logPretty });
  if (!config.databaseUrl) throw new Error('gateway: no database URL configured');
  const ds = createServiceDataSource({ url: config.databaseUrl, schema: 'auth', migrations: authMigrations, poolSize: config.dbPoolSize });
  const users = new UserRepository(ds);
  const auth = new AuthService(users, new SessionRepository(ds), new SettingsStore(ds, 'auth'), { ttlSeconds: config.sessionTtlSeconds, maxSeconds: config.sessionMaxSeconds }, logger.child({ component: 'AuthService' }));
  const metrics = new Metrics('gateway');
  const targets = deps.targets ?? (() => config.services);
  const registryClient = new ServiceClient(() => targets().registry, config.internalSecret, 'gateway', 10_000);
  const resolver = new ServerResolver(new PeerClient(registryClient, 'registry'));
  const publicDir = path.resolve(__dirname, '../public');
  const ui = webUi(path.resolve(__dirname, '../dist/public'));

  const http = createServiceHttp({
    service: 'gateway',
    logger,
    metrics,
    // The gateway authenticates callers itself; it has no internal signature to check.
    internalSecret: undefined,
    readiness: [{ name: 'database', check: () => databaseReachable(ds) }],
    // Bodies are parsed after authentication, with per-route limits (below).
    parseBodies: false,
    serveMetrics: false,
    trustProxy: config.trustProxy,
    accessLogSample: config.accessLogSample,
    // Proxied and refused requests are labelled with their contract route (not `other`).
    routeLabel: (method, path) => {
      const m = matchRoute(method, path);
      return m.kind === 'found' ? m.def.path : undefined;
    },
  });
  const app = http.app;
  const security = securityHeaders();
  app.use(security);
  app.use(cookieParser());

  // Metrics: on the internal METRICS_PORT when configured, else here behind the bearer token.
  if (config.metricsPort === undefined) {
    app.get('/metrics', (req, _res, next) => {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(req.header('authorization') ?? '');
      next(m && auth.authenticateBearer(m[1]!) ? undefined : new UnauthorizedError('Metrics need the bearer API token (or set METRICS_PORT)'));
    }, metricsHandler(metrics));
  }

  // The gateway's own routes are in the contracts table (service 'gateway'): the public ones first,
  // the rest after authentication; mountRoutes throws when one of them has no handler.
  const own = routesOf('gateway');
  // The OpenAPI document is a function of the static route table: generated once per process (about 100 ms
  // of CPU under load, measured by the fuzz suite), not on every request of this public endpoint.
  let openApiJson: string | undefined;
  const publicHandlers = routeHandlers()
    .on(api.auth.health, (_req, res) => {
      res.json({ status: 'ok' });
    })
    .on(api.auth.openapi, (_req, res) => {
      openApiJson ??= JSON.stringify(buildOpenApiDocument(APP_VERSION));
      res.type('application/json').send(openApiJson);
    })
    .on(api.auth.docs, (_req, res) => {
      res.type('html').send(docsPage());
    });
  // Pages of the web UI (/login, /, /index.html, /assets) are static files, not API routes.
  app.get('/login', ui.page('login.html'));
  const limiters = loginRateLimiters(ds, config.loginRate, logger.child({ component: 'rate-limit' }));
  app.use(['/login', '/auth', '/logout'], onlyPost(loginOriginGuard()));
  app.use(['/login', '/auth'], onlyPost(limiters.byIp), onlyPost(bodyParsing()), onlyPost(limiters.byAccount));
  mountRoutes(app, own.filter((d) => d.access === 'public'), [publicHandlers, loginRoutes(auth)]);
  app.use(['/api', '/external', '/chat/api'], authenticate(auth));
  app.use('/api/setup/admin', onlyPost(limiters.byIp));
  app.use(['/api', '/external', '/chat/api'], csrfGuard(), bodyParsing());
  mountRoutes(app, own.filter((d) => d.access !== 'public'), userRoutes(auth));
  const upstreams = new Upstreams(targets, config.internalSecret, logger);
  app.use(proxyDispatcher(config, targets, resolver, logger, upstreams));
  app.use('/assets', ui.assets);
  app.get(['/', '/index.html'], ui.page('index.html'));
  app.use(express.static(publicDir, { index: false }));
  http.finish();
  // Authenticated GETs of the services' routes take the lean path first (issue 19; lean-proxy.ts), the rest express.
  const handler = withLeanPath(app, leanProxy({ app, auth, upstreams, resolver, headers: staticHeadersOf(security), logger, metrics, accessLogSample: config.accessLogSample }));

  let server: Server | undefined;
  let metricsServer: Server | undefined;
  let metricsPortBound: number | undefined;
  return {
    name: 'gateway',
    http: app,
    /** The request listener `listen` serves: the lean proxy path, then `http` (supertest it for the served behaviour). */
    handler,
    auth,
    users,
    dataSource: ds,
    resolver,
    /** Connects, migrates or checks the schema, seeds auth settings. */
    async start(): Promise<void> {
      await ds.initialize();
      guardPoolErrors(ds, logger);
      if (deps.migrateOnStart) await migrateSchema(ds);
      await assertSchemaCurrent(ds);
      await auth.init(config.seeds, config.secrets);
    },
    /** Starts listening on config.port; returns the bound port. */
    async listen(port = config.port, host = config.host): Promise<number> {
      const bound = await listen(handler, port, host);
      server = bound.server;
      handleClientErrors(server, logger);
      if (config.metricsPort !== undefined && !metricsServer) {
        const internal = express();
        internal.disable('x-powered-by');
        internal.get('/metrics', metricsHandler(metrics));
        const m = await listen(internal, config.metricsPort, host);
        metricsServer = m.server;
        metricsPortBound = m.port;
        logger.info('metrics listening', { port: m.port });
      }
      return bound.port;
    },
    /** Port of the internal metrics listener (METRICS_PORT), once listening. */
    get metricsPort(): number | undefined {
      return metricsPortBound;
    },
    async stop(): Promise<void> {
      if (server) await closeServer(server);
      server = undefined;
      if (metricsServer) await closeServer(metricsServer);
      metricsServer = undefined;
      if (ds.isInitialized) await ds.destroy();
    },
  };
}
export type Gateway = ReturnType<typeof buildGateway>;
