import path from 'node:path';
import express, { type RequestHandler } from 'express';
import { APP_VERSION, api, buildOpenApiDocument, routesOf, type RouteDef } from '@polyphony/contracts';
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
  waitOutBackgroundConnectTimeouts,
  listen,
  metricsHandler,
  mountRoutes,
  routeHandlers,
  migrateSchema,
  UnauthorizedError,
  type Logger,
} from '@polyphony/platform';
import type { Server } from 'node:http';
import { AuthService } from './auth/auth.service';
import { gatewayCaller } from './auth/authenticate';
import { loginRateLimiters } from './auth/rate-limit';
import type { GatewayConfig, ServiceName } from './config';
import { loginRoutes, userRoutes } from './http/users.routes';
import { docsPage } from './http/docs.page';
import { listenTls, loadTlsCredentials, type TlsCredentials, type TlsListener } from './http/https';
import { webUi } from './http/web-ui';
import { bodyParsing, csrfGuard, loginOriginGuard, securityHeaders, staticHeadersOf } from './http/security';
import { Forwarder, Upstreams } from './proxy/forward';
import { ServerResolver } from './proxy/server-resolver';
import { gatewayRoutes, isApiPath } from './proxy/routes';
import { authMigrations } from './store/migrations';
import { RateLimitRepository } from './store/rate-limit.repository';
import { SessionRepository } from './store/session.repository';
import { UserRepository } from './store/user.repository';

export interface GatewayDeps {
  logger?: Logger;
  /** Service base URLs; defaults to config.services (standalone passes the in-process ports). */
  targets?: () => Record<ServiceName, string>;
  /** Apply migrations at start (standalone, tests); otherwise refuse to start when behind. */
  migrateOnStart?: boolean;
}

/**
 * Composition root of the gateway: auth schema, user re-validation, server resolution, forwarding to the
 * owning services, OpenAPI document, login page and the web UI.
 *
 * Every request of the route table (all but `internal` routes) takes the platform's one request pipeline
 * (`RequestPipeline`), in this order (security-relevant): request id, security headers (helmet's, recorded
 * once), access log and latency histogram, malformed-URL guard (400), route match (an unknown API path is
 * 404 and a known path with another method 405 with `Allow`, both after authentication), authentication
 * (`gatewayCaller`: API token, session cookie, first-run window; BEFORE any body is read), the access
 * decision from the table (`decideAccess`: 401/403), then the route's stages: for the credential routes the
 * origin check, the per-address rate limit, a 4 kB body and the per-account rate limit; for the others the
 * CSRF guard of cookie callers and body parsing with the route's limit (413); then the gateway's own handler
 * or the forwarder (`Forwarder`). The host express app serves only what is not in the table: the login page,
 * the web UI's files, `/healthz`, `/readyz`, `/metrics`.
 */
