import http from 'node:http';
import { buildGateway, loadGatewayConfig } from '@polyphony/gateway';
import type { TestDatabase } from '@polyphony/testkit';
import request from 'supertest';
import type { Stack } from '../src/stack';
import { Capture } from './capture';
import { ADMIN, API_TOKEN, forgeToken, loginCookie, startTestStack } from './helpers';

/**
 * Security hardening (issue 18) through the gateway of the whole product: one test (or more) per
 * numbered weakness, each failing on the code before the hardening. Every log line and response is
 * captured and the last test scans them for every secret value the suite used.
 */
describe('security hardening (full stack, real PostgreSQL)', () => {
  const JWT_SECRET = 'suite-jwt-secret-4f1d0c9a8b7e6d5c';
  const USER = { username: 'plain-user', password: 'plain-user-password-7' };
  const MEDIA = { user: 'media-account-name', password: 'media-secret-password-3' };
  const capture = new Capture();
  const secrets = [ADMIN.password, API_TOKEN, JWT_SECRET, USER.password, MEDIA.password];
  let stack: Stack;
  let db: TestDatabase;
  let url: string;
  let api: ReturnType<typeof request>;
  let userCookie: string;
  const bearer = { Authorization: `Bearer ${API_TOKEN}` };
  const sql = (text: string, params: unknown[] = []) => db.query(text, params);

  beforeAll(async () => {
    ({ stack, db, url } = await startTestStack(
      { JWT_SECRET, LOGIN_RATE_ACCOUNT_MAX: '3', LOGIN_RATE_IP_MAX: '10', LOGIN_RATE_WINDOW_MINUTES: '1', SESSION_TTL_HOURS: '1' },
      undefined,
      { logger: capture.logger() },
    ));
    secrets.push(stack.internalSecret);
    api = capture.http(url);
    await api.post('/api/users').set(bearer).send({ ...USER, role: 'user' }).expect(201);
    userCookie = await loginCookie(url, USER.username, USER.password);
    await api
      .post('/api/servers')
      .set(bearer)
      .send({ name: 'Home', server_type: 'navidrome', creds: { url: 'http://127.0.0.1:9/music', user: MEDIA.user, password: MEDIA.password } })
      .expect(201);
  }, 180_000);
  afterAll(async () => {
    await stack?.stop();
    await db?.drop();
  }, 120_000);

  /** Error envelope of every 4xx/5xx: `{ error: message, code, request_id }`. */
  const expectErrorShape = (res: { body: unknown }, code?: string) => {
    const body = res.body as { error?: unknown; code?: unknown; request_id?: unknown };
    expect(typeof body.error).toBe('string');
    expect(typeof body.code).toBe('string');
    expect(typeof body.request_id).toBe('string');
    if (code) expect(body.code).toBe(code);
  };

  /** Raw request: headers announce `declared` bytes, only `sent` are written; resolves with the status (or 'timeout'). */
  const partialBody = (path: string, headers: Record<string, string>, declared: number, sent: number, waitMs = 4000) =>
    new Promise<number | 'timeout'>((resolve, reject) => {
      const u = new URL(path, url);
      const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(declared), ...headers } });
      const timer = setTimeout(() => {
        req.destroy();
        resolve('timeout');
      }, waitMs);
      req.on('response', (res) => {
        clearTimeout(timer);
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', (err) => (String(err).includes('socket hang up') || String(err).includes('ECONNRESET') ? undefined : reject(err)));
      req.write('{"a":"' + 'x'.repeat(Math.max(0, sent - 7)) + '"');
    });

  describe('1. bodies are read only after authentication, with per-route limits', () => {
    it('When an unauthenticated caller announces a 10 MB body on an API route, then it is refused with 401 before the body is read', async () => {
      expect(await partialBody('/api/servers', {}, 10_000_000, 1024)).toBe(401);
    });

    it('When a 64 kB body is posted to /login, then it is 413 in the error shape', async () => {
      const res = await api.post('/login').send({ username: 'x', password: 'y'.repeat(64 * 1024) }).expect(413);
      expectErrorShape(res, 'payload_too_large');
    });

    it('When /login announces a 10 MB body, then the answer is 413 without waiting for it', async () => {
      expect(await partialBody('/login', {}, 10_000_000, 1024)).toBe(413);
    });

    it('When an authenticated JSON body is over the route limit, then 413; a larger route takes more', async () => {
      const big = { item_id: 'x', padding: 'p'.repeat(100 * 1024) };
      expectErrorShape(await api.post('/api/servers/test').set(bearer).send(big).expect(413), 'payload_too_large');
      const playlist = await api.post('/api/create_playlist').set(bearer).send({ playlist_name: 'big', track_ids: ['a'], padding: 'p'.repeat(100 * 1024) });
      expect(playlist.status).not.toBe(413);
      expect(playlist.status).toBeLessThan(500);
    });
  });

  describe('2. login brute-force protection', () => {
    it('When one account fails more than the limit, then 429 with Retry-After, even with the right password, logged without the password', async () => {
      await api.post('/api/users').set(bearer).send({ username: 'target', password: 'target-password-1' }).expect(201);
      secrets.push('target-password-1');
      const client = { 'X-Forwarded-For': '198.51.100.1' };
      for (let i = 0; i < 3; i++) await api.post('/login').set(client).send({ username: 'target', password: `wrong-guess-${i}` }).expect(401);
      const blocked = await api.post('/login').set(client).send({ username: 'TARGET', password: 'wrong-guess-x' }).expect(429);
      expectErrorShape(blocked, 'rate_limited');
      const retryAfter = Number(blocked.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(60);
      await api.post('/login').set(client).send({ username: 'target', password: 'target-password-1' }).expect(429);
      await api.post('/auth').send({ user: 'target', password: 'target-password-1' }).expect(429);
      const line = capture.lines.find((l) => l.includes('login rate limit reached'));
      expect(line).toContain('"username":"TARGET"');
      expect(line).not.toContain('wrong-guess');
      // Another account from the same address is not affected.
      await loginCookie(url, USER.username, USER.password);
    });

    it('When one client address fails more than the limit across accounts, then it is refused; other addresses are not', async () => {
      const from = (ip: string) => ({ 'X-Forwarded-For': ip });
      for (let i = 0; i < 10; i++) await api.post('/login').set(from('203.0.113.7')).send({ username: `nobody-${i}`, password: 'nope-nope' }).expect(401);
      const res = await api.post('/login').set(from('203.0.113.7')).send({ username: USER.username, password: USER.password }).expect(429);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      await api.post('/login').set(from('203.0.113.8')).send({ username: USER.username, password: USER.password }).expect(200);
    });

    it('When a second gateway replica shares the database, then failures on both count toward one limit', async () => {
      const config = loadGatewayConfig({ DATABASE_URL: db.url, INTERNAL_SECRET: stack.internalSecret, PORT: '0', LOGIN_RATE_ACCOUNT_MAX: '3', LOGIN_RATE_WINDOW_MINUTES: '1', JWT_SECRET, API_TOKEN });
      const replica = buildGateway(config, { logger: capture.logger(), targets: stack.peers });
      await replica.start();
      const port = await replica.listen(0, '127.0.0.1');
      try {
        await api.post('/api/users').set(bearer).send({ username: 'shared-target', password: 'shared-target-pw-1' }).expect(201);
        secrets.push('shared-target-pw-1');
        const client = { 'X-Forwarded-For': '198.51.100.2' };
        await api.post('/login').set(client).send({ username: 'shared-target', password: 'bad-1' }).expect(401);
        await request(`http://127.0.0.1:${port}`).post('/login').send({ username: 'shared-target', password: 'bad-2' }).expect(401);
        await api.post('/login').set(client).send({ username: 'shared-target', password: 'bad-3' }).expect(401);
        await request(`http://127.0.0.1:${port}`).post('/login').send({ username: 'shared-target', password: 'bad-4' }).expect(429);
      } finally {
        await replica.stop();
      }
    });
  });

  describe('3. malformed input is a 4xx in the error shape, never a 5xx', () => {
    const cases: Array<[string, () => request.Test]> = [
      ['NUL in a query parameter', () => api.get('/api/similar_tracks?item_id=a%00b').set(bearer)],
      ['NUL in a path segment', () => api.put('/api/users/a%00b/password').set(bearer).send({ password: 'password-123' })],
      ['NUL in a JSON body', () => api.post('/api/users').set(bearer).send({ username: 'nul\u0000user', password: 'password-123' })],
      ['NUL in a search', () => api.get('/api/search_tracks?search_query=ab%00cd').set(bearer)],
      ['malformed %-escape in the path', () => api.get('/api/servers/%E0%A4%A').set(bearer)],
      ['malformed %-escape in a static path', () => api.get('/%E0%A4%A.js')],
      ['bogus charset', () => api.post('/api/alchemy').set(bearer).set('Content-Type', 'application/json; charset=bogus-8').send('{"items":[]}')],
      ['bogus content encoding', () => api.post('/api/alchemy').set(bearer).set('Content-Type', 'application/json').set('Content-Encoding', 'bogus').send('{"items":[]}')],
      ['non-UUID user id (36 characters)', () => api.put(`/api/users/${'-'.repeat(36)}/password`).set(bearer).send({ password: 'password-123' })],
      ['non-UUID user id on delete', () => api.delete('/api/users/not-a-uuid').set(bearer).send({})],
      ['10,000-deep nested JSON', () => api.post('/api/alchemy').set(bearer).set('Content-Type', 'application/json').send('['.repeat(10_000) + ']'.repeat(10_000))],
      ['a 10 kB server parameter', () => api.get(`/api/similar_tracks?item_id=1&server=${'s'.repeat(10_000)}`).set(bearer)],
      ['a 10 kB server in the body', () => api.post('/api/alchemy').set(bearer).send({ items: [{ id: 'a', op: 'ADD' }], server: 's'.repeat(10_000) })],
      ['malformed JSON', () => api.post('/api/alchemy').set(bearer).set('Content-Type', 'application/json').send('{"items": [')],
      ['a JSON string body', () => api.post('/api/alchemy').set(bearer).set('Content-Type', 'application/json').send('"items"')],
      // Found by the fuzz suite: zod's number coercion calls Number() on the value, and an object whose
      // toString is a string makes that throw a TypeError inside zod (was a 500).
      ['a number field holding an object with a string toString', () => api.post('/api/sonic_fingerprint/generate').set(bearer).send({ n: [[], { toString: 'x' }] })],
      ['a body number holding an object whose toString and valueOf are strings', () => api.post('/chat/api/chatPlaylist').set(bearer).send({ userInput: 'calm', n: { toString: 'x', valueOf: 'y' } })],
      ['a text/plain body from a bearer caller', () => api.post('/api/alchemy').set(bearer).set('Content-Type', 'text/plain').send('items')],
    ];
    it.each(cases)('When the request has %s, then it is a 4xx in the error shape', async (_name, send) => {
      const res = await send();
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expectErrorShape(res);
    });

    it('When the request line is 100 kB (a huge server parameter), then it is 431 in the error shape', async () => {
      const res = await api.get(`/api/similar_tracks?item_id=1&server=${'s'.repeat(100_000)}`).set(bearer);
      expect(res.status).toBe(431);
      expectErrorShape(res, 'headers_too_large');
    });

    it('When the request line fits the gateway but not the service it is forwarded to (about 15 kB), then it is still 431 in the error shape', async () => {
      // Regression (fuzzing at 1,000 cases per route): the gateway forwards the URL plus its own
      // identity headers; the service's HTTP parser overflowed and answered a bare 431 with no body.
      for (const size of [15_000, 15_500, 16_000, 16_300]) {
        const res = await api.get(`/api/similar_tracks?item_id=1&title=${'t'.repeat(size)}`).set(bearer);
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expectErrorShape(res);
      }
    });
  });

  describe('6. non-admins see only what the UI needs', () => {
    it('When a non-admin reads /api/config, then the media-server URL and user are not in it; a session admin sees them (never the secret)', async () => {
      const asUser = await api.get('/api/config').set('Cookie', userCookie).expect(200);
      expect(asUser.text).not.toContain('127.0.0.1:9');
      expect(asUser.text).not.toContain(MEDIA.user);
      const asAdmin = await api.get('/api/config').set('Cookie', await loginCookie(url)).expect(200);
      expect(asAdmin.text).toContain(MEDIA.user);
      expect(asAdmin.text).not.toContain(MEDIA.password);
    });

    it('When a non-admin asks the fingerprint for another media-server user without that user’s secret, then 403', async () => {
      const res = await api.get(`/api/sonic_fingerprint/generate?navidrome_user=${MEDIA.user}`).set('Cookie', userCookie).expect(403);
      expectErrorShape(res, 'forbidden');
      expect(res.text).not.toContain(MEDIA.user);
    });
  });

  describe('7. sessions end', () => {
    it('When a user logs out, then a saved copy of the cookie is refused', async () => {
      const cookie = await loginCookie(url, USER.username, USER.password);
      await api.get('/api/me').set('Cookie', cookie).expect(200);
      await api.post('/logout').set('Cookie', cookie).expect(200);
      await api.get('/api/me').set('Cookie', cookie).expect(401);
    });

    it('When a token signed with the real secret has no exp, then it is refused', async () => {
      const cookie = await loginCookie(url, USER.username, USER.password);
      const claims = JSON.parse(Buffer.from(cookie.split('=')[1]!.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
      const { exp: _exp, iat: _iat, ...rest } = claims;
      const noExp = forgeToken({ ...rest, iat_ms: Date.now() + 1000 }, JWT_SECRET, { noTimestamp: true });
      await api.get('/api/me').set('Cookie', `polyphony_session=${noExp}`).expect(401);
    });

    it('When the session has expired or passed its absolute lifetime, then it is refused', async () => {
      const a = await loginCookie(url, USER.username, USER.password);
      const b = await loginCookie(url, USER.username, USER.password);
      const sid = (c: string) => (JSON.parse(Buffer.from(c.split('=')[1]!.split('.')[1]!, 'base64url').toString()) as { sid: string }).sid;
      await sql(`UPDATE auth.sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [sid(a)]);
      await sql(`UPDATE auth.sessions SET max_expires_at = now() - interval '1 second' WHERE id = $1`, [sid(b)]);
      await api.get('/api/me').set('Cookie', a).expect(401);
      await api.get('/api/me').set('Cookie', b).expect(401);
    });

    it('When a session is used in the second half of its lifetime, then it is extended and a fresh cookie is set', async () => {
      const cookie = await loginCookie(url, USER.username, USER.password);
      const { sid } = JSON.parse(Buffer.from(cookie.split('=')[1]!.split('.')[1]!, 'base64url').toString()) as { sid: string };
      await sql(`UPDATE auth.sessions SET expires_at = now() + interval '10 minutes' WHERE id = $1`, [sid]);
      const res = await api.get('/api/me').set('Cookie', cookie).expect(200);
      const fresh = [res.headers['set-cookie']].flat().find((c?: string) => c?.startsWith('polyphony_session='));
      expect(fresh).toBeDefined();
      const [row] = await sql(`SELECT extract(epoch from expires_at - now()) AS left FROM auth.sessions WHERE id = $1`, [sid]);
      expect(Number(row.left)).toBeGreaterThan(50 * 60);
      await api.get('/api/me').set('Cookie', fresh!.split(';')[0]!).expect(200);
    });

    it('When an admin changes another user’s password or role, then that user’s sessions end', async () => {
      const created = await api.post('/api/users').set(bearer).send({ username: 'victim-7', password: 'victim-password-7' }).expect(201);
      secrets.push('victim-password-7', 'victim-password-8');
      const cookie = await loginCookie(url, 'victim-7', 'victim-password-7');
      await api.put(`/api/users/${created.body.id}/password`).set(bearer).send({ password: 'victim-password-8' }).expect(200);
      await api.get('/api/me').set('Cookie', cookie).expect(401);
      const again = await loginCookie(url, 'victim-7', 'victim-password-8');
      await sql(`UPDATE auth.service_users SET role = 'admin' WHERE id = $1`, [created.body.id]);
      await api.get('/api/me').set('Cookie', again).expect(401);
    });
  });

  describe('8. CSRF', () => {
    it('When a cookie caller posts text/plain or a form, then 403; JSON from the same origin passes', async () => {
      const cookie = await loginCookie(url);
      const plain = await api.post('/api/users').set('Cookie', cookie).set('Content-Type', 'text/plain').send('{"username":"csrf-1","password":"password-123"}').expect(403);
      expectErrorShape(plain, 'csrf_rejected');
      await api.post('/api/users').set('Cookie', cookie).type('form').send({ username: 'csrf-2', password: 'password-123' }).expect(403);
      await api.post('/api/analysis/start').set('Cookie', cookie).set('Content-Type', 'multipart/form-data; boundary=x').send('--x--').expect(403);
      const same = await api.post('/api/users').set('Cookie', cookie).set('Origin', url).set('Sec-Fetch-Site', 'same-origin').send({ username: 'csrf-3', password: 'password-123' });
      expect(same.status).toBe(400); // reached the handler: current_password is required
    });

    it('When a cookie caller’s mutation comes from another origin, then 403; bearer callers are exempt', async () => {
      const cookie = await loginCookie(url);
      await api.post('/api/users').set('Cookie', cookie).set('Origin', 'https://evil.example').send({ username: 'csrf-4', password: 'password-123' }).expect(403);
      await api.post('/api/users').set('Cookie', cookie).set('Sec-Fetch-Site', 'cross-site').send({ username: 'csrf-5', password: 'password-123' }).expect(403);
      await api.post('/api/users').set(bearer).set('Origin', 'https://evil.example').send({ username: 'csrf-6', password: 'password-123' }).expect(201);
    });

    it('When credentials are posted to /login from another origin, then 403; the login page’s own form still works', async () => {
      await api.post('/login').set('Origin', 'https://evil.example').send(USER).expect(403);
      const form = await api.post('/login').set('Origin', url).type('form').send(USER).expect(303);
      expect([form.headers['set-cookie']].flat()[0]).toMatch(/^polyphony_session=.*SameSite=Strict/i);
    });
  });

  describe('9. security headers', () => {
    it('When the UI, the login page and the docs page are served, then CSP, frame and nosniff headers are set and no page has an inline script', async () => {
      const index = await api.get('/').expect(200);
      const mainJs = /src="(\/assets\/main-[\w-]+\.js)"/.exec(index.text)?.[1];
      expect(mainJs).toBeDefined();
      for (const path of ['/', '/login', '/api/docs', mainJs!]) {
        const res = await api.get(path).expect(200);
        const csp = String(res.headers['content-security-policy']);
        expect(csp).toContain("script-src 'self'");
        expect(csp).toContain("frame-ancestors 'none'");
        expect(csp).toContain("object-src 'none'");
        expect(res.headers['x-frame-options']).toBe('DENY');
        expect(res.headers['x-content-type-options']).toBe('nosniff');
        if (String(res.headers['content-type']).includes('html')) {
          expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
          expect(res.text).not.toMatch(/<style/i);
          expect(res.text).not.toMatch(/\son[a-z]+=/i);
        }
      }
    });
  });

  describe('9b. web UI caching', () => {
    it('When the UI is served, then the pages are no-cache and the hashed assets are cached for a year (immutable); an unknown asset is a 404', async () => {
      for (const page of ['/', '/login']) expect((await api.get(page).expect(200)).headers['cache-control']).toBe('no-cache');
      const index = await api.get('/').expect(200);
      const assets = [...index.text.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
      expect(assets.length).toBeGreaterThanOrEqual(2);
      for (const a of assets) {
        const res = await api.get(a).expect(200);
        expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
        expect(a).toMatch(/-[A-Z0-9]{8}\.(js|css)$/);
      }
      await api.get('/assets/main-NOTTHERE.js').expect(404);
    });
  });

  describe('10. metrics', () => {
    it('When /metrics is called without the bearer token, then 401; with it, 200', async () => {
      expectErrorShape(await api.get('/metrics').expect(401), 'unauthorized');
      await api.get('/metrics').set('Cookie', userCookie).expect(401);
      expect((await api.get('/metrics').set(bearer).expect(200)).text).toMatch(/http_request_duration_seconds/);
    });
  });

  describe('11. client aborts', () => {
    it('When a client aborts while sending a body, then it is logged at debug, not as an error', async () => {
      const before = capture.lines.length;
      await new Promise<void>((resolve) => {
        const u = new URL('/api/alchemy', url);
        const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { ...bearer, 'content-type': 'application/json', 'content-length': '5000' } });
        req.on('error', () => undefined);
        req.write('{"items":[');
        setTimeout(() => {
          req.destroy();
          setTimeout(resolve, 500);
        }, 300);
      });
      const lines = capture.lines.slice(before).map((l) => JSON.parse(l) as { level: string; message: string });
      expect(lines.filter((l) => l.level === 'error')).toEqual([]);
      expect(lines.some((l) => l.level === 'debug' && l.message === 'client aborted the request')).toBe(true);
    });
  });

  describe('12. the stored API token', () => {
    it('When the API token is stored, then only its hash is in the database', async () => {
      const [row] = await sql(`SELECT value FROM auth.settings WHERE key = 'API_TOKEN'`);
      expect(row.value).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(row.value).not.toContain(API_TOKEN);
    });
  });

  it('When the suite is over, then no secret value it used appears in any log line or response', () => {
    expect(capture.lines.length).toBeGreaterThan(50);
    expect(capture.responses.length).toBeGreaterThan(50);
    expect(capture.leaks(secrets)).toEqual([]);
  });
});

describe('proxies and metrics port (full stack, TRUST_PROXY unset, METRICS_PORT set)', () => {
  let stack: Stack;
  let db: TestDatabase;
  let url: string;

  beforeAll(async () => {
    ({ stack, db, url } = await startTestStack({ TRUST_PROXY: undefined, METRICS_PORT: '0', LOGIN_RATE_IP_MAX: '3' }));
  }, 180_000);
  afterAll(async () => {
    await stack?.stop();
    await db?.drop();
  }, 120_000);

  it('When X-Forwarded-* come from an address not in TRUST_PROXY, then they are ignored: no Secure cookie, no way around the address limit', async () => {
    const res = await request(url).post('/login').set('X-Forwarded-Proto', 'https').send(ADMIN).expect(200);
    expect([res.headers['set-cookie']].flat()[0]).not.toMatch(/Secure/i);
    for (let i = 0; i < 3; i++) await request(url).post('/login').set('X-Forwarded-For', `198.51.100.${i + 10}`).send({ username: `x-${i}`, password: 'wrong-wrong' }).expect(401);
    await request(url).post('/login').set('X-Forwarded-For', '198.51.100.99').send(ADMIN).expect(429);
  });

  it('When METRICS_PORT is set, then /metrics is served there and not on the public port', async () => {
    await request(url).get('/metrics').set('Authorization', `Bearer ${API_TOKEN}`).expect(404);
    const port = stack.gateway.metricsPort;
    expect(port).toBeGreaterThan(0);
    const m = await request(`http://127.0.0.1:${port}`).get('/metrics').expect(200);
    expect(m.text).toMatch(/http_request_duration_seconds/);
  });
});
