import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { ZodError, type ZodType, type ZodTypeDef } from 'zod';
import { safeParseValue } from '@polyphony/contracts';
import { currentContext } from './context';
import { isTransientFault } from './faults';
import { AppError, StateUnavailableError, UnauthorizedError, ValidationError, errorEnvelope, sendError, setRetryAfter } from './errors';
import { type CallerIdentity, IdentityVerifier } from './internal-auth';
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
  const result = safeParseValue(schema, value);
  if (!result.success) throw new ValidationError(`Invalid ${what}: ${formatZodError(result.error)}`, result.error.issues);
  return result.data;
}

/** Wraps an async route handler so rejections reach the error middleware. */
export function asyncRoute(fn: (req: Request, res: Response, next: NextFunction) => Promise<unknown>): RequestHandler {
  return (req, res, next) => {
    fn(req, res, next).catch(next);
  };
}

/**
 * Answers `status` with `value` as JSON, with the bytes express's `res.status(status).json(value)` sends when the app
 * keeps express's JSON defaults and no ETag (no `json replacer` / `json spaces` / `json escape`, `etag` off):
 * `Content-Type: application/json; charset=utf-8`, `Content-Length` (UTF-8 bytes), the `JSON.stringify` text,
 * set and written in that order; without `res.json`'s per-call work (settings look-ups, `Content-Type` parse and
 * format, charset look-up, the body copied into a Buffer above 1,000 characters), and the header and body go out
 * in one socket write. Any other case takes `res.json` itself: an ETag-generating app or a JSON setting, a
 * `Content-Type` already set, a conditional request (`If-None-Match` / `If-Modified-Since`: express's freshness
 * rule), a HEAD request, or a status without a body (204, 205, 304).
 * For hot read routes whose answer shape the handler guarantees (issue 19 per-request CPU: similar songs).
 */
export function sendJson(res: Response, status: number, value: unknown): void {
  const req = res.req;
  const app = res.app;
  if (
    req.method !== 'GET' ||
    status === 204 ||
    status === 205 ||
    status === 304 ||
    req.headers['if-none-match'] !== undefined ||
    req.headers['if-modified-since'] !== undefined ||
    res.getHeader('content-type') !== undefined ||
    app.get('etag fn') ||
    app.get('json replacer') ||
    app.get('json spaces') ||
    app.get('json escape')
  ) {
    res.status(status).json(value);
    return;
  }
  const body = JSON.stringify(value) as string | undefined;
  if (body === undefined) {
    // Nothing to serialise (undefined, a function): express's own handling (no Content-Length, no charset).
    res.status(status).json(value);
    return;
  }
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body, 'utf8'));
  res.end(body, 'utf8');
}

/** Paths never access-logged (probes and scrapes, every few seconds). */
const UNLOGGED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The level of a finished request's access-log line, or undefined for none:
 * - a probe path (`/healthz`, `/readyz`, `/metrics`, every few seconds; readiness is in the metrics): none;
 * - a status >= 400: `info`, always (when `info` is enabled);
 * - a success on a service-to-service path (`/internal/...`: the index's mapping poll every 5 s, identity
 *   resolution per analysed track, ...): `debug`, so a default `info` log holds the requests of users, plugins
 *   and the UI (each also logged by the gateway under the same request id) rather than the services' own traffic;
 * - any other success: `info`, with probability `sample` (ACCESS_LOG_SAMPLE: 1 = every request, 0 = errors only).
 * A level the logger drops gives undefined, so the line is not built at all (a per-request cost of issue 19).
 */
export function accessLogLevel(logger: Logger, path: string, status: number, sample = 1): 'info' | 'debug' | undefined {
  if (UNLOGGED_PATHS.has(path)) return undefined;
  if (status >= 400) return logger.isLevelEnabled('info') ? 'info' : undefined;
  if (path.startsWith('/internal/')) return logger.isLevelEnabled('debug') ? 'debug' : undefined;
  if (!logger.isLevelEnabled('info')) return undefined;
  return sample >= 1 || (sample > 0 && Math.random() < sample) ? 'info' : undefined;
}

