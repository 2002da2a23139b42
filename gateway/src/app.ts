import path from 'node:path';
import cookieParser from 'cookie-parser';
import express from 'express';
import { APP_VERSION, buildOpenApiDocument } from '@polyphony/contracts';
import {
  Metrics,
  ServiceClient,
  SettingsStore,
  assertSchemaCurrent,
  closeServer,
  createLogger,
  createServiceHttp,
  createServiceDataSource,
  databaseReachable,
  listen,
  migrateSchema,
  type Logger,
} from '@polyphony/platform';
import type { Server } from 'node:http';
import { AuthService } from './auth/auth.service';
import { authenticate } from './auth/authenticate.middleware';
import type { GatewayConfig, ServiceName } from './config';
import { loginRoutes, userRoutes } from './http/users.routes';
import { docsPage } from './http/docs.page';
import { proxyDispatcher } from './proxy/proxy';
import { ServerResolver } from './proxy/server-resolver';
import { authMigrations } from './store/migrations';
import { UserRepository } from './store/user.repository';

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
 */
export function buildGateway(config: GatewayConfig, deps: GatewayDeps = {}) {
  const logger = deps.logger ?? createLogger({ service: 'gateway', level: config.logLevel, pretty: config.logPretty });
  if (!config.databaseUrl) throw new Error('gateway: no database URL configured');
  const ds = createServiceDataSource({ url: config.databaseUrl, schema: 'auth', migrations: authMigrations, poolSize: config.dbPoolSize });
  const users = new UserRepository(ds);
  const auth = new AuthService(users, new SettingsStore(ds, 'auth'), config.sessionTtlSeconds, logger.child({ component: 'AuthService' }));
  const metrics = new Metrics('gateway');
  const targets = deps.targets ?? (() => config.services);
  const registryClient = new ServiceClient(() => targets().registry, config.internalSecret, 'gateway', 10_000);
  const resolver = new ServerResolver(registryClient);
  const publicDir = path.resolve(__dirname, '../public');

  const http = createServiceHttp({
    service: 'gateway',
    logger,
    metrics,
    // The gateway authenticates callers itself; it has no internal signature to check.
    internalSecret: undefined,
    readiness: [{ name: 'database', check: () => databaseReachable(ds) }],
  });
  const app = http.app;
  app.use(cookieParser());

  app.get('/api/health', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/api/openapi.json', (_req, res) => {
    res.json(buildOpenApiDocument(APP_VERSION));
  });
  app.get('/api/docs', (_req, res) => {
    res.type('html').send(docsPage());
  });
  app.get('/login', (_req, res) => {
    res.sendFile(path.join(publicDir, 'login.html'));
  });
  app.use(loginRoutes(auth));
  app.use(['/api', '/external', '/chat/api'], authenticate(auth));
  app.use(userRoutes(auth));
  app.use(proxyDispatcher(config, targets, resolver, logger));
  app.use(express.static(publicDir, { index: 'index.html' }));
  http.finish();

  let server: Server | undefined;
  return {
    name: 'gateway',
    http: app,
    auth,
    users,
    dataSource: ds,
    resolver,
    /** Connects, migrates or checks the schema, seeds auth settings. */
    async start(): Promise<void> {
      await ds.initialize();
      if (deps.migrateOnStart) await migrateSchema(ds);
      await assertSchemaCurrent(ds);
      await auth.init(config.seeds);
    },
    /** Starts listening on config.port; returns the bound port. */
    async listen(port = config.port, host = config.host): Promise<number> {
      const bound = await listen(app, port, host);
      server = bound.server;
      return bound.port;
    },
    async stop(): Promise<void> {
      if (server) await closeServer(server);
      server = undefined;
      if (ds.isInitialized) await ds.destroy();
    },
  };
}
export type Gateway = ReturnType<typeof buildGateway>;
