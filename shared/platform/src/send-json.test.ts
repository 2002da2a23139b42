import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import express, { type Express } from 'express';
import { sendJson } from './http';

/** The raw bytes of the answer to `head` (a request head without the final blank line), Date header removed. */
async function rawAnswer(server: Server, head: string): Promise<string> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(`${head}\r\nConnection: close\r\n\r\n`));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1').replace(/\r\nDate: [^\r]*/i, '')));
  });
}

const VALUES: Record<string, unknown> = {
  rows: [{ item_id: 'm-3', title: 'Song 3', author: 'Beyoncé ✓ 𝄞', album: null, distance: 0.130215, mood_vector: 'rock:0.5,pop:0.25' }],
  long: Array.from({ length: 60 }, (_, i) => ({ item_id: `m-${i}`, title: `Ünïcode <&> "quoted" ${i}`, distance: i / 7 })),
  empty: [],
  nothing: null,
  text: 'plain',
  number: 42,
};

function app(configure: (a: Express) => void): Express {
  const a = express();
  a.disable('x-powered-by');
  configure(a);
  a.get('/json/:name', (req, res) => void res.status(200).json(VALUES[req.params.name!]));
  a.get('/fast/:name', (req, res) => sendJson(res, 200, VALUES[req.params.name!]));
  a.get('/json-created', (_req, res) => void res.status(201).json(VALUES.rows));
  a.get('/fast-created', (_req, res) => sendJson(res, 201, VALUES.rows));
  return a;
}

describe('sendJson', () => {
  const servers: Server[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  });
  async function listening(a: Express): Promise<Server> {
    const s = createServer(a);
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    return s;
  }

  it.each([
    ['no ETag (the index app)', (a: Express) => void a.set('etag', false)],
    ['express defaults (weak ETag: res.json is used)', () => undefined],
    ['json spaces set (res.json is used)', (a: Express) => void a.set('json spaces', 2).set('etag', false)],
  ])('sends the bytes res.json sends, %s', async (_label, configure) => {
    const server = await listening(app(configure));
    for (const name of Object.keys(VALUES)) {
      for (const extra of ['', '\r\nIf-None-Match: "x"', '\r\nIf-Modified-Since: Thu, 01 Jan 2099 00:00:00 GMT']) {
        const viaJson = await rawAnswer(server, `GET /json/${name} HTTP/1.1\r\nHost: t${extra}`);
        const viaFast = await rawAnswer(server, `GET /fast/${name} HTTP/1.1\r\nHost: t${extra}`);
        expect({ name, extra, answer: viaFast }).toEqual({ name, extra, answer: viaJson });
      }
      const headJson = await rawAnswer(server, `HEAD /json/${name} HTTP/1.1\r\nHost: t`);
      expect(await rawAnswer(server, `HEAD /fast/${name} HTTP/1.1\r\nHost: t`)).toBe(headJson);
    }
    expect(await rawAnswer(server, 'GET /fast-created HTTP/1.1\r\nHost: t')).toBe(await rawAnswer(server, 'GET /json-created HTTP/1.1\r\nHost: t'));
    const sample = await rawAnswer(server, 'GET /fast/long HTTP/1.1\r\nHost: t');
    expect(sample).toMatch(/^HTTP\/1\.1 200 OK\r\nContent-Type: application\/json; charset=utf-8\r\n/);
    expect(sample).toContain('Ünïcode'.replace(/./gu, (c) => Buffer.from(c, 'utf8').toString('latin1')));
  });
});
