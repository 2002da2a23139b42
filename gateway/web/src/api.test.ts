import { featureRoutes, serverRoutes } from '@polyphony/contracts';
import { ApiError, call, setServerSource, setUnauthorizedHandler } from './api';

describe('typed API client', () => {
  const realFetch = globalThis.fetch;
  let calls: Array<{ url: string; init: RequestInit }> = [];
  const answer = (status: number, body: unknown) => {
    globalThis.fetch = (async (url: string, init: RequestInit) => {
      calls.push({ url, init });
      return new Response(body === undefined ? '' : JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
    }) as typeof fetch;
  };
  beforeEach(() => {
    calls = [];
  });
  afterAll(() => {
    globalThis.fetch = realFetch;
    setServerSource(() => undefined);
    setUnauthorizedHandler(() => undefined);
  });

  it('When a scoped call is made, then the selected server goes into the query and the JSON answer comes back parsed', async () => {
    setServerSource(() => 'srv-2');
    answer(200, [{ item_id: '1', distance: 0.1 }]);
    const rows = await call(featureRoutes.similarTracks, { query: { item_id: '9', n: 3 } }, { scoped: true });
    expect(rows[0]!.item_id).toBe('1');
    expect(calls[0]!.url).toBe('/api/similar_tracks?item_id=9&n=3&server=srv-2');
    expect(calls[0]!.init.method).toBe('GET');
    expect(calls[0]!.init.credentials).toBe('same-origin');
  });

  it("When the API refuses, then the error carries the API's message and code; a 401 calls the login handler unless allowed", async () => {
    let sentToLogin = 0;
    setUnauthorizedHandler(() => sentToLogin++);
    answer(409, { error: 'The default server cannot be deleted', code: 'default_server', request_id: 'r1' });
    await expect(call(serverRoutes.remove, { params: { id: 's1' } })).rejects.toEqual(expect.objectContaining({ status: 409, code: 'default_server', message: 'The default server cannot be deleted' }));
    expect(calls[0]!.init.method).toBe('DELETE');
    answer(401, { error: 'Authentication required', code: 'unauthorized', request_id: 'r2' });
    await expect(call(serverRoutes.list, {})).rejects.toBeInstanceOf(ApiError);
    expect(sentToLogin).toBe(1);
    await expect(call(serverRoutes.list, {}, { allow401: true })).rejects.toBeInstanceOf(ApiError);
    expect(sentToLogin).toBe(1);
  });

  it('When a POST is sent, then its body is JSON with the content type the gateway requires; an empty answer is null', async () => {
    answer(202, undefined);
    expect(await call(serverRoutes.align, {})).toBeNull();
    expect(calls[0]!.init.body).toBe('{}');
    expect((calls[0]!.init.headers as Record<string, string>)['content-type']).toBe('application/json');
  });
});
