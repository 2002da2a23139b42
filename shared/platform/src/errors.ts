/**
 * Typed errors, mapped to HTTP in exactly one middleware (http.ts `errorHandler`).
 * Response shape for every 4xx/5xx: `{ "error": { "code", "message", "requestId" } }`.
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
