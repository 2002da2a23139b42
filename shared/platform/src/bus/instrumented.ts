import type { Metrics } from '../metrics';
import type { Bus, ConsumeOptions, ConsumerHandle, DeadLetterInfo, PublishOptions } from './types';

/** Header carrying the publish time (epoch ms) for the consumer-lag gauge. */
export const PUBLISHED_AT_HEADER = 'publishedAt';

/**
 * Wraps a bus for one service: optional queue-name prefix (isolates parallel test stacks that share
 * one broker), publish time in a header, consumer lag and queue depth exported as Prometheus gauges
 * (`bus_consumer_lag_seconds`, `bus_queue_depth_messages`, sampled every `sampleMs`).
 */
export class InstrumentedBus implements Bus {
  private readonly queues = new Set<string>();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly inner: Bus,
    private readonly metrics: Metrics,
    private readonly queuePrefix = '',
    private readonly sampleMs = 15_000,
  ) {}

  publish(routingKey: string, payload: unknown, options: PublishOptions = {}): Promise<void> {
    return this.inner.publish(routingKey, payload, { ...options, headers: { ...options.headers, [PUBLISHED_AT_HEADER]: Date.now() } });
  }

  async consume<T>(options: ConsumeOptions<T>): Promise<ConsumerHandle> {
    const queue = `${this.queuePrefix}${options.queue}`;
    this.queues.add(queue);
    this.startSampling();
    return this.inner.consume({
      ...options,
      queue,
      handler: async (payload, ctx) => {
        const at = ctx.headers[PUBLISHED_AT_HEADER];
        if (typeof at === 'number') this.metrics.consumerLagSeconds.set({ queue }, Math.max(0, (Date.now() - at) / 1000));
        await options.handler(payload, ctx);
      },
    });
  }

  queueDepth(queue: string): Promise<number | undefined> {
    return this.inner.queueDepth(`${this.queuePrefix}${queue}`);
  }

  isHealthy(): boolean {
    return this.inner.isHealthy();
  }

  /** Dead letters of `queue` (prefixed like consumers' queues); [] when the bus cannot list them. */
  async listDeadLetters(queue: string, limit: number): Promise<DeadLetterInfo[]> {
    const list = (await this.inner.listDeadLetters?.(`${this.queuePrefix}${queue}`, limit)) ?? [];
    return list.map((d) => ({ ...d, queue }));
  }

  /** Replays dead letters of `queue` (prefixed); 0 when the bus cannot replay. */
  async replayDeadLetters(queue: string, limit: number, messageIds?: ReadonlySet<string>): Promise<number> {
    return (await this.inner.replayDeadLetters?.(`${this.queuePrefix}${queue}`, limit, messageIds)) ?? 0;
  }

  async close(): Promise<void> {
    this.stopSampling();
    await this.inner.close();
  }

  /** Stops sampling without closing the shared inner bus. */
  stopSampling(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private startSampling(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      for (const q of this.queues) {
        this.inner.queueDepth(q).then(
          (n) => {
            if (n !== undefined) this.metrics.queueDepth.set({ queue: q }, n);
          },
          () => undefined,
        );
      }
    }, this.sampleMs);
    this.timer.unref();
  }
}
