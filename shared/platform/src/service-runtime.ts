import { api, defaultSettingsOf, type SettingSpec } from '@polyphony/contracts';
import { PeerClient } from './peer-client';
import { SettingsReader } from './settings-reader';
import { randomBytes } from 'node:crypto';
import type { RequestListener, Server } from 'node:http';
import type { Express } from 'express';
import { z, type ZodRawShape } from 'zod';
import type { DataSource } from 'typeorm';
import { createBus, InstrumentedBus } from './bus';
import type { Bus } from './bus/types';
import { baseEnvShape, databaseUrlFrom, parseConfig, readEnv } from './config';
import { assertSchemaCurrent, createServiceDataSource, databaseReachable, guardPoolErrors, migrateSchema, waitOutBackgroundConnectTimeouts, type MigrationClass } from './db';
import { createServiceHttp } from './service-http';
import { closeServer, listen } from './lifecycle';
import { createLogger, type Logger } from './logger';
import { Metrics } from './metrics';
import { ServiceClient } from './service-client';

/** Base URLs of the services (distributed defaults are Kubernetes/compose service names). */
export const serviceUrlShape = {
  REGISTRY_URL: z.string().url().default('http://registry:8080'),
  CATALOGUE_URL: z.string().url().default('http://catalogue-identity:8080'),
  ANALYSIS_URL: z.string().url().default('http://analysis-worker:8080'),
  INDEX_URL: z.string().url().default('http://index:8080'),
  PLAYLIST_URL: z.string().url().default('http://playlist:8080'),
} satisfies ZodRawShape;

/**
 * Exchange names and queue prefix of a bus namespace (several installs or test stacks sharing one
 * RabbitMQ vhost). No namespace: the default `polyphony` exchange and unprefixed queues.
 */
export function busNamespace(ns: string | undefined): { exchangeOptions: { exchange?: string; deadLetterExchange?: string }; queuePrefix: string } {
  return ns ? { exchangeOptions: { exchange: `polyphony.${ns}`, deadLetterExchange: `polyphony.${ns}.dlx` }, queuePrefix: `${ns}.` } : { exchangeOptions: {}, queuePrefix: '' };
}

export type PeerName = 'registry' | 'catalogue' | 'analysis' | 'index' | 'playlist';

/** Configuration shared by every service process. */
export interface ServiceConfig {
  name: string;
  schema: string;
  port: number;
  databaseUrl: string;
  amqpUrl?: string;
  internalSecret: string;
  logLevel: string;
  logPretty: boolean;
  /** Share of successful requests logged in the access log (ACCESS_LOG_SAMPLE, default 1). */
  accessLogSample?: number;
  dbPoolSize: number;
  /** DB_CONNECT_TIMEOUT_MS and DB_REQUEST_QUERY_TIMEOUT_MS (see `createServiceDataSource`); defaults when absent. */
  dbConnectTimeoutMs?: number;
  dbRequestQueryTimeoutMs?: number;
  busPrefetch: number;
  /** Namespace of exchanges and queues on a shared broker (BUS_NAMESPACE). */
  busNamespace?: string;
  peers: Record<PeerName, string>;
}

