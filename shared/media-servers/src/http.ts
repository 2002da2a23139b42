/**
 * Small fetch-based HTTP helper shared by the provider clients (Node 20 global fetch / undici).
 *
 * - Every attempt has its own timeout (`AbortSignal.timeout`), combined with the caller's signal.
 * - Transient failures are retried with exponential backoff and jitter: network errors and
 *   timeouts, HTTP 429 / 502 / 503 / 504. Requests marked non-idempotent are retried only when
 *   the server cannot have acted on them (connection refused / DNS failure, HTTP 429 / 503).
 * - Statuses map to the typed errors of errors.ts (401 -> BadCredentialsError, 403 ->
 *   PermissionDeniedError, 404 -> NotFoundError, 5xx/429/network after retries -> UnreachableError,
 *   any other non-2xx or an unparsable body -> ProtocolError).
 * - Downloads stream to disk through `stream.pipeline(Readable.fromWeb(body), fs.createWriteStream)`
 *   with an inactivity timeout; a failed download deletes its partial file.
 * - Messages and log lines quote URLs only through {@link redactUrl}, and scrub every configured
 *   secret value, so tokens and passwords never reach logs.
 */
import * as fs from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import {
  BadCredentialsError,
  MediaServerError,
  NotFoundError,
  PermissionDeniedError,
  ProtocolError,
  UnreachableError,
} from './errors';

/** A query value; arrays become repeated parameters (`songId=a&songId=b`), nullish values are skipped. */
export type QueryValue = string | number | boolean | null | undefined | ReadonlyArray<string | number>;
export type Query = Record<string, QueryValue>;

/** Minimal logger shape (winston-compatible). */
export interface MediaServerLogger {
  warn(message: string, meta?: Record<string, unknown>): void;
  debug?(message: string, meta?: Record<string, unknown>): void;
}

export interface HttpClientOptions {
  /** Server root, possibly with a path prefix (e.g. `http://nas:8096/jellyfin`). */
  baseUrl: string;
  /** Short name used as message prefix, e.g. `jellyfin`. */
  label?: string;
  /** Per-attempt timeout in ms (downloads: inactivity timeout). Default 30 000. */
  timeoutMs?: number;
  /** Extra attempts after the first for transient failures. Default 3. */
  retries?: number;
  /** First backoff delay in ms; doubles per attempt, with 50-100 % jitter. Default 500. */
  backoffMs?: number;
  /** Upper bound of one backoff delay (and of an honoured `Retry-After`) in ms. Default 10 000. */
  maxBackoffMs?: number;
  /** Headers sent with every request (auth headers go here). */
  headers?: Record<string, string>;
  /** Secret values to scrub from any message (tokens, passwords). */
  secrets?: ReadonlyArray<string | undefined>;
  logger?: MediaServerLogger;
  /** Injected fetch (tests); defaults to the global fetch. */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  query?: Query;
  headers?: Record<string, string>;
  /** JSON body (sets Content-Type: application/json). */
  json?: unknown;
  /** Raw body (string or form). */
  body?: string | URLSearchParams;
  signal?: AbortSignal;
  /**
   * Whether a repeat can do no harm. Defaults to true for GET/HEAD/PUT/DELETE and false for POST.
   * Non-idempotent requests are retried only when the server cannot have acted on them.
   */
  idempotent?: boolean;
  /** Overrides the client's per-attempt timeout. */
  timeoutMs?: number;
}

export interface DownloadOptions extends RequestOptions {
  /**
   * Called with the 2xx response before any byte is written; may throw (e.g. a Subsonic server
   * answering `download` with a JSON error envelope instead of audio).
   */
  validate?: (res: Response) => Promise<void>;
}

/** Query parameter names whose values are secrets (compared case-insensitively). */
const SECRET_PARAMS = new Set([
  'token', 'password', 't', 's', 'p', 'apikey', 'api_key', 'x-plex-token', 'accesstoken', 'auth', 'jwt',
]);

/**
 * Returns the URL as text with secret query values replaced by `***` and any `user:password@`
 * userinfo removed. Never throws; unparsable input is returned with a generic redaction.
 */
