import { randomUUID } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { RouteMatcher, type RouteDef, type RouteMatch } from '@polyphony/contracts';
import { decideAccess } from './access';
import { REQUEST_ID_HEADER, runWithContext, type RequestContext } from './context';
import { AppError, NotFoundError } from './errors';
import { accessLogLevel, errorHandler, hasBody, urlProblem } from './http';
import type { CallerIdentity } from './internal-auth';
import type { Logger } from './logger';
import type { Metrics } from './metrics';

/**
 * The one request pipeline of the gateway and of every service (issue 29), driven by the contracts route
 * table. Every request, whichever the process, goes through `RequestPipeline.handle`:
 * 1. request id (`x-request-id` taken when sane, else a UUID; echoed), fixed headers (the gateway's
 *    security headers), the per-request async context, one access-log line and the latency histogram;
 * 2. the URL split into path and query (a flat query without the `qs` parser; anything else with the app's
 *    own `query parser fn`, so the result is express's), a malformed path or a NUL refused (400);
 * 3. the route looked up once in the table (cached): a path outside the table goes to the host express app
 *    (health, metrics, the web UI's files, 404), a path the pipeline owns (`ownsPath`) but no route of this
 *    method answers 404 / 405 with `Allow` (after authentication, so an anonymous caller learns nothing);
 * 4. the caller identified (`identify`: the gateway authenticates cookie / API token / first-run window, a
 *    service verifies the gateway's signed header) and the one access decision (`decideAccess`: 401/403);
 * 5. the route's stages (gateway: CSRF, login rate limits, body limits; services: body parsers) and its
 *    handler chain (middlewares, schema validation, handler) run without the express router;
 * errors, thrown or passed to `next`, are answered by the one error handler in the error envelope.
 * The express app is the host (its request/response prototypes: `res.json`, `req.ip`, settings) and serves
 * only what is not in the table; it mounts `middleware()` first, so a caller of the app (supertest) takes the
 * same pipeline as the server's listener (`listener()`).
 */

/** Who calls: the identity, or undefined for none; throws (or rejects with) an AppError to refuse (401). */
export type IdentifyCaller = (req: Request, res: Response, route: RouteDef | undefined) => CallerIdentity | undefined | Promise<CallerIdentity | undefined>;

export interface PipelineOptions {
  /** The host express app: prototypes and settings of the request/response, and what the table does not hold. */
  app: Express;
  logger: Logger;
  metrics: Metrics;
  /** Share of successful requests access-logged (ACCESS_LOG_SAMPLE; default 1). */
  accessLogSample?: number;
  /** Identifies the caller of a table route (and of an owned path no route matches: `route` undefined). */
  identify: IdentifyCaller;
  /** Handlers run after the access decision, before the route's own chain (per route, built once). */
  stages?: (route: RouteDef) => RequestHandler[];
  /** Headers set on every answer of this process (table routes and the host app's alike). */
  headers?: ReadonlyArray<readonly [string, string]>;
  /** Paths whose unknown routes the pipeline answers itself (404/405 after authentication); others go to the app. */
  ownsPath?: (path: string) => boolean;
}

/** A sane caller-given request id. */
const REQUEST_ID = /^[\w.-]{1,128}$/;
/** Marks a request the pipeline has taken (a listener -> host app -> `middleware()` round trip runs it once). */
const TAKEN = Symbol('pipeline-taken');
const MATCH_CACHE_SIZE = 2048;
/** The pipeline of each host app made by `createServiceHttp` (what `mountRoutes(app, ...)` adds to). */
const pipelines = new WeakMap<object, RequestPipeline>();

/** The request id of `req`: its `x-request-id` when sane, else a fresh UUID. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * Splits a raw URL (`/path?query`) into its path and the query as a flat object, when the query is a plain
 * `key=value` list that `qs` would read the same way; undefined otherwise (brackets, a repeated or empty key,
 * more than 1000 parameters, a malformed escape or a NUL anywhere): the caller then uses the full parser.
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

/** A query key or value as `qs` decodes it (`+` is a space, then %-escapes). @throws URIError on a malformed escape */
function plainComponent(raw: string): string {
  const plus = raw.includes('+');
  if (!plus && !raw.includes('%')) return raw;
  return decodeURIComponent(plus ? raw.replace(/\+/g, ' ') : raw);
}

