import { performance } from 'node:perf_hooks';
import { Client as PgClient } from 'pg';
import { DataSource, type MigrationInterface, type QueryRunner } from 'typeorm';
import { currentContext } from './context';
import { TransientError } from './faults';

/** A migration class as TypeORM expects it (registered explicitly, never globbed). */
export type MigrationClass = new () => MigrationInterface;

export interface ServiceDatabaseOptions {
  /** postgres://user:pass@host:port/db */
  url: string;
  /** The service's own schema, e.g. 'registry'. Its migrations table lives there too. */
  schema: string;
  migrations: MigrationClass[];
  /** Connection pool size of this process (documented default 5). */
  poolSize?: number;
  /** TypeORM entities, if the service uses any (most repositories use parameterised SQL). */
  entities?: Function[];
  /**
   * Longest wait in ms for a connection: a free one of the pool, or a new one's connect and start-up together
   * (`DB_CONNECT_TIMEOUT_MS`, default {@link DEFAULT_DB_CONNECT_TIMEOUT_MS}; 0 = wait for ever). Past it the
   * query fails with pg-pool's "timeout exceeded when trying to connect", a transient fault (503 + Retry-After).
   */
  connectTimeoutMs?: number;
  /**
   * Longest wait in ms for one query's answer while an HTTP request waits for its answer
   * (`DB_REQUEST_QUERY_TIMEOUT_MS`, default {@link DEFAULT_DB_REQUEST_QUERY_TIMEOUT_MS}; 0 = none). Past it the
   * query fails with a {@link DatabaseTimeoutError} (503 + Retry-After) and its connection is closed. Queries of
   * background work (tasks, bus messages, index builds, backups) have no such time-out.
   */
  requestQueryTimeoutMs?: number;
}

/** Default of `DB_CONNECT_TIMEOUT_MS` (issue 36, frozen database). */
export const DEFAULT_DB_CONNECT_TIMEOUT_MS = 4000;
/** Default of `DB_REQUEST_QUERY_TIMEOUT_MS` (issue 36, frozen database). */
export const DEFAULT_DB_REQUEST_QUERY_TIMEOUT_MS = 4000;

/** A query of a request that got no answer in time (a frozen or overloaded database): transient, 503 + Retry-After. */
export class DatabaseTimeoutError extends TransientError {
  constructor(timeoutMs: number) {
    super(`database did not answer within ${timeoutMs} ms (DB_REQUEST_QUERY_TIMEOUT_MS)`);
    this.name = 'DatabaseTimeoutError';
  }
}

/** A request's query refused at once: the database failed to answer in time and has not answered a probe since (the pool's breaker is open). */
export class DatabaseUnresponsiveError extends TransientError {
  constructor() {
    super('database unresponsive (a query or connection timed out and no probe has succeeded since); retry shortly');
    this.name = 'DatabaseUnresponsiveError';
  }
}

interface Breaker {
  open: boolean;
  probing: boolean;
  options?: ConstructorParameters<typeof PgClient>[0];
}
/** One breaker per database server (host:port/database) in this process: every pool to a frozen server learns it at once. */
const breakers = new Map<string, Breaker>();
function breakerOf(server: string): Breaker {
  let b = breakers.get(server);
  if (!b) breakers.set(server, (b = { open: false, probing: false }));
  return b;
}

/** The server part of a postgres URL (host:port/database), the key of its breaker; the URL itself when unparsable. */
function serverKey(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return url;
  }
}

/** While a pool's breaker is open, how often a background probe (`SELECT 1`) checks whether the database answers (ms). */
export const DB_BREAKER_PROBE_MS = 1000;

/**
 * Share of a waiting request's connect wait (0-1) during which this process's event loop was busy, from which a
 * connect time-out is blamed on the process rather than the database: it does not open the breaker of
 * {@link requestTimedClient}, and the request connects once more (see {@link waitOutBackgroundConnectTimeouts}).
 * While a frozen or unreachable database is waited for, the loop is idle (near 0); a loop that could not run the
 * connect's own callback before the timer (the time-out firing late) is near 1; one half separates them with room on
 * both sides. Measured with node:perf_hooks `performance.eventLoopUtilization` over the wait.
 */
export const REQUEST_CONNECT_RETRY_MIN_LOOP_BUSY = 0.5;