export function buildGateway(config: GatewayConfig, deps: GatewayDeps = {}) {
  const logger = deps.logger ?? createLogger({ service: 'gateway', level: config.logLevel, pretty: config.logPretty });
  if (!config.databaseUrl) throw new Error('gateway: no database URL configured');
  const ds = createServiceDataSource({ url: config.databaseUrl, schema: 'auth', migrations: authMigrations, poolSize: config.dbPoolSize, connectTimeoutMs: config.dbConnectTimeoutMs, requestQueryTimeoutMs: config.dbRequestQueryTimeoutMs });
  const users = new UserRepository(ds);
  const auth = new AuthService(users, new SessionRepository(ds), new SettingsStore(ds, 'auth'), { ttlSeconds: config.sessionTtlSeconds, maxSeconds: config.sessionMaxSeconds }, logger.child({ component: 'AuthService' }));
  const metrics = new Metrics('gateway');
  const targets = deps.targets ?? (() => config.services);
  const registryClient = new ServiceClient(() => targets().registry, config.internalSecret, 'gateway', 10_000);
  const resolver = new ServerResolver(new PeerClient(registryClient, 'registry'));
  const publicDir = path.resolve(__dirname, '../public');
  const ui = webUi(path.resolve(__dirname, '../dist/public'));
  const limiters = loginRateLimiters(new RateLimitRepository(ds), config.loginRate, logger.child({ component: 'rate-limit' }));
  const loginOrigin = loginOriginGuard();

  /** The stages of a route after the access decision (see the composition comment above). */
  const stages = (route: RouteDef): RequestHandler[] => {
    if (route === api.auth.login || route === api.auth.authAlias) return [loginOrigin, limiters.byIp, bodyParsing(route), limiters.byAccount];
    if (route === api.auth.logout) return [loginOrigin];
    if (route.access === 'public') return [];
    return [...(route === api.auth.setupAdmin ? [limiters.byIp] : []), csrfGuard(route), bodyParsing(route)];
  };

  /** True once `stop` began (SIGTERM): `/readyz` answers 503 from then on. */
  let stopping = false;
  const http = createServiceHttp({
    service: 'gateway',
    logger,
    metrics,
    // The gateway authenticates callers itself; it has no internal signature to check.
    internalSecret: undefined,
    // The database is reported but not required (issue 36): API-token requests, and cookies read in the last minutes,
    // are authenticated without it and similar songs by id are answered from the index's memory, so a Kubernetes
    // Service keeps routing to the gateway during a database outage; what needs the database answers 503 + Retry-After.
    // `serving` turns false on SIGTERM (stop), so a balancer drains this replica while in-flight requests finish.
    readiness: [{ name: 'database', check: () => databaseReachable(ds), optional: true }, { name: 'serving', check: () => !stopping }],
    serveMetrics: false,
    trustProxy: config.trustProxy,
    accessLogSample: config.accessLogSample,
    identify: gatewayCaller(auth),
    stages,
    headers: staticHeadersOf(securityHeaders()),
    ownsPath: isApiPath,
  });
  const app = http.app;

  // Metrics: on the internal METRICS_PORT when configured, else here behind the bearer token.
  if (config.metricsPort === undefined) {
    app.get('/metrics', (req, _res, next) => {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(req.header('authorization') ?? '');
      next(m && auth.authenticateBearer(m[1]!) ? undefined : new UnauthorizedError('Metrics need the bearer API token (or set METRICS_PORT)'));
    }, metricsHandler(metrics));
  }

  // The gateway's own routes are in the contracts table (service 'gateway'); mountRoutes throws when one of
  // them has no handler. The OpenAPI document is a function of the static route table: generated once per
  // process (about 100 ms of CPU under load, measured by the fuzz suite), not on every request of this public endpoint.
  let openApiJson: string | undefined;
  const publicHandlers = routeHandlers()
    .json(api.auth.health, () => ({ status: 'ok' }))
    .on(api.auth.openapi, (_req, res) => {
      openApiJson ??= JSON.stringify(buildOpenApiDocument(APP_VERSION));
      res.type('application/json').send(openApiJson);
    })
    .on(api.auth.docs, (_req, res) => {
      res.type('html').send(docsPage());
    });
  // A media server's webhook (public: its push token is the credential). The gateway reads no body and hands the token to the
  // analysis worker, which checks it against the server's stored hash (401/404/409 come back as they are).
  const analysisPeer = new PeerClient(new ServiceClient(() => targets().analysis, config.internalSecret, 'gateway', 10_000), 'analysis');
  publicHandlers.json(api.servers.changed, async ({ params: { id }, query }, req) =>
    analysisPeer.call(api.internal.changeNudge, { params: { serverId: id }, body: { token: req.header('x-polyphony-token') ?? query.token } }),
  );
  const registryPeer = new PeerClient(registryClient, 'registry');
  const forgetAccounts = async (userId: string): Promise<void> => {
    try {
      await registryPeer.call(api.accountsInternal.forgetUser, { params: { userId } });
    } catch (err) {
      logger.warn('media-server accounts of a deleted user not forgotten (the registry did not answer)', { userId, error: (err as Error).message });
    }
  };
  mountRoutes(app, routesOf('gateway'), [publicHandlers, loginRoutes(auth), userRoutes(auth, forgetAccounts)]);
  // Every other route of the table is forwarded to its owner.
  const upstreams = new Upstreams(targets, config.internalSecret, logger);
  const forwarder = new Forwarder(upstreams, resolver, logger);
  // The forwarder uses node's request/response only: a GET without a body or cookie skips express's prototypes (plain).
  for (const route of gatewayRoutes()) if (route.service !== 'gateway') http.pipeline.add(route, [forwarder.handler(route.service)], { plain: true });
  // Pages of the web UI (/login, /, /index.html, /assets) are static files, not API routes.
  app.get('/login', ui.page('login.html'));
  app.use('/assets', ui.assets);
  app.get(['/', '/index.html'], ui.page('index.html'));
  app.use(express.static(publicDir, { index: false }));
  http.finish();
  const handler = http.handler;

  let server: Server | undefined;
  let tlsListener: TlsListener | undefined;
  let tls: TlsCredentials | undefined;
  let metricsServer: Server | undefined;
  let metricsPortBound: number | undefined;
  return {
    name: 'gateway',
    http: app,
    /** The request listener `listen` serves: the request pipeline, then `http` for what is not in the table (either may be supertested). */
    handler,
    auth,
    users,
    dataSource: ds,
    resolver,
    /** Connects, migrates or checks the schema, seeds auth settings. */
    async start(): Promise<void> {
      await ds.initialize();
      guardPoolErrors(ds, logger);
      waitOutBackgroundConnectTimeouts(ds, logger);
      if (deps.migrateOnStart) await migrateSchema(ds);
      await assertSchemaCurrent(ds);
      await auth.init(config.seeds, config.secrets);
    },
    /**
     * Starts listening on config.port; returns the bound port. With `HTTPS` on, the port speaks TLS (plain
     * HTTP on it is redirected to https) with the kept or new self-signed certificate or the custom files.
     * @throws Error when the custom certificate files are unreadable or do not match
     */
    async listen(port = config.port, host = config.host): Promise<number> {
      tls = await loadTlsCredentials(config.https, logger);
      if (tls) {
        tlsListener = await listenTls(handler, tls, port, host, logger);
        logger.info('https on', { source: tls.source, generated: tls.generated, sha256Fingerprint: tls.fingerprint256, names: tls.subjectAltName, validTo: tls.validTo.toISOString(), ...(config.https.mode === 'self-signed' ? { certificate: `${config.https.dir}/cert.pem` } : {}) });
      } else {
        const bound = await listen(handler, port, host);
        server = bound.server;
        handleClientErrors(server, logger);
      }
      if (config.metricsPort !== undefined && !metricsServer) {
        const internal = express();
        internal.disable('x-powered-by');
        internal.get('/metrics', metricsHandler(metrics));
        const m = await listen(internal, config.metricsPort, host);
        metricsServer = m.server;
        metricsPortBound = m.port;
        logger.info('metrics listening', { port: m.port });
      }
      return tlsListener?.port ?? (server!.address() as { port: number }).port;
    },
    /** `https` when the public port speaks TLS (HTTPS setting), else `http`. */
    get scheme(): 'http' | 'https' {
      return tls ? 'https' : 'http';
    },
    /** The certificate served on the public port (undefined with HTTPS off). */
    get tls(): TlsCredentials | undefined {
      return tls;
    },
    /** Port of the internal metrics listener (METRICS_PORT), once listening. */
    get metricsPort(): number | undefined {
      return metricsPortBound;
    },
    /** Turns `/readyz` to 503, then stops accepting and drains connections (`closeServer`), then closes the database pool. */
    async stop(): Promise<void> {
      stopping = true;
      if (server) await closeServer(server);
      server = undefined;
      if (tlsListener) await tlsListener.close();
      tlsListener = undefined;
      if (metricsServer) await closeServer(metricsServer);
      metricsServer = undefined;
      if (ds.isInitialized) await ds.destroy();
    },
  };
}
export type Gateway = ReturnType<typeof buildGateway>;
