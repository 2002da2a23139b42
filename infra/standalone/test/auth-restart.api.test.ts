import request from 'supertest';
import type { TestDatabase } from '@polyphony/testkit';
import { ADMIN, createMigratedTestDatabase, loginCookie, startTestStack } from './helpers';

/** Rules that need a restart of the stack on the same database. */
describe('gateway authentication across restarts', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createMigratedTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });
  const sql = (text: string, params: unknown[] = []) => db.query(text, params);

  it('When JWT_SECRET is configured, then sessions survive a restart; when it is not, they end', async () => {
    const withSecret = await createMigratedTestDatabase();
    try {
      const a = await startTestStack({ JWT_SECRET: 'a-fixed-secret-for-the-test-0123456789' }, withSecret);
      const cookie = await loginCookie(a.url);
      await a.stack.stop();
      const b = await startTestStack({}, withSecret);
      await request(b.url).get('/api/me').set('Cookie', cookie).expect(200);
      await b.stack.stop();
    } finally {
      await withSecret.drop();
    }
    const a = await startTestStack({}, db);
    const cookie = await loginCookie(a.url);
    await request(a.url).get('/api/me').set('Cookie', cookie).expect(200);
    await a.stack.stop();
    const b = await startTestStack({}, db);
    await request(b.url).get('/api/me').set('Cookie', cookie).expect(401);
    await b.stack.stop();
  });

  it('When no admin exists (recovery), then the Setup API is open until an admin is created, then closed', async () => {
    // Admin recovery per the spec: remove the admin seed entries and every admin row, restart.
    await sql(`DELETE FROM auth.settings WHERE key IN ('SERVICE_USER', 'SERVICE_PASSWORD')`);
    await sql(`DELETE FROM auth.service_users WHERE role = 'admin'`);
    const s = await startTestStack({ SERVICE_USER: undefined, SERVICE_PASSWORD: undefined }, db);
    try {
      await request(s.url).get('/api/servers').expect(200);
      await request(s.url).get('/api/users').expect(401);
      await request(s.url).post('/api/setup/admin').send({ username: 'newadmin', password: 'new-admin-password' }).expect(201);
      await request(s.url).get('/api/servers').expect(401);
      await request(s.url).post('/api/setup/admin').send({ username: 'second', password: 'second-password' }).expect(401);
      const cookie = await loginCookie(s.url, 'newadmin', 'new-admin-password');
      await request(s.url).get('/api/servers').set('Cookie', cookie).expect(200);
    } finally {
      await s.stack.stop();
    }
  });

  it('When a fresh install starts without SERVICE_USER/SERVICE_PASSWORD, then it refuses to start', async () => {
    const fresh = await createMigratedTestDatabase();
    try {
      await expect(startTestStack({ SERVICE_USER: undefined, SERVICE_PASSWORD: undefined }, fresh)).rejects.toThrow(/SERVICE_USER and SERVICE_PASSWORD/);
    } finally {
      await fresh.drop();
    }
  });

  it('When AUTH_ENABLED=false on first start, then every caller is admin-equivalent', async () => {
    const open = await createMigratedTestDatabase();
    try {
      const s = await startTestStack({ AUTH_ENABLED: 'false' }, open);
      const me = await request(s.url).get('/api/me').expect(200);
      expect(me.body).toMatchObject({ role: 'admin', via: 'anonymous' });
      await s.stack.stop();
    } finally {
      await open.drop();
    }
  });
});
void ADMIN;
