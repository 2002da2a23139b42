import type { TestDatabase } from '@polyphony/testkit';
import { Capture } from './capture';
import { ADMIN, createMigratedTestDatabase, loginCookie, startTestStack } from './helpers';

/**
 * Secret rotation across restarts (issue 18 item 12): an API_TOKEN or JWT_SECRET given in the
 * environment wins over the stored one at every start (an operator rotating a Kubernetes Secret),
 * the log says so without the value, the API token is stored only as a hash, and sessions signed
 * with a key still listed in JWT_SECRET_PREVIOUS survive the rotation.
 */
describe('secret rotation across restarts (full stack, real PostgreSQL)', () => {
  const T1 = 'first-api-token-0f9e8d7c6b5a';
  const T2 = 'second-api-token-1a2b3c4d5e6f';
  const LEGACY = 'legacy-plaintext-token-998877';
  const K1 = 'first-jwt-secret-aaaaaaaaaaaaaaaa';
  const K2 = 'second-jwt-secret-bbbbbbbbbbbbbbbb';
  const capture = new Capture();
  let db: TestDatabase;
  const start = (env: Record<string, string | undefined>) => startTestStack({ API_TOKEN: undefined, JWT_SECRET: undefined, ...env }, db, { logger: capture.logger() });
  const storedToken = async () => (await db.query(`SELECT value FROM auth.settings WHERE key = 'API_TOKEN'`))[0]?.value as string | undefined;

  beforeAll(async () => {
    db = await createMigratedTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('When API_TOKEN and JWT_SECRET are rotated in the environment, then the old token is 401, the new one 200, and sessions under a still-listed key survive', async () => {
    const a = await start({ API_TOKEN: T1, JWT_SECRET: K1 });
    let cookie: string;
    try {
      const api = capture.http(a.url);
      await api.get('/api/me').set('Authorization', `Bearer ${T1}`).expect(200);
      cookie = await loginCookie(a.url);
      expect(await storedToken()).toMatch(/^sha256:[0-9a-f]{64}$/);
    } finally {
      await a.stack.stop();
    }

    const linesBefore = capture.lines.length;
    const b = await start({ API_TOKEN: T2, JWT_SECRET: K2, JWT_SECRET_PREVIOUS: K1 });
    try {
      const api = capture.http(b.url);
      await api.get('/api/me').set('Authorization', `Bearer ${T1}`).expect(401);
      await api.get('/api/me').set('Authorization', `Bearer ${T2}`).expect(200);
      await api.get('/api/me').set('Cookie', cookie).expect(200);
      const startLog = capture.lines.slice(linesBefore).join('\n');
      expect(startLog).toContain('API_TOKEN from the environment replaces the stored token');
      expect(startLog).toContain('JWT_SECRET from the environment replaces the stored secret');
    } finally {
      await b.stack.stop();
    }

    // Without the environment values: the stored (rotated) ones stay; K1 is no longer listed.
    const c = await start({});
    try {
      const api = capture.http(c.url);
      await api.get('/api/me').set('Authorization', `Bearer ${T2}`).expect(200);
      await api.get('/api/me').set('Authorization', `Bearer ${T1}`).expect(401);
      await api.get('/api/me').set('Cookie', cookie).expect(401);
      await loginCookie(c.url);
    } finally {
      await c.stack.stop();
    }
  }, 300_000);

  it('When an older version stored the API token in plain text, then it keeps working and is replaced by its hash', async () => {
    await db.query(`UPDATE auth.settings SET value = $1 WHERE key = 'API_TOKEN'`, [LEGACY]);
    const s = await start({});
    try {
      await capture.http(s.url).get('/api/me').set('Authorization', `Bearer ${LEGACY}`).expect(200);
      const stored = await storedToken();
      expect(stored).toMatch(/^sha256:/);
      expect(stored).not.toContain(LEGACY);
    } finally {
      await s.stack.stop();
    }
  }, 120_000);

  it('When the suite is over, then no secret value appears in any log line or response', () => {
    expect(capture.lines.length).toBeGreaterThan(10);
    expect(capture.leaks([T1, T2, LEGACY, K1, K2, ADMIN.password])).toEqual([]);
  });
});
