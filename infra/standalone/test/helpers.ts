import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as amqp from 'amqplib';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { createLogger, createServiceDataSource, migrateSchema, type Logger } from '@polyphony/platform';
import { createTestDatabaseFromTemplate, testAmqpUrl, type TestDatabase } from '@polyphony/testkit';
import { ALL_SCHEMAS } from '../src/schemas';
import { startStack, type Stack } from '../src/stack';

export const ADMIN = { username: 'admin', password: 'admin-password-1' };
export const API_TOKEN = 'test-api-token-0123456789';


/**
 * Source folders whose text decides what the migrations write: each schema's migrations folder and the platform
 * package, whose SQL helpers (settingsTableSql, the task-run DDL, ...) the migrations import.
 */
const MIGRATION_SOURCES = [
  'gateway/src/store/migrations',
  'services/registry/src/store/migrations',
  'services/catalogue-identity/src/store/migrations',
  'services/analysis-worker/src/store/migrations',
  'services/index/src/core/migrations',
  'services/playlist/src/store/migrations',
  'shared/platform/src',
];

/** `<path>\n<text>` of every non-test .ts file under `dir` (relative to the repository root), in path order. */
function sourceTexts(dir: string): string[] {
  const root = path.resolve(__dirname, '../../..');
  return readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .sort()
    .map((f) => `${dir}/${f}\n${readFileSync(path.join(root, dir, f), 'utf8')}`);
}

/**
 * The template's key: the schemas with their migrations' names and code, and the text of MIGRATION_SOURCES, so a
 * migration edited in place (or a SQL helper it imports) gives a new template instead of a stale one.
 */
function migrationsKey(): string {
  migrationsKeyMemo ??= JSON.stringify([
    ALL_SCHEMAS.map(([schema, ms]) => [schema, ms.map((m) => `${new m().name ?? m.name}\n${m.prototype.up.toString()}\n${m.prototype.down.toString()}`)]),
    MIGRATION_SOURCES.flatMap(sourceTexts),
  ]);
  return migrationsKeyMemo;
}
let migrationsKeyMemo: string | undefined;

/**
 * A fresh test database with every schema's migrations already applied: a copy of a template migrated once per
 * PostgreSQL server and migration code (createTestDatabaseFromTemplate), so a stack start does not apply them all
 * again (measured 2026-12-05: a stack start 2.3-2.9 s on an empty database, 0.25 s copy + 0.8-0.9 s start on a
 * copy, at a load average of ~3). The stack's start-up migration step then finds nothing to apply; everything
 * after it (start hooks, seeding) runs as on a fresh install.
 */
export function createMigratedTestDatabase(): Promise<TestDatabase> {
  return createTestDatabaseFromTemplate(migrationsKey(), async (url) => {
    for (const [schema, migrations] of ALL_SCHEMAS) {
      const ds = createServiceDataSource({ url, schema, migrations });
      await ds.initialize();
      try {
        await migrateSchema(ds);
      } finally {
        await ds.destroy();
      }
    }
  });
}

/** Starts the whole product (gateway + services, in-process bus) against `db`, by default a fresh migrated test database (createMigratedTestDatabase). */
export async function startTestStack(
  env: Record<string, string | undefined> = {},
  db?: TestDatabase,
  options: { amqpUrl?: string; logger?: Logger } = {},
): Promise<{ stack: Stack; db: TestDatabase; url: string }> {
  const database = db ?? (await createMigratedTestDatabase());
  const stack = await startStack({
    databaseUrl: database.url,
    amqpUrl: options.amqpUrl,
    busNamespace: options.amqpUrl ? `test-${database.name}` : undefined,
    port: 0,
    host: '127.0.0.1',
    // TRUST_PROXY=loopback: the tests stand in for a reverse proxy on the same host (X-Forwarded-Proto).
    env: { SERVICE_USER: ADMIN.username, SERVICE_PASSWORD: ADMIN.password, API_TOKEN, TRUST_PROXY: 'loopback', ...env },
    logger: options.logger ?? createLogger({ service: 'test', level: process.env.LOG_LEVEL ?? 'error' }),
  });
  return { stack, db: database, url: `http://127.0.0.1:${stack.port}` };
}

