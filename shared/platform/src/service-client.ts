import { REQUEST_ID_HEADER, currentContext } from './context';
import { AppError, StateUnavailableError, UpstreamUnavailableError } from './errors';
import { type CallerIdentity, signIdentity } from './internal-auth';

/**
 * HTTP client for calls between services. Signs an `internal` admin identity (or forwards the
 * caller's), propagates the request id, maps error responses back to AppError with the callee's
 * status and message, and maps network failures to UpstreamUnavailableError (503).
 */
export class ServiceClient {
  constructor(
    private readonly baseUrl: () => string,
    private readonly internalSecret: string,
    private readonly callerName: string,
    private readonly timeoutMs = 120_000,
  ) {}

  /** Sends a JSON request; returns the parsed JSON body (or undefined for 204). */
  async request<T>(method: string, path: string, body?: unknown, options: { identity?: CallerIdentity; query?: Record<string, string | number | undefined> } = {}): Promise<T> {
    const res = await this.send(method, path, body, { ...options, accept: 'application/json' });
    const text = await res.text();
    const parsed: unknown = text ? safeJson(text) : undefined;
    if (!res.ok) throw errorOf(res.status, parsed, res.headers.get('retry-after'));
    return parsed as T;
  }

  /**
   * Sends a request whose `Accept` is `accept` (content negotiation, e.g. `application/vnd.polyphony.snapshot-page,
   * application/json;q=0.5`) and returns the answer's media type and raw bytes unparsed; error answers are mapped
   * like `request`'s (the error body is JSON whatever was asked for).
   * @returns `contentType` without parameters, lower case ('' when absent)
   */
  async requestBytes(method: string, path: string, accept: string, options: { identity?: CallerIdentity; query?: Record<string, string | number | undefined> } = {}): Promise<{ contentType: string; body: Uint8Array }> {
    const res = await this.send(method, path, undefined, { ...options, accept });
    if (!res.ok) {
      const text = await res.text();
      throw errorOf(res.status, text ? safeJson(text) : undefined, res.headers.get('retry-after'));
    }
    let body: Uint8Array;
    try {
      body = new Uint8Array(await res.arrayBuffer());
    } catch (err) {
      throw new UpstreamUnavailableError(`Service call ${method} ${path} failed while reading the answer: ${(err as Error).message}`, 503, { cause: err });
    }
    const contentType = (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    return { contentType, body };
  }

  /**
   * Like `requestBytes`, but the answer's body is handed over as it arrives (a long streamed answer, e.g. the
   * catalogue's snapshot stream): no limit on the whole answer's time, instead `timeoutMs` until the headers and
   * again between two chunks (a callee that stops sending). Reading stops (and the connection closes) when the
   * caller's iteration ends early or `cancel()` is called. A failure while reading (reset, idle timeout) throws
   * UpstreamUnavailableError (503) from the iteration.
   * @returns `contentType` without parameters, lower case ('' when absent)
   */
  async requestStream(method: string, path: string, accept: string, options: { identity?: CallerIdentity; query?: Record<string, string | number | undefined> } = {}): Promise<{ contentType: string; chunks: AsyncIterable<Uint8Array>; cancel(): void }> {
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => abort.abort(new Error(`no data for ${this.timeoutMs} ms`)), this.timeoutMs);
      timer.unref?.();
    };
    arm();
    let res: Response;
    try {
      res = await this.send(method, path, undefined, { ...options, accept, signal: abort.signal });
    } catch (err) {
      clearTimeout(timer);
      throw err;
    }
    if (!res.ok) {
      const text = await res.text().catch(() => '');
      clearTimeout(timer);
      throw errorOf(res.status, text ? safeJson(text) : undefined, res.headers.get('retry-after'));
    }
    const contentType = (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    const body = res.body;
    const cancel = () => {
      clearTimeout(timer);
      abort.abort(new Error('stream cancelled'));
    };
    async function* chunks(): AsyncGenerator<Uint8Array> {
      if (!body) return;
      const reader = body.getReader();
      try {
        for (;;) {
          arm();
          let r: Awaited<ReturnType<typeof reader.read>>;
          try {
            r = await reader.read();
          } catch (err) {
            throw new UpstreamUnavailableError(`Service call ${method} ${path} failed while reading the answer: ${(err as Error).message}`, 503, { cause: err });
          }
          // The idle limit runs while waiting for data only, not while the consumer works on a chunk.
          clearTimeout(timer);
          if (r.done) return;
          yield r.value;
        }
      } finally {
        clearTimeout(timer);
        reader.releaseLock();
        if (!abort.signal.aborted) abort.abort(new Error('stream closed'));
      }
    }
    return { contentType, chunks: chunks(), cancel };
  }

  private async send(method: string, path: string, body: unknown, options: { identity?: CallerIdentity; query?: Record<string, string | number | undefined>; accept: string; signal?: AbortSignal }): Promise<Response> {
    const url = new URL(path, this.baseUrl());
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const identity = options.identity ?? { sub: `service:${this.callerName}`, username: this.callerName, role: 'admin' as const, via: 'internal' as const };
    const headers: Record<string, string> = { ...signIdentity({ ...identity, iat: Date.now() }, this.internalSecret), accept: options.accept };
    const requestId = currentContext()?.requestId;
    if (requestId) headers[REQUEST_ID_HEADER] = requestId;
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      return await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: options.signal ?? AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      throw new UpstreamUnavailableError(`Service call ${method} ${url.pathname} failed: ${(err as Error).message}`, 503, { cause: err });
    }
  }

  get<T>(path: string, query?: Record<string, string | number | undefined>, identity?: CallerIdentity): Promise<T> {
    return this.request<T>('GET', path, undefined, { query, identity });
  }
  post<T>(path: string, body?: unknown, identity?: CallerIdentity): Promise<T> {
    return this.request<T>('POST', path, body ?? {}, { identity });
  }
}

/**
 * The callee's error answer as an AppError with its code and message. A 4xx keeps its status. A 503 of a fault (the
 * callee's database or broker unreachable: it sent `Retry-After`) stays a 503 `UpstreamUnavailableError`, so the
 * caller's answer is a 503 with `Retry-After` too (issue 36: a database outage turned the registry's 503s into the
 * gateway's 502s). A 503 without `Retry-After` (a documented state, e.g. a model not installed) keeps its code as a
 * 503; any other 5xx (a bug or a bad answer of the callee) becomes 502.
 */
function errorOf(status: number, parsed: unknown, retryAfter: string | null = null): AppError {
  const e = parsed as { error?: unknown; code?: unknown } | undefined;
  const code = typeof e?.code === 'string' ? e.code : 'upstream_error';
  const message = typeof e?.error === 'string' ? e.error : `Service responded ${status}`;
  if (status === 503 && retryAfter !== null) return new UpstreamUnavailableError(message, 503);
  if (status === 503) return new StateUnavailableError(code, message);
  return new AppError(code, message, status >= 500 ? 502 : status);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
