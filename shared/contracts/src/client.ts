import type { RouteDef } from './openapi';
import type { z } from './zod';

/**
 * A small typed HTTP client over the route table, safe for the browser (only `fetch`; no Node
 * modules). `call(featureRoutes.similarTracks, { query: { item_id, n: 10 } })`
 * and gets the route's response type; the request shape is checked by the compiler from the same
 * zod schemas the services validate with.
 *
 * Errors: a non-2xx answer throws `ApiError` with the status and the documented error body
 * (`{ error: message, code, request_id }`); a network failure rejects with fetch's TypeError.
 */

type InputOf<S> = S extends z.ZodTypeAny ? z.input<S> : never;
type OutputOf<S> = S extends z.ZodTypeAny ? z.output<S> : unknown;

/** What `call` takes for a route: `params` when its path has parameters, `query` and `body` when it declares them. */
export type CallInput<R extends RouteDef> = {
  params?: R['params'] extends z.ZodTypeAny ? InputOf<R['params']> : Record<string, string | number>;
  query?: R['query'] extends z.ZodTypeAny ? Partial<InputOf<R['query']>> & Record<string, unknown> : Record<string, unknown>;
  body?: R['body'] extends z.ZodTypeAny ? InputOf<R['body']> : unknown;
};

/** The JSON a route answers with (its `response` schema's output type; `unknown` when the route declares none). */
export type ResponseOf<R extends RouteDef> = OutputOf<R['response']>;

export interface CallOptions {
  /** Prefix of the path (default '' = same origin, as the UI is served by the gateway). */
  baseUrl?: string;
  /** fetch implementation (default the global one). */
  fetch?: typeof fetch;
  signal?: AbortSignal;
  headers?: Record<string, string>;
  /** Parse the answer with the route's response schema (throws a ZodError when it does not match). Default false. */
  validate?: boolean;
}

/** A non-2xx answer of the API: the status and the documented error body fields. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Fills a route's `:name` segments (URI-encoded); throws when one is missing. */
export function buildPath(path: string, params: Record<string, unknown> = {}): string {
  return path.replace(/:(\w+)/g, (_, name: string) => {
    const v = params[name];
    if (v === undefined || v === null || v === '') throw new Error(`Missing path parameter "${name}" for ${path}`);
    return encodeURIComponent(String(v));
  });
}

/**
 * Query string with its '?' of the given values (arrays repeat the key); undefined, null and blank ('')
 * values are left out, so an empty form field means "not given". '' when nothing is left.
 */
export function buildQuery(query: Record<string, unknown> = {}): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '') continue;
    for (const item of Array.isArray(v) ? v : [v]) qs.append(k, String(item));
  }
  const s = qs.toString();
  return s ? `?${s}` : '';
}

/**
 * Calls one route of the table and returns its parsed JSON (undefined for an empty body).
 * Sends cookies of the same origin; a body is sent as application/json (the gateway's CSRF guard
 * requires it for session callers).
 */
export async function call<R extends RouteDef>(route: R, input: CallInput<R> = {}, options: CallOptions = {}): Promise<ResponseOf<R>> {
  const f = options.fetch ?? fetch;
  const url = `${options.baseUrl ?? ''}${buildPath(route.path, input.params as Record<string, unknown> | undefined)}${buildQuery(input.query as Record<string, unknown> | undefined)}`;
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  let body: string | undefined;
  if (input.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(input.body);
  }
  const res = await f(url, { method: route.method.toUpperCase(), headers, body, credentials: 'same-origin', signal: options.signal });
  const text = await res.text();
  let json: unknown = undefined;
  if (text) {
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
  }
  if (!res.ok) {
    const err = json as { error?: unknown; code?: unknown; request_id?: unknown } | undefined;
    const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
    throw new ApiError(res.status, text(err?.code) ?? 'http_error', text(err?.error) ?? `HTTP ${res.status}`, text(err?.request_id));
  }
  if (options.validate && route.response) return route.response.parse(json) as ResponseOf<R>;
  return json as ResponseOf<R>;
}