/** The full stack of one describe block (see useTestStack); the fields are set once its beforeAll has run. */
export interface TestStackFixture {
  readonly stack: Stack;
  readonly db: TestDatabase;
  /** `http://127.0.0.1:<port>` of the gateway. */
  readonly url: string;
  /** Runs `text` with `params` on the stack's database and returns the rows. */
  sql<T = any>(text: string, params?: unknown[]): Promise<T[]>;
}

/**
 * Registers in the calling describe block a beforeAll that starts the whole product (startTestStack
 * with `env`, a function when it depends on what an earlier beforeAll started) and an afterAll that
 * stops it, deletes its broker namespace when it ran on RabbitMQ (`options.amqpUrl`), and drops its
 * database. Hooks run in the order they are declared: a media server the stack's env points at is
 * started in a beforeAll declared before this call, and closed in an afterAll declared after it.
 * Returns the fixture (its fields throw before the beforeAll has run).
 */
export function useTestStack(
  env: Record<string, string | undefined> | (() => Record<string, string | undefined>) = {},
  options: { amqpUrl?: string; logger?: Logger; afterAllTimeoutMs?: number } = {},
): TestStackFixture {
  let started: { stack: Stack; db: TestDatabase; url: string } | undefined;
  const get = () => {
    if (!started) throw new Error('the test stack is not started (useTestStack runs in beforeAll)');
    return started;
  };
  beforeAll(async () => {
    started = await startTestStack(typeof env === 'function' ? env() : env, undefined, options);
  });
  afterAll(async () => {
    if (!started) return;
    await started.stack.stop();
    if (options.amqpUrl) await deleteBrokerNamespace(`test-${started.db.name}`);
    await started.db.drop();
  }, options.afterAllTimeoutMs);
  return {
    get stack() {
      return get().stack;
    },
    get db() {
      return get().db;
    },
    get url() {
      return get().url;
    },
    sql: <T = any>(text: string, params: unknown[] = []) => get().db.query<T>(text, params),
  };
}

/**
 * Polls `probe` until it returns something other than undefined, and returns that.
 * `timeoutMs` (default 30 s) bounds the wait, `intervalMs` (default 250 ms) is the pause between probes.
 * Throws `timed out waiting for <what>` (what: a string, or a function called at the time-out) after the time-out.
 */