/**
 * The single error-to-HTTP mapping, answered in the error envelope (`errorEnvelope`: `{ error: message, code,
 * request_id }`, plus `details` for a validation failure); unknown errors are 500 without internals.
 * Every 503 of a fault (a transient fault of the database or broker, an unreachable peer) carries `Retry-After`
 * (`RETRY_AFTER_SECONDS`); a `StateUnavailableError` (a feature not set up) does not. PostgreSQL's disk full
 * (SQLSTATE 53100) is a 503 `database_disk_full` (logged as an error: an operator must free space).
 * Errors of the HTTP plumbing (body-parser, serve-static, express's path decoding: objects with a 4xx
 * `status`) and URIError from a malformed %-escape are the caller's fault and become 4xx with a fixed
 * message; a client that went away (`request.aborted`) is logged at debug, not as an error.
 */
export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const requestId = req.requestId ?? currentContext()?.requestId ?? 'unknown';
    let status = 500;
    let code = 'internal_error';
    let message = 'Internal server error';
    let details: unknown;
    if (err instanceof AppError) {
      status = err.httpStatus;
      code = err.code;
      message = err.message;
      details = err.details;
      if (err instanceof StateUnavailableError) logger.warn('feature unavailable in the current state', { requestId, code, message });
      else if (status >= 500) logger.error('request failed upstream', { requestId, code, message, cause: String((err as { cause?: unknown }).cause ?? '') });
    } else if (err instanceof ZodError) {
      status = 400;
      code = 'validation_failed';
      message = `Invalid request: ${formatZodError(err)}`;
      details = err.issues;
    } else if (isClientAbort(err, req)) {
      logger.debug('client aborted the request', { requestId, method: req.method, path: safePath(req) });
      status = 400;
      code = 'request_aborted';
      message = 'The client aborted the request';
    } else if (isHttpClientError(err)) {
      ({ status, code, message } = describeClientError(err));
    } else if (err instanceof URIError) {
      status = 400;
      code = 'malformed_request';
      message = 'Malformed percent-encoding in the request';
    } else if (isPgDataException(err)) {
      // SQLSTATE class 22 (data exception: invalid UUID/number syntax, NUL, value out of range) is a
      // value the caller sent that a route did not validate: a 400, logged so the gap gets a schema.
      logger.warn('database refused a request value', { requestId, sqlstate: pgCode(err), path: safePath(req) });
      status = 400;
      code = 'invalid_value';
      message = 'A request value is not valid for its field';
    } else if (pgCode(err) === '53100') {
      // PostgreSQL's disk is full (SQLSTATE 53100): writes fail until an operator frees space; reads still work.
      status = 503;
      code = 'database_disk_full';
      message = 'The database is out of disk space; retry once space is freed';
      logger.error('request failed: database disk full (free space on the PostgreSQL data volume)', { requestId, err: (err as Error).message });
    } else if (isTransientFault(err)) {
      // Our database (or a peer) is unreachable: a 503 the caller may retry, not a bug.
      status = 503;
      code = 'upstream_unavailable';
      message = 'A backing service is temporarily unavailable; retry shortly';
      logger.warn('request failed: backing service unavailable', { requestId, err: (err as Error).message });
    } else {
      logger.error('unhandled error', { requestId, err });
    }
    // A 503 of a fault (not of a documented state) tells the client when to retry (issue 36).
    if (status === 503 && !(err instanceof StateUnavailableError)) setRetryAfter(res);
    sendError(res, status, code, message, requestId, details);
  };
}

function pgCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; driverError?: { code?: unknown } } | null;
  const code = e?.driverError?.code ?? e?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A PostgreSQL data exception (SQLSTATE class 22) from pg or TypeORM's QueryFailedError. */
