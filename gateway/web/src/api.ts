/**
 * Typed API client of the web UI. Every call names a contracts route (`defineRoute` object from
 * @polyphony/contracts); its params, query and body are typed from the route's zod schemas
 * (z.input) and its answer from the response schema (z.output). No path is written by hand here
 * or in the pages.
 *
 * JSON calls go through the contracts' browser-safe `call()` (shared/contracts/src/client.ts);
 * this module adds what the UI needs around it: the sidebar's `server` (query for GET, JSON body
 * otherwise), the redirect to /login on a 401, `{}` as the body of a bodiless mutation. `send()`
 * (raw Response: the chat's event stream, archive uploads) builds the same request itself.
 */
import type { z } from 'zod';
import { ApiError, call as contractCall } from '@polyphony/contracts';
import { buildRequest, errorMessage } from './request';

export { ApiError };

/** What a route definition from @polyphony/contracts looks like to the client. */
export interface RouteLike {
  method: string;
  path: string;
  params?: z.ZodTypeAny;
  query?: z.ZodTypeAny;
  body?: z.ZodTypeAny;
  response?: z.ZodTypeAny;
}

type Params<R> = R extends { params: z.ZodTypeAny } ? { params: z.input<R['params']> } : { params?: undefined };
type Query<R> = R extends { query: z.ZodTypeAny } ? { query?: z.input<R['query']> } : { query?: undefined };
type Body<R> = R extends { body: z.ZodTypeAny } ? { body?: z.input<R['body']> } : { body?: undefined };
/** Input of a call: `params` required when the path has some; query and body optional (the server validates). */
export type CallInput<R> = Params<R> & Query<R> & Body<R>;
/** The parsed answer: the route's response schema output, `unknown` where the contract declares none. */
export type CallOutput<R> = R extends { response: z.ZodTypeAny } ? z.output<R['response']> : unknown;

export interface CallOptions {
  /** Add the sidebar's selected (non-default) server as `server`. */
  scoped?: boolean;
  /** Do not send the page to /login on a 401. */
  allow401?: boolean;
  signal?: AbortSignal;
  /** Send this body as is (an upload) instead of JSON. */
  raw?: { body: Blob; contentType: string };
  /** Extra request headers (e.g. a backup passphrase, never put in a URL). */
  headers?: Record<string, string>;
}

let onUnauthorized: () => void = () => undefined;
/** Called on any 401 (except calls made with allow401); the shell sends the browser to /login. */
export function setUnauthorizedHandler(fn: () => void): void {
  onUnauthorized = fn;
}

let serverParamOf: () => string | undefined = () => undefined;
/** Where scoped calls get the `server` value from (the shell's sidebar state). */
export function setServerSource(fn: () => string | undefined): void {
  serverParamOf = fn;
}

/** Sends a call and returns the raw Response (for streams and downloads); errors as in call(). */
export async function send<R extends RouteLike>(route: R, input: CallInput<R>, opts: CallOptions = {}): Promise<Response> {
  const i = input as { params?: Record<string, unknown>; query?: Record<string, unknown>; body?: unknown };
  const req = buildRequest(route, opts.raw ? { ...i, body: undefined } : i, opts.scoped ? serverParamOf() : undefined);
  const json = !opts.raw && req.body !== undefined;
  const res = await fetch(req.url, {
    method: req.method,
    credentials: 'same-origin',
    headers: { accept: 'application/json', ...(json ? { 'content-type': 'application/json' } : {}), ...(opts.raw ? { 'content-type': opts.raw.contentType } : {}), ...(opts.headers ?? {}) },
    body: opts.raw ? opts.raw.body : json ? JSON.stringify(req.body) : undefined,
    signal: opts.signal,
  });
  if (!res.ok) {
    const text = await res.text();
    let data: unknown = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (res.status === 401 && !opts.allow401) onUnauthorized();
    const e = errorMessage(res.status, data);
    throw new ApiError(res.status, e.code ?? 'http_error', e.message);
  }
  return res;
}

/**
 * JSON call of a contracts route. Resolves to the parsed body (typed by the route's response
 * schema; null for an empty body); rejects with ApiError carrying the server's `error` message.
 */
export async function call<R extends RouteLike>(route: R, input: CallInput<R>, opts: CallOptions = {}): Promise<CallOutput<R>> {
  if (opts.raw) {
    const res = await send(route, input, opts);
    const text = await res.text();
    return (text ? JSON.parse(text) : null) as CallOutput<R>;
  }
  const i = input as { params?: Record<string, unknown>; query?: Record<string, unknown>; body?: unknown };
  const req = buildRequest(route, i, opts.scoped ? serverParamOf() : undefined);
  const query = Object.fromEntries(new URLSearchParams(req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : ''));
  try {
    const out = await contractCall(route as unknown as Parameters<typeof contractCall>[0], { params: i.params as Record<string, string>, query, body: req.body }, { signal: opts.signal, headers: opts.headers });
    return (out === undefined ? null : out) as CallOutput<R>;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401 && !opts.allow401) onUnauthorized();
    throw err;
  }
}