export async function waitFor<T>(
  what: string | (() => string),
  probe: () => Promise<T | undefined>,
  { timeoutMs = 30_000, intervalMs = 250 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Terminal states of a task on the status board. */
export const TASK_ENDED = ['SUCCESS', 'FAIL', 'REVOKED'];

/**
 * Polls GET `<url>/api/status/<taskId>` (with `headers`, default the API token) until it answers 200
 * with a terminal state (TASK_ENDED) and returns that status body. Options as waitFor (default time-out
 * 10 min, interval 250 ms: a status read is one small query, and a 1 s interval made every wait end up to 1 s after
 * the task); the time-out error shows the last status body.
 */
export async function waitForTask(
  url: string,
  taskId: string,
  { headers = { Authorization: `Bearer ${API_TOKEN}` }, ...wait }: { headers?: Record<string, string>; timeoutMs?: number; intervalMs?: number } = {},
): Promise<Record<string, any>> {
  let last: unknown;
  return waitFor(
    () => `task ${taskId} to end: ${JSON.stringify(last)}`,
    async () => {
      const res = await request(url).get(`/api/status/${taskId}`).set(headers);
      last = res.body;
      return res.status === 200 && TASK_ENDED.includes(res.body.state) ? (res.body as Record<string, any>) : undefined;
    },
    { timeoutMs: 10 * 60_000, intervalMs: 250, ...wait },
  );
}

/**
 * Waits for the alignment (or sweep) task a server's save enqueued, the newest created at or after `since`, to end
 * (spec "Setup-time alignment" 7), and returns its status body. `sql` reads `registry.tasks` of the test database.
 */
export async function waitForAlignment(
  url: string,
  sql: <R>(text: string, params?: unknown[]) => Promise<R[]>,
  since: Date,
  { timeoutMs = 120_000 }: { timeoutMs?: number } = {},
): Promise<Record<string, any>> {
  const id = await waitFor(
    'the alignment task of the saved server',
    async () => (await sql<{ id: string }>(`SELECT id FROM registry.tasks WHERE type IN ('alignment', 'sweep') AND created_at >= $1 ORDER BY created_at DESC LIMIT 1`, [since]))[0]?.id,
    { timeoutMs, intervalMs: 300 },
  );
  return waitForTask(url, id, { intervalMs: 500, timeoutMs: 10 * 60_000 });
}

/** Logs in and returns the raw session cookie (`polyphony_session=...`). */
export async function loginCookie(url: string, username = ADMIN.username, password = ADMIN.password): Promise<string> {
  const res = await request(url).post('/login').send({ username, password }).expect(200);
  const cookie = [res.headers['set-cookie']].flat().find((c?: string) => c?.startsWith('polyphony_session='));
  if (!cookie) throw new Error('no session cookie');
  return cookie.split(';')[0]!;
}

/** Signs a token with an arbitrary secret/algorithm (forgery tests). */
export function forgeToken(payload: object, secret: string, options: jwt.SignOptions = {}): string {
  return jwt.sign(payload, secret, { algorithm: 'HS256', ...options });
}

/**
 * Deletes the queues and exchanges a namespaced test stack declared on the shared RabbitMQ
 * (names start with `<ns>.` or `polyphony.<ns>`), so repeated CI runs leave no clutter.
 */
export async function deleteBrokerNamespace(ns: string): Promise<void> {
  const list = (what: string) =>
    new Promise<string[]>((resolve) =>
      execFile('rabbitmqctl', [what, '-q', '--no-table-headers', 'name'], { timeout: 30_000 }, (_e, out) => resolve(String(out ?? '').split('\n').map((l) => l.trim()).filter(Boolean))),
    );
  const [queues, exchanges] = await Promise.all([list('list_queues'), list('list_exchanges')]);
  const conn = await amqp.connect(testAmqpUrl());
  try {
    const ch = await conn.createChannel();
    for (const q of queues.filter((q) => q.startsWith(`${ns}.`))) await ch.deleteQueue(q);
    for (const x of exchanges.filter((x) => x.startsWith(`polyphony.${ns}`))) await ch.deleteExchange(x);
    await ch.close();
  } finally {
    await conn.close();
  }
}

/**
 * A supertest body parser that keeps the raw bytes (a backup archive, audio): `.buffer(true).parse(rawBody)`; the
 * answer's `body` is then a Buffer.
 */
export function rawBody(res: request.Response, cb: (err: Error | null, body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => cb(null, Buffer.concat(chunks)));
}

/**
 * Takes a backup through the API (`POST /api/backup` with `body`, e.g. `{passphrase}`), waits (up to 10 min) until
 * the list says it is `ready` and downloads its archive. Returns the list's row (`id`, `size_bytes`, ...), the
 * archive bytes and the download's content type.
 */
export async function takeBackup(url: string, headers: Record<string, string>, body: Record<string, unknown> = {}): Promise<{ row: { id: string; size_bytes: number; sha256: string }; archive: Buffer; contentType: string | undefined }> {
  const started = await request(url).post('/api/backup').set(headers).send(body).expect(202);
  const row = await waitFor('the backup to be ready', async () => {
    const list = (await request(url).get('/api/backup').set(headers).expect(200)).body.backups as Array<{ id: string; status: string; size_bytes: number; sha256: string }>;
    return list.find((x) => x.id === started.body.backup_id && x.status === 'ready');
  }, { timeoutMs: 10 * 60_000, intervalMs: 500 });
  const dl = await request(url).get(`/api/backup/${row.id}`).set(headers).buffer(true).parse(rawBody).expect(200);
  return { row, archive: dl.body as Buffer, contentType: dl.headers['content-type'] as string | undefined };
}
