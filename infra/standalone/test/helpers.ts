import jwt from 'jsonwebtoken';
import request from 'supertest';
import { createLogger } from '@polyphony/platform';
import { createTestDatabase, type TestDatabase } from '@polyphony/testkit';
import { startStack, type Stack } from '../src/stack';

export const ADMIN = { username: 'admin', password: 'admin-password-1' };
export const API_TOKEN = 'test-api-token-0123456789';

/** Starts the whole product (gateway + services, in-process bus) against a fresh test database. */
export async function startTestStack(env: Record<string, string | undefined> = {}, db?: TestDatabase): Promise<{ stack: Stack; db: TestDatabase; url: string }> {
  const database = db ?? (await createTestDatabase());
  const stack = await startStack({
    databaseUrl: database.url,
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