function isPgDataException(err: unknown): boolean {
  const code = pgCode(err);
  return code !== undefined && /^22[0-9A-Z]{3}$/.test(code);
}

/** An http-errors style error (body-parser, serve-static, express router) with a 4xx status. */
function isHttpClientError(err: unknown): err is { status: number; type?: string } {
  if (typeof err !== 'object' || err === null) return false;
  const status = (err as { status?: unknown }).status;
  return typeof status === 'number' && status >= 400 && status < 500;
}

/** True for a request the client abandoned (body-parser's `request.aborted`, a reset while reading). */
export function isClientAbort(err: unknown, req: { socket?: { destroyed?: boolean } | null }): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { type?: unknown; code?: unknown };
  return e.type === 'request.aborted' || ((e.code === 'ECONNRESET' || e.code === 'ECONNABORTED') && req.socket?.destroyed === true);
}

/** Fixed code and message per kind of plumbing error (the library's own message may quote the input). */
function describeClientError(err: { status: number; type?: string }): { status: number; code: string; message: string } {
  const status = err.status;
  switch (err.type) {
    case 'entity.too.large':
      return { status: 413, code: 'payload_too_large', message: 'Request body too large for this route' };
    case 'charset.unsupported':
      return { status: 415, code: 'unsupported_media_type', message: 'Unsupported charset (use utf-8)' };
    case 'encoding.unsupported':
      return { status: 415, code: 'unsupported_media_type', message: 'Unsupported content encoding (use identity, gzip or deflate)' };
    case 'entity.parse.failed':
      return { status: 400, code: 'malformed_body', message: 'Malformed request body (expected JSON)' };
    case 'request.size.invalid':
      return { status: 400, code: 'malformed_body', message: 'Request body length does not match Content-Length' };
    case 'parameters.too.many':
      return { status: 413, code: 'payload_too_large', message: 'Too many form parameters' };
    default:
      if (status === 413) return { status, code: 'payload_too_large', message: 'Request body too large for this route' };
      if (status === 415) return { status, code: 'unsupported_media_type', message: 'Unsupported media type' };
      if (status === 404) return { status, code: 'not_found', message: 'Not found' };
      if (status === 405) return { status, code: 'method_not_allowed', message: 'Method not allowed' };
      return { status, code: 'malformed_request', message: 'Malformed request' };
  }
}

function safePath(req: Request): string {
  try {
    return req.path;
  } catch {
    return '(malformed)';
  }
}

/** Largest nesting depth accepted in a JSON body; real bodies nest fewer than 8 levels. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether the nesting depth of a JSON text, counted over `[` and `{` outside strings, exceeds
 * `limit` (linear, no recursion: a 10,000-deep body cannot overflow the stack here or later).
 */
