/**
 * Pure request building for the web UI's API calls (no DOM, no fetch): unit-tested on its own.
 * A route is a contracts `defineRoute` object (method, Express-style path, zod schemas); the URL is
 * built by the contracts client's `buildPath` (`:params` filled, URI-encoded) and `buildQuery` (blank
 * values left out, arrays repeat the key), never from a hand-written string. What is the UI's own
 * here: where the selected server goes, the default `{}` body, and the error message.
 */
import { buildPath, buildQuery } from '@polyphony/contracts';

/** The parts of a contracts route definition the client needs. */
export interface RouteShape {
  method: string;
  path: string;
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
  return { method, url: `${buildPath(route.path, input.params)}${buildQuery(query)}`, body };
}

/** The message of an API error body `{ error: message, code, request_id }`, or a fallback naming the HTTP status. */
export function errorMessage(status: number, body: unknown): { message: string; code?: string } {
  const e = body as { error?: unknown; code?: unknown } | null;
  if (e && typeof e.error === 'string' && e.error) return { message: e.error, code: typeof e.code === 'string' ? e.code : undefined };
  return { message: `Request failed (HTTP ${status})` };
}
