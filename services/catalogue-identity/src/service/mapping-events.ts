/**
 * Debounced publisher of catalogue.mapping.changed.v1 (one event per server per quiet period), so an
 * analysis run that adds thousands of mappings makes the index refresh its availability mask a few times,
 * not thousands. Server-wide changes (relabel) are published without a server id.
 */
import { type MappingChangedEvent, RoutingKeys } from '@polyphony/contracts';
import type { Bus, Logger } from '@polyphony/platform';

/** Trailing-edge debouncer of mapping.changed per server. */
export class MappingChangedPublisher {
  private readonly pending = new Map<string, { timer: NodeJS.Timeout; reason: string }>();
  private closed = false;

  /**
   * @param bus where to publish.
   * @param debounceMs quiet period per server, ms; 0 publishes at once.
   * @param logger publish failures are logged, never thrown to the caller (the mask is also versioned).
   * @param afterPublish called after each event of one server (e.g. to report the server's counts);
   *   its failures are logged too.
   */
  constructor(
    private readonly bus: Bus,
    private readonly debounceMs: number,
    private readonly logger: Logger,
    private readonly afterPublish?: (serverId: string) => Promise<void>,
  ) {}

  /** Schedules (or re-schedules) the event of `serverId`. */
  changed(serverId: string, reason: string): void {
    if (this.closed) return;
    if (this.debounceMs === 0) {
      void this.publish({ serverId, reason });
      return;
    }
    const prior = this.pending.get(serverId);
    if (prior) clearTimeout(prior.timer);
    const timer = setTimeout(() => {
      this.pending.delete(serverId);
      void this.publish({ serverId, reason });
    }, this.debounceMs);
    timer.unref?.();
    this.pending.set(serverId, { timer, reason });
  }

  /** Publishes at once (no debounce), awaiting the broker's confirmation. */
  async now(event: MappingChangedEvent): Promise<void> {
    const prior = event.serverId ? this.pending.get(event.serverId) : undefined;
    if (prior && event.serverId) {
      clearTimeout(prior.timer);
      this.pending.delete(event.serverId);
    }
    await this.publish(event);
  }

  /** Publishes every pending event now and stops scheduling (service stop). */
  async flush(): Promise<void> {
    this.closed = true;
    const pending = [...this.pending.entries()];
    this.pending.clear();
    for (const [serverId, p] of pending) {
      clearTimeout(p.timer);
      await this.publish({ serverId, reason: p.reason });
    }
  }

  private async publish(event: MappingChangedEvent): Promise<void> {
    try {
      await this.bus.publish(RoutingKeys.mappingChanged, event);
      if (event.serverId && this.afterPublish) await this.afterPublish(event.serverId);
    } catch (err) {
      this.logger.warn('mapping.changed publish failed', { serverId: event.serverId, err: (err as Error).message });
    }
  }
}