export function jsonDepthExceeds(buf: Buffer, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/**
 * express.json with a size `limit` (413 above it, checked against Content-Length before reading)
 * and the depth check run before JSON.parse (400 deeper than MAX_JSON_DEPTH). Charsets other than
 * utf-8 are refused by body-parser itself (415).
 */
export function jsonBody(limit: string | number): RequestHandler {
  return express.json({
    limit,
    verify: (_req, _res, buf) => {
      if (jsonDepthExceeds(buf)) throw Object.assign(new ValidationError(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`), { status: 400 });
    },
  });
}

/** Whether a request carries a body (`Transfer-Encoding`, or a `Content-Length` other than 0). */
export function hasBody(req: import('node:http').IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** True when `value` (any JSON-like value) holds a NUL character in a string or key, at any depth. */
export function containsNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (value === null || typeof value !== 'object' || depth > MAX_JSON_DEPTH) return false;
  if (Array.isArray(value)) return value.some((v) => containsNul(v, depth + 1));
  for (const [k, v] of Object.entries(value)) if (k.includes('\u0000') || containsNul(v, depth + 1)) return true;
  return false;
}

/**
 * Why a request's URL cannot reach any route, or undefined: a path with a malformed %-escape or a NUL, a query
 * value or key with a NUL (PostgreSQL cannot store NUL in text, so it would surface as a database error).
 * 400 `malformed_request`. `query` is the parsed query.
 */
export function urlProblem(path: string, query: unknown): AppError | undefined {
  let decoded: string;
  try {
    decoded = path.includes('%') ? decodeURIComponent(path) : path;
  } catch {
    return new AppError('malformed_request', 'Malformed percent-encoding in the path', 400);
  }
  if (decoded.includes('\u0000')) return new AppError('malformed_request', 'NUL character in the path', 400);
  if (containsNul(query)) return new AppError('malformed_request', 'NUL character in a query parameter', 400);
  return undefined;
}

/** `urlProblem` as middleware, for what the host app serves outside the route table (the pipeline checks its own). */
export function rejectMalformedUrl(): RequestHandler {
  return (req, _res, next) => next(urlProblem(req.path, req.query));
}

/** Refuses a parsed body holding a NUL character in any string or key (400 `malformed_request`). */
export function rejectNulInBody(): RequestHandler {
  return (req, _res, next) => {
    if (req.body !== undefined && containsNul(req.body)) return next(new AppError('malformed_request', 'NUL character in the request body', 400));
    next();
  };
}

/**
 * Answers HTTP parser errors (request line or headers too large: 431, anything else unparsable:
 * 400) in the common error shape instead of Node's bare status line, then closes the connection.
 */
export function handleClientErrors(server: import('node:http').Server, logger?: Logger): void {
  // One answer per connection: a second call (the gateway adds its logger) replaces the first handler.
  const previous = clientErrorHandlers.get(server);
  if (previous) server.off('clientError', previous);
  const handler = (err: NodeJS.ErrnoException, socket: import('node:stream').Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const status = tooLarge ? 431 : 400;
    const body = JSON.stringify(errorEnvelope(tooLarge ? 'headers_too_large' : 'malformed_request', tooLarge ? 'Request line or headers too large' : 'Malformed HTTP request', randomUUID()));
    logger?.debug('malformed HTTP request', { code: err.code });
    socket.end(`HTTP/1.1 ${status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  };
  clientErrorHandlers.set(server, handler);
  server.on('clientError', handler);
}
const clientErrorHandlers = new WeakMap<import('node:http').Server, (err: NodeJS.ErrnoException, socket: import('node:stream').Duplex) => void>();

/** 404 in the error envelope for what nothing served (the host app's last handler). */
export function notFoundHandler(): RequestHandler {
  return (req, res) => {
    sendError(res, 404, 'not_found', `No route for ${req.method} ${req.path}`, req.requestId ?? currentContext()?.requestId ?? 'unknown');
  };
}

/**
 * Verifies the gateway's signed identity header on every request except health and metrics.
 * With no valid signature the request is refused (401), so a service reached directly is closed.
 * Takes the secret or a shared `IdentityVerifier` (its cache of recently verified header values).
 */
export function internalAuthMiddleware(secret: string | IdentityVerifier): RequestHandler {
  const verifier = typeof secret === 'string' ? new IdentityVerifier(secret) : secret;
  return (req, _res, next) => {
    const identity = verifier.verify(req.headers);
    if (!identity) {
      next(new UnauthorizedError('Missing or invalid gateway signature'));
      return;
    }
    req.identity = identity;
    if (currentContext()) currentContext()!.userId = identity.sub;
    next();
  };
}

/** The Prometheus text exposition of `metrics`. */
export function metricsHandler(metrics: Metrics): RequestHandler {
  return asyncRoute(async (_req, res) => {
    res.setHeader('Content-Type', metrics.registry.contentType);
    res.send(await metrics.registry.metrics());
  });
}
