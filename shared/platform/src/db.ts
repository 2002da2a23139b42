import { DataSource, type MigrationInterface, type QueryRunner } from 'typeorm';

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
}

/**
 * Creates (does not initialise) the DataSource of one service. `synchronize` is hard-coded off:
 * the schema changes only through the service's own migrations, recorded in `<schema>.migrations`.
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
    extra: { max: options.poolSize ?? 5, application_name: `polyphony-${options.schema}` },
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
