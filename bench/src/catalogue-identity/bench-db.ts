import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** Admin connection of the benchmark database server (BENCH_DATABASE_URL or the local PostgreSQL). */
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Creates a fresh database for one benchmark run; `drop()` removes it (KEEP_DB=1 keeps it for inspection). */
export async function createDb(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `polyphony_bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const admin = new Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      if (process.env.KEEP_DB) return void console.log(`kept database ${name}`);
      const c = new Client({ connectionString: ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    },
  };
}
