import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  BadCredentialsError,
  NotFoundError,
  PermissionDeniedError,
  ProtocolError,
  UnreachableError,
} from './errors';
import { HttpClient, buildUrl, parseRetryAfter, redactUrl, type MediaServerLogger } from './http';
import { closedPort, sendJson, startStub, type Stub } from './__tests__/stub-server';

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

describe(HttpClient.name, () => {
  let stub: Stub | undefined;
  afterEach(async () => {
    await stub?.close();
    stub = undefined;
  });

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
    stub = await startStub(() => undefined);
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('stop')), 50);
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
