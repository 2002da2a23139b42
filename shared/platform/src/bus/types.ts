import type { ZodType, ZodTypeDef } from 'zod';

/**
 * Message bus used by every service: one durable topic exchange, durable queues, manual ack.
 * Two implementations with the same delivery semantics: RabbitMQ (amqplib) for the distributed
 * mode and an in-process bus for the standalone mode.
 */

/** Headers that travel with every message (request id for log correlation). */
export interface MessageHeaders {
  requestId?: string;
  /** Delivery attempt, starting at 1; incremented on each retry. */
  attempt?: number;
  [key: string]: unknown;
}

export interface MessageContext {
  routingKey: string;
  messageId: string;
  headers: MessageHeaders;
  /** True when the broker re-delivers a message that was not acked before (e.g. consumer died). */
  redelivered: boolean;
}

/** What a handler's failure means: retry later (transient) or dead-letter now (poison). */
export class PermanentMessageError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PermanentMessageError';
  }
}

export interface ConsumeOptions<T> {
  /** Durable queue name, e.g. `analysis.track.jobs`. */
  queue: string;
  /** Routing-key patterns bound to the queue (topic syntax: `*`, `#`). */
  bindings: string[];
  /** zod schema of the payload; a message that fails it is dead-lettered without retry. */
  schema: ZodType<T, ZodTypeDef, unknown>;
  /** Unacked messages in flight per consumer (bounded prefetch). */
  prefetch?: number;
  /** Attempts before a failing message goes to the dead-letter queue (default 5). */
  maxAttempts?: number;
  /**
   * A per-process queue (e.g. one per index replica): the broker deletes it, with its retry and
   * dead-letter companions, this many ms after its last consumer went away (RabbitMQ `x-expires`).
   * Undefined = a lasting work queue. The in-process bus keeps queues for the bus object's life anyway.
   */
  expiresMs?: number;
  /**
   * Attempts when the failure is transient (faults.ts `classifyFault`: lost database or broker
   * connection, peer 5xx, timeouts). Default unbounded: transient faults are retried with backoff
   * (1 s doubling, jittered, capped at `maxRetryDelayMs`, 60 s) and never dead-lettered. A finite value
   * dead-letters after that many attempts (tests only; production consumers keep the default).
   */
  transientMaxAttempts?: number;
  handler: (payload: T, ctx: MessageContext) => Promise<void>;
}

export interface PublishOptions {
  headers?: MessageHeaders;
  messageId?: string;
}

/**
 * Minimal logger the bus writes to (a winston logger fits). Constant message, variables in `meta`.
 * Defaults to a no-op logger.
 */
export interface BusLogger {
  info(msg: string, meta?: Record<string, unknown>): void;
  warn(msg: string, meta?: Record<string, unknown>): void;
  error(msg: string, meta?: Record<string, unknown>): void;
}

/** A logger that drops everything (the default). */
export const noopBusLogger: BusLogger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/** Why a message ended in a dead-letter queue. */
export type DeadLetterReason = 'invalid' | 'permanent' | 'max-attempts';

/** Retry policy for transient handler failures (both implementations). */
export interface RetryOptions {
  /** Delay before the 2nd attempt, in ms (default 1000). Doubles per attempt. */
  retryDelayMs?: number;
  /** Upper bound of the retry delay, in ms (default 60000). */
  maxRetryDelayMs?: number;
  /** Default `maxAttempts` when a consumer does not set one (default 5). */
  maxAttempts?: number;
  /** Default `transientMaxAttempts` when a consumer does not set one (default unbounded: Infinity). */
  transientMaxAttempts?: number;
  /** Default `prefetch` when a consumer does not set one (default 10). */
  prefetch?: number;
}

export interface Bus {
  /** Resolves once the broker confirmed the message (publisher confirms). */
  publish(routingKey: string, payload: unknown, options?: PublishOptions): Promise<void>;
  /** Starts a consumer; returns a handle that stops it (in-flight handlers finish). */
  consume<T>(options: ConsumeOptions<T>): Promise<ConsumerHandle>;
  /** Messages ready in a queue (for metrics); undefined when unknown. */
  queueDepth(queue: string): Promise<number | undefined>;
  /** True when connected (readiness). */
  isHealthy(): boolean;
  /** Stop consuming, wait for in-flight handlers, close connections. */
  close(): Promise<void>;
  /**
   * Declares a durable queue (and its retry/dead-letter companions) bound to `bindings` without
   * consuming, so messages published from now on are kept until a consumer starts.
   */
  declareQueue?(queue: string, bindings: string[]): Promise<void>;
  /** Up to `limit` dead letters of `queue`, oldest first; they stay where they are. */
  listDeadLetters?(queue: string, limit: number): Promise<DeadLetterInfo[]>;
  /**
   * Moves up to `limit` dead letters of `queue` back into `queue` alone (attempt 1, original routing
   * key kept for the handler); returns how many were moved. Optionally only the given message ids.
   */
  replayDeadLetters?(queue: string, limit: number, messageIds?: ReadonlySet<string>): Promise<number>;
}

/** One dead letter as `listDeadLetters` reports it (the message stays in the dead-letter queue). */
export interface DeadLetterInfo {
  /** The work queue the message was dead-lettered from (without the `.dlq` suffix). */
  queue: string;
  messageId: string;
  /** Routing key it was first published with. */
  routingKey: string;
  /** Delivery attempt it had reached. */
  attempt: number;
  /** Last handler error, when known. */
  error?: string;
  /** Parsed JSON payload (raw text when not JSON). */
  payload: unknown;
}

export interface ConsumerHandle {
  stop(): Promise<void>;
}
