import type { Logger } from '@polyphony/platform';
import type { IndexState } from '../core/generation';

/** Where a replica's reports go (the `index.replicas` table in production). */
export interface ReplicaReportSink {
  report(replicaId: string, generation: number, items: number): Promise<void>;
  remove(replicaId: string): Promise<void>;
}

/**
 * Reports the generation this replica serves (issue 12 "SUCCESS means queryable on every index
 * replica"): at start, after every generation swap, and every `heartbeatMs` as a heartbeat. A run
 * waiting for its songs to be queryable counts a replica as live while its heartbeat is younger than
 * {@link liveWindowMs} (3 heartbeats: one missed beat under load does not drop a replica). Database
 * errors are logged and retried at the next beat. `stop()` removes the row (this replica no longer
 * serves); a replica that dies simply stops beating.
 */
export class ReplicaReporter {
  private timer?: NodeJS.Timeout;
  private stopped = true;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    readonly replicaId: string,
    private readonly state: IndexState,
    private readonly sink: ReplicaReportSink,
    private readonly logger: Logger,
    readonly heartbeatMs: number,
  ) {
    state.onSwap(() => {
      if (!this.stopped) void this.beat();
    });
  }

  /** Heartbeat age (ms) under which a replica counts as live: 3 heartbeats. */
  static liveWindowMs(heartbeatMs: number): number {
    return 3 * heartbeatMs;
  }

  /** Reports now and then every `heartbeatMs`. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.beat();
    this.timer = setInterval(() => void this.beat(), this.heartbeatMs);
    this.timer.unref();
  }

  /** One report of the generation served now (serialised: a swap and a beat never race). */
  beat(): Promise<void> {
    this.chain = this.chain.then(async () => {
      if (this.stopped) return;
      const g = this.state.current();
      try {
        await this.sink.report(this.replicaId, g.generation, g.index.size);
      } catch (err) {
        this.logger.warn('replica report failed; retried at the next heartbeat', { replicaId: this.replicaId, err: (err as Error).message });
      }
    });
    return this.chain;
  }

  /** Stops beating and removes this replica's row. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.chain;
    await this.sink.remove(this.replicaId).catch((err: unknown) => this.logger.warn('replica row removal failed (it stops counting once its heartbeat is old)', { replicaId: this.replicaId, err: (err as Error).message }));
  }
}
