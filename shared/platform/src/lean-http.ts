import { randomUUID } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { RouteMatcher, type RouteDef } from '@polyphony/contracts';
import { REQUEST_ID_HEADER, runWithContext, type RequestContext } from './context';
import { accessLogLevel, errorHandler } from './http';
import type { IdentityVerifier } from './internal-auth';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import type { MountedRoute } from './routes';

/**
 * The lean request path of issue 19 (query throughput): GET requests of the hot read routes are answered
 * without walking express's middleware stack and router (about 40 layers and 100+ route regexes per
 * request, the `qs` query parser, body parsers that have nothing to read). What a lean path still does,
 * with the same results as the express path: request id (`x-request-id` taken when sane, else a UUID,
 * echoed), the per-request async context, one access-log line, the latency histogram, the route's access
 * rule and schema validation from the contracts table (the same `mountRoutes` chain runs), and errors in
 * the `{ error: { code, message, requestId } }` shape through the shared error handler.
 * A request the lean path cannot answer exactly as express would (another method, a body, a query string
 * `qs` would read differently, a malformed or NUL-bearing path or query, a missing or bad signature, a path
 * not in the service's table) is left to express untouched: the listener returns false before writing.
 */

/** A sane caller-given request id (same rule as the express middleware). */
const REQUEST_ID = /^[\w.-]{1,128}$/;

/** The request id of `req`: its `x-request-id` when sane, else a fresh UUID. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * Splits a raw URL (`/path?query`) into its path and the query as a flat object, or undefined when the
 * express path must take the request: a path with a malformed %-escape or a NUL (express answers 400),
 * a query `qs` would parse differently from a flat `key=value` list (brackets, a repeated or empty key,
 * more than 1000 parameters), or a query value/key with a malformed escape or a NUL (400 there).
 * `+` is a space and values are %-decoded, as `qs` does.
 */
export function splitSimpleUrl(url: string): { path: string; query: Record<string, string> } | undefined {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  try {
    if ((path.includes('%') ? decodeURIComponent(path) : path).includes('\u0000')) return undefined;
  } catch {
    return undefined;
  }
  const query: Record<string, string> = Object.create(null) as Record<string, string>;
  if (q < 0 || q === url.length - 1) return { path, query: { ...query } };
  const parts = url.slice(q + 1).split('&');
  if (parts.length > 1000) return undefined;
  for (const part of parts) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const rawKey = eq < 0 ? part : part.slice(0, eq);
    const rawValue = eq < 0 ? '' : part.slice(eq + 1);
    let key: string;
    let value: string;
    try {
      key = plainComponent(rawKey);
      value = plainComponent(rawValue);
    } catch {
      return undefined;
    }
    if (key === '' || key.includes('[') || key.includes(']') || key.includes('\u0000') || value.includes('\u0000')) return undefined;
    if (key in query || key in Object.prototype) return undefined;
    query[key] = value;
  }
  return { path, query: { ...query } };
}

/**
 * A query key or value as `qs` decodes it (`+` is a space, then %-escapes). Most components hold neither:
 * they are returned as they are (decodeURIComponent changes nothing but %-escapes), saving two string scans
 * and copies per component on every request. @throws URIError on a malformed escape
 */
function plainComponent(raw: string): string {
  const plus = raw.includes('+');
  if (!plus && !raw.includes('%')) return raw;
  return decodeURIComponent(plus ? raw.replace(/\+/g, ' ') : raw);
}

/**
 * Request-id header, async context, access log line and latency histogram of a request answered outside
 * express (both lean paths). The access line carries the same fields as `accessLogMiddleware`'s and follows
 * the same rule (`accessLogLevel`: level, ACCESS_LOG_SAMPLE for successes, internal paths at debug). `route` labels the histogram (the
 * route's path pattern).
 */
export function trackLeanRequest(req: IncomingMessage, res: ServerResponse, requestId: string, route: string, logger: Logger, metrics: Metrics, userId: () => string | undefined, accessLogSample = 1): void {
  res.setHeader(REQUEST_ID_HEADER, requestId);
  const started = process.hrtime.bigint();
  res.once('finish', () => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    metrics.httpDuration.observe({ method: req.method ?? 'GET', route, status: String(res.statusCode) }, seconds);
    const q = (req.url ?? '').indexOf('?');
    const path = q < 0 ? (req.url ?? '') : (req.url ?? '').slice(0, q);
    const level = accessLogLevel(logger, path, res.statusCode, accessLogSample);
    if (!level) return;
    logger.log(level, 'http request', {
      requestId,
      method: req.method,
      path: path.length > 512 ? `${path.slice(0, 512)}…` : path,
      status: res.statusCode,
      durationMs: Math.round(seconds * 1e4) / 10,
      userId: userId(),
    });
  });
}

