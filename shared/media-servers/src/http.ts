/**
 * The HTTP client shared by the provider clients: axios (Node http adapter) with axios-retry.
 *
 * - Timeouts: every attempt has its own timeout (axios `timeout`, reset per retry); downloads use
 *   it as an inactivity timeout (headers, then every gap between chunks). A caller's AbortSignal
 *   cancels at once and is never retried.
 * - Retries (axios-retry, bounded by `retries`, exponential backoff with jitter, `Retry-After`
 *   honoured up to 3 × `maxBackoffMs`): network errors, timeouts and HTTP 429/502/503/504 for
 *   idempotent requests (GET/HEAD/PUT/DELETE, or `idempotent: true`). Non-idempotent requests are
 *   retried only when the server cannot have acted (connection refused, DNS failure, 429, 503).
 * - Redirects are never followed by axios (`maxRedirects: 0`). This client follows at most
 *   {@link MAX_REDIRECTS} redirects itself, and only to the same origin or to `https:` on the same
 *   host; a redirect anywhere else is a ProtocolError and nothing is sent there, so tokens in
 *   headers (`X-Plex-Token`, `X-Emby-Token`, `Authorization`) or in the query (Subsonic `t`/`s`,
 *   `apiKey`) never reach another origin.
 * - Statuses map to the typed errors of errors.ts (401 BadCredentials, 403 PermissionDenied,
 *   404 NotFound, 5xx/429/network after retries Unreachable, anything else or an unparsable body
 *   Protocol).
 * - Redaction: messages and log lines quote URLs only through {@link redactUrl} and scrub every
 *   configured secret (raw and percent-encoded). Axios errors (which hold the request config, its
 *   headers and the full URL) are never attached as `cause`: the cause is a plain Error with the
 *   scrubbed message and the network code.
 */
import * as fs from 'node:fs';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import axios, { AxiosError, type AxiosInstance, type AxiosRequestConfig, type AxiosResponse, type RawAxiosRequestHeaders } from 'axios';
import axiosRetry, { type IAxiosRetryConfig } from 'axios-retry';
import {
  BadCredentialsError,
  MediaServerError,
  NotFoundError,
  PermissionDeniedError,
  ProtocolError,
  UnreachableError,
} from './errors';
import { MAX_BODY_BYTES, flatHeaders, headerOf, parseRetryAfter, readAll, readSnippet } from './response';
import { buildUrl, mayCarryCredentials, redactUrl, type Query } from './url';

export { MAX_BODY_BYTES, parseRetryAfter } from './response';
export { basicAuthHeader, buildUrl, mayCarryCredentials, redactUrl, type Query, type QueryValue } from './url';

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
  /** Upper bound of one backoff delay in ms (an honoured `Retry-After` up to 3×). Default 10 000. */
  maxBackoffMs?: number;
  /** Headers sent with every request (auth headers go here). */
  headers?: Record<string, string>;
  /** Secret values to scrub from any message (tokens, passwords). */
  secrets?: ReadonlyArray<string | undefined>;
  logger?: MediaServerLogger;
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
  /** Overrides the client's retry count (e.g. 0 for lyrics lookups bounded by their own timeout). */
  retries?: number;
}

/** A response read whole, as text. */
export interface HttpResponse {
  status: number;
  headers: Record<string, string | undefined>;
  body: string;
}

/** What a download validator sees before any byte is written. */
export interface DownloadResponse {
  status: number;
  /** The `Content-Type` header, '' when absent. */
  contentType: string;
  /** Reads the whole body as text (then nothing is written to disk). */
  text(): Promise<string>;
}

export interface DownloadOptions extends RequestOptions {
  /**
   * Called with the 2xx response before any byte is written; may throw (e.g. a Subsonic server
   * answering `download` with a JSON error envelope instead of audio).
   */
  validate?: (res: DownloadResponse) => Promise<void>;
}

/** Redirect hops followed (same origin or https upgrade on the same host only). */
export const MAX_REDIRECTS = 5;

