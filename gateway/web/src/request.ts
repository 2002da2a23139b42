/**
 * Pure request building for the typed API client (no DOM, no fetch): unit-tested on its own.
 * A route is a contracts `defineRoute` object (method, Express-style path, zod schemas); the
 * URL comes from its `path` with `:params` filled in, never from a hand-written string.
 */

/** The parts of a contracts route definition the client needs. */
export interface RouteShape {
  method: string;
  path: string;
}

/** Scalar values a query string can carry; undefined, null and '' are left out. */
export type QueryValue = string | number | boolean | null | undefined;

/**
 * Fills `:name` segments of an Express-style path from `params` (URI-encoded). Throws when a
 * segment has no value: a programming error, caught by the unit tests, never a silent "/undefined".
 */
export function fillPath(path: string, params: Record<string, unknown> | undefined): string {
  return path.replace(/:(\w+)/g, (_m, name: string) => {
    const v = params?.[name];
    if (v === undefined || v === null || v === '') throw new Error(`missing path parameter ${name} for ${path}`);
    return encodeURIComponent(String(v));
  });
}

/** Query string (without '?') of the scalar entries of `query`; arrays repeat the key. */
export function queryString(query: Record<string, unknown> | undefined): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) for (const x of v) params.append(k, String(x));
    else params.set(k, String(v));
  }
  return params.toString();
}

export interface BuiltRequest {
  method: string;
  url: string;
  /** JSON body (serialised by the caller); undefined for none. */
  body: unknown;
}

/**
 * The method, URL and body of a call. `server` (the sidebar's non-default choice) goes into the
 * query of GET/DELETE-without-body calls and into the JSON body otherwise, as the gateway reads it
 * from either (spec: Selecting a server at runtime 1).
 */
export function buildRequest(
  route: RouteShape,
  input: { params?: Record<string, unknown>; query?: Record<string, unknown>; body?: unknown },
  server?: string,
): BuiltRequest {
  const method = route.method.toUpperCase();
  const query: Record<string, unknown> = { ...(input.query ?? {}) };
  let body = input.body;
  if (server !== undefined) {
    if (method === 'GET' || method === 'HEAD' || (body === undefined && method === 'DELETE')) query.server = server;
    else body = { ...((body as Record<string, unknown> | undefined) ?? {}), server };
  }
  if (body === undefined && method !== 'GET' && method !== 'HEAD' && method !== 'DELETE') body = {};
  const qs = queryString(query);
  const path = fillPath(route.path, input.params);
  return { method, url: qs ? `${path}?${qs}` : path, body };
}

/** The message of an API error body `{ error: message, code, request_id }`, or a fallback naming the HTTP status. */
export function errorMessage(status: number, body: unknown): { message: string; code?: string } {
  const e = body as { error?: unknown; code?: unknown } | null;
  if (e && typeof e.error === 'string' && e.error) return { message: e.error, code: typeof e.code === 'string' ? e.code : undefined };
  return { message: `Request failed (HTTP ${status})` };
}
