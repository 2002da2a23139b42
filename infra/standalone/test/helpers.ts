import { execFile } from 'node:child_process';
import * as amqp from 'amqplib';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { createLogger, type Logger } from '@polyphony/platform';
import { createTestDatabase, testAmqpUrl, type TestDatabase } from '@polyphony/testkit';
import { startStack, type Stack } from '../src/stack';

export const ADMIN = { username: 'admin', password: 'admin-password-1' };
export const API_TOKEN = 'test-api-token-0123456789';

/** Starts the whole product (gateway + services, in-process bus) against a fresh test database. */
export async function startTestStack(
  env: Record<string, string | undefined> = {},
  db?: TestDatabase,
  options: { amqpUrl?: string; logger?: Logger } = {},
): Promise<{ stack: Stack; db: TestDatabase; url: string }> {
  const database = db ?? (await createTestDatabase());
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
