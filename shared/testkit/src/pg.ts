import { createHash, randomBytes } from 'node:crypto';
import { Client } from 'pg';

/**
 * Admin connection for tests: TEST_DATABASE_URL, or the local PostgreSQL the build machines run
 * (127.0.0.1:5432, user postgres, trust auth).
 */
export function adminDatabaseUrl(): string {
  return process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

export interface TestDatabase {
  /** URL of the fresh database. */
  url: string;
  name: string;
  /** Runs one parameterised query on its own connection and returns the rows (assertions in tests). */
  query<T = any>(text: string, params?: unknown[]): Promise<T[]>;
  /** Runs `SELECT count(*) ...` (or any query whose first row's first column is a number) and returns that number. */
  count(text: string, params?: unknown[]): Promise<number>;
  /** Drops the database (terminating leftover connections). */
  drop(): Promise<void>;
}

/** A fresh database name: `<prefix>_<time>_<random>`. */
function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

/** The admin URL with its database replaced by `name`. */
function databaseUrl(name: string): string {
  const url = new URL(adminDatabaseUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs `fn` with one admin connection (the `postgres` database of adminDatabaseUrl), closed afterwards. */
async function withAdmin<T>(fn: (admin: Client) => Promise<T>): Promise<T> {
  const admin = new Client({ connectionString: adminDatabaseUrl() });
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

/** The TestDatabase handle of an existing database `name`. */
function testDatabase(name: string): TestDatabase {
  const url = databaseUrl(name);
  const db: TestDatabase = {
    url,
    name,
    async query(text: string, params: unknown[] = []) {
      const c = new Client({ connectionString: url });
      await c.connect();
      try {
        return (await c.query(text, params)).rows;
      } finally {
        await c.end();
      }
    },
    async count(text: string, params: unknown[] = []) {
      const [row] = await db.query<Record<string, unknown>>(text, params);
      const value = row === undefined ? undefined : Object.values(row)[0];
      if (value === undefined || value === null) throw new Error(`count(): no value from ${text.slice(0, 120)}`);
      return Number(value);
    },
    async drop() {
      await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
  return db;
}

/**
 * Creates a uniquely named database per test suite (no shared state between parallel jest
 * workers, no truncation). Services then apply their real migrations into it.
 */
export async function createTestDatabase(prefix = 'polyphony_test'): Promise<TestDatabase> {
  const name = uniqueName(prefix);
  await withAdmin((admin) => admin.query(`CREATE DATABASE "${name}"`));
  return testDatabase(name);
}

/** The template database of `key` (createTestDatabaseFromTemplate): `polyphony_tpl_<first 16 hex of sha256(key)>`. */
export function templateDatabaseName(key: string): string {
  return `polyphony_tpl_${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
}

/**
 * Creates a uniquely named database as a copy of a template database (`CREATE DATABASE ... TEMPLATE`, PostgreSQL's
 * file-level copy: ~0.25 s, where applying every schema's migrations into an empty database takes ~1.5 s of a stack
 * start). The template `polyphony_tpl_<sha256(key), 16 hex>` is built once per server and key: `build(url)` fills a
 * fresh database (e.g. applies migrations), which is then renamed to the template's name, so no copy ever sees a
 * half-built template; the check-and-build runs under a PostgreSQL advisory lock, so parallel jest workers (and
 * parallel runs of other checkouts on the same server) build it once. `key` must change whenever what `build`
 * writes changes (e.g. the text of every migration): a template is never rebuilt, and templates of old keys stay
 * on the server (a few MB each; drop `polyphony_tpl_*` databases to reclaim them).
 * Errors: whatever `build` throws (its half-built database is dropped), and PostgreSQL's (the copy is retried for
 * 5 s while another session is connected to the template, SQLSTATE 55006).
 */
export async function createTestDatabaseFromTemplate(key: string, build: (url: string) => Promise<void>, prefix = 'polyphony_test'): Promise<TestDatabase> {
  const template = templateDatabaseName(key);
  const name = uniqueName(prefix);
  await withAdmin(async (admin) => {
    await admin.query('SELECT pg_advisory_lock(hashtext($1))', [template]);
    try {
      const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template])).rowCount === 1;
      if (!exists) {
        const building = uniqueName(`${template}_b`);
        await admin.query(`CREATE DATABASE "${building}"`);
        try {
          await build(databaseUrl(building));
          await admin.query(`ALTER DATABASE "${building}" RENAME TO "${template}"`);
        } catch (err) {
          await admin.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`).catch(() => undefined);
          throw err;
        }
      }
    } finally {
      await admin.query('SELECT pg_advisory_unlock(hashtext($1))', [template]);
    }
    // 55006 object_in_use: another session is connected to the template (none of ours stays connected); retried briefly.
    for (let attempt = 1; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== '55006' || attempt >= 20) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  });
  return testDatabase(name);
}

/** AMQP URL for integration tests (TEST_AMQP_URL or the local RabbitMQ). */
export function testAmqpUrl(): string {
  return process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
}
