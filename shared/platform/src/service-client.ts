import { REQUEST_ID_HEADER, currentContext } from './context';
import { AppError, UpstreamUnavailableError } from './errors';
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
    const url = new URL(path, this.baseUrl());
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const identity = options.identity ?? { sub: `service:${this.callerName}`, username: this.callerName, role: 'admin' as const, via: 'internal' as const };
    const headers: Record<string, string> = { ...signIdentity({ ...identity, iat: Date.now() }, this.internalSecret), accept: 'application/json' };
    const requestId = currentContext()?.requestId;
    if (requestId) headers[REQUEST_ID_HEADER] = requestId;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      throw new UpstreamUnavailableError(`Service call ${method} ${url.pathname} failed: ${(err as Error).message}`, 503, { cause: err });
    }
    const text = await res.text();
    const parsed: unknown = text ? safeJson(text) : undefined;
    if (!res.ok) {
      const e = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
      throw new AppError(e?.code ?? 'upstream_error', e?.message ?? `Service responded ${res.status}`, res.status >= 500 ? 502 : res.status);
    }
    return parsed as T;
  }

  get<T>(path: string, query?: Record<string, string | number | undefined>, identity?: CallerIdentity): Promise<T> {
    return this.request<T>('GET', path, undefined, { query, identity });
  }
  post<T>(path: string, body?: unknown, identity?: CallerIdentity): Promise<T> {
    return this.request<T>('POST', path, body ?? {}, { identity });
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
