import { ExponentialBackoff, handleWhen, retry, type IRetryContext } from 'cockatiel';
import { AppError } from './errors';

/**
 * Fault classification shared by every service (issue 12 "transient faults are retried, not
 * dead-lettered").
 *
 * - `transient`: the operation may succeed later without any change to its input: database
 *   connection lost or refused, the database shutting down or starting up, a broker channel or
 *   connection closed, a media server or peer service unreachable, timing out or answering 5xx/429.
 *   Retried with exponential backoff and jitter, bounded.
 * - `permanent`: retrying cannot help (bad input, undecodable file, 4xx other than 408/429, a
 *   constraint violation). Recorded and skipped.
 * - `unknown`: anything else; retried with the ordinary (short) budget.
 */
export type FaultClass = 'transient' | 'permanent' | 'unknown';

/** Node/libuv socket error codes that mean "the peer is not (yet, or no longer) there". */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);

/**
 * PostgreSQL SQLSTATE classes/codes that are transient: class 08 (connection exception), 57P01-57P03
 * (admin/crash shutdown, cannot connect now), 53000/53100/53200/53300 (insufficient resources: disk full, out of
 * memory, too many connections: the same statement succeeds once the resource is back, issue 36), 40001/40P01
 * (serialization failure, deadlock: the transaction may be retried). Source: PostgreSQL manual, Appendix A.
 */
function transientSqlState(code: string): boolean {
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53000' || code === '53100' || code === '53200' || code === '53300' || code === '40001' || code === '40P01';
}

/** Messages of pg / amqplib / fetch errors that carry no code but mean a lost connection. */
const TRANSIENT_MESSAGES = [
  /connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /connection (?:closed|ended|lost|reset)/i,
  /client has encountered a connection error/i,
  /cannot use a pool after calling end/i,
  /channel (?:closed|ended)/i,
  /socket hang up/i,
  /fetch failed/i,
  /the database system is (?:starting up|shutting down|in recovery mode)/i,
  /terminating connection/i,
  /Connection is not established/i,
];

const TRANSIENT_NAMES = new Set(['UnreachableError', 'AbortError', 'TimeoutError', 'UpstreamUnavailableError', 'BusUnavailableError', 'BrokenCircuitError', 'IllegalOperationError', 'TransientError']);
const PERMANENT_NAMES = new Set(['PermanentMessageError', 'ValidationError', 'UndecodableAudioError', 'InsufficientAudioError', 'ZodError', 'NotFoundError', 'ForbiddenError', 'UnauthorizedError', 'ProtocolError', 'AuthError']);

/** Marks an error as transient explicitly (e.g. a lease or generation not yet reached); subclasses are transient too, whatever their name. */
export class TransientError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransientError';
  }
}

/** Classifies `err` (follows `cause` and TypeORM's `driverError`, depth 4). */
export function classifyFault(err: unknown, depth = 0): FaultClass {
  if (err === null || err === undefined || depth > 4) return 'unknown';
  const e = err as { name?: string; code?: unknown; message?: string; status?: unknown; httpStatus?: unknown; cause?: unknown; driverError?: unknown };
  const name = typeof e.name === 'string' ? e.name : '';
  if (TRANSIENT_NAMES.has(name) || err instanceof TransientError) return 'transient';
  if (PERMANENT_NAMES.has(name)) return 'permanent';
  const code = typeof e.code === 'string' ? e.code : '';
  if (code && NETWORK_CODES.has(code)) return 'transient';
  if (/^[0-9A-Z]{5}$/.test(code)) return transientSqlState(code) ? 'transient' : 'permanent';
  const status = typeof e.httpStatus === 'number' ? e.httpStatus : typeof e.status === 'number' ? e.status : undefined;
  if (err instanceof AppError || status !== undefined) {
    if (status !== undefined && (status >= 500 || status === 408 || status === 429)) return 'transient';
    if (status !== undefined && status >= 400) return 'permanent';
  }
  if (typeof e.message === 'string' && TRANSIENT_MESSAGES.some((re) => re.test(e.message!))) return 'transient';
  for (const inner of [e.driverError, e.cause]) {
    if (inner !== undefined && inner !== err) {
      const c = classifyFault(inner, depth + 1);
      if (c !== 'unknown') return c;
    }
  }
  return 'unknown';
}

/** True when {@link classifyFault} says `transient`. */
export function isTransientFault(err: unknown): boolean {
  return classifyFault(err) === 'transient';
}

export interface TransientRetryOptions {
  /** Retries after the first attempt (default 5). */
  maxAttempts?: number;
  /** First delay in ms (default 200); doubles per attempt with decorrelated jitter. */
  initialDelayMs?: number;
  /** Delay cap in ms (default 5000). */
  maxDelayMs?: number;
  /** Called before each retry (logging). */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  signal?: AbortSignal;
}

/**
 * Runs `fn`, retrying only transient faults (see {@link classifyFault}) with cockatiel's exponential
 * backoff and decorrelated jitter, bounded by `maxAttempts`. Permanent and unknown errors are thrown
 * at once. With the defaults a call waits at most about 0.2+0.4+0.8+1.6+3.2 = 6.2 s (plus jitter)
 * before giving up with the last error.
 */
export async function withTransientRetry<T>(fn: (ctx: IRetryContext) => Promise<T>, options: TransientRetryOptions = {}): Promise<T> {
  const policy = retry(handleWhen(isTransientFault), {
    maxAttempts: options.maxAttempts ?? 5,
    backoff: new ExponentialBackoff({ initialDelay: options.initialDelayMs ?? 200, maxDelay: options.maxDelayMs ?? 5000 }),
  });
  const sub = options.onRetry ? policy.onRetry((r) => options.onRetry!('error' in r ? r.error : undefined, r.attempt, r.delay)) : undefined;
  try {
    return await policy.execute(fn, options.signal);
  } finally {
    sub?.dispose();
  }
}

/**
 * Delay before retry number `attempt` (1-based) in ms: `base * 2^(attempt-1)` capped at `max`, with
 * full jitter on the upper half (uniform in [d/2, d]) so retries of many messages that failed at the
 * same moment (a database outage) do not return in lockstep.
 */
export function jitteredBackoffMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const d = Math.min(baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30), maxMs);
  return Math.round(d / 2 + (random() * d) / 2);
}