/** Gives a raw request/response pair express's prototypes and the fields its router sets (what express's init middleware does). */
function asExpress(app: Express, req: IncomingMessage, res: ServerResponse, requestId: string): { req: Request; res: Response } {
  Object.setPrototypeOf(req, app.request);
  Object.setPrototypeOf(res, app.response);
  const ereq = req as unknown as Request;
  const eres = res as unknown as Response;
  ereq.res = eres;
  eres.req = ereq;
  eres.locals = Object.create(null) as Record<string, unknown>;
  ereq.originalUrl = req.url ?? '/';
  ereq.baseUrl = '';
  ereq.requestId = requestId;
  return { req: ereq, res: eres };
}

/**
 * Answers `err` on a lean path through the shared error handler (`errorHandler`: same status, code and
 * `{ error: { code, message, requestId } }` shape as on the express path).
 */
export function answerError(app: Express, req: IncomingMessage, res: ServerResponse, requestId: string, err: unknown, logger: Logger): void {
  const e = asExpress(app, req, res, requestId);
  errorHandler(logger)(err, e.req, e.res, () => undefined);
}

/** Options of `leanServiceRoutes`. */
export interface LeanServiceOptions {
  /** The express app whose request/response prototypes (res.json, req.header, settings) the handlers use. */
  app: Express;
  /** The routes `mountRoutes` wired (their chains start with the table's access check). */
  mounted: readonly MountedRoute[];
  /** Verifier of the gateway's signed identity (undefined: the check is off, as in `createServiceHttp`). */
  verifier?: IdentityVerifier;
  logger: Logger;
  metrics: Metrics;
  /** ACCESS_LOG_SAMPLE (default 1). */
  accessLogSample?: number;
}

/**
 * The lean path of a service: for a GET request of one of `mounted`'s GET routes, with a valid signed
 * identity, runs that route's `mountRoutes` chain (access check from the table, middlewares, schema
 * validation, handler) directly and returns true; otherwise returns false without touching the request
 * (the caller hands it to express). Errors of the chain, thrown or passed to `next`, go to the shared
 * error handler (4xx/5xx in the error shape); a chain that falls through answers 404 as express would.
 */
export function leanServiceRoutes(options: LeanServiceOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const gets = options.mounted.filter((m) => m.def.method === 'get');
  const chains = new Map<RouteDef, RequestHandler[]>(gets.map((m) => [m.def, m.chain]));
  // Only GET routes are looked up; a path another method owns falls back to express (405 there).
  const matcher = new RouteMatcher(gets.map((m) => m.def));
  const onError = errorHandler(options.logger);
  const { app, verifier, logger, metrics } = options;
  return (req, res) => {
    if (req.method !== 'GET' || req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) return false;
    const url = splitSimpleUrl(req.url ?? '/');
    if (!url) return false;
    const match = matcher.match('GET', url.path);
    if (match.kind !== 'found') return false;
    const identity = verifier ? verifier.verify(req.headers) : undefined;
    if (verifier && !identity) return false;
    const chain = chains.get(match.def)!;
    const requestId = requestIdOf(req);
    const ctx: RequestContext = { requestId, userId: identity?.sub };
    trackLeanRequest(req, res, requestId, match.def.path, logger, metrics, () => ctx.userId, options.accessLogSample);
    const { req: ereq, res: eres } = asExpress(app, req, res, requestId);
    ereq.params = match.params;
    ereq.query = url.query;
    if (identity) ereq.identity = identity;
    runWithContext(ctx, () => runChain(chain, ereq, eres, onError));
    return true;
  };
}

/** Runs an express handler chain: `next()` moves on, `next(err)` or a throw goes to `onError`, the end of the chain is a 404. */
function runChain(chain: readonly RequestHandler[], req: Request, res: Response, onError: (err: unknown, req: Request, res: Response, next: NextFunction) => void): void {
  let i = 0;
  const next: NextFunction = (err?: unknown) => {
    if (err !== undefined && err !== 'route' && err !== 'router') {
      onError(err, req, res, () => undefined);
      return;
    }
    const handler = err === undefined ? chain[i++] : undefined;
    if (!handler) {
      res.status(404).json({ error: { code: 'not_found', message: `No route for ${req.method} ${req.path}`, requestId: req.requestId } });
      return;
    }
    try {
      handler(req, res, next);
    } catch (e) {
      onError(e, req, res, () => undefined);
    }
  };
  next();
}

/** A node request listener: `lean` first, `app` for every request it does not take. */
export function withLeanPath(app: RequestListener, lean: ((req: IncomingMessage, res: ServerResponse) => boolean) | undefined): RequestListener {
  if (!lean) return app;
  return (req, res) => {
    if (!lean(req, res)) app(req, res);
  };
}
