import request from 'supertest';
import { ADMIN, API_TOKEN, loginCookie, useTestStack } from './helpers';

/**
 * Issue 30: every error answer, from the gateway or from a service, is one envelope whose `error` is the
 * human-readable message clients print, with the machine `code` and the `request_id` beside it (and
 * `details` for a validation failure). One test per error kind, through the gateway as a client calls it.
 */
describe('error envelope (full stack, real PostgreSQL)', () => {
  const app = useTestStack({ LOGIN_RATE_ACCOUNT_MAX: '2', LOGIN_RATE_WINDOW_MINUTES: '1' });
  const bearer = { authorization: `Bearer ${API_TOKEN}` };

  /** Checks the envelope of `res`: status, code, a non-empty message, the request id of the header. */
  const expectEnvelope = (res: request.Response, status: number, code: string): Record<string, unknown> => {
    expect([res.status, res.body.code]).toEqual([status, code]);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(typeof res.body.error).toBe('string');
    expect(res.body.error.length).toBeGreaterThan(0);
    expect(res.body.request_id).toBe(res.headers['x-request-id']);
    return res.body as Record<string, unknown>;
  };

  it('When a query fails validation on the API-token path, then 400 validation_failed names the field in `error` and lists the issues in `details`', async () => {
    const res = await request(app.url).get('/api/similar_tracks?item_id=x&n=0').set(bearer).set('x-request-id', 'env-400');
    const body = expectEnvelope(res, 400, 'validation_failed');
    expect(body.request_id).toBe('env-400');
    expect(body.error).toMatch(/n/);
    expect(body.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: ['n'], message: expect.any(String) })]));
  });

  it('When a JSON body fails validation (cookie caller), then 400 validation_failed with details', async () => {
    const cookie = await loginCookie(app.url);
    const res = await request(app.url).post('/api/users').set('cookie', cookie).send({ username: 'x' });
    expect(expectEnvelope(res, 400, 'validation_failed').details).toEqual(expect.any(Array));
  });

  it('When the caller has no or a bad credential, then 401 unauthorized', async () => {
    expectEnvelope(await request(app.url).get('/api/servers'), 401, 'unauthorized');
    expectEnvelope(await request(app.url).get('/api/similar_tracks?item_id=1').set('authorization', 'Bearer wrong-token-000'), 401, 'unauthorized');
  });

  it('When a user calls an admin route, then 403 forbidden', async () => {
    const admin = await loginCookie(app.url);
    await request(app.url).post('/api/users').set('cookie', admin).send({ username: 'listener', password: 'listener-password-1', role: 'user', current_password: ADMIN.password }).expect(201);
    const user = await loginCookie(app.url, 'listener', 'listener-password-1');
    const res = await request(app.url).get('/api/config/settings').set('cookie', user);
    expect(expectEnvelope(res, 403, 'forbidden').error).toBe('Admin role required');
  });

  it('When the path is unknown, then 404 not_found; when the method is wrong, then 405 method_not_allowed with Allow', async () => {
    expectEnvelope(await request(app.url).get('/api/no_such_route').set(bearer), 404, 'not_found');
    const wrong = await request(app.url).delete('/api/similar_tracks').set(bearer);
    expectEnvelope(wrong, 405, 'method_not_allowed');
    expect(wrong.headers.allow).toBe('GET, HEAD');
  });

  it('When a service answers not found (an unknown anchor), then the envelope comes through the gateway unchanged', async () => {
    const res = await request(app.url).get('/api/anchors/987654').set(bearer);
    expect(expectEnvelope(res, 404, 'not_found').error).toMatch(/not found/);
  });

  it('When a body is larger than the route allows, then 413 payload_too_large; when it is not JSON, then 415', async () => {
    const big = await request(app.url).post('/api/clustering/start').set(bearer).set('content-type', 'application/json').send(JSON.stringify({ pad: 'x'.repeat(20_000) }));
    expectEnvelope(big, 413, 'payload_too_large');
    const form = await request(app.url).post('/api/clustering/start').set(bearer).set('content-type', 'text/plain').send('hello');
    expectEnvelope(form, 415, 'unsupported_media_type');
  });

  it('When logins fail past the per-account limit, then 429 rate_limited with Retry-After', async () => {
    const wrong = { username: 'limited-account', password: 'wrong-password-1' };
    for (let i = 0; i < 2; i++) await request(app.url).post('/login').send(wrong).expect(401);
    const res = await request(app.url).post('/login').send(wrong);
    expect(expectEnvelope(res, 429, 'rate_limited').error).toMatch(/Too many failed login attempts/);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('When the request line is malformed, then 400 malformed_request', async () => {
    expectEnvelope(await request(app.url).get('/api/similar_tracks%E0%A4%A').set(bearer), 400, 'malformed_request');
  });
});
