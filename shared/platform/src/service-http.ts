import type { RequestListener } from 'node:http';
import express, { type Express, type RequestHandler } from 'express';
import { UnauthorizedError } from './errors';
import { asyncRoute, errorHandler, hasBody, internalAuthMiddleware, jsonBody, metricsHandler, notFoundHandler, rejectMalformedUrl, rejectNulInBody } from './http';
import { IdentityVerifier } from './internal-auth';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import { RequestPipeline, type IdentifyCaller } from './pipeline';

export interface ServiceHttpOptions {
  service: string;
  logger: Logger;
  metrics: Metrics;
  /** Shared secret of the gateway's signed header; when undefined the check is off (unit tests only). */
  internalSecret?: string;
  /**
   * Readiness probes (database, bus); `/readyz` is 503 when a required one throws or returns false.
   * An `optional` probe is reported in `checks` but does not take the pod out of rotation (a service
   * that answers queries without the broker stays ready through a broker restart).
   */
  readiness: Array<{ name: string; check: () => Promise<boolean> | boolean; optional?: boolean }>;
  /** JSON body limit (default 10 MB: batch id lists). */
  bodyLimit?: string;
  /**
   * Parse JSON and form bodies for every route (default true). The gateway passes false and parses
   * after authentication with per-route limits (its own `stages`).
   */
  parseBodies?: boolean;
  /** Serve `/metrics` on this app (default true). The gateway serves it behind the bearer or on an internal port. */
  serveMetrics?: boolean;
  /**
   * express `trust proxy` (which peers may set X-Forwarded-For/-Proto/-Host): false (default, trust
   * nobody), or addresses/subnets/keywords such as `loopback` (https://expressjs.com/en/guide/behind-proxies.html).
   */
  trustProxy?: boolean | string | string[];
  /** Share of successful requests logged in the access log (ACCESS_LOG_SAMPLE; default 1 = all). */
  accessLogSample?: number;
  /** Who calls (the gateway authenticates); default: the gateway's signed identity header (401 without a valid one). */
  identify?: IdentifyCaller;
  /** Per-route stages after the access decision (the gateway's CSRF, rate limits, body limits); default: the body parsers. */
  stages?: (route: import('@polyphony/contracts').RouteDef) => RequestHandler[];
  /** Headers every answer carries (the gateway's security headers). */
  headers?: ReadonlyArray<readonly [string, string]>;
  /** Paths whose unknown routes the pipeline answers 404/405 (the gateway's API prefixes); default none. */
  ownsPath?: (path: string) => boolean;
}

/**
 * A service's signed-identity check as the pipeline's `identify`: the identity of a valid signed header, 401
 * without one (a service reached directly is closed, public routes included); no verifier (unit tests): none.
 */
function signedCaller(verifier: IdentityVerifier | undefined): IdentifyCaller {
  return (req) => {
    if (!verifier) return undefined;
    const identity = verifier.verify(req.headers);
    if (!identity) throw new UnauthorizedError('Missing or invalid gateway signature');
    return identity;
  };
}

/**
 * The body stage of a service's routes: JSON (up to `limit`, depth-checked) and form bodies parsed, a NUL in
 * them refused (400); a request without a body gets `{}` without running a parser. A streamed upload's media
 * type matches neither parser and is left unread for its handler.
 */
function bodyStage(limit: string): RequestHandler {
  const json = jsonBody(limit);
  const form = express.urlencoded({ extended: false, limit: '1mb' });
  const nul = rejectNulInBody();
  return (req, res, next) => {
    if (!hasBody(req)) {
      req.body ??= {};
      return next();
    }
    json(req, res, (err?: unknown) => (err ? next(err) : form(req, res, (err2?: unknown) => (err2 ? next(err2) : nul(req, res, next)))));
  };
}

/**
 * Builds the HTTP side every unit shares: the request pipeline (`RequestPipeline`: request id, access log,
 * metrics, URL checks, route match, identification, `decideAccess`, stages, the route's chain, errors in the
 * envelope) and its host express app, which serves `/healthz`, `/readyz`, `/metrics` and whatever else is not
 * in the route table (after the malformed-URL guard and, in a service, the signature check). Add routes with
 * `mountRoutes(app, ...)`, then call `finish()` to add the host app's 404 and error handlers. Serve `handler`
 * (the pipeline first, the host app for the rest); supertest may call `app` (its first middleware is the same
 * pipeline).
 */
export function createServiceHttp(options: ServiceHttpOptions): { app: Express; finish(): void; verifier?: IdentityVerifier; pipeline: RequestPipeline; handler: RequestListener } {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy ?? false);
  const verifier = options.internalSecret ? new IdentityVerifier(options.internalSecret) : undefined;
  const body = options.parseBodies === false ? [] : [bodyStage(options.bodyLimit ?? '10mb')];
  const pipeline = new RequestPipeline({
    app,
    logger: options.logger,
    metrics: options.metrics,
    accessLogSample: options.accessLogSample,
    identify: options.identify ?? signedCaller(verifier),
    stages: options.stages ?? (() => body),
    headers: options.headers,
    ownsPath: options.ownsPath,
  });
  app.use(pipeline.middleware());
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok', service: options.service });
  });
  app.get(
    '/readyz',
    asyncRoute(async (_req, res) => {
      const results: Record<string, boolean> = {};
      for (const probe of options.readiness) {
        try {
          results[probe.name] = Boolean(await probe.check());
        } catch {
          results[probe.name] = false;
        }
      }
      const ok = options.readiness.every((p) => p.optional || results[p.name]);
      res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not_ready', checks: results });
    }),
  );
  if (options.serveMetrics !== false) app.get('/metrics', metricsHandler(options.metrics));
  app.use(rejectMalformedUrl());
  if (verifier) app.use(internalAuthMiddleware(verifier));
  return {
    app,
    verifier,
    pipeline,
    handler: pipeline.listener(),
    finish() {
      app.use(notFoundHandler());
      app.use(errorHandler(options.logger));
    },
  };
}
