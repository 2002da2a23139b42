import { createHash } from 'node:crypto';
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import { runWithContext } from '../context';
import { attemptBudget, attemptOf, BusClosedError, errorText, INTERNAL_HEADERS, InFlight, newMessageId, retryDelayMs, type ResolvedRetry, sleep, visibleHeaders } from './common';
import { type BusLogger, type ConsumeOptions, type DeadLetterReason, PermanentMessageError } from './types';

/** One connection of the bus: the AMQP connection, its confirm channel for publishes, its number (bumped per reconnect). */
export interface Connected {
  model: ChannelModel;
  publisher: ConfirmChannel;
  generation: number;
}

/** A publish the broker returned as unroutable (`mandatory` and no queue matched). */
export class UnroutableError extends Error {
  constructor(routingKey: string) {
    super(`message to '${routingKey}' was unroutable`);
    this.name = 'UnroutableError';
  }
}

/** What a consumer needs of its bus (RabbitBus, rabbit.ts): the current connection, topology, confirmed publishes, reconnect pacing. */
export interface ConsumerHost {
  /** Channels closed by the broker or the bus (a consumer on one restarts). */
  readonly closedChannels: WeakSet<Channel>;
  /** Bound of a confirmed publish, ms. */
  readonly publishTimeoutMs: number;
  /** Reconnect back-off base and cap (ms), and the bus's close signal. */
  readonly reconnectBase: { delayMs: number; maxDelayMs: number; signal: AbortSignal };
  /** The current connection if it is the one of `generation`. */
  connectionOf(generation: number): Connected | undefined;
  /** Whether `model` is the current connection and the bus is not closing. */
  isCurrent(model: ChannelModel): boolean;
  /** Declares exchanges, `<queue>`, `<queue>.retry`, `<queue>.dlq` and the bindings (idempotent). */
  declareTopology(ch: Channel, queue: string, bindings: readonly string[], expiresMs?: number): Promise<void>;
  /** One publish on a confirm channel; resolves on the broker's ack (UnroutableError, BusUnavailableError at `deadline`). */
  confirmPublish(ch: ConfirmChannel, exchange: string, routingKey: string, content: Buffer, props: Options.Publish, deadline: number): Promise<void>;
}

/** One `consume()` registration; survives reconnects (a new channel per connection). */
export class RabbitConsumer {
  readonly queue: string;
  private channel: Channel | undefined;
  private consumerTag: string | undefined;
  private startedGeneration: number | undefined;
  private starting: Promise<void> | undefined;
  private stopped = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private restartDelay: number;
  private readonly inFlight = new InFlight();

  constructor(
    private readonly bus: ConsumerHost,
    private readonly options: ConsumeOptions<unknown>,
    private readonly retry: ResolvedRetry,
    private readonly logger: BusLogger,
  ) {
    this.queue = options.queue;
    this.restartDelay = bus.reconnectBase.delayMs;
  }

