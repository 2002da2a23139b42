import type { ServerResponse } from 'node:http';

/**
 * Typed errors, mapped to HTTP in exactly one place (http.ts `errorHandler`), answered in the one
 * error envelope `errorEnvelope` builds and `sendError` writes (issue 30):
 * `{ "error": "<human-readable message>", "code": "<machine code>", "request_id": "<id>" }`, plus
 * `details` (for a validation failure: the schema's issues) when there are any.
 */
export class AppError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly httpStatus: number,
    readonly details?: unknown,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** 400: the request is malformed or a value is out of range. Nothing was changed. */
export class ValidationError extends AppError {
  constructor(message: string, details?: unknown) {
    super('validation_failed', message, 400, details);
  }
}
/** 401: no valid credentials. */
export class UnauthorizedError extends AppError {
  constructor(message = 'Authentication required') {
    super('unauthorized', message, 401);
  }
}
/** 403: authenticated but not allowed. */
export class ForbiddenError extends AppError {
  constructor(message = 'Not allowed') {
    super('forbidden', message, 403);
  }
}
/** 404: the addressed resource does not exist. */
export class NotFoundError extends AppError {
  constructor(message: string) {
    super('not_found', message, 404);
  }
}
/** 409: conflicts with current state (duplicate name, task already running, default server delete). */
export class ConflictError extends AppError {
  constructor(message: string, code = 'conflict') {
    super(code, message, 409);
  }
}
/**
 * Seconds a client is told to wait (`Retry-After`) before retrying a 503 caused by a fault: a database or broker
 * that is unreachable, a peer service without a ready replica. 5 s is about the time a PostgreSQL restart or a
 * pod replacement takes (issue 36's faults recovered in 0.3-3 s once cleared), short enough that a player retrying
 * once does not give up on a brief outage. RFC 9110 section 10.2.3 (Retry-After as delay-seconds).
 */
export const RETRY_AFTER_SECONDS = 5;

/**
 * Sets `Retry-After: RETRY_AFTER_SECONDS` on a 503 answer that is about to be sent, unless one is already set (a
 * peer's own value passed through). For faults only: a 503 for a documented state (`StateUnavailableError`, e.g. a
 * model not installed) carries none, as retrying cannot help.
 */
export function setRetryAfter(res: ServerResponse, seconds = RETRY_AFTER_SECONDS): void {
  if (!res.headersSent && res.getHeader('Retry-After') === undefined) res.setHeader('Retry-After', String(seconds));
}

/** 502/503: an upstream (media server, database, another service) failed or is unreachable. */
export class UpstreamUnavailableError extends AppError {
  constructor(message: string, status = 503, options?: { cause?: unknown }) {
    super('upstream_unavailable', message, status, undefined, options);
  }
}

/**
 * 503 for a documented state of the product rather than a fault: a feature that needs something the
 * operator has not set up yet (the MusiCNN model, tagged songs, the built web UI). The message says what
 * to do. `errorHandler` logs it at warn (an expected answer, not an incident); faults stay at error.
 */
export class StateUnavailableError extends AppError {
  readonly expectedState = true;
  constructor(code: string, message: string) {
    super(code, message, 503);
  }
}

/** Throws NotFoundError(message) when `value` is null or undefined; narrows the type otherwise. */
export function assertFound<T>(value: T | null | undefined, message: string): T {
  if (value === null || value === undefined) throw new NotFoundError(message);
  return value;
}

/** Maps a PostgreSQL unique violation (SQLSTATE 23505) to ConflictError; rethrows anything else. */
export function mapUniqueViolation(err: unknown, message: string): never {
  const code = (err as { code?: string; driverError?: { code?: string } })?.code ?? (err as { driverError?: { code?: string } })?.driverError?.code;
  if (code === '23505') throw new ConflictError(message, 'duplicate');
  throw err;
}

/**
 * The body of every error answer (gateway, services, 404/405, 401/403, 413, 429, 503): `error` is the
 * human-readable message (what the reference's clients print), `code` the machine code
 * (`validation_failed`, `not_found`, ...), `request_id` the request's id (also in `x-request-id`), and
 * `details` only when the error carries some (a validation failure's zod issues: `[{ path, message, code }]`).
 */
export interface ErrorEnvelope {
  error: string;
  code: string;
  request_id: string;
  details?: unknown;
}

/** The error envelope of one answer (see {@link ErrorEnvelope}); `details` is left out when undefined. */
export function errorEnvelope(code: string, message: string, requestId: string, details?: unknown): ErrorEnvelope {
  return details === undefined ? { error: message, code, request_id: requestId } : { error: message, code, request_id: requestId, details };
}

/**
 * Writes an error answer: `status`, `Content-Type: application/json; charset=utf-8`, the envelope as the
 * body (with `Content-Length`). The one writer of error bodies for express and raw node responses alike;
 * does nothing when the headers are already sent (a failure mid-stream: the caller destroys the socket).
 */
export function sendError(res: ServerResponse, status: number, code: string, message: string, requestId: string, details?: unknown): void {
  if (res.headersSent) return;
  const body = JSON.stringify(errorEnvelope(code, message, requestId, details));
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body, 'utf8'));
  res.end(body, 'utf8');
}
