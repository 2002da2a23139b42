/**
 * Plumbing shared by the fake media servers: request log, listen/close on 127.0.0.1:0,
 * the mid-enumeration failure knob, reversible provider ids and a small XML writer.
 */
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { statSync } from 'node:fs';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { fmix32 } from '@polyphony/vectors';

/** One request as a fake saw it. Secrets (tokens, passwords) are kept: the log is for tests only. */
export interface RecordedRequest {
  method: string;
  /** Path without the query string, as received (including any `/emby` or `/rest` prefix). */
  path: string;
  /** Query parameters; repeated keys become arrays. Names keep their original case. */
  query: Record<string, string | string[]>;
  headers: IncomingHttpHeaders;
  /** Parsed body where the fake reads one (JSON for Jellyfin/Lyrion, form fields for Subsonic). */
  body?: unknown;
  /** HTTP status sent (filled when the response finishes; undefined if the socket was destroyed). */
  status?: number;
}

/** A fake that is listening. `url` has no trailing slash. `close()` also drops keep-alive sockets. */
export interface StartedFake {
  url: string;
  close(): Promise<void>;
}

/** Repeated-key aware conversion of URLSearchParams. */
export function paramsToRecord(params: URLSearchParams): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of params) {
    const prev = out[k];
    if (prev === undefined) out[k] = v;
    else if (Array.isArray(prev)) prev.push(v);
    else out[k] = [prev, v];
  }
  return out;
}

/** The raw query string of a request as URLSearchParams (express's parsed `req.query` is not used). */
export function searchParams(req: Request): URLSearchParams {
  const i = req.originalUrl.indexOf('?');
  return new URLSearchParams(i < 0 ? '' : req.originalUrl.slice(i + 1));
}

/** Common state and knobs of every fake. */
export class FakeCore {
  /** Every request received, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  private pagesBeforeFailure: number | null = null;
  private sockets = new Set<Socket>();

  /**
   * After `n` more successful catalogue pages, every further catalogue page request gets HTTP 500
   * (a server failing mid-enumeration). `null` switches the failure off. Which requests count as a
   * catalogue page is documented on each fake.
   */
  failAfterPages(n: number | null): void {
    this.pagesBeforeFailure = n;
  }

  /** Called by enumeration handlers once per page; true means "answer this page with a failure". */
  pageShouldFail(): boolean {
    if (this.pagesBeforeFailure === null) return false;
    if (this.pagesBeforeFailure <= 0) return true;
    this.pagesBeforeFailure -= 1;
    return false;
  }

  /** Clears the request log. */
  clearRequests(): void {
    this.requests.length = 0;
  }

  /** Middleware recording each request into {@link requests}. Install first. */
  recorder() {
    return (req: Request, res: Response, next: NextFunction): void => {
      const entry: RecordedRequest = {
        method: req.method,
        path: req.path,
        query: paramsToRecord(searchParams(req)),
        headers: { ...req.headers },
      };
      this.requests.push(entry);
      res.locals.recorded = entry;
      res.on('finish', () => {
        entry.status = res.statusCode;
      });
      next();
    };
  }

  /** Listens on 127.0.0.1, port 0; resolves with the base URL. */
  listen(app: Express): Promise<StartedFake> {
    return new Promise((resolve, reject) => {
      const server: Server = app.listen(0, '127.0.0.1');
      server.once('error', reject);
      server.on('connection', (s: Socket) => {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
      });
      server.once('listening', () => {
        const { port } = server.address() as AddressInfo;
        resolve({
          url: `http://127.0.0.1:${port}`,
          close: () =>
            new Promise<void>((res) => {
              for (const s of this.sockets) s.destroy();
              server.close(() => res());
            }),
        });
      });
    });
  }
}

/** A fresh express app with the recorder installed and the `x-powered-by` header off. */
export function newApp(core: FakeCore): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(core.recorder());
  return app;
}

/** Records a parsed body on the current request's log entry. */
export function recordBody(res: Response, body: unknown): void {
  const entry = res.locals.recorded as RecordedRequest | undefined;
  if (entry) entry.body = body;
}

const hex8 = (x: number): string => x.toString(16).padStart(8, '0');

/**
 * Reversible 32-hex ids without dashes (Jellyfin "N" GUID format): 19 hex of a salted hash of
 * (type, n), one hex type code, then `n` as 12 hex digits. Looks like a GUID, encodes without a
 * cryptographic hash (cheap at 100k-track scale) and decodes in O(1).
 */