  /** Starts on `model` unless already started (or starting) for this connection generation. */
  ensureStarted(model: ChannelModel, generation: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.startedGeneration === generation && this.starting) return this.starting;
    this.startedGeneration = generation;
    this.starting = this.start(model, generation);
    return this.starting;
  }

  /** After a channel failure on a live connection: start again with backoff. */
  scheduleRestart(model: ChannelModel, generation: number): void {
    if (this.stopped || this.restartTimer) return;
    const delay = this.restartDelay;
    this.restartDelay = Math.min(this.restartDelay * 2, this.bus.reconnectBase.maxDelayMs);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopped || !this.bus.isCurrent(model)) return; // a reconnect restarts us
      this.startedGeneration = undefined;
      this.ensureStarted(model, generation).catch((err: unknown) => {
        this.logger.error('bus consumer restart failed', { queue: this.queue, error: errorText(err) });
        this.scheduleRestart(model, generation);
      });
    }, delay);
  }

  private async start(model: ChannelModel, generation: number): Promise<void> {
    const ch = await model.createChannel();
    ch.on('error', (err: unknown) => this.logger.warn('bus consumer channel error', { queue: this.queue, error: errorText(err) }));
    ch.on('close', () => {
      this.bus.closedChannels.add(ch);
      if (this.channel !== ch) return;
      this.channel = undefined;
      this.consumerTag = undefined;
      // Connection still alive -> channel-level failure: restart. Connection gone -> the reconnect restarts us.
      if (!this.stopped && this.bus.isCurrent(model)) {
        this.logger.warn('bus consumer channel closed, restarting', { queue: this.queue });
        this.scheduleRestart(model, generation);
      }
    });
    try {
      await this.bus.declareTopology(ch, this.queue, this.options.bindings, this.options.expiresMs);
      await ch.prefetch(this.retry.prefetch, false);
      if (this.stopped) throw new BusClosedError('consumer stopped');
      this.channel = ch;
      const { consumerTag } = await ch.consume(this.queue, (msg) => this.onMessage(ch, generation, msg), {
        noAck: false,
      });
      this.consumerTag = consumerTag;
      this.restartDelay = this.bus.reconnectBase.delayMs;
    } catch (err) {
      if (this.channel === ch) this.channel = undefined;
      await ch.close().catch(() => undefined);
      throw err;
    }
  }

  /** Cancels the consumer, waits for running handlers, closes the channel. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    await this.starting?.catch(() => undefined);
    const ch = this.channel;
    const tag = this.consumerTag;
    if (ch && tag && !this.bus.closedChannels.has(ch)) await ch.cancel(tag).catch(() => undefined);
    await this.inFlight.idle();
    this.channel = undefined;
    if (ch) await ch.close().catch(() => undefined);
  }

  private onMessage(ch: Channel, generation: number, msg: ConsumeMessage | null): void {
    if (msg === null) {
      // Broker cancelled the consumer (queue deleted or node going down): start again.
      this.logger.warn('bus consumer cancelled by broker', { queue: this.queue });
      if (this.channel === ch) this.channel = undefined;
      void ch.close().catch(() => undefined);
      const conn = this.bus.connectionOf(generation);
      if (conn && !this.stopped) this.scheduleRestart(conn.model, generation);
      return;
    }
    if (this.stopped) {
      // Delivered between our basic.cancel and its ok: hand it back to the queue.
      this.settle(ch, msg, 'requeue');
      return;
    }
    this.inFlight.track(() => this.process(ch, generation, msg));
  }

  private async process(ch: Channel, generation: number, msg: ConsumeMessage): Promise<void> {
    const raw = (msg.properties.headers ?? {}) as Record<string, unknown>;
    const attempt = attemptOf(raw);
    const routingKey = typeof raw['x-routing-key'] === 'string' ? raw['x-routing-key'] : msg.fields.routingKey;
    // Foreign publishers may omit message-id: fall back to a content hash so idempotency keys still work.
    const messageId =
      typeof msg.properties.messageId === 'string' && msg.properties.messageId !== ''
        ? msg.properties.messageId
        : `sha256:${createHash('sha256').update(msg.content).digest('hex')}`;
    let data: unknown;
    try {
      data = JSON.parse(msg.content.toString('utf8'));
    } catch (err) {
      return this.deadLetter(ch, msg, messageId, 'invalid', errorText(err));
    }
    const parsed = this.options.schema.safeParse(data);
    if (!parsed.success) return this.deadLetter(ch, msg, messageId, 'invalid', parsed.error.message);
    const headers = visibleHeaders(raw, attempt);
    const requestId = typeof headers.requestId === 'string' ? headers.requestId : messageId;
    try {
      await runWithContext({ requestId }, () =>
        this.options.handler(parsed.data, { routingKey, messageId, headers, redelivered: msg.fields.redelivered }),
      );
    } catch (err) {
      if (err instanceof PermanentMessageError) return this.deadLetter(ch, msg, messageId, 'permanent', errorText(err));
      if (attempt >= attemptBudget(err, this.retry).limit) return this.deadLetter(ch, msg, messageId, 'max-attempts', errorText(err));
      return this.retryLater(ch, generation, msg, { raw, attempt, routingKey, messageId, err });
    }
    this.settle(ch, msg, 'ack');
  }

  private async retryLater(
    ch: Channel,
    generation: number,
    msg: ConsumeMessage,
    m: { raw: Record<string, unknown>; attempt: number; routingKey: string; messageId: string; err: unknown },
  ): Promise<void> {
    const delay = retryDelayMs(m.attempt, this.retry, true);
    const conn = this.bus.connectionOf(generation);
    if (!conn || this.bus.closedChannels.has(ch)) {
      // Connection gone: the broker redelivers the original (same attempt) after the reconnect.
      this.logger.warn('bus retry skipped, connection lost; broker will redeliver', { queue: this.queue, messageId: m.messageId });
      return;
    }
    const headers: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(m.raw)) if (!INTERNAL_HEADERS.has(k)) headers[k] = v;
    headers.attempt = m.attempt + 1;
    headers['x-routing-key'] = m.routingKey;
    headers['x-last-error'] = errorText(m.err);
    this.logger.warn('bus handler failed, will retry', {
      queue: this.queue, messageId: m.messageId, attempt: m.attempt, delayMs: delay, error: errorText(m.err),
    });
    try {
      await this.bus.confirmPublish(
        conn.publisher,
        '',
        `${this.queue}.retry`,
        msg.content,
        {
          persistent: true,
          contentType: msg.properties.contentType as string | undefined,
          messageId: m.messageId,
          timestamp: msg.properties.timestamp as number | undefined,
          headers,
          expiration: String(Math.round(delay)),
          mandatory: true,
          correlationId: newMessageId(),
        },
        Date.now() + this.bus.publishTimeoutMs,
      );
      this.settle(ch, msg, 'ack');
    } catch (err) {
      if (err instanceof UnroutableError) {
        this.logger.error('bus retry queue missing, dead-lettering', { queue: this.queue, messageId: m.messageId });
        this.settle(ch, msg, 'dead');
        return;
      }
      // Could not park the message for a retry: give it back to the queue after the delay (same attempt).
      this.logger.warn('bus retry publish failed, requeueing', { queue: this.queue, messageId: m.messageId, error: errorText(err) });
      await sleep(Math.min(delay, 1000), this.bus.reconnectBase.signal);
      this.settle(ch, msg, 'requeue');
    }
  }

  private deadLetter(ch: Channel, msg: ConsumeMessage, messageId: string, reason: DeadLetterReason, error: string): void {
    this.logger.warn('bus message dead-lettered', { queue: this.queue, messageId, reason, error });
    this.settle(ch, msg, 'dead');
  }

  /** ack / nack(requeue=false -> DLX) / nack(requeue=true) on the delivering channel, if it is still open. */
  private settle(ch: Channel, msg: ConsumeMessage, outcome: 'ack' | 'dead' | 'requeue'): void {
    if (this.bus.closedChannels.has(ch)) {
      this.logger.info('bus settle skipped, channel closed; broker will redeliver', {
        queue: this.queue, messageId: msg.properties.messageId as unknown, outcome,
      });
      return;
    }
    try {
      if (outcome === 'ack') ch.ack(msg);
      else ch.nack(msg, false, outcome === 'requeue');
    } catch (err) {
      this.logger.warn('bus settle failed', { queue: this.queue, outcome, error: errorText(err) });
    }
  }
}
