import { randomBytes } from 'node:crypto';
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

/**
 * Creates a uniquely named database per test suite (no shared state between parallel jest
 * workers, no truncation). Services then apply their real migrations into it.
 */
export async function createTestDatabase(prefix = 'polyphony_test'): Promise<TestDatabase> {
  const name = `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: adminDatabaseUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminDatabaseUrl());
  url.pathname = `/${name}`;
  const db: TestDatabase = {
    url: url.toString(),
    name,
    async query(text: string, params: unknown[] = []) {
      const c = new Client({ connectionString: url.toString() });
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
      const c = new Client({ connectionString: adminDatabaseUrl() });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
  return db;
}

/** AMQP URL for integration tests (TEST_AMQP_URL or the local RabbitMQ). */
export function testAmqpUrl(): string {
  return process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
}