/**
 * The pg client class of a pool whose queries time out while an HTTP request waits for them (issue 36: a frozen
 * database, whose connections stay open and never answer, must not hold requests for ever).
 * - A query issued in a request context ({@link currentContext} with `awaitingAnswer()` true) gets pg's
 *   `query_timeout`; when it fires, the connection is destroyed (its server session may still be running the query,
 *   so it cannot be reused: the pool drops it and opens a new one on demand) and the caller gets a
 *   {@link DatabaseTimeoutError}. Only the promise form of `query(text | config, values?)` is timed (TypeORM's).
 * - A breaker shared by the clients of every pool of this process to the same server (`server`): such a time-out, or a connect that timed out, opens it
 *   (not a connect time-out during which this process's own event loop was busy for {@link REQUEST_CONNECT_RETRY_MIN_LOOP_BUSY}
 *   of the wait or more: that one blames the process, not the database); while it is open,
 *   request queries and request connects fail at once with {@link DatabaseUnresponsiveError}, and a probe of its own
 *   (a separate connection, `SELECT 1`, both timed) runs every {@link DB_BREAKER_PROBE_MS} in the background; its
 *   first success closes the breaker. So a frozen database costs one request one time-out, not every request, and a
 *   unit that can answer from memory (similar songs by id) does so at once.
 * Queries outside a waiting request (tasks, bus messages, index builds, backups) are neither timed nor refused.
 */
export function requestTimedClient(timeoutMs: number, server = 'default'): typeof PgClient {
  const breaker = breakerOf(server);
  const probe = async () => {
    for (;;) {
      await new Promise((r) => setTimeout(r, DB_BREAKER_PROBE_MS).unref());
      const cfg = typeof breaker.options === 'object' && breaker.options !== null ? breaker.options : {};
      const client = new PgClient({ ...cfg, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.query('SELECT 1');
        breaker.open = false;
        breaker.probing = false;
        await client.end().catch(() => undefined);
        return;
      } catch {
        (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
      }
    }
  };
  const trip = () => {
    breaker.open = true;
    if (breaker.probing) return;
    breaker.probing = true;
    void probe();
  };
  const inRequest = () => timeoutMs > 0 && currentContext()?.awaitingAnswer?.() === true;

  class RequestTimedClient extends PgClient {
    constructor(options?: ConstructorParameters<typeof PgClient>[0]) {
      super(options);
      breaker.options ??= options;
    }

    // pg's connect(callback?) overloads: one override forwards both forms.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    override connect(callback?: any): any {
      if (!inRequest()) return (super.connect as (cb?: unknown) => unknown)(callback);
      if (breaker.open) {
        const refused = new DatabaseUnresponsiveError();
        if (callback) return void process.nextTick(() => (callback as (err: Error) => void)(refused));
        return Promise.reject(refused);
      }
      // A connect cut by the pool's connection time-out ends without an error code (a refused one has ECONNREFUSED);
      // it opens the breaker unless this process's loop was busy for most of the wait (then the database is not to blame).
      const elu0 = performance.eventLoopUtilization();
      const done = (err?: Error | null) => {
        if (err && (err as { code?: unknown }).code === undefined && performance.eventLoopUtilization(elu0).utilization < REQUEST_CONNECT_RETRY_MIN_LOOP_BUSY) trip();
      };
      if (callback) {
        return (super.connect as (cb: (err: Error | null) => void) => void)((err) => {
          done(err);
          (callback as (err: Error | null) => void)(err);
        });
      }
      return super.connect().then(
        () => undefined,
        (err: Error) => {
          done(err);
          throw err;
        },
      );
    }

    // pg's query overloads are many: one override covers them all and forwards what it does not time.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    override query(...args: unknown[]): any {
      const first = args[0];
      const callback = args.some((a) => typeof a === 'function');
      if (callback || !inRequest() || first === null || (typeof first !== 'string' && (typeof first !== 'object' || typeof (first as { submit?: unknown }).submit === 'function'))) {
        return (super.query as (...a: unknown[]) => unknown)(...args);
      }
      if (breaker.open) return Promise.reject(new DatabaseUnresponsiveError());
      const config = typeof first === 'string' ? { text: first } : { ...(first as object) };
      const timed = (super.query as (...a: unknown[]) => Promise<unknown>)({ ...config, query_timeout: timeoutMs }, ...args.slice(1));
      return timed.catch((err: unknown) => {
        if (err instanceof Error && err.message === 'Query read timeout') {
          trip();
          (this as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
          throw new DatabaseTimeoutError(timeoutMs);
        }
        throw err;
      });
    }
  }
  return RequestTimedClient as unknown as typeof PgClient;
}

/**
 * Creates (does not initialise) the DataSource of one service. `synchronize` is hard-coded off:
 * the schema changes only through the service's own migrations, recorded in `<schema>.migrations`.
 * The pool waits at most `connectTimeoutMs` for a connection and times out queries of waiting HTTP requests
 * after `requestQueryTimeoutMs` (DB_CONNECT_TIMEOUT_MS, DB_REQUEST_QUERY_TIMEOUT_MS; see the options).
 */
export function createServiceDataSource(options: ServiceDatabaseOptions): DataSource {
  return new DataSource({
    type: 'postgres',
    url: options.url,
    schema: options.schema,
    migrationsTableName: 'migrations',
    migrations: options.migrations,
    entities: options.entities ?? [],
    synchronize: false,
    migrationsRun: false,
    migrationsTransactionMode: 'each',
    extra: {
      max: options.poolSize ?? 5,
      application_name: `polyphony-${options.schema}`,
      connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_DB_CONNECT_TIMEOUT_MS,
      // A partitioned or vanished host is noticed by TCP keep-alive instead of never (background queries have no time-out).
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      Client: requestTimedClient(options.requestQueryTimeoutMs ?? DEFAULT_DB_REQUEST_QUERY_TIMEOUT_MS, serverKey(options.url)),
    },
    logging: false,
  });
}

/** Stable 32-bit advisory-lock key for a schema's migrations (FNV-1a of the name). */
function lockKey(schema: string): number {
  let h = 0x811c9dc5;
  for (const c of `polyphony-migrate:${schema}`) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193);
  return h | 0;
}