/** Gives a raw request/response pair the host app's prototypes and the fields express's router sets. */
function asExpress(app: Express, req: IncomingMessage, res: ServerResponse, requestId: string): { req: Request; res: Response } {
  Object.setPrototypeOf(req, app.request);
  Object.setPrototypeOf(res, app.response);
  const ereq = req as unknown as Request;
  const eres = res as unknown as Response;
  ereq.res = eres;
  eres.req = ereq;
  eres.locals ??= Object.create(null) as Record<string, unknown>;
  ereq.originalUrl = req.url ?? '/';
  ereq.baseUrl = '';
  ereq.requestId = requestId;
  return { req: ereq, res: eres };
}

/**
 * The fields express's router sets, without express's prototypes, for a `plain` chain (see `RequestPipeline.add`):
 * changing the prototype of node's request and response objects costs about 0.18 ms of CPU per request (their
 * hidden classes change, node's HTTP internals then run slower on them), half the gateway's work on a forwarded GET.
 */
function plainFields(req: IncomingMessage, res: ServerResponse, requestId: string): { req: Request; res: Response } {
  const ereq = req as unknown as Request;
  const eres = res as unknown as Response;
  ereq.res = eres;
  eres.req = ereq;
  ereq.originalUrl = req.url ?? '/';
  ereq.baseUrl = '';
  ereq.requestId = requestId;
  return { req: ereq, res: eres };
}

/** Runs a handler chain: `next()` moves on, `next(err)` or a throw goes to `onError`; past the end is a 404. */
function runChain(chain: readonly RequestHandler[], req: Request, res: Response, onError: (err: unknown) => void): void {
  let i = 0;
  const next: NextFunction = (err?: unknown) => {
    if (err !== undefined && err !== 'route' && err !== 'router') return onError(err);
    const handler = err === undefined ? chain[i++] : undefined;
    if (!handler) return onError(new NotFoundError(`No route for ${req.method} ${req.path}`));
    try {
      handler(req, res, next);
    } catch (e) {
      onError(e);
    }
  };
  next();
}

function isPromise<T>(v: T | Promise<T>): v is Promise<T> {
  return typeof (v as { then?: unknown } | undefined)?.then === 'function';
}

/** See the module comment. One per process (the gateway's, or a service's `createServiceHttp`). */
export class RequestPipeline {
  private readonly chains = new Map<RouteDef, { chain: RequestHandler[]; plain: boolean }>();
  private matcher?: RouteMatcher;
  private readonly matches = new Map<string, RouteMatch>();
  private readonly onError: ReturnType<typeof errorHandler>;
  private readonly headers: ReadonlyArray<readonly [string, string]>;

  constructor(private readonly options: PipelineOptions) {
    this.onError = errorHandler(options.logger);
    this.headers = options.headers ?? [];
    pipelines.set(options.app, this);
  }

  /** The pipeline hosted by `app`. @throws Error when `app` has none (not made by `createServiceHttp`) */
  static of(app: object): RequestPipeline {
    const p = pipelines.get(app);
    if (!p) throw new Error('No request pipeline on this app: make it with createServiceHttp');
    return p;
  }

  /**
   * Serves `route` with `chain` (run after identification, the access decision and the route's stages).
   * `plain`: the chain (the gateway's forwarder) uses node's request/response API only (plus the fields the pipeline
   * sets: `query`, `params`, `requestId`, `identity`, `body`, `originalUrl`), so a GET or HEAD without a body or a
   * cookie (nothing to parse, no session cookie to refresh) runs without express's prototypes; errors still get them.
   * @throws Error when the route already has a chain (a route is served once)
   */
  add(route: RouteDef, chain: readonly RequestHandler[], options: { plain?: boolean } = {}): void {
    if (this.chains.has(route)) throw new Error(`Two handler chains for ${route.method.toUpperCase()} ${route.path}`);
    this.chains.set(route, { chain: [...(this.options.stages?.(route) ?? []), ...chain], plain: options.plain === true });
    this.matcher = undefined;
    this.matches.clear();
  }

  /** The routes served, in the order they were added. */
  routes(): RouteDef[] {
    return [...this.chains.keys()];
  }

  /** Looks up `method path` among the served routes (HEAD is answered by GET); recent answers are kept. */
  match(method: string, path: string): RouteMatch {
    const key = `${method} ${path}`;
    let m = this.matches.get(key);
    if (!m) {
      this.matcher ??= new RouteMatcher([...this.chains.keys()]);
      m = this.matcher.match(method, path);
      if (this.matches.size >= MATCH_CACHE_SIZE) this.matches.clear();
      this.matches.set(key, m);
    }
    return m;
  }

  /** The node request listener of the process: the pipeline, then the host app for what is not in the table. */
  listener(): RequestListener {
    const app = this.options.app;
    return (req, res) => this.handle(req, res, () => app(req, res));
  }