export function redactUrl(url: string | URL): string {
  let u: URL;
  try {
    u = new URL(String(url));
  } catch {
    return String(url).replace(/([?&](?:token|password|t|s|p|apikey|api_key|x-plex-token)=)[^&#]*/gi, '$1***');
  }
  if (u.username || u.password) {
    u.username = '';
    u.password = '';
  }
  const parts: string[] = [];
  for (const [k, v] of u.searchParams) {
    parts.push(`${encodeURIComponent(k)}=${SECRET_PARAMS.has(k.toLowerCase()) ? '***' : encodeURIComponent(v)}`);
  }
  return `${u.origin}${u.pathname}${parts.length ? `?${parts.join('&')}` : ''}`;
}

/** Builds `base + path` (base may carry a path prefix) and appends the query. */
export function buildUrl(baseUrl: string, path: string, query?: Query): URL {
  const base = baseUrl.replace(/\/+$/, '');
  const url = new URL(base + (path.startsWith('/') ? path : `/${path}`));
  if (query) {
    for (const [key, value] of Object.entries(query)) {
      if (value === undefined || value === null) continue;
      if (Array.isArray(value)) {
        for (const v of value as ReadonlyArray<string | number>) url.searchParams.append(key, String(v));
      } else {
        url.searchParams.append(key, String(value));
      }
    }
  }
  return url;
}

/** Statuses retried as transient. */
const TRANSIENT_STATUSES = new Set([429, 502, 503, 504]);
/** Statuses retried even for non-idempotent requests: the server refused before acting. */
const REFUSED_STATUSES = new Set([429, 503]);
/** Network error codes meaning the request never reached the server. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** The `code` of a network error, looking through undici's `TypeError('fetch failed', {cause})`. */
function networkCode(err: unknown): string | undefined {
  let cur: unknown = err;
  for (let i = 0; i < 5 && cur && typeof cur === 'object'; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

class TimeoutMarker extends Error {}

/** Outcome of one failed attempt, used by the retry loop. */
interface AttemptFailure {
  error: MediaServerError;
  retriable: boolean;
  retryAfterMs?: number;
}

/** HTTP client bound to one server root. Create one per media-server client. */
export class HttpClient {
  readonly baseUrl: string;
  private readonly label: string;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly headers: Record<string, string>;
  private readonly secrets: string[];
  private readonly logger?: MediaServerLogger;
  private readonly fetchImpl: typeof fetch;

  constructor(opts: HttpClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.label = opts.label ?? 'media-server';
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.retries = Math.max(0, opts.retries ?? 3);
    this.backoffMs = opts.backoffMs ?? 500;
    this.maxBackoffMs = opts.maxBackoffMs ?? 10_000;
    this.headers = { ...(opts.headers ?? {}) };
    this.secrets = (opts.secrets ?? []).filter((s): s is string => typeof s === 'string' && s.length >= 3);
    this.logger = opts.logger;
    this.fetchImpl = opts.fetch ?? fetch;
  }

  /** Absolute URL for `path` under the base URL. */
  url(path: string, query?: Query): URL {
    return buildUrl(this.baseUrl, path, query);
  }

  /** Removes every configured secret (raw and percent-encoded) from `text`. */
  scrub(text: string): string {
    let out = text;
    for (const s of this.secrets) {
      out = out.split(s).join('***');
      const enc = encodeURIComponent(s);
      if (enc !== s) out = out.split(enc).join('***');
    }
    return out;
  }

  /**
   * Sends a request and returns the 2xx response with its body unread (the caller must consume
   * or cancel it). Throws the typed errors described in the module comment.
   */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    const url = this.url(path, opts.query);
    const idempotent = opts.idempotent ?? method.toUpperCase() !== 'POST';
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const headers: Record<string, string> = { ...this.headers, ...(opts.headers ?? {}) };
    let body: string | URLSearchParams | undefined = opts.body;
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers['Content-Type'] = 'application/json';
    }

    for (let attempt = 0; ; attempt++) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      const timeoutSignal = AbortSignal.timeout(timeoutMs);
      const signal = opts.signal ? AbortSignal.any([timeoutSignal, opts.signal]) : timeoutSignal;
      let failure: AttemptFailure;
      try {
        const res = await this.fetchImpl(url, { method, headers, body, signal });
        if (res.ok) return res;
        failure = await this.statusFailure(method, url, res, idempotent);
      } catch (err) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        failure = this.networkFailure(method, url, err, timeoutSignal.aborted, timeoutMs, idempotent);
      }
      if (!failure.retriable || attempt >= this.retries) throw failure.error;
      const delay = this.backoff(attempt, failure.retryAfterMs);
      this.logger?.warn('media-server request failed, retrying', {
        server: this.label, method, url: redactUrl(url), attempt: attempt + 1, delayMs: delay,
        reason: failure.error.message,
      });
      await sleep(delay, opts.signal);
    }
  }

  /** `request` + JSON parse. An empty body yields `undefined`; invalid JSON is a ProtocolError. */
  async requestJson<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const headers = { Accept: 'application/json', ...(opts.headers ?? {}) };
    const res = await this.request(method, path, { ...opts, headers });
    const text = await this.readBody(method, path, res);
    if (text.trim() === '') return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new ProtocolError(
        `${this.label}: ${method} ${redactUrl(this.url(path))} returned a body that is not JSON`,
        // V8 quotes part of the body in JSON errors; keep the cause but scrub it.
        { status: res.status, cause: new SyntaxError(this.scrub(String((err as Error).message))) },
      );
    }
  }

  /** GET + JSON parse. */
  getJson<T = unknown>(path: string, opts: RequestOptions = {}): Promise<T> {
    return this.requestJson<T>('GET', path, opts);
  }

  /** `request` + body as text. */
  async requestText(method: string, path: string, opts: RequestOptions = {}): Promise<string> {
    const res = await this.request(method, path, opts);
    return this.readBody(method, path, res);
  }

  /** Sends a request whose response body does not matter (204 writes); the body is discarded. */
  async send(method: string, path: string, opts: RequestOptions = {}): Promise<void> {
    const res = await this.request(method, path, opts);
    await res.body?.cancel().catch(() => undefined);
  }

  /**
   * Streams the response body of GET `path` into `destPath` and returns the number of bytes
   * written. The whole file is never held in memory. The timeout applies to the response headers
   * and then to every gap between chunks. Transient failures restart the download from zero (up
   * to `retries` times). On any failure the partial file is deleted before the error propagates.
   */
  async download(path: string, destPath: string, opts: DownloadOptions = {}): Promise<number> {
    const url = this.url(path, opts.query);
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.downloadOnce(url, destPath, timeoutMs, opts);
      } catch (err) {
        await fs.promises.rm(destPath, { force: true }).catch(() => undefined);
        if (opts.signal?.aborted) throw opts.signal.reason;
        const retriable = err instanceof UnreachableError && (err.status === undefined || TRANSIENT_STATUSES.has(err.status));
        if (!retriable || attempt >= this.retries) throw err;
        const delay = this.backoff(attempt);
        this.logger?.warn('media-server download failed, retrying', {
          server: this.label, url: redactUrl(url), attempt: attempt + 1, delayMs: delay,
        });
        await sleep(delay, opts.signal);
      }
    }
  }

  private async downloadOnce(url: URL, destPath: string, timeoutMs: number, opts: DownloadOptions): Promise<number> {
    const controller = new AbortController();
    const signal = opts.signal ? AbortSignal.any([controller.signal, opts.signal]) : controller.signal;
    const watchdog = setTimeout(() => controller.abort(new TimeoutMarker('idle timeout')), timeoutMs);
    const headers = { ...this.headers, ...(opts.headers ?? {}) };
    let bytes = 0;
    try {
      let res: Response;
      try {
        res = await this.fetchImpl(url, { method: 'GET', headers, signal });
      } catch (err) {
        throw this.networkFailure('GET', url, err, controller.signal.aborted, timeoutMs, true).error;
      }
      if (!res.ok) throw (await this.statusFailure('GET', url, res, true)).error;
      if (opts.validate) await opts.validate(res);
      if (!res.body) throw new ProtocolError(`${this.label}: GET ${redactUrl(url)} returned no body`, { status: res.status });
      const counter = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          bytes += chunk.length;
          watchdog.refresh();
          cb(null, chunk);
        },
      });
      try {
        await pipeline(
          Readable.fromWeb(res.body as unknown as NodeReadableStream<Uint8Array>),
          counter,
          fs.createWriteStream(destPath),
          { signal },
        );
      } catch (err) {
        if (err instanceof MediaServerError) throw err;
        if (opts.signal?.aborted) throw opts.signal.reason;
        const code = networkCode(err);
        if (code !== undefined && isFsCode(code)) {
          // Local disk problem (ENOSPC, EACCES...): not the server's fault, not retriable.
          throw err;
        }
        throw this.networkFailure('GET', url, err, controller.signal.aborted, timeoutMs, true).error;
      }
      return bytes;
    } finally {
      clearTimeout(watchdog);
    }
  }

  private backoff(attempt: number, retryAfterMs?: number): number {
    if (retryAfterMs !== undefined) return Math.min(Math.max(0, retryAfterMs), this.maxBackoffMs * 3);
    const exp = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt);
    return Math.round(exp * (0.5 + Math.random() * 0.5));
  }

  private async readBody(method: string, path: string, res: Response): Promise<string> {
    try {
      return await res.text();
    } catch (err) {
      throw new UnreachableError(
        `${this.label}: ${method} ${redactUrl(this.url(path))} failed while reading the response body`,
        { status: res.status, cause: err },
      );
    }
  }

  private async statusFailure(method: string, url: URL, res: Response, idempotent: boolean): Promise<AttemptFailure> {
    let snippet = '';
    try {
      snippet = (await res.text()).replace(/\s+/g, ' ').trim().slice(0, 200);
    } catch {
      /* body unreadable: keep the status only */
    }
    const where = `${this.label}: ${method} ${redactUrl(url)}`;
    const status = res.status;
    const detail = snippet ? `: ${this.scrub(snippet)}` : '';
    if (status === 401) {
      return { retriable: false, error: new BadCredentialsError(`${where} was refused (HTTP 401): credentials not accepted`, { status }) };
    }
    if (status === 403) {
      return { retriable: false, error: new PermissionDeniedError(`${where} is not permitted for this user (HTTP 403)${detail}`, { status }) };
    }
    if (status === 404) {
      return { retriable: false, error: new NotFoundError(`${where} not found (HTTP 404)`, { status }) };
    }
    if (status >= 500 || status === 429) {
      const transient = TRANSIENT_STATUSES.has(status);
      const retriable = transient && (idempotent || REFUSED_STATUSES.has(status));
      return {
        retriable,
        retryAfterMs: parseRetryAfter(res.headers.get('retry-after')),
        error: new UnreachableError(`${where} failed with HTTP ${status}${detail}`, { status }),
      };
    }
    return { retriable: false, error: new ProtocolError(`${where} failed with unexpected HTTP ${status}${detail}`, { status }) };
  }

  private networkFailure(method: string, url: URL, err: unknown, timedOut: boolean, timeoutMs: number, idempotent: boolean): AttemptFailure {
    const where = `${this.label}: ${method} ${redactUrl(url)}`;
    if (timedOut) {
      return { retriable: idempotent, error: new UnreachableError(`${where} timed out after ${timeoutMs} ms`) };
    }
    const code = networkCode(err);
    const notSent = code !== undefined && NOT_SENT_CODES.has(code);
    return {
      retriable: idempotent || notSent,
      error: new UnreachableError(`${where} failed: ${code ?? this.scrub(String((err as Error)?.message ?? err))}`, { cause: err }),
    };
  }
}

/** Error codes produced by the local file system rather than the network. */
function isFsCode(code: string): boolean {
  return ['ENOSPC', 'EACCES', 'EPERM', 'EROFS', 'EISDIR', 'ENOTDIR', 'EMFILE', 'ENFILE', 'EDQUOT', 'ENOENT'].includes(code);
}

/** `Retry-After` as ms: delta-seconds or an HTTP date; undefined when absent or invalid. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const secs = Number(value);
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/**
 * Encodes credentials for HTTP Basic auth (RFC 7617, UTF-8).
 * @returns the full header value, `Basic <base64(user:password)>`.
 */
export function basicAuthHeader(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}