/** Statuses retried as transient. */
const TRANSIENT_STATUSES = new Set([429, 502, 503, 504]);
/** Statuses retried even for non-idempotent requests: the server refused before acting. */
const REFUSED_STATUSES = new Set([429, 503]);
/** Network error codes meaning the request never reached the server. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/** Error codes produced by the local file system rather than the network. */
const FS_CODES = new Set(['ENOSPC', 'EACCES', 'EPERM', 'EROFS', 'EISDIR', 'ENOTDIR', 'EMFILE', 'ENFILE', 'EDQUOT', 'ENOENT']);
/** Axios codes of its own timeout. */
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ECONNABORTED']);

/** Per-request state read by the retry hooks (kept on the axios config). */
interface AttemptMeta {
  idempotent: boolean;
  method: string;
  /** Already redacted. */
  url: string;
  timeoutMs: number;
}
type MetaConfig = AxiosRequestConfig & { polyphony?: AttemptMeta };

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

/** The system `code` of an error, looking through causes. */
function errorCode(err: unknown): string | undefined {
  let cur: unknown = err;
  for (let i = 0; i < 5 && cur && typeof cur === 'object'; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Whether an axios failure is worth another attempt (see the module comment). */
function isRetriable(err: AxiosError): boolean {
  const meta = (err.config as MetaConfig | undefined)?.polyphony;
  if (!meta || err.code === 'ERR_CANCELED') return false;
  const status = err.response?.status;
  if (status !== undefined) return TRANSIENT_STATUSES.has(status) && (meta.idempotent || REFUSED_STATUSES.has(status));
  return meta.idempotent || NOT_SENT_CODES.has(err.code ?? '');
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
  private readonly axios: AxiosInstance;

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
    this.axios = axios.create({
      maxRedirects: 0,
      maxContentLength: MAX_BODY_BYTES,
      transformResponse: [(data: unknown) => data],
      transitional: { clarifyTimeoutError: true, silentJSONParsing: true, forcedJSONParsing: false },
      proxy: false,
    });
    axiosRetry(this.axios, {
      retries: this.retries,
      shouldResetTimeout: true,
      retryCondition: isRetriable,
      retryDelay: (count, err) => this.backoff(count - 1, parseRetryAfter(headerOf(err.response, 'retry-after') ?? null)),
      onRetry: (count, err) => {
        const meta = (err.config as MetaConfig | undefined)?.polyphony;
        this.logger?.warn('media-server request failed, retrying', {
          server: this.label, method: meta?.method, url: meta?.url, attempt: count,
          reason: this.describe(err, meta),
        });
      },
    });
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
   * Sends a request and returns the 2xx response with its body as text. Throws the typed errors
   * described in the module comment; a caller's abort rejects with the signal's reason.
   */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<HttpResponse> {
    let url = this.url(path, opts.query);
    const first = url;
    let verb = method.toUpperCase();
    const idempotent = opts.idempotent ?? verb !== 'POST';
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const headers: Record<string, string> = { ...this.headers, ...(opts.headers ?? {}) };
    let data: string | URLSearchParams | undefined = opts.body;
    if (opts.json !== undefined) {
      data = JSON.stringify(opts.json);
      headers['Content-Type'] = 'application/json';
    }
    for (let hop = 0; ; hop++) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      const config: MetaConfig & IAxiosRetryConfigHolder = {
        method: verb,
        url: url.toString(),
        headers: headers as RawAxiosRequestHeaders,
        data,
        timeout: timeoutMs,
        timeoutErrorMessage: `timed out after ${timeoutMs} ms`,
        responseType: 'text',
        responseEncoding: 'utf8',
        signal: opts.signal,
        polyphony: { idempotent, method: verb, url: redactUrl(url), timeoutMs },
        'axios-retry': opts.retries === undefined ? undefined : { retries: Math.max(0, opts.retries) },
      };
      try {
        const res = await this.axios.request<string>(config);
        return { status: res.status, headers: flatHeaders(res), body: typeof res.data === 'string' ? res.data : String(res.data ?? '') };
      } catch (err) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (!(err instanceof AxiosError)) throw err;
        const next = this.redirectTarget(verb, first, url, err.response, hop);
        if (next) {
          url = next;
          if (err.response?.status === 303) {
            verb = 'GET';
            data = undefined;
          }
          continue;
        }
        throw this.toError(verb, url, err, timeoutMs);
      }
    }
  }

  /** `request` + JSON parse. An empty body yields `undefined`; invalid JSON is a ProtocolError. */
  async requestJson<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const headers = { Accept: 'application/json', ...(opts.headers ?? {}) };
    const res = await this.request(method, path, { ...opts, headers });
    if (res.body.trim() === '') return undefined as T;
    try {
      return JSON.parse(res.body) as T;
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
    return (await this.request(method, path, opts)).body;
  }

  /** Sends a request whose response body does not matter (204 writes). */
  async send(method: string, path: string, opts: RequestOptions = {}): Promise<void> {
    await this.request(method, path, opts);
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
    const retries = opts.retries ?? this.retries;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.downloadOnce(url, destPath, timeoutMs, opts);
      } catch (err) {
        await fs.promises.rm(destPath, { force: true }).catch(() => undefined);
        if (opts.signal?.aborted) throw opts.signal.reason;
        const retriable = err instanceof UnreachableError && (err.status === undefined || TRANSIENT_STATUSES.has(err.status));
        if (!retriable || attempt >= retries) throw err;
        const delay = this.backoff(attempt);
        this.logger?.warn('media-server download failed, retrying', {
          server: this.label, url: redactUrl(url), attempt: attempt + 1, delayMs: delay, reason: (err as Error).message,
        });
        await sleep(delay, opts.signal);
      }
    }
  }

  private async downloadOnce(start: URL, destPath: string, timeoutMs: number, opts: DownloadOptions): Promise<number> {
    const idle = new AbortController();
    const signal = opts.signal ? AbortSignal.any([idle.signal, opts.signal]) : idle.signal;
    const watchdog = setTimeout(() => idle.abort(new Error('idle timeout')), timeoutMs);
    const headers = { ...this.headers, ...(opts.headers ?? {}) };
    let bytes = 0;
    let url = start;
    try {
      let res: AxiosResponse<Readable>;
      for (let hop = 0; ; hop++) {
        try {
          res = await this.axios.request<Readable>({
            method: 'GET',
            url: url.toString(),
            headers,
            responseType: 'stream',
            signal,
            'axios-retry': { retries: 0 },
          } as AxiosRequestConfig & IAxiosRetryConfigHolder);
          break;
        } catch (err) {
          if (opts.signal?.aborted) throw opts.signal.reason;
          if (!(err instanceof AxiosError)) throw err;
          const stream = err.response?.data as Readable | undefined;
          const next = this.redirectTarget('GET', start, url, err.response, hop);
          if (next) {
            stream?.destroy();
            url = next;
            continue;
          }
          if (err.response && stream && typeof stream.on === 'function') {
            err.response.data = await readSnippet(stream);
          }
          if (idle.signal.aborted) throw this.timeoutError('GET', url, timeoutMs);
          throw this.toError('GET', url, err, timeoutMs);
        }
      }
      const body = res.data;
      if (opts.validate) {
        let consumed = false;
        await opts.validate({
          status: res.status,
          contentType: headerOf(res, 'content-type') ?? '',
          text: async () => {
            consumed = true;
            return readAll(body);
          },
        });
        if (consumed) throw new ProtocolError(`${this.label}: GET ${redactUrl(url)} returned a document instead of audio`, { status: res.status });
      }
      watchdog.refresh();
      const counter = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          bytes += chunk.length;
          watchdog.refresh();
          cb(null, chunk);
        },
      });
      try {
        await pipeline(body, counter, fs.createWriteStream(destPath), { signal });
      } catch (err) {
        if (err instanceof MediaServerError) throw err;
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (idle.signal.aborted) throw this.timeoutError('GET', url, timeoutMs);
        const code = errorCode(err);
        // Local disk problem (ENOSPC, EACCES...): not the server's fault, not retriable.
        if (code !== undefined && FS_CODES.has(code)) throw err;
        throw new UnreachableError(`${this.label}: GET ${redactUrl(url)} failed while reading the body: ${code ?? this.scrub(String((err as Error)?.message ?? err))}`, {
          cause: this.safeCause(err),
        });
      }
      return bytes;
    } finally {
      clearTimeout(watchdog);
    }
  }

  /**
   * The next URL when `res` is a redirect this client may follow, else undefined. Throws
   * ProtocolError for a redirect to another origin (credentials are never sent there) or after
   * {@link MAX_REDIRECTS} hops.
   */
  private redirectTarget(method: string, first: URL, current: URL, res: AxiosResponse | undefined, hop: number): URL | undefined {
    if (!res || res.status < 300 || res.status >= 400 || res.status === 304) return undefined;
    const location = headerOf(res, 'location');
    const where = `${this.label}: ${method} ${redactUrl(current)}`;
    if (!location) throw new ProtocolError(`${where} answered HTTP ${res.status} without a Location`, { status: res.status });
    let next: URL;
    try {
      next = new URL(location, current);
    } catch {
      throw new ProtocolError(`${where} redirected to an invalid Location`, { status: res.status });
    }
    if (!mayCarryCredentials(first, next)) {
      throw new ProtocolError(
        `${where} redirected to another origin (${next.origin}); not followed, so the credentials are not sent there. Use that address as the server URL if it is right.`,
        { status: res.status },
      );
    }
    if (hop >= MAX_REDIRECTS) throw new ProtocolError(`${where} redirected more than ${MAX_REDIRECTS} times`, { status: res.status });
    return next;
  }

  private backoff(attempt: number, retryAfterMs?: number): number {
    if (retryAfterMs !== undefined) return Math.min(Math.max(0, retryAfterMs), this.maxBackoffMs * 3);
    const exp = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt);
    return Math.round(exp * (0.5 + Math.random() * 0.5));
  }

  private timeoutError(method: string, url: URL, timeoutMs: number): UnreachableError {
    return new UnreachableError(`${this.label}: ${method} ${redactUrl(url)} timed out after ${timeoutMs} ms`);
  }

  /** A plain Error standing in for an axios/network error: scrubbed message and code, no config. */
  private safeCause(err: unknown): Error {
    const cause = new Error(this.scrub(String((err as Error)?.message ?? err)));
    const code = errorCode(err);
    if (code) (cause as Error & { code?: string }).code = code;
    return cause;
  }

  /** Short reason of an axios failure, for retry log lines. */
  private describe(err: AxiosError, meta: AttemptMeta | undefined): string {
    if (err.response) return `HTTP ${err.response.status}`;
    if (TIMEOUT_CODES.has(err.code ?? '')) return `timed out after ${meta?.timeoutMs ?? this.timeoutMs} ms`;
    return err.code ?? this.scrub(err.message);
  }

  /** Maps a final axios failure (after retries) to the typed errors. */
  private toError(method: string, url: URL, err: AxiosError, timeoutMs: number): MediaServerError {
    const where = `${this.label}: ${method} ${redactUrl(url)}`;
    const res = err.response;
    if (!res) {
      if (TIMEOUT_CODES.has(err.code ?? '')) return this.timeoutError(method, url, timeoutMs);
      if (err.code === 'ERR_BAD_RESPONSE' && /maxContentLength/i.test(err.message)) {
        return new ProtocolError(`${where} returned a body larger than ${MAX_BODY_BYTES} bytes`);
      }
      const code = errorCode(err);
      return new UnreachableError(`${where} failed: ${code ?? this.scrub(err.message)}`, { cause: this.safeCause(err) });
    }
    const status = res.status;
    const snippet = typeof res.data === 'string' ? res.data.replace(/\s+/g, ' ').trim().slice(0, 200) : '';
    const detail = snippet ? `: ${this.scrub(snippet)}` : '';
    if (status === 401) return new BadCredentialsError(`${where} was refused (HTTP 401): credentials not accepted`, { status });
    if (status === 403) return new PermissionDeniedError(`${where} is not permitted for this user (HTTP 403)${detail}`, { status });
    if (status === 404) return new NotFoundError(`${where} not found (HTTP 404)`, { status });
    if (status >= 500 || status === 429) return new UnreachableError(`${where} failed with HTTP ${status}${detail}`, { status });
    return new ProtocolError(`${where} failed with unexpected HTTP ${status}${detail}`, { status });
  }
}

/** axios-retry's per-request override key. */
interface IAxiosRetryConfigHolder {
  'axios-retry'?: IAxiosRetryConfig;
}