  /** The same pipeline as the host app's first middleware (a request the listener already took passes through). */
  middleware(): RequestHandler {
    return (req, res, next) => this.handle(req, res, next);
  }

  /** Runs one request through the pipeline; `fallback` hands it to the host app (a path outside the table). */
  handle(req: IncomingMessage, res: ServerResponse, fallback: () => void): void {
    const marked = req as IncomingMessage & { [TAKEN]?: true; requestId?: string };
    if (marked[TAKEN]) return fallback();
    marked[TAKEN] = true;
    const { app, logger, metrics } = this.options;
    const requestId = requestIdOf(req);
    marked.requestId = requestId;
    res.setHeader(REQUEST_ID_HEADER, requestId);
    for (const [name, value] of this.headers) res.setHeader(name, value);
    const ctx: RequestContext = { requestId, awaitingAnswer: () => !res.writableEnded && !res.destroyed };
    const raw = req.url ?? '/';
    const simple = splitSimpleUrl(raw);
    const q = raw.indexOf('?');
    const path = simple?.path ?? (q < 0 ? raw : raw.slice(0, q));
    const match = this.match(req.method ?? 'GET', path);
    const def = match.kind === 'found' ? match.def : undefined;
    track(req, res, requestId, path, def, logger, metrics, ctx, this.options.accessLogSample);
    runWithContext(ctx, () => {
      if (!def && !this.options.ownsPath?.(path)) return fallback();
      const entry = def ? this.chains.get(def) : undefined;
      const plain = entry?.plain === true && (req.method === 'GET' || req.method === 'HEAD') && !hasBody(req) && req.headers.cookie === undefined;
      const { req: ereq, res: eres } = plain ? plainFields(req, res, requestId) : asExpress(app, req, res, requestId);
      const fail = (err: unknown) => {
        if (plain) asExpress(app, req, res, requestId);
        this.onError(err, ereq, eres, () => undefined);
      };
      const query = simple ? simple.query : (app.get('query parser fn') as (s: string) => Record<string, unknown>)(q < 0 ? '' : raw.slice(q + 1));
      ereq.query = query as Request['query'];
      ereq.params = match.kind === 'found' ? match.params : {};
      const problem = simple ? undefined : urlProblem(path, query);
      if (problem) return fail(problem);
      const proceed = (identity: CallerIdentity | undefined): void => {
        if (identity) {
          ereq.identity = identity;
          ctx.userId = identity.sub;
        }
        if (!def) {
          if (match.kind === 'method') {
            eres.setHeader('Allow', match.allow.join(', '));
            return fail(new AppError('method_not_allowed', `${req.method} is not allowed on ${path} (allowed: ${match.allow.join(', ')})`, 405));
          }
          return fail(new NotFoundError(`No route for ${req.method} ${path}`));
        }
        const refused = decideAccess(def, identity);
        if (refused) return fail(refused);
        runChain(entry!.chain, ereq, eres, fail);
      };
      try {
        const who = this.options.identify(ereq, eres, def);
        if (isPromise(who)) who.then(proceed, fail);
        else proceed(who);
      } catch (err) {
        fail(err);
      }
    });
  }
}

/**
 * Access-log line and latency histogram of a request, at its end. The line carries method, path (no query
 * string: it may hold secrets), status, duration and user at the level `accessLogLevel` gives; the histogram is
 * labelled with the route's path pattern (a host-app route's own pattern, `unmatched` for a 404, else `other`),
 * never the raw path.
 */
function track(req: IncomingMessage, res: ServerResponse, requestId: string, path: string, def: RouteDef | undefined, logger: Logger, metrics: Metrics, ctx: RequestContext, sample = 1): void {
  const started = process.hrtime.bigint();
  res.once('finish', () => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    metrics.httpDuration.observe({ method: req.method ?? 'GET', route: def?.path ?? hostRouteLabel(req as Request, res.statusCode), status: String(res.statusCode) }, seconds);
    const level = accessLogLevel(logger, path, res.statusCode, sample);
    if (!level) return;
    logger.log(level, 'http request', {
      requestId,
      method: req.method,
      path: path.length > 512 ? `${path.slice(0, 512)}…` : path,
      status: res.statusCode,
      durationMs: Math.round(seconds * 1e4) / 10,
      userId: ctx.userId ?? (req as Request).identity?.sub,
    });
  });
}

/** The histogram label of a request the host app answered. */
function hostRouteLabel(req: Request, status: number): string {
  const route = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof route === 'string') return `${req.baseUrl ?? ''}${route}`;
  return status === 404 ? 'unmatched' : 'other';
}