/** Parses the environment of one service (connection settings only; tunables live in its settings table). */
export function loadServiceConfig(name: string, schema: string, env: Record<string, string | undefined> = readEnv()): ServiceConfig {
  const e = parseConfig(z.object({ ...baseEnvShape, ...serviceUrlShape, PORT: z.coerce.number().int().min(0).max(65535).default(8080) }), env);
  const databaseUrl = databaseUrlFrom(e);
  if (!databaseUrl) throw new Error(`${name}: DATABASE_URL (or PGHOST, PGUSER, ...) is required`);
  if (!e.INTERNAL_SECRET && e.AMQP_URL) throw new Error(`${name}: INTERNAL_SECRET is required in the distributed mode`);
  return {
    name,
    schema,
    port: e.PORT,
    databaseUrl,
    amqpUrl: e.AMQP_URL,
    internalSecret: e.INTERNAL_SECRET ?? randomBytes(32).toString('hex'),
    logLevel: e.LOG_LEVEL,
    logPretty: e.LOG_FORMAT === 'pretty',
    accessLogSample: e.ACCESS_LOG_SAMPLE,
    dbPoolSize: e.DB_POOL_SIZE,
    dbConnectTimeoutMs: e.DB_CONNECT_TIMEOUT_MS,
    dbRequestQueryTimeoutMs: e.DB_REQUEST_QUERY_TIMEOUT_MS,
    busPrefetch: e.BUS_PREFETCH,
    busNamespace: e.BUS_NAMESPACE,
    peers: { registry: e.REGISTRY_URL, catalogue: e.CATALOGUE_URL, analysis: e.ANALYSIS_URL, index: e.INDEX_URL, playlist: e.PLAYLIST_URL },
  };
}

export interface RuntimeDeps {
  logger?: Logger;
  /** A bus shared by the whole process (standalone) instead of one per service. */
  bus?: Bus;
  /** Prefix of every queue this service consumes (isolates test stacks sharing one broker). */
  queuePrefix?: string;
  /** Peer base URLs resolved late (standalone binds ports after building). */
  peers?: () => Record<PeerName, string>;
  migrateOnStart?: boolean;
  /**
   * The service answers its queries without the broker (index): the bus is reported by `/readyz` but
   * a broker outage does not make the pod unready. Default false (the bus is required).
   */
  readyWithoutBus?: boolean;
  /**
   * The service answers its queries from memory (index: the live generation): the database is reported by `/readyz`
   * but its outage does not make the pod unready, so a Kubernetes Service keeps routing queries to it during a
   * database outage (issue 36). The service's own readiness checks still apply. Default false.
   */
  readyWithoutDatabase?: boolean;
}

/**
 * The parts every service composes: logger, metrics, DataSource on its own schema, bus, the
 * shared express app with health/readiness/metrics/internal auth, and clients to its peers.
 * `start()` connects, migrates (when asked) or refuses a schema that is behind, then runs the
 * service's own start hooks; `stop()` runs stop hooks, closes HTTP, bus and database.
 */
export class ServiceRuntime {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly ds: DataSource;
  readonly bus: Bus;
  readonly app: Express;
  /** The node request listener the server runs: the request pipeline, then `app` for what is not in the route table. */
  readonly handler: RequestListener;
  private readonly finishHttp: () => void;
  private readonly ownsBus: boolean;
  private readonly startHooks: Array<() => Promise<void>> = [];
  private readonly stopHooks: Array<() => Promise<void>> = [];
  private server?: Server;
  private stopped = false;
  private readonly readiness: Array<{ name: string; check: () => Promise<boolean> | boolean; optional?: boolean }>;

  constructor(
    readonly config: ServiceConfig,
    migrations: MigrationClass[],
    private readonly deps: RuntimeDeps = {},
  ) {
    this.logger = deps.logger ?? createLogger({ service: config.name, level: config.logLevel, pretty: config.logPretty });
    this.metrics = new Metrics(config.name);
    this.ds = createServiceDataSource({ url: config.databaseUrl, schema: config.schema, migrations, poolSize: config.dbPoolSize, connectTimeoutMs: config.dbConnectTimeoutMs, requestQueryTimeoutMs: config.dbRequestQueryTimeoutMs });
    this.ownsBus = !deps.bus;
    const ns = busNamespace(config.busNamespace);
    const inner = deps.bus ?? createBus({ amqpUrl: config.amqpUrl, logger: this.logger.child({ component: 'bus' }), ...ns.exchangeOptions });
    this.bus = new InstrumentedBus(inner, this.metrics, deps.queuePrefix ?? ns.queuePrefix);
    this.readiness = [
      { name: 'database', check: () => databaseReachable(this.ds), optional: deps.readyWithoutDatabase === true },
      { name: 'bus', check: () => this.bus.isHealthy(), optional: deps.readyWithoutBus === true },
      // Off from the first moment of `stop` (SIGTERM), before the stop hooks run: balancers drain this process first.
      { name: 'serving', check: () => !this.stopped },
    ];
    const http = createServiceHttp({
      service: config.name,
      logger: this.logger,
      metrics: this.metrics,
      internalSecret: config.internalSecret,
      readiness: this.readiness,
      accessLogSample: config.accessLogSample,
    });
    this.app = http.app;
    this.handler = http.handler;
    this.finishHttp = http.finish;
  }

