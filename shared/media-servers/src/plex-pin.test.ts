import { NotFoundError } from './errors';
import { checkPin, createPin } from './plex-pin';
import { sendJson, type Stub, stubsClosedAfterEach } from './__tests__/stub-server';

describe('Plex PIN linking', () => {
  let stub: Stub | undefined;
  const startStub = stubsClosedAfterEach();

  it('When creating a PIN, then plex.tv gets strong=false with product and client headers and the code comes back', async () => {
    stub = await startStub((req, res) => sendJson(res, {
      id: 308667304, code: '7RQZ', product: 'polyphony', trusted: false, clientIdentifier: req.headers['x-plex-client-identifier'],
      expiresIn: 900, createdAt: '2024-07-16T17:03:05Z', expiresAt: '2999-07-16T17:18:05Z', authToken: null,
    }, 201));
    const pin = await createPin('client-abc', stub.url);
    expect(pin).toEqual({ id: '308667304', code: '7RQZ', linkUrl: `${stub.url}/link`, expiresAt: '2999-07-16T17:18:05Z', expiresIn: 900 });
    const req = stub.requests[0]!;
    expect([req.method, req.path, req.body]).toEqual(['POST', '/api/v2/pins', 'strong=false']);
    expect(req.headers['x-plex-client-identifier']).toBe('client-abc');
    expect(req.headers['x-plex-product']).toBe('polyphony');
    expect(req.headers.accept).toBe('application/json');
  });

  it('When polling, then pending gives no token, linked gives the token, past expiry says expired, unknown PIN is NotFound', async () => {
    let linked = false;
    stub = await startStub((req, res) => {
      if (req.path === '/api/v2/pins/1') return sendJson(res, { id: 1, code: 'AB', authToken: linked ? 'acct-token' : null, expiresAt: '2999-01-01T00:00:00Z' });
      if (req.path === '/api/v2/pins/2') return sendJson(res, { id: 2, code: 'CD', authToken: null, expiresAt: '2000-01-01T00:00:00Z' });
      return sendJson(res, { errors: [{ code: 1020, message: 'Not Found' }] }, 404);
    });
    await expect(checkPin('1', 'cid', stub.url)).resolves.toEqual({ expiresAt: '2999-01-01T00:00:00Z' });
    linked = true;
    await expect(checkPin(1, 'cid', stub.url)).resolves.toEqual({ token: 'acct-token', expiresAt: '2999-01-01T00:00:00Z' });
    await expect(checkPin('2', 'cid', stub.url)).resolves.toEqual({ expiresAt: '2000-01-01T00:00:00Z', expired: true });
    await expect(checkPin('3', 'cid', stub.url)).rejects.toBeInstanceOf(NotFoundError);
    expect(stub.requests.every((r) => r.headers['x-plex-client-identifier'] === 'cid')).toBe(true);
  });
});
