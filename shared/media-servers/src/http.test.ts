import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { inspect } from 'node:util';
import {
  BadCredentialsError,
  NotFoundError,
  PermissionDeniedError,
  ProtocolError,
  UnreachableError,
} from './errors';
import { HttpClient, buildUrl, mayCarryCredentials, parseRetryAfter, redactUrl, type MediaServerLogger } from './http';
import { closedPort, sendJson, type Stub, stubsClosedAfterEach } from './__tests__/stub-server';

describe('redactUrl', () => {
  it('When a URL carries secret query params, then their values are masked and others kept', () => {
    const out = redactUrl('http://h:1/rest/ping.view?u=alice&t=abcd&s=salt1&p=enc:7365&v=1.16.1&apiKey=K&X-Plex-Token=PT&token=T&password=pw&api_key=ak');
    expect(out).toBe('http://h:1/rest/ping.view?u=alice&t=***&s=***&p=***&v=1.16.1&apiKey=***&X-Plex-Token=***&token=***&password=***&api_key=***');
  });

  it('When the URL has userinfo, then it is removed', () => {
    expect(redactUrl('http://bob:secret@h/jsonrpc.js')).toBe('http://h/jsonrpc.js');
  });
});

describe('buildUrl', () => {
  it('When the base has a path prefix and the query has arrays, then both are kept and arrays repeat', () => {
    const u = buildUrl('http://h/jellyfin/', '/Items', { a: 'x', ids: ['1', '2'], skip: undefined, n: null, b: true });
    expect(u.toString()).toBe('http://h/jellyfin/Items?a=x&ids=1&ids=2&b=true');
  });
});

describe('parseRetryAfter', () => {
  it('When given seconds or an HTTP date, then it returns milliseconds', () => {
    expect(parseRetryAfter('2')).toBe(2000);
    const inFuture = new Date(Date.now() + 5000).toUTCString();
    expect(parseRetryAfter(inFuture)).toBeGreaterThan(3000);
    expect(parseRetryAfter('nonsense')).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
  });
});

describe('mayCarryCredentials', () => {
  it('When the target is the same origin or https on the same host, then credentials may go; otherwise not', () => {
    const from = new URL('http://nas:8096/jellyfin/Items');
    expect(mayCarryCredentials(from, new URL('http://nas:8096/other'))).toBe(true);
    expect(mayCarryCredentials(from, new URL('https://nas:8920/jellyfin/Items'))).toBe(true);
    expect(mayCarryCredentials(from, new URL('http://nas:9999/x'))).toBe(false);
    expect(mayCarryCredentials(from, new URL('http://evil.example/x'))).toBe(false);
    expect(mayCarryCredentials(new URL('https://nas/x'), new URL('http://nas/x'))).toBe(false);
  });
});