  /** A client for a peer service, signing requests with the internal secret. */
  client(peer: PeerName, timeoutMs?: number): ServiceClient {
    return new ServiceClient(() => (this.deps.peers ?? (() => this.config.peers))()[peer], this.config.internalSecret, this.config.name, timeoutMs);
  }

  /** Typed client of a peer's routes from the contracts table (see PeerClient: retries idempotent calls, parses answers). */
  peer(peer: PeerName, timeoutMs?: number): PeerClient {
    return new PeerClient(this.client(peer, timeoutMs), peer);
  }

  /**
   * The admin-editable settings `owner` applies (`GET /internal/settings/:owner` on the registry),
   * through a SettingsReader's 5 s cache; the contracts' defaults until the registry answers.
   */
  settings(owner: SettingSpec['owner']): SettingsReader {
    const registry = this.peer('registry', 30_000);
    return new SettingsReader(async () => (await registry.call(api.internal.ownerSettings, { params: { owner } })).values, defaultSettingsOf(owner), this.logger.child({ component: 'SettingsReader' }));
  }

  /** Adds a readiness check of the service's own (`/readyz` is 503 while it returns false or throws). */
  addReadiness(name: string, check: () => Promise<boolean> | boolean): void {
    this.readiness.push({ name, check });
  }

  onStart(hook: () => Promise<void>): void {
    this.startHooks.push(hook);
  }
  onStop(hook: () => Promise<void>): void {
    this.stopHooks.unshift(hook);
  }

  /** Call after mounting routes: adds the 404 and error handlers. */
  finishRoutes(): void {
    this.finishHttp();
  }

  async start(): Promise<void> {
    await this.ds.initialize();
    guardPoolErrors(this.ds, this.logger);
    waitOutBackgroundConnectTimeouts(this.ds, this.logger);
    if (this.deps.migrateOnStart) {
      const applied = await migrateSchema(this.ds);
      if (applied.length) this.logger.info('migrations applied', { schema: this.config.schema, applied });
    }
    await assertSchemaCurrent(this.ds);
    for (const hook of this.startHooks) await hook();
  }

  async listen(port = this.config.port, host = '0.0.0.0'): Promise<number> {
    const bound = await listen(this.handler, port, host);
    this.server = bound.server;
    return bound.port;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const hook of this.stopHooks) {
      try {
        await hook();
      } catch (err) {
        this.logger.error('stop hook failed', { err });
      }
    }
    if (this.server) await closeServer(this.server);
    if (this.ownsBus) await this.bus.close();
    else (this.bus as InstrumentedBus).stopSampling();
    if (this.ds.isInitialized) await this.ds.destroy();
  }
}

/** Runs a migrate command for one schema (Kubernetes Job / initContainer). */
export async function runMigrateCommand(name: string, schema: string, migrations: MigrationClass[]): Promise<void> {
  const config = loadServiceConfig(name, schema);
  const ds = createServiceDataSource({ url: config.databaseUrl, schema, migrations });
  await ds.initialize();
  try {
    const applied = await migrateSchema(ds);
    process.stdout.write(`${JSON.stringify({ schema, applied })}\n`);
  } finally {
    await ds.destroy();
  }
}
