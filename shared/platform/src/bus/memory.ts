import { runWithContext } from '../context';
import { attemptBudget, attemptOf, BusClosedError, encodePayload, errorText, InFlight, newMessageId, outgoingHeaders, resolveRetry, retryDelayMs, type ResolvedRetry, visibleHeaders } from './common';
import { compileTopicPattern, type TopicMatcher } from './topic';
import { type Bus, type BusLogger, type ConsumeOptions, type ConsumerHandle, type DeadLetterReason, type MessageHeaders, noopBusLogger, PermanentMessageError, type DeadLetterInfo, type PublishOptions, type RetryOptions } from './types';

/** Options of {@link InMemoryBus}. Retry delays are in ms (defaults: 1000 doubling, cap 60000). */
export interface InMemoryBusOptions extends RetryOptions {
  logger?: BusLogger;
}

/** A message that ended in a queue's dead-letter list. */
export interface DeadLetter {
  queue: string;
  routingKey: string;
  messageId: string;
  /** Parsed JSON payload (the raw text when it was not JSON). */
  payload: unknown;
  headers: MessageHeaders;
  reason: DeadLetterReason;
  /** Error text of the last failure (validation or handler error). */
  error: string;
}

interface StoredMessage {
  routingKey: string;
  messageId: string;
  /** JSON text, as on the wire: the consumer parses it, like the RabbitMQ bus. */
  body: string;
  headers: MessageHeaders;
}

interface QueueState {
  name: string;
  bindings: Map<string, TopicMatcher>;
  ready: StoredMessage[];
  consumers: MemoryConsumer[];
  /** Round-robin cursor over consumers. */
  next: number;
  dead: DeadLetter[];
  /** Messages waiting in a retry timer. */
  retrying: number;
  dispatchScheduled: boolean;
}

interface MemoryConsumer {
  queue: QueueState;
  options: ConsumeOptions<unknown>;
  retry: ResolvedRetry;
  inFlight: InFlight;
  stopped: boolean;
}

/**
 * In-process bus with the delivery semantics of {@link RabbitBus}, for the standalone mode and tests.
 *
 * - Topic routing (`*` one word, `#` zero or more) into named queues; a message is copied into every
 *   queue with a matching binding, and dropped when none matches (like an unroutable AMQP message).
 * - Queues live as long as the bus object: a queue declared by `consume` or `declareQueue` keeps
 *   messages while no consumer runs. Nothing survives the process (standalone mode accepts that;
 *   handlers are idempotent and work is re-planned from the database on start).
 * - Payloads and headers travel as JSON text (same shapes as on the wire: Dates become strings).
 * - Per consumer at most `prefetch` handlers run at once; competing consumers of one queue get
 *   messages round-robin.
 * - A payload that fails the zod schema, or a handler throwing {@link PermanentMessageError}, goes to
 *   the queue's dead-letter list at once; other errors are retried after `retryDelayMs * 2^(attempt-1)`
 *   (capped) with `attempt + 1`, until `maxAttempts`, then dead-lettered. Inspect with `deadLetters()`.
 * - `publish` resolves once the message is in every matching queue; delivery is asynchronous.
 * - `close` stops consumers, waits for running handlers and drops pending retries.
 */
export class InMemoryBus implements Bus {
  private readonly queues = new Map<string, QueueState>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private readonly logger: BusLogger;
  private closed = false;

  constructor(private readonly options: InMemoryBusOptions = {}) {
    this.logger = options.logger ?? noopBusLogger;
    resolveRetry(options, {}); // validate bus-level settings early
  }

  /** Copies the message into each queue whose bindings match `routingKey`. Resolves when enqueued. */
  async publish(routingKey: string, payload: unknown, options?: PublishOptions): Promise<void> {
    if (this.closed) throw new BusClosedError();
    const body = encodePayload(payload);
    const message: StoredMessage = {
      routingKey,
      messageId: options?.messageId ?? newMessageId(),
      body,
      headers: outgoingHeaders(options?.headers),
    };
    for (const q of this.queues.values()) {
      for (const match of q.bindings.values()) {
        if (match(routingKey)) {
          q.ready.push({ ...message, headers: { ...message.headers } });
          this.scheduleDispatch(q);
          break;
        }
      }
    }
  }

