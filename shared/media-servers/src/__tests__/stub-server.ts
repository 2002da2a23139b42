/**
 * Tiny recording HTTP stub for the unit tests: every request is recorded (method, path, parsed
 * query, headers, body) and answered by the test's handler. Listens on 127.0.0.1, port 0.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export type StubHandler = (req: RecordedRequest, res: http.ServerResponse) => void | Promise<void>;

export interface Stub {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startStub(handler: StubHandler): Promise<Stub> {
  const requests: RecordedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://stub');
      const rec: RecordedRequest = {
        method: req.method ?? 'GET',
        path: u.pathname,
        query: u.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(rec);
      Promise.resolve(handler(rec, res)).catch((err: unknown) => {
        res.statusCode = 599;
        res.end(String(err));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * `startStub` for one describe block: every stub it starts is closed after each test (registers a Jest
 * `afterEach`). Declare it inside the block: `const startStub = stubsClosedAfterEach();`.
 */
export function stubsClosedAfterEach(): (handler: StubHandler) => Promise<Stub> {
  const open: Stub[] = [];
  afterEach(async () => {
    for (const stub of open.splice(0)) await stub.close();
  });
  return async (handler) => {
    const stub = await startStub(handler);
    open.push(stub);
    return stub;
  };
}

export function sendJson(res: http.ServerResponse, body: unknown, status = 200, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** A port nothing listens on (bound then released). */
export async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Every track of a client's paged enumeration, in order (iterateTracks, iterateRecentAlbumTracks). */
export async function collectPages<T>(it: AsyncIterable<T[]>): Promise<T[]> {
  const out: T[] = [];
  for await (const page of it) out.push(...page);
  return out;
}