/**
 * Applies the pending migrations of `ds` under a PostgreSQL advisory lock, so several replicas
 * (or the migrate Job and a pod) never race. Creates the schema first. Returns the names applied.
 */
export async function migrateSchema(ds: DataSource): Promise<string[]> {
  const schema = (ds.options as { schema?: string }).schema;
  if (!schema) throw new Error('DataSource has no schema');
  const runner = ds.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [lockKey(schema)]);
    try {
      await runner.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      const applied = await ds.runMigrations({ transaction: 'each' });
      return applied.map((m) => m.name);
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [lockKey(schema)]);
    }
  } finally {
    await runner.release();
  }
}

/** Thrown at start when the schema is behind the code's migrations. */
export class SchemaBehindError extends Error {
  constructor(schema: string) {
    super(`Schema "${schema}" has pending migrations; run the migrate command first`);
    this.name = 'SchemaBehindError';
  }
}

/** Refuses to start on a schema that is behind: throws SchemaBehindError when migrations are pending. */
export async function assertSchemaCurrent(ds: DataSource): Promise<void> {
  const schema = (ds.options as { schema?: string }).schema ?? 'public';
  const exists = await ds.query('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [schema]);
  if (exists.length === 0 || (await ds.showMigrations())) throw new SchemaBehindError(schema);
}

/**
 * Keeps a process alive when PostgreSQL drops connections (restart, failover, outage): node-postgres
 * emits 'error' on the pool for an idle client that lost its connection, and an 'error' event with no
 * listener would end the process. The error is logged; the pool replaces the client on the next
 * checkout, queries in flight fail with a transient error (retried by their callers), and `/readyz`
 * reports the database unreachable until it is back. Idempotent.
 */
export function guardPoolErrors(ds: DataSource, logger: { warn(msg: string, meta?: Record<string, unknown>): void }): void {
  const pool = (ds.driver as unknown as { master?: { on?: (ev: string, fn: (err: Error) => void) => void; __polyphonyGuard?: boolean } }).master;
  if (!pool?.on || pool.__polyphonyGuard) return;
  pool.__polyphonyGuard = true;
  pool.on('error', (err: Error) => logger.warn('database connection lost (the pool reconnects on demand)', { err: err.message }));
  // Clients checked out when the connection drops emit 'error' themselves.
  pool.on('connect', ((client: { on(ev: string, fn: (err: Error) => void): void }) => {
    client.on('error', (err: Error) => logger.warn('database client error', { err: err.message }));
  }) as unknown as (err: Error) => void);
}

/** pg-pool's errors for a connect cut by `connectionTimeoutMillis` (no free client in time; a new connection not up in time). */
export function isConnectTimeout(err: unknown): boolean {
  const m = err instanceof Error ? err.message : '';
  return m === 'timeout exceeded when trying to connect' || m === 'Connection terminated due to connection timeout';
}

/** Pause between two connects of background work after a connect time-out (ms). */
export const BACKGROUND_CONNECT_RETRY_MS = 100;

type PoolConnectCallback = (err: Error | undefined, client?: unknown, release?: (err?: unknown) => void) => void;

/**
 * Background work waits out connect time-outs instead of failing (issue 36, replica recovery). pg-pool measures
 * `DB_CONNECT_TIMEOUT_MS` with a timer, so it also fires when THIS process's event loop was busy (a replica loading its
 * generation on a CPU-starved machine: a 300 ms synchronous step takes seconds of wall time at load 30), and then
 * destroys a connection PostgreSQL had already accepted; a stalled start-up failed each of its queries that way and
 * never finished loading. So a connect made outside a waiting HTTP request (start-up loads, index builds, tasks, bus
 * messages, backups: {@link currentContext} has no `awaitingAnswer()` true) that times out is tried again after
 * {@link BACKGROUND_CONNECT_RETRY_MS}, for as long as it takes (as the rest of background work, it waits for the
 * database); the first time-out of each call is logged at warn. Connects of waiting requests keep the time-out
 * (503 + Retry-After, the breaker of {@link requestTimedClient}), with one exception: when this process's event loop
 * was busy for at least {@link REQUEST_CONNECT_RETRY_MIN_LOOP_BUSY} of the wait (event-loop utilisation over the
 * wait, node:perf_hooks), the time-out says nothing about the database (the one-process stack at load ~8 answered
 * two /api/tasks requests 503 that way), so the request connects once more, with a fresh time-out, and fails with the
 * second time-out if that one also expires (logged at warn either way). At most one extra attempt: a request waits at
 * most twice DB_CONNECT_TIMEOUT_MS for a connection, and only when its own process was the slow party. Other connect
 * errors (refused, authentication) fail as before. Call after `ds.initialize()`; idempotent.
 */
export function waitOutBackgroundConnectTimeouts(ds: DataSource, logger: { warn(msg: string, meta?: Record<string, unknown>): void }, retryMs = BACKGROUND_CONNECT_RETRY_MS): void {
  type Pool = { connect(cb?: PoolConnectCallback): unknown; ending?: boolean; __polyphonyWaits?: boolean };
  const pool = (ds.driver as unknown as { master?: Pool }).master;
  if (!pool || typeof pool.connect !== 'function' || pool.__polyphonyWaits) return;
  pool.__polyphonyWaits = true;
  const connect = pool.connect.bind(pool) as (cb: PoolConnectCallback) => void;
  const schema = (ds.options as { schema?: string }).schema;
  /** A waiting request's connect: one more attempt when the time-out came from this process's busy loop. */
  const requestConnect = (done: PoolConnectCallback): void => {
    const elu0 = performance.eventLoopUtilization();
    const t0 = Date.now();
    connect((err, client, release) => {
      if (err && isConnectTimeout(err) && !pool.ending) {
        const loopBusy = performance.eventLoopUtilization(elu0).utilization;
        const meta = { schema, err: err.message, loopBusy: Math.round(loopBusy * 100) / 100, waitedMs: Date.now() - t0 };
        if (loopBusy >= REQUEST_CONNECT_RETRY_MIN_LOOP_BUSY) {
          logger.warn('database connect of a request timed out while this process was busy (event loop); trying once more', meta);
          connect((err2, client2, release2) => {
            if (err2 && isConnectTimeout(err2)) logger.warn('database connect of a request timed out again after a busy event loop; answering 503', { schema, err: err2.message });
            done(err2, client2, release2);
          });
          return;
        }
      }
      done(err, client, release);
    });
  };
  pool.connect = (cb?: PoolConnectCallback): unknown => {
    if (currentContext()?.awaitingAnswer?.() === true) {
      if (cb) return void requestConnect(cb);
      return new Promise((resolve, reject) => requestConnect((err, client) => (err ? reject(err) : resolve(client))));
    }
    const t0 = Date.now();
    let timeouts = 0;
    const run = (done: PoolConnectCallback): void => {
      connect((err, client, release) => {
        if (err && isConnectTimeout(err) && !pool.ending) {
          if (timeouts++ === 0) logger.warn('database connect timed out in background work; trying again (background work waits for the database)', { schema, err: err.message });
          setTimeout(() => run(done), retryMs);
          return;
        }
        if (!err && timeouts > 0) logger.warn('database connect of background work succeeded after time-outs', { schema, timeouts, waitedMs: Date.now() - t0 });
        done(err, client, release);
      });
    };
    if (cb) return void run(cb);
    return new Promise((resolve, reject) => run((err, client) => (err ? reject(err) : resolve(client))));
  };
}

/** Readiness probe: a trivial round trip. */
export async function databaseReachable(ds: DataSource): Promise<boolean> {
  if (!ds.isInitialized) return false;
  await ds.query('SELECT 1');
  return true;
}

/**
 * Key/value settings of one service in `<schema>.settings` (created by the service's first migration
 * via `settingsTableSql`). Environment variables seed it on first start only; afterwards the database
 * is the source of truth.
 */
export class SettingsStore {
  constructor(
    private readonly ds: DataSource,
    private readonly schema: string,
  ) {}

  /** All settings as a plain map. */
  async all(): Promise<Record<string, string>> {
    const rows: Array<{ key: string; value: string }> = await this.ds.query(`SELECT key, value FROM "${this.schema}".settings`);
    return Object.fromEntries(rows.map((r) => [r.key, r.value]));
  }

  async get(key: string): Promise<string | undefined> {
    const rows: Array<{ value: string }> = await this.ds.query(`SELECT value FROM "${this.schema}".settings WHERE key = $1`, [key]);
    return rows[0]?.value;
  }

  async set(key: string, value: string): Promise<void> {
    await this.ds.query(
      `INSERT INTO "${this.schema}".settings (key, value, updated_at) VALUES ($1, $2, now())
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
      [key, value],
    );
  }

  async remove(key: string): Promise<void> {
    await this.ds.query(`DELETE FROM "${this.schema}".settings WHERE key = $1`, [key]);
  }

  /**
   * First-start import: for every key in `seed` that has a value, insert it when the key is absent.
   * Existing rows are never overwritten, so a later environment change does not override the database.
   */
  async seedOnce(seed: Record<string, string | undefined>): Promise<void> {
    for (const [key, value] of Object.entries(seed)) {
      if (value === undefined) continue;
      await this.ds.query(`INSERT INTO "${this.schema}".settings (key, value, updated_at) VALUES ($1, $2, now()) ON CONFLICT (key) DO NOTHING`, [key, value]);
    }
  }
}

/** DDL of the settings table, for a service's first migration. */
export function settingsTableSql(schema: string): string {
  return `CREATE TABLE "${schema}".settings (key text PRIMARY KEY, value text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())`;
}

/**
 * The first migration of a service whose schema starts with its settings table only (the schema itself
 * is created by `migrateSchema`): `name` is the class name TypeORM records (e.g. 'CreateIndex1732100000000').
 */
export function settingsTableMigration(schema: string, name: string): MigrationClass {
  return class implements MigrationInterface {
    name = name;
    async up(q: QueryRunner): Promise<void> {
      await q.query(settingsTableSql(schema));
    }
    async down(q: QueryRunner): Promise<void> {
      await q.query(`DROP TABLE "${schema}".settings`);
    }
  };
}

/**
 * Runs parameterised SQL and returns the result rows. TypeORM's postgres `query()` returns
 * `[rows, rowCount]` for UPDATE and DELETE (with or without RETURNING) but plain rows for SELECT
 * and INSERT; this normalises both to rows. Use it for every UPDATE/DELETE ... RETURNING.
 */
export async function queryRows<T = Record<string, unknown>>(runner: { query(sql: string, params?: unknown[]): Promise<unknown> }, sql: string, params: unknown[] = []): Promise<T[]> {
  const result = await runner.query(sql, params);
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0] as T[];
  return result as T[];
}