  /** Declares the queue (adding `bindings`) and starts a consumer on it. */
  async consume<T>(options: ConsumeOptions<T>): Promise<ConsumerHandle> {
    if (this.closed) throw new BusClosedError();
    const retry = resolveRetry(this.options, options);
    const queue = this.declare(options.queue, options.bindings);
    const consumer: MemoryConsumer = {
      queue,
      options: options as ConsumeOptions<unknown>,
      retry,
      inFlight: new InFlight(),
      stopped: false,
    };
    queue.consumers.push(consumer);
    this.scheduleDispatch(queue);
    return { stop: () => this.stopConsumer(consumer) };
  }

  /** Declares a queue bound to `bindings` (additive), so it keeps messages until a consumer starts. */
  async declareQueue(queue: string, bindings: string[]): Promise<void> {
    if (this.closed) throw new BusClosedError();
    this.declare(queue, bindings);
  }

  /**
   * Ready messages of `queue` (not counting those being handled); `<queue>.dlq` gives the number of
   * dead letters and `<queue>.retry` the messages waiting for a retry. Undefined for an unknown queue.
   */
  async queueDepth(queue: string): Promise<number | undefined> {
    const q = this.queues.get(queue);
    if (q) return q.ready.length;
    if (queue.endsWith('.dlq')) return this.queues.get(queue.slice(0, -4))?.dead.length;
    if (queue.endsWith('.retry')) return this.queues.get(queue.slice(0, -6))?.retrying;
    return undefined;
  }

  /** Dead letters of `queue`, oldest first (a copy). */
  deadLetters(queue: string): DeadLetter[] {
    return [...(this.queues.get(queue)?.dead ?? [])];
  }

  /** Dead letters of `queue` in the shape every bus reports (see {@link Bus.listDeadLetters}). */
  async listDeadLetters(queue: string, limit: number): Promise<DeadLetterInfo[]> {
    return this.deadLetters(queue)
      .slice(0, limit)
      .map((d) => ({ queue, messageId: d.messageId, routingKey: d.routingKey, attempt: typeof d.headers.attempt === 'number' ? d.headers.attempt : 1, error: d.error, payload: d.payload }));
  }

  /** Moves dead letters of `queue` back to its ready list with attempt 1 (see {@link Bus.replayDeadLetters}). */
  async replayDeadLetters(queue: string, limit: number, messageIds?: ReadonlySet<string>): Promise<number> {
    const q = this.queues.get(queue);
    if (!q) return 0;
    const keep: DeadLetter[] = [];
    let moved = 0;
    for (const d of q.dead) {
      if (moved < limit && (!messageIds || messageIds.has(d.messageId))) {
        const body = typeof d.payload === 'string' && d.reason === 'invalid' ? d.payload : JSON.stringify(d.payload);
        q.ready.push({ routingKey: d.routingKey, messageId: d.messageId, body, headers: { ...d.headers, attempt: 1 } });
        moved++;
      } else keep.push(d);
    }
    q.dead = keep;
    if (moved) this.scheduleDispatch(q);
    return moved;
  }

  /** True until `close()`. */
  isHealthy(): boolean {
    return !this.closed;
  }

