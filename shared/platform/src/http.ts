import { randomUUID } from 'node:crypto';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { ZodError, type ZodType, type ZodTypeDef } from 'zod';
import { REQUEST_ID_HEADER, currentContext, runWithContext } from './context';
import { AppError, ForbiddenError, UnauthorizedError, ValidationError } from './errors';
import { type CallerIdentity, type Role, verifyIdentity } from './internal-auth';
import type { Logger } from './logger';
import type { Metrics } from './metrics';

declare module 'express-serve-static-core' {
  interface Request {
    /** Request id (from the `x-request-id` header or freshly generated). */
    requestId: string;
    /** Caller identity verified from the gateway's signed header (services) or set by the gateway. */
    identity?: CallerIdentity;
  }
}

/** Formats a zod error as one readable line: `field.path: message; ...`. */
export function formatZodError(err: ZodError): string {
  return err.issues.map((i) => `${i.path.length ? i.path.join('.') : 'body'}: ${i.message}`).join('; ');
}

/** Parses `value` with `schema`; throws ValidationError (400) with a readable message on failure. */
export function parseOrThrow<T>(schema: ZodType<T, ZodTypeDef, unknown>, value: unknown, what = 'request'): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new ValidationError(`Invalid ${what}: ${formatZodError(result.error)}`, result.error.issues);
  return result.data;
}

/** Wraps an async route handler so rejections reach the error middleware. */
export function asyncRoute(fn: (req: Request, res: Response, next: NextFunction) => Promise<unknown>): RequestHandler {
  return (req, res, next) => {
    fn(req, res, next).catch(next);
  };
}

/** Request-id middleware: takes `x-request-id` (if sane) or makes one, echoes it, and sets the async context. */
export function requestIdMiddleware(): RequestHandler {
  return (req, res, next) => {
    const given = req.header(REQUEST_ID_HEADER);
    const requestId = given && /^[\w.-]{1,128}$/.test(given) ? given : randomUUID();
    req.requestId = requestId;
    res.setHeader(REQUEST_ID_HEADER, requestId);
    runWithContext({ requestId }, () => next());
  };
}

/** One log line per request: method, path (no query string: it may hold secrets), status, duration ms. */
export function accessLogMiddleware(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      if (req.path === '/healthz' || req.path === '/readyz' || req.path === '/metrics') return;
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      logger.info('http request', {
        requestId: req.requestId,
        method: req.method,
        path: req.path,
        status: res.statusCode,
        durationMs: Math.round(ms * 10) / 10,
        userId: req.identity?.sub,
      });
    });
    next();
  };
}

/** The single error-to-HTTP mapping: `{ error: { code, message, requestId } }`; unknown errors are 500 without internals. */
export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const requestId = req.requestId ?? currentContext()?.requestId ?? 'unknown';
    let status = 500;
    let code = 'internal_error';
    let message = 'Internal server error';
    if (err instanceof AppError) {
      status = err.httpStatus;
      code = err.code;
      message = err.message;
      if (status >= 500) logger.error('request failed upstream', { requestId, code, message, cause: String((err as { cause?: unknown }).cause ?? '') });
    } else if (err instanceof ZodError) {
      status = 400;
      code = 'validation_failed';
      message = `Invalid request: ${formatZodError(err)}`;
    } else if (isBodyParserError(err)) {
      status = err.status ?? 400;
      code = status === 413 ? 'payload_too_large' : 'malformed_body';
      message = status === 413 ? 'Request body too large' : 'Malformed request body (expected JSON)';
    } else {
      logger.error('unhandled error', { requestId, err });
    }
    if (res.headersSent) return;
    res.status(status).json({ error: { code, message, requestId } });
  };
}

function isBodyParserError(err: unknown): err is { status?: number; type: string } {
  if (typeof err !== 'object' || err === null) return false;
  const type = (err as { type?: unknown }).type;
  return typeof type === 'string' && 'status' in err && /parse|too\.large|encoding/.test(type);
}

/** 404 in the common error shape for unmatched routes. */
export function notFoundHandler(): RequestHandler {
  return (req, res) => {
    res.status(404).json({ error: { code: 'not_found', message: `No route for ${req.method} ${req.path}`, requestId: req.requestId } });
  };
}

/**
 * Verifies the gateway's signed identity header on every request except health and metrics.
 * With no valid signature the request is refused (401), so a service reached directly is closed.
 */
export function internalAuthMiddleware(secret: string): RequestHandler {
  return (req, _res, next) => {
    const identity = verifyIdentity(req.headers, secret);
    if (!identity) {
      next(new UnauthorizedError('Missing or invalid gateway signature'));
      return;
    }
    req.identity = identity;
    if (currentContext()) currentContext()!.userId = identity.sub;
    next();
  };
}

/** Route guard: the verified caller must hold `role` (admin implies user). */
export function requireRole(role: Role): RequestHandler {
  return (req, _res, next) => {
    const id = req.identity;
    if (!id) return next(new UnauthorizedError());
    if (role === 'admin' && id.role !== 'admin') return next(new ForbiddenError('Admin role required'));
    next();
  };
}

export interface ServiceHttpOptions {
  service: string;
  logger: Logger;
  metrics: Metrics;
  /** Shared secret of the gateway's signed header; when undefined the check is off (unit tests only). */
  internalSecret?: string;
  /** Readiness probes (database, bus); `/readyz` is 503 when any throws or returns false. */
  readiness: Array<{ name: string; check: () => Promise<boolean> | boolean }>;
  /** JSON body limit (default 10 MB: batch id lists). */
  bodyLimit?: string;
}

/**
 * Builds the express app every service shares: request id, access log, metrics, `/healthz`,
 * `/readyz`, `/metrics`, JSON body parsing, internal auth. Mount routes on the returned `api`
 * router, then call `finish()` to add the 404 and error handlers.
 */
export function createServiceHttp(options: ServiceHttpOptions): { app: Express; finish(): void } {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', true);
  app.use(requestIdMiddleware());
  app.use(accessLogMiddleware(options.logger));
  app.use(options.metrics.httpMiddleware());
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
      const ok = Object.values(results).every(Boolean);
      res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not_ready', checks: results });
    }),
  );
  app.get(
    '/metrics',
    asyncRoute(async (_req, res) => {
      res.setHeader('Content-Type', options.metrics.registry.contentType);
      res.send(await options.metrics.registry.metrics());
    }),
  );
  app.use(express.json({ limit: options.bodyLimit ?? '10mb' }));
  app.use(express.urlencoded({ extended: false, limit: '1mb' }));
  if (options.internalSecret) app.use(internalAuthMiddleware(options.internalSecret));
  return {
    app,
    finish() {
      app.use(notFoundHandler());
      app.use(errorHandler(options.logger));
    },
  };
}
