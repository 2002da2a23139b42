import { execFile } from 'node:child_process';
import * as amqp from 'amqplib';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { createLogger } from '@polyphony/platform';
import { createTestDatabase, testAmqpUrl, type TestDatabase } from '@polyphony/testkit';
import { startStack, type Stack } from '../src/stack';

export const ADMIN = { username: 'admin', password: 'admin-password-1' };
export const API_TOKEN = 'test-api-token-0123456789';

/** Starts the whole product (gateway + services, in-process bus) against a fresh test database. */
export async function startTestStack(env: Record<string, string | undefined> = {}, db?: TestDatabase, options: { amqpUrl?: string } = {}): Promise<{ stack: Stack; db: TestDatabase; url: string }> {
  const database = db ?? (await createTestDatabase());
  const stack = await startStack({
    databaseUrl: database.url,
    amqpUrl: options.amqpUrl,
    busNamespace: options.amqpUrl ? `test-${database.name}` : undefined,
    port: 0,
    host: '127.0.0.1',
    env: { SERVICE_USER: ADMIN.username, SERVICE_PASSWORD: ADMIN.password, API_TOKEN, ...env },
    logger: createLogger({ service: 'test', level: process.env.LOG_LEVEL ?? 'error' }),
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
  const run = (args: string[]) => new Promise<string>((resolve) => execFile('rabbitmqctl', args, { timeout: 30_000 }, (_e, out) => resolve(String(out ?? ''))));
  const queues = (await run(['list_queues', '-q', '--no-table-headers', 'name'])).split('\n').map((l) => l.trim()).filter((q) => q.startsWith(`${ns}.`));
  for (const q of queues) await run(['delete_queue', q]);
  const exchanges = (await run(['list_exchanges', '-q', '--no-table-headers', 'name'])).split('\n').map((l) => l.trim()).filter((x) => x.startsWith(`polyphony.${ns}`));
  // rabbitmqctl has no delete_exchange; rabbitmqadmin may be absent, so exchanges go through AMQP.
  if (exchanges.length) {
    const conn = await amqp.connect(testAmqpUrl());
    const ch = await conn.createChannel();
    for (const x of exchanges) await ch.deleteExchange(x);
    await conn.close();
  }
}
