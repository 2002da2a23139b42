/**
 * Debounced publisher of catalogue.mapping.changed.v1 (one event per server per quiet period), so an
 * analysis run that adds thousands of mappings makes the index refresh its availability mask a few times,
 * not thousands. Server-wide changes (relabel) are published without a server id.
 */
import { type MappingChangedEvent, type MappingsLoggedEvent, RoutingKeys } from '@polyphony/contracts';
import type { Bus, Logger } from '@polyphony/platform';

/** Trailing-edge debouncer of mapping.changed per server. */
export class MappingChangedPublisher {
  private readonly pending = new Map<string, { timer: NodeJS.Timeout; reason: string }>();
  private closed = false;
  private nudgeTimer?: NodeJS.Timeout;

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
    /** Window of the catalogue.mappings.logged.v1 nudge, ms (default 10). */
    private readonly nudgeMs = 10,
  ) {}

  /**
   * Schedules (or re-schedules) the event of `serverId`, and the prompt catalogue.mappings.logged.v1
   * nudge (at most one per `nudgeMs`, trailing) that index replicas catch up on.
   */
  changed(serverId: string, reason: string): void {
    if (this.closed) return;
    this.nudge(reason, serverId);
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

  /**
   * Publishes catalogue.mappings.logged.v1 at the end of the current `nudgeMs` window (one event per
   * window whatever the number of writes). Index replicas pull the log after their cursor on it.
   */
  nudge(reason: string, serverId?: string): void {
    if (this.closed) return;
    if (this.nudgeTimer) return;
    const send = () => {
      this.nudgeTimer = undefined;
      const payload: MappingsLoggedEvent = { reason, ...(serverId ? { serverId } : {}) };
      this.bus.publish(RoutingKeys.mappingsLogged, payload).catch((err: unknown) => this.logger.warn('mappings.logged publish failed', { err: (err as Error).message }));
    };
    if (this.nudgeMs <= 0) {
      send();
      return;
    }
    this.nudgeTimer = setTimeout(send, this.nudgeMs);
    this.nudgeTimer.unref?.();
  }

  /** Publishes at once (no debounce), awaiting the broker's confirmation. */
  async now(event: MappingChangedEvent): Promise<void> {
    await this.bus.publish(RoutingKeys.mappingsLogged, { reason: event.reason, ...(event.serverId ? { serverId: event.serverId } : {}) } satisfies MappingsLoggedEvent).catch((err: unknown) =>
      this.logger.warn('mappings.logged publish failed', { err: (err as Error).message }),
    );
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
    if (this.nudgeTimer) {
      clearTimeout(this.nudgeTimer);
      this.nudgeTimer = undefined;
      await this.bus.publish(RoutingKeys.mappingsLogged, { reason: 'flush' } satisfies MappingsLoggedEvent).catch(() => undefined);
    }
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