export class HexIds {
  private readonly seed: number;
  constructor(salt: string) {
    let h = 0x811c9dc5;
    for (let i = 0; i < salt.length; i++) h = Math.imul(h ^ salt.charCodeAt(i), 0x01000193);
    this.seed = h >>> 0;
  }
  private head(type: number, n: number): string {
    const h1 = fmix32(this.seed ^ Math.imul(n + 1, 0x9e3779b1) ^ (type << 28));
    const h2 = fmix32((h1 + Math.imul(n ^ 0x5bd1e995, 0x27d4eb2d)) >>> 0);
    const h3 = fmix32((h2 ^ Math.imul(type + 0x165667b1, 0x9e3779b1)) >>> 0);
    return hex8(h1) + hex8(h2) + hex8(h3).slice(0, 3);
  }
  encode(type: number, n: number): string {
    return this.head(type, n) + type.toString(16) + n.toString(16).padStart(12, '0');
  }
  /** `{type, n}` when `id` is one of ours (any case, dashes allowed), else undefined. */
  decode(id: string): { type: number; n: number } | undefined {
    const hex = id.replace(/-/g, '').toLowerCase();
    if (!/^[0-9a-f]{32}$/.test(hex)) return undefined;
    const type = Number.parseInt(hex.charAt(19), 16);
    const n = Number.parseInt(hex.slice(20), 16);
    return this.head(type, n) === hex.slice(0, 19) ? { type, n } : undefined;
  }
}

/** Escapes text for an XML attribute or text node. */
export function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/**
 * Serialises a JSON-shaped value the way Subsonic and Plex XML look: scalar properties become
 * attributes, arrays of objects become repeated child elements named after the key, nested
 * objects become one child element, and a `value` property (Subsonic lyrics) becomes text content.
 */
export function toXml(name: string, value: Record<string, unknown>, rootAttrs = ''): string {
  let attrs = rootAttrs;
  let children = '';
  let text = '';
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) {
      for (const item of v) {
        if (item !== null && typeof item === 'object') children += toXml(k, item as Record<string, unknown>);
        else children += `<${k}>${xmlEscape(String(item))}</${k}>`;
      }
    } else if (typeof v === 'object') {
      children += toXml(k, v as Record<string, unknown>);
    } else if (k === 'value' && typeof v === 'string') {
      text = xmlEscape(v);
    } else {
      attrs += ` ${k}="${xmlEscape(String(v))}"`;
    }
  }
  return children || text ? `<${name}${attrs}>${text}${children}</${name}>` : `<${name}${attrs}/>`;
}

/** Removes properties whose value is undefined or null (Jellyfin `WhenWritingNull`, Subsonic `omitempty` for null). */
export function dropNulls<T extends Record<string, unknown>>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined || o[k] === null) delete o[k];
  return o;
}

/** Content type for an audio file by extension (what the servers send on download). */
export function audioContentType(file: string): string {
  const ext = file.slice(file.lastIndexOf('.') + 1).toLowerCase();
  return (
    {
      ogg: 'audio/ogg',
      oga: 'audio/ogg',
      opus: 'audio/ogg',
      mp3: 'audio/mpeg',
      flac: 'audio/flac',
      m4a: 'audio/mp4',
      wav: 'audio/wav',
    } as Record<string, string>
  )[ext] ?? 'application/octet-stream';
}

/** File extension without the dot, lower-case (Jellyfin `Container`, Subsonic `suffix`). */
export function extOf(file: string): string {
  return file.slice(file.lastIndexOf('.') + 1).toLowerCase();
}

/** Streams `file` with the given extra headers; errors become 500 (headers may already be sent). */
export function sendAudio(res: Response, file: string, headers: Record<string, string> = {}): void {
  res.sendFile(file, { headers: { 'Content-Type': audioContentType(file), ...headers }, dotfiles: 'allow' }, (err) => {
    if (err && !res.headersSent) res.status(500).send('file unavailable');
  });
}

/** Deterministic shuffle order for `SortBy=Random` style sorts (stable within one fake). */
export function pseudoRandomKey(i: number): number {
  let x = (i + 0x9e3779b9) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b) >>> 0;
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

/** Byte length of the request line target (path + query) as a server's request-line limit sees it. */
export function requestTargetBytes(req: Request): number {
  return Buffer.byteLength(req.originalUrl, 'utf8');
}

/** File sizes in bytes, read once per path (0 for a file that cannot be read): the fakes' Content-Length. */
export class FileSizes {
  private readonly cache = new Map<string, number>();

  of(file: string): number {
    let s = this.cache.get(file);
    if (s === undefined) {
      try {
        s = statSync(file).size;
      } catch {
        s = 0;
      }
      this.cache.set(file, s);
    }
    return s;
  }
}