  /** Stops every consumer, waits for running handlers, drops pending retries. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const consumers = [...this.queues.values()].flatMap((q) => q.consumers);
    await Promise.all(consumers.map((c) => this.stopConsumer(c)));
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    for (const q of this.queues.values()) q.retrying = 0;
  }

  private declare(name: string, bindings: string[]): QueueState {
    let q = this.queues.get(name);
    if (!q) {
      q = { name, bindings: new Map(), ready: [], consumers: [], next: 0, dead: [], retrying: 0, dispatchScheduled: false };
      this.queues.set(name, q);
    }
    for (const b of bindings) if (!q.bindings.has(b)) q.bindings.set(b, compileTopicPattern(b));
    return q;
  }

  private async stopConsumer(c: MemoryConsumer): Promise<void> {
    if (!c.stopped) {
      c.stopped = true;
      const i = c.queue.consumers.indexOf(c);
      if (i >= 0) c.queue.consumers.splice(i, 1);
    }
    await c.inFlight.idle();
  }

  private scheduleDispatch(q: QueueState): void {
    if (q.dispatchScheduled) return;
    q.dispatchScheduled = true;
    setImmediate(() => {
      q.dispatchScheduled = false;
      this.dispatch(q);
    });
  }

  /** Hands ready messages to consumers with free prefetch slots, round-robin. */
  private dispatch(q: QueueState): void {
    while (q.ready.length > 0 && !this.closed) {
      const n = q.consumers.length;
      let chosen: MemoryConsumer | undefined;
      for (let k = 0; k < n; k++) {
        const c = q.consumers[(q.next + k) % n];
        if (c && !c.stopped && c.inFlight.size < c.retry.prefetch) {
          chosen = c;
          q.next = (q.next + k + 1) % n;
          break;
        }
      }
      if (!chosen) return;
      const message = q.ready.shift() as StoredMessage;
      const consumer = chosen;
      consumer.inFlight.track(async () => {
        try {
          await this.deliver(consumer, message);
        } finally {
          this.scheduleDispatch(q);
        }
      });
    }
  }

  private async deliver(c: MemoryConsumer, m: StoredMessage): Promise<void> {
    const attempt = attemptOf(m.headers);
    let data: unknown;
    try {
      data = JSON.parse(m.body);
    } catch (err) {
      return this.deadLetter(c, m, m.body, 'invalid', errorText(err));
    }
    const parsed = c.options.schema.safeParse(data);
    if (!parsed.success) return this.deadLetter(c, m, data, 'invalid', parsed.error.message);
    const headers = visibleHeaders(m.headers, attempt);
    const requestId = typeof headers.requestId === 'string' ? headers.requestId : m.messageId;
    try {
      await runWithContext({ requestId }, () =>
        c.options.handler(parsed.data, { routingKey: m.routingKey, messageId: m.messageId, headers, redelivered: false }),
      );
    } catch (err) {
      if (err instanceof PermanentMessageError) return this.deadLetter(c, m, data, 'permanent', errorText(err));
      if (attempt >= attemptBudget(err, c.retry).limit) return this.deadLetter(c, m, data, 'max-attempts', errorText(err));
      this.scheduleRetry(c, m, attempt, err);
    }
  }

  private scheduleRetry(c: MemoryConsumer, m: StoredMessage, attempt: number, err: unknown): void {
    const q = c.queue;
    const delay = retryDelayMs(attempt, c.retry);
    this.logger.warn('bus handler failed, will retry', {
      queue: q.name, messageId: m.messageId, attempt, delayMs: delay, error: errorText(err),
    });
    q.retrying++;
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      q.retrying--;
      if (this.closed) return;
      q.ready.push({ ...m, headers: { ...m.headers, attempt: attempt + 1 } });
      this.scheduleDispatch(q);
    }, delay);
    this.retryTimers.add(timer);
  }

  private deadLetter(c: MemoryConsumer, m: StoredMessage, payload: unknown, reason: DeadLetterReason, error: string): void {
    const q = c.queue;
    this.logger.warn('bus message dead-lettered', { queue: q.name, messageId: m.messageId, reason, error });
    q.dead.push({
      queue: q.name,
      routingKey: m.routingKey,
      messageId: m.messageId,
      payload,
      headers: { ...m.headers },
      reason,
      error,
    });
  }
}
