import { randomUUID } from 'node:crypto';
import { currentContext } from '../context';
import { classifyFault } from '../faults';
import type { MessageHeaders, RetryOptions } from './types';

/** Defaults shared by both bus implementations. */
export const BUS_DEFAULTS = {
  prefetch: 10,
  maxAttempts: 5,
  /**
   * Attempts for a transient fault (database or broker connection, peer 5xx, timeouts): unbounded. Transient faults
   * are retried with jittered backoff (1, 2, 4 ... capped at 60 s) for as long as they last and are never
   * dead-lettered: an outage must not turn work into dead letters. A consumer that must end a unit of work after a
   * while (analysis records a track as failed after 18 attempts, about 12 minutes) does so in its handler, which
   * can only record the outcome while its own database answers.
   */
  transientMaxAttempts: Number.POSITIVE_INFINITY,
  retryDelayMs: 1000,
  maxRetryDelayMs: 60_000,
} as const;

/** Thrown by publish/consume/declareQueue after `close()` was called. */
export class BusClosedError extends Error {
  constructor(message = 'bus is closed') {
    super(message);
    this.name = 'BusClosedError';
  }
}

/**
 * Thrown when the broker cannot be reached (or does not confirm) within the configured bound
 * (`publishTimeoutMs` for publish/consume/declareQueue, `connectTimeoutMs` for the first connect).
 * The operation may be retried by the caller; a publish that timed out may still have been routed.
 */
export class BusUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BusUnavailableError';
  }
}

/** Header names the bus adds for its own bookkeeping; handlers do not see them. */
export const INTERNAL_HEADERS = new Set(['x-routing-key', 'x-last-error', 'x-death', 'x-first-death-exchange',
  'x-first-death-queue', 'x-first-death-reason', 'x-last-death-exchange', 'x-last-death-queue', 'x-last-death-reason']);

/** Resolved retry settings of one consumer. */
export interface ResolvedRetry {
  prefetch: number;
  maxAttempts: number;
  /** Attempts when the failure is classified transient (see faults.ts classifyFault); never below maxAttempts; Infinity (default) = no limit. */
  transientMaxAttempts: number;
  retryDelayMs: number;
  maxRetryDelayMs: number;
}

/** Fills bus-level defaults, then consumer-level overrides; validates ranges (throws RangeError). */
export function resolveRetry(bus: RetryOptions, consumer: { prefetch?: number; maxAttempts?: number; transientMaxAttempts?: number }): ResolvedRetry {
  const maxAttempts = consumer.maxAttempts ?? bus.maxAttempts ?? BUS_DEFAULTS.maxAttempts;
  const r: ResolvedRetry = {
    prefetch: consumer.prefetch ?? bus.prefetch ?? BUS_DEFAULTS.prefetch,
    maxAttempts,
    transientMaxAttempts: Math.max(maxAttempts, consumer.transientMaxAttempts ?? bus.transientMaxAttempts ?? BUS_DEFAULTS.transientMaxAttempts),
    retryDelayMs: bus.retryDelayMs ?? BUS_DEFAULTS.retryDelayMs,
    maxRetryDelayMs: bus.maxRetryDelayMs ?? BUS_DEFAULTS.maxRetryDelayMs,
  };
  if (!Number.isInteger(r.prefetch) || r.prefetch < 1 || r.prefetch > 65535) {
    throw new RangeError(`prefetch must be an integer in 1..65535, got ${r.prefetch}`);
  }
  if (!Number.isInteger(r.maxAttempts) || r.maxAttempts < 1) {
    throw new RangeError(`maxAttempts must be an integer >= 1, got ${r.maxAttempts}`);
  }
  if (r.transientMaxAttempts !== Number.POSITIVE_INFINITY && !Number.isInteger(r.transientMaxAttempts)) {
    throw new RangeError(`transientMaxAttempts must be an integer >= maxAttempts or Infinity, got ${r.transientMaxAttempts}`);
  }
  if (!(r.retryDelayMs >= 0) || !(r.maxRetryDelayMs >= 0)) throw new RangeError('retry delays must be >= 0');
  return r;
}

/**
 * Delay before attempt `attempt + 1`, in ms: `retryDelayMs * 2^(attempt-1)`, capped at `maxRetryDelayMs`.
 * attempt 1 failed -> retryDelayMs, attempt 2 failed -> 2x, ... With `jitter`, uniform in [d/2, d], so
 * messages that failed together (a database outage) do not all come back in the same instant.
 */
export function retryDelayMs(attempt: number, r: ResolvedRetry, jitter = false): number {
  const exp = Math.min(Math.max(attempt - 1, 0), 30);
  const d = Math.min(r.retryDelayMs * 2 ** exp, r.maxRetryDelayMs);
  return jitter ? Math.round(d / 2 + (Math.random() * d) / 2) : d;
}

/**
 * Attempts allowed for a failure: transient faults (connection lost, peer 5xx, timeouts) get
 * `transientMaxAttempts` (unbounded by default), everything else `maxAttempts`.
 */
export function attemptBudget(err: unknown, r: ResolvedRetry): { limit: number; transient: boolean } {
  const transient = classifyFault(err) === 'transient';
  return { limit: transient ? r.transientMaxAttempts : r.maxAttempts, transient };
}

/** JSON text of a payload; throws TypeError when the value has no JSON form (undefined, function, symbol). */
export function encodePayload(payload: unknown): string {
  const text = JSON.stringify(payload);
  if (text === undefined) throw new TypeError('bus payload must be JSON-serialisable');
  return text;
}

/**
 * Headers of an outgoing message: the caller's headers (JSON round-trip, `undefined` dropped),
 * `requestId` from the caller or else from the current async context, `attempt` (default 1).
 */
export function outgoingHeaders(headers: MessageHeaders | undefined): MessageHeaders {
  const out = headers ? (JSON.parse(JSON.stringify(headers)) as MessageHeaders) : {};
  if (out.requestId === undefined) {
    const ctxId = currentContext()?.requestId;
    if (ctxId !== undefined) out.requestId = ctxId;
  }
  if (typeof out.attempt !== 'number') out.attempt = 1;
  return out;
}

/** A fresh message id (UUID v4). */
export function newMessageId(): string {
  return randomUUID();
}

/** Delivery attempt from a header value (number or numeric string); 1 when missing or invalid. */
export function attemptOf(headers: Record<string, unknown>): number {
  const raw = headers.attempt;
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' ? Number(raw) : NaN;
  return Number.isInteger(n) && n >= 1 ? n : 1;
}

/** Headers the handler sees: everything except the bus's internal `x-*` bookkeeping, with `attempt` set. */
export function visibleHeaders(headers: Record<string, unknown>, attempt: number): MessageHeaders {
  const out: MessageHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (!INTERNAL_HEADERS.has(k)) out[k] = v;
  out.attempt = attempt;
  return out;
}

/** Short error text for logs and headers (never the payload). */
export function errorText(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.length > 500 ? `${text.slice(0, 497)}...` : text;
}

/** Resolves after `ms`, or early (without rejecting) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Counter of running tasks with a promise that resolves when it drops to zero. */
export class InFlight {
  private count = 0;
  private waiters: Array<() => void> = [];

  get size(): number {
    return this.count;
  }

  /** Runs `task`, counting it while it runs; never rejects (errors are the task's own business). */
  track(task: () => Promise<void>): void {
    this.count++;
    void task()
      .catch(() => undefined)
      .finally(() => {
        this.count--;
        if (this.count === 0) {
          const ws = this.waiters;
          this.waiters = [];
          for (const w of ws) w();
        }
      });
  }

  /** Resolves when no task is running. */
  idle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
