import { isTransientFault } from '../faults';
import type { Logger } from '../logger';

/**
 * Leases of task runs (issue 12): the process driving a run holds a lease (`lease_owner`,
 * `lease_expires_at`) renewed by heartbeat; `lease_generation` grows by one at every acquisition and
 * every write of the holder is fenced by it, so a holder that lost its lease (paused, partitioned)
 * can no longer change the run. When a lease expires any replica may take the run over.
 */

/**
 * Lease time-to-live (ms): a coordinator that has not renewed for this long may be replaced. 60 s:
 * measured on the shared 2-core build machine, a standalone process analyzing 41 tracks stalled its
 * event loop long enough to miss a 15 s lease about every 2 minutes (spurious takeovers, harmless
 * thanks to fencing but noisy). A handed-back lease (SIGTERM) is taken over at once regardless.
 */
export const DEFAULT_LEASE_TTL_MS = 60_000;

/** Renewal period of a lease: a third of the TTL, at most 5 s (ms). */
export function leaseRenewMs(ttlMs: number): number {
  return Math.max(250, Math.min(5000, Math.floor(ttlMs / 3)));
}

/** Proof of holding a run's lease: writes are accepted only while `generation` is the stored one. */
export interface Lease {
  runId: string;
  owner: string;
  generation: number;
}

/** Thrown by fenced writes when the lease was lost (expired and taken over, released, or the run ended). */
export class LeaseLostError extends Error {
  constructor(runId: string) {
    super(`lease of run ${runId} lost`);
    this.name = 'LeaseLostError';
  }
}

/**
 * What a {@link LeaseKeeper} needs from a run table: the platform `TaskRunStore` is one; a service whose
 * run table has more columns (the catalogue's batch queue) implements the same two fenced statements.
 */
export interface LeaseStore {
  /** Extends the lease; answers the cancel flag; throws {@link LeaseLostError} when the lease is no longer held. */
  renew(lease: Lease, ttlMs?: number): Promise<{ cancelRequested: boolean }>;
  /** Hands the lease back at once (another replica may claim the run). */
  release(lease: Lease): Promise<void>;
}

/** Why a lease keeper stopped the holder: lease taken over or run ended, cancel flag seen, database away past the TTL. */
export type LeaseEnd = 'lost' | 'cancelled' | 'unreachable';

export interface LeaseKeeperOptions {
  ttlMs?: number;
  logger?: Logger;
  /** Called once when the lease is lost or the run was cancelled (the coordinator must stop). */
  onLost?: (reason: LeaseEnd) => void;
}

/**
 * Renews a lease every {@link leaseRenewMs}. Transient database errors are tolerated until the lease
 * would have expired locally (another replica may then take over, so the holder stops); a lost
 * lease or a cancel stops at once. `signal` aborts in every case.
 */
export class LeaseKeeper {
  private readonly controller = new AbortController();
  private timer?: NodeJS.Timeout;
  private lastRenewed = Date.now();
  private readonly ttlMs: number;
  private stopped = false;

  constructor(
    private readonly store: LeaseStore,
    readonly lease: Lease,
    private readonly options: LeaseKeeperOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
  }

  /** Aborted when the coordinator must stop writing (lease lost, cancelled, database unreachable past the TTL). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Starts the heartbeat (first renewal after one period). */
  start(): this {
    const tick = async () => {
      if (this.stopped) return;
      try {
        const { cancelRequested } = await this.store.renew(this.lease, this.ttlMs);
        this.lastRenewed = Date.now();
        if (cancelRequested) this.lose('cancelled');
      } catch (err) {
        if (err instanceof LeaseLostError) this.lose('lost');
        else if (Date.now() - this.lastRenewed > this.ttlMs * 0.9) this.lose('unreachable');
        else this.options.logger?.warn('lease renewal failed, retrying', { runId: this.lease.runId, transient: isTransientFault(err), err: (err as Error).message });
      }
      if (!this.stopped) this.timer = setTimeout(() => void tick(), leaseRenewMs(this.ttlMs));
    };
    this.timer = setTimeout(() => void tick(), leaseRenewMs(this.ttlMs));
    return this;
  }

  private lose(reason: LeaseEnd): void {
    if (this.controller.signal.aborted) return;
    this.options.logger?.warn('run lease ended', { runId: this.lease.runId, reason });
    this.controller.abort(new LeaseLostError(this.lease.runId));
    this.options.onLost?.(reason);
    this.stopTimer();
  }

  private stopTimer(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** Stops renewing; with `release`, hands the lease back so another replica can resume at once. */
  async stop(release: boolean): Promise<void> {
    this.stopTimer();
    if (release) await this.store.release(this.lease).catch((err: unknown) => this.options.logger?.warn('lease release failed (it will expire)', { runId: this.lease.runId, err: (err as Error).message }));
  }
}
