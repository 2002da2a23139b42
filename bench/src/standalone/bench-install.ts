import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createLogger } from '@polyphony/platform';
import { startStack } from '@polyphony/standalone';
import { adminUrl as defaultAdminUrl } from '../bench-support';

/** A whole polyphony install (the standalone stack) on a fresh database, driven over HTTP with its API token. */
export interface BenchInstall {
  /** `http://127.0.0.1:<gateway port>` */
  base: string;
  databaseUrl: string;
  token: string;
  /** A JSON call with the API token; throws `<method> <path> answered <status>: <body>` on a non-2xx answer. */
  call<T = Record<string, any>>(method: string, path: string, body?: unknown): Promise<T>;
  /** A call with the API token that returns status and text whatever they are; a Buffer body is sent as is. */
  send(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; text: string }>;
  /**
   * Waits (polling `/api/index/status`) until a generation newer than `after` is live, not building, and serves
   * `items` songs; a failed status call is printed and polled again (how often it fails during a build is a finding).
   * @throws after `timeoutMs` (default 30 min)
   */
  waitForIndex(items: number, after: number, timeoutMs?: number): Promise<void>;
  /** Asks for an index rebuild (`POST /api/index/rebuild`) and waits for its generation to serve `items` songs. */
  rebuildIndex(items: number, timeoutMs?: number): Promise<void>;
  /** Stops the stack and drops its database. */
  stop(): Promise<void>;
}

/**
 * Starts the standalone stack for a benchmark on a new database `polyphony_<name>_<random>` of the PostgreSQL at
 * `adminUrl` (default PG_ADMIN_URL, else TEST_DATABASE_URL, else the local server), with an admin, a random API token
 * and session key, and `env` on top (MODELS_DIR, BACKUP_DIR, ...).
 */
export async function startBenchInstall(name: string, opts: { env?: Record<string, string>; adminUrl?: string } = {}): Promise<BenchInstall> {
  const admin = opts.adminUrl ?? process.env.PG_ADMIN_URL ?? defaultAdminUrl();
  const dbName = `polyphony_${name}_${randomBytes(4).toString('hex')}`;
  const adminClient = new Client({ connectionString: admin });
  await adminClient.connect();
  await adminClient.query(`CREATE DATABASE "${dbName}"`);
  await adminClient.end();
  const dbUrl = new URL(admin);
  dbUrl.pathname = `/${dbName}`;
  const token = randomBytes(16).toString('hex');
  const stack = await startStack({
    databaseUrl: dbUrl.toString(),
    port: 0,
    host: '127.0.0.1',
    env: { SERVICE_USER: 'admin', SERVICE_PASSWORD: randomBytes(12).toString('hex'), API_TOKEN: token, JWT_SECRET: randomBytes(32).toString('hex'), ...opts.env },
    logger: createLogger({ service: name, level: 'error' }),
  });
  const base = `http://127.0.0.1:${stack.port}`;
  const send = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const raw = Buffer.isBuffer(body);
    const res = await fetch(new URL(path, base), {
      method,
      headers: { authorization: `Bearer ${token}`, ...(raw ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : raw ? new Uint8Array(body) : JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  };
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const r = await send(method, path, body);
    if (r.status < 200 || r.status >= 300) throw new Error(`${method} ${path} answered ${r.status}: ${r.text}`);
    return JSON.parse(r.text) as T;
  };
  const waitForIndex = async (items: number, after: number, timeoutMs = 30 * 60_000) => {
    for (const deadline = Date.now() + timeoutMs; ; ) {
      let s: { generation: number; building: boolean; items: number } | undefined;
      try {
        s = await call('GET', '/api/index/status');
      } catch (err) {
        console.log(`index status call failed during the build: ${(err as Error).message} (${String((err as Error).cause ?? '')})`);
      }
      if (s && Number(s.generation) > after && !s.building && s.items === items) return;
      if (Date.now() > deadline) throw new Error(`index not built: ${JSON.stringify(s)}`);
      await new Promise((r) => setTimeout(r, s ? 300 : 2000));
    }
  };
  return {
    base,
    databaseUrl: dbUrl.toString(),
    token,
    call,
    send,
    waitForIndex,
    async rebuildIndex(items, timeoutMs) {
      const before = Number((await call<{ generation: number }>('GET', '/api/index/status')).generation);
      await call('POST', '/api/index/rebuild', {});
      await waitForIndex(items, before, timeoutMs);
    },
    async stop() {
      await stack.stop();
      const c = new Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
      await c.end();
    },
  };
}