describe(HttpClient.name, () => {
  let stub: Stub | undefined;
  const startStub = stubsClosedAfterEach();

  const client = (url: string, extra: Partial<ConstructorParameters<typeof HttpClient>[0]> = {}): HttpClient =>
    new HttpClient({ baseUrl: url, label: 'test', retries: 3, backoffMs: 1, timeoutMs: 2000, ...extra });

  it('When the server answers 503 twice then 200, then the GET is retried and succeeds', async () => {
    let n = 0;
    stub = await startStub((_req, res) => (++n < 3 ? sendJson(res, {}, 503) : sendJson(res, { ok: 1 })));
    await expect(client(stub.url).getJson('/x')).resolves.toEqual({ ok: 1 });
    expect(stub.requests).toHaveLength(3);
  });

  it('When 502/504/429 persist beyond the retries, then UnreachableError carries the status', async () => {
    stub = await startStub((_req, res) => sendJson(res, {}, 504));
    const err = await client(stub.url, { retries: 2 }).getJson('/x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnreachableError);
    expect((err as UnreachableError).status).toBe(504);
    expect(stub.requests).toHaveLength(3);
  });

  it('When the server answers 500, then it is not retried and maps to UnreachableError', async () => {
    stub = await startStub((_req, res) => sendJson(res, { error: 'boom' }, 500));
    await expect(client(stub.url).getJson('/x')).rejects.toBeInstanceOf(UnreachableError);
    expect(stub.requests).toHaveLength(1);
  });

  it('When a 429 has Retry-After, then the client waits about that long before retrying', async () => {
    let n = 0;
    stub = await startStub((_req, res) => (++n === 1 ? sendJson(res, {}, 429, { 'Retry-After': '0.3' }) : sendJson(res, [1])));
    const t0 = Date.now();
    await expect(client(stub.url).getJson('/x')).resolves.toEqual([1]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(280);
  });

  it('When a POST gets 502, then it is not retried (the server may have acted)', async () => {
    stub = await startStub((_req, res) => sendJson(res, {}, 502));
    await expect(client(stub.url).requestJson('POST', '/x', { json: {} })).rejects.toBeInstanceOf(UnreachableError);
    expect(stub.requests).toHaveLength(1);
  });

  it('When a POST gets 503, then it is retried (the server refused before acting)', async () => {
    let n = 0;
    stub = await startStub((_req, res) => (++n === 1 ? sendJson(res, {}, 503) : sendJson(res, { id: 1 })));
    await expect(client(stub.url).requestJson('POST', '/x', { json: {} })).resolves.toEqual({ id: 1 });
    expect(stub.requests).toHaveLength(2);
  });

  it.each([
    [401, BadCredentialsError],
    [403, PermissionDeniedError],
    [404, NotFoundError],
    [400, ProtocolError],
  ])('When the server answers %i, then the typed error is thrown without retry', async (status, type) => {
    stub = await startStub((_req, res) => sendJson(res, { m: 'no' }, status));
    const err = await client(stub.url).getJson('/x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(type);
    expect((err as { status?: number }).status).toBe(status);
    expect(stub.requests).toHaveLength(1);
  });

  it('When the body is not JSON, then ProtocolError', async () => {
    stub = await startStub((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<html>hi</html>');
    });
    await expect(client(stub.url).getJson('/x')).rejects.toBeInstanceOf(ProtocolError);
  });

  it('When nothing listens (ECONNREFUSED), then UnreachableError after the retries', async () => {
    const port = await closedPort();
    const warnings: string[] = [];
    const logger: MediaServerLogger = { warn: (m) => warnings.push(m) };
    const err = await client(`http://127.0.0.1:${port}`, { retries: 2, logger }).getJson('/x?token=SECRET').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnreachableError);
    expect((err as Error).message).toContain('ECONNREFUSED');
    expect(warnings).toHaveLength(2);
  });

  it('When the server does not answer in time, then UnreachableError mentions the timeout', async () => {
    stub = await startStub(() => undefined);
    const err = await client(stub.url, { timeoutMs: 100, retries: 1 }).getJson('/slow').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnreachableError);
    expect((err as Error).message).toMatch(/timed out after 100 ms/);
    expect(stub.requests).toHaveLength(2);
  });

  it('When the caller aborts, then the abort reason propagates and no retry happens', async () => {
    // The abort comes once the server has the request (a fixed delay raced the request on a loaded machine).
    const ac = new AbortController();
    stub = await startStub(() => ac.abort(new Error('stop')));
    await expect(client(stub.url).getJson('/x', { signal: ac.signal })).rejects.toThrow('stop');
    expect(stub.requests).toHaveLength(1);
  });

  it('When an error message would quote a secret (URL or echoed body), then the secret is masked', async () => {
    stub = await startStub((req, res) => sendJson(res, { echo: `bad token ${req.query.get('api_key')}` }, 400));
    const c = client(stub.url, { secrets: ['hunter2-token'] });
    const err = (await c.getJson('/x', { query: { api_key: 'hunter2-token', X: 'y' } }).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(ProtocolError);
    expect(err.message).not.toContain('hunter2-token');
    expect(err.message).toContain('api_key=***');
  });

  describe('redirects', () => {
    let other: Stub | undefined;
    afterEach(async () => {
      await other?.close();
      other = undefined;
    });
    const redirect = (res: import('node:http').ServerResponse, status: number, location: string): void => {
      res.writeHead(status, { Location: location });
      res.end();
    };

    it('When the server redirects within its origin, then the request follows with its credentials', async () => {
      stub = await startStub((req, res) => (req.path === '/old' ? redirect(res, 301, '/new?x=1') : sendJson(res, { at: req.path, token: req.headers['x-plex-token'] })));
      const c = client(stub.url, { headers: { 'X-Plex-Token': 'tok-123' } });
      await expect(c.getJson('/old')).resolves.toEqual({ at: '/new', token: 'tok-123' });
      expect(stub.requests.map((q) => q.path)).toEqual(['/old', '/new']);
    });

    it('When the server redirects to another origin, then nothing is sent there and the error names the origin, not the secret', async () => {
      other = await startStub((_req, res) => sendJson(res, { stolen: true }));
      const target = `${other.url}/steal`;
      stub = await startStub((_req, res) => redirect(res, 302, target));
      const c = client(stub.url, { headers: { 'X-Emby-Token': 'emby-secret' }, secrets: ['emby-secret', 'query-secret'] });
      const err = (await c.getJson('/Items', { query: { api_key: 'query-secret' } }).catch((e: unknown) => e)) as Error;
      expect(err).toBeInstanceOf(ProtocolError);
      expect(err.message).toContain('another origin');
      expect(err.message).toContain(other.url);
      expect(inspect(err, { depth: 10 })).not.toMatch(/emby-secret|query-secret/);
      expect(other.requests).toHaveLength(0);
      expect(stub.requests).toHaveLength(1);
    });

    it('When a download redirects to another origin, then it is refused and no file is written', async () => {
      other = await startStub((_req, res) => sendJson(res, { stolen: true }));
      stub = await startStub((_req, res) => redirect(res, 307, `${other?.url}/file`));
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-http-'));
      try {
        const dest = path.join(dir, 'x.flac');
        await expect(client(stub.url, { headers: { 'X-Plex-Token': 'plex-secret' } }).download('/f', dest)).rejects.toBeInstanceOf(ProtocolError);
        expect(other.requests).toHaveLength(0);
        expect(fs.existsSync(dest)).toBe(false);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('When redirects loop, then the client stops after a bounded number of hops', async () => {
      stub = await startStub((_req, res) => redirect(res, 302, '/again'));
      await expect(client(stub.url).getJson('/x')).rejects.toThrow(/redirected more than 5 times/);
      expect(stub.requests).toHaveLength(6);
    });
  });

  it('When a request fails on the network, then neither the message, the cause nor the logs hold a secret', async () => {
    const port = await closedPort();
    const lines: string[] = [];
    const logger: MediaServerLogger = { warn: (m, meta) => lines.push(`${m} ${JSON.stringify(meta)}`) };
    const c = client(`http://127.0.0.1:${port}`, { retries: 1, logger, headers: { Authorization: 'MediaBrowser Token="hdr-secret"' }, secrets: ['hdr-secret', 'q-secret'] });
    const err = await c.getJson('/x', { query: { ApiKey: 'q-secret' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnreachableError);
    const dump = `${inspect(err, { depth: 20 })} ${JSON.stringify(err)} ${lines.join('\n')}`;
    expect(dump).not.toMatch(/hdr-secret|q-secret/);
    expect(lines).toHaveLength(1);
  });

  it('When a request sets retries 0, then a transient failure is not retried', async () => {
    stub = await startStub((_req, res) => sendJson(res, {}, 503));
    await expect(client(stub.url).getJson('/x', { retries: 0 })).rejects.toBeInstanceOf(UnreachableError);
    expect(stub.requests).toHaveLength(1);
  });

  describe('download', () => {
    let dir: string;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-http-'));
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    it('When the body arrives in chunks, then it is written to the file and the byte count returned', async () => {
      const payload = Buffer.alloc(3 * 1024 * 1024, 7);
      stub = await startStub((_req, res) => {
        res.writeHead(200, { 'Content-Type': 'audio/flac' });
        res.write(payload.subarray(0, 1_000_000));
        setTimeout(() => res.end(payload.subarray(1_000_000)), 20);
      });
      const dest = path.join(dir, 'a.flac');
      await expect(client(stub.url).download('/f', dest)).resolves.toBe(payload.length);
      expect(fs.readFileSync(dest).equals(payload)).toBe(true);
    });

    it('When the connection drops mid-body, then the partial file is deleted and UnreachableError thrown', async () => {
      stub = await startStub((_req, res) => {
        res.writeHead(200, { 'Content-Type': 'audio/flac', 'Content-Length': '100000' });
        res.write(Buffer.alloc(5000, 1));
        setTimeout(() => res.socket?.destroy(), 20);
      });
      const dest = path.join(dir, 'b.flac');
      await expect(client(stub.url, { retries: 1 }).download('/f', dest)).rejects.toBeInstanceOf(UnreachableError);
      expect(fs.existsSync(dest)).toBe(false);
      expect(stub.requests).toHaveLength(2);
    });

    it('When the body stalls longer than the timeout, then the download fails as a timeout', async () => {
      stub = await startStub((_req, res) => {
        res.writeHead(200, { 'Content-Type': 'audio/flac' });
        res.write(Buffer.alloc(10, 1));
      });
      const dest = path.join(dir, 'c.flac');
      const err = await client(stub.url, { timeoutMs: 150, retries: 0 }).download('/f', dest).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UnreachableError);
      expect((err as Error).message).toMatch(/timed out/);
      expect(fs.existsSync(dest)).toBe(false);
    });

    it('When validate rejects the response, then nothing is written', async () => {
      stub = await startStub((_req, res) => sendJson(res, { error: true }));
      const dest = path.join(dir, 'd.flac');
      const validate = async (): Promise<void> => {
        throw new ProtocolError('not audio');
      };
      await expect(client(stub.url).download('/f', dest, { validate })).rejects.toThrow('not audio');
      expect(fs.existsSync(dest)).toBe(false);
    });

    it('When the server answers 404, then NotFoundError and no file', async () => {
      stub = await startStub((_req, res) => sendJson(res, {}, 404));
      const dest = path.join(dir, 'e.flac');
      await expect(client(stub.url).download('/f', dest)).rejects.toBeInstanceOf(NotFoundError);
      expect(fs.existsSync(dest)).toBe(false);
    });
  });
});
