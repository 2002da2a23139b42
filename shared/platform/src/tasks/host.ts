import { RoutingKeys, type ServerTaskCounts, type TaskType, type TaskUpdatedEvent } from '@polyphony/contracts';
import type { Bus } from '../bus';
import { runWithContext } from '../context';
import { withTransientRetry } from '../faults';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics';
import { TaskContext } from './context';
import { DEFAULT_LEASE_TTL_MS, LeaseKeeper, LeaseLostError, type Lease } from './lease-keeper';
import { toTaskEvent, type TaskRun } from './state';
import type { TaskRunStore } from './store';

/** How a run ended, as its executor tells the host (the host writes it, progress 100, and publishes it). */
export interface TaskEnd {
  state: 'SUCCESS' | 'FAIL';
  /** One line for the board. */
  message: string;
  /** Merged (shallow) into the run's details. */
  details?: Record<string, unknown>;
  /** Final per-server counts; omitted = the last reported. */
  servers?: ServerTaskCounts[];
}

/**
 * The work of one task kind, as the {@link TaskHost} drives it. The executor never starts, scans,
 * leases, cancels or publishes anything itself: it reads and writes its run through the
 * {@link TaskContext} and only does the work, in steps.
 *
 * - `start(ctx)`: called once per coordination, for a new run and for a run taken over from a
 *   replica that stopped (`ctx.resumed`): rebuilds the working state `W` from the row
 *   (`ctx.run.details`, `ctx.run.servers`) and the executor's own durable per-item results.
 * - `step(work, ctx)`: does the next bounded piece of work (one server, one page, one phase) and
 *   reports progress with `ctx.report`; returns a {@link TaskEnd} when the run is over, undefined
 *   when there is more. Between steps the host stops the coordination when `ctx.stopped()`; inside a
 *   long step the executor checks `ctx.signal` / `ctx.stopped()` itself and returns (or throws) early.
 *   A step must be resumable: whatever it wrote durably is skipped by the next coordinator's `start`.
 * - `cancel(work, ctx)` (optional): the run was cancelled (it is already REVOKED in the database)
 *   while coordinated here; stop work in flight. Writes to the row are refused from then on.
 *
 * A thrown error ends the coordination without a final write: a LeaseLostError or an abort is a
 * normal stop; anything else is logged as a crash and another replica resumes the run when the lease
 * expires.
 */
export interface TaskExecutor<W> {
  start(ctx: TaskContext): Promise<W>;
  step(work: W, ctx: TaskContext): Promise<TaskEnd | undefined>;
  cancel?(work: W, ctx: TaskContext): Promise<void>;
}

/** Where a host reports its runs: the task board (task.status.updated.v1) and the `tasks_total` counter. */
export interface TaskBoardOptions {
  bus: Bus;
  /** Task type on the board. */
  type: TaskType;
  /** Owning service on the board. */
  owner: TaskUpdatedEvent['owner'];
  /** `task` label of `tasks_total` (one increment per ended run, by outcome); no metrics when omitted. */
  metrics?: { metrics: Metrics; task: string };
}

export interface TaskHostOptions {
  /** Lease time-to-live of a run's coordinator, ms (default {@link DEFAULT_LEASE_TTL_MS}). */
  ttlMs?: number;
  /** How often this replica looks for runs whose lease expired (ms, default 5000). */
  scanMs?: number;
  /** Request id prefix of everything a coordination logs (`<prefix>-<run id>`); none when omitted. */
  requestIdPrefix?: string;
  /** REVOKED message written by {@link TaskHost.cancel}. */
  cancelMessage?: string;
}

interface Coordination {
  keeper: LeaseKeeper;
  stop: AbortController;
  done: Promise<void>;
}

/**
 * The one task host (issue 29): drives the runs of one task kind in one process, over a platform
 * task-run table ({@link TaskRunStore}, at most one live run).
 *
 * - {@link start} creates a run (409 while one is live) and coordinates it here under a lease.
 * - Every `scanMs` ({@link startScanning}) it takes over a live run whose lease expired: its
 *   coordinator died, lost the database for longer than the TTL, or handed it back on SIGTERM.
 * - A {@link LeaseKeeper} renews the lease; a lost lease, a cancel seen by the heartbeat, or
 *   {@link stop} aborts `ctx.signal`.
 * - The executor's steps run under `runWithContext` (request id `<prefix>-<run id>`); every write goes
 *   through the context (fenced) and is published to the board; the final one with retries on
 *   transient broker faults.
 * - {@link cancel} ends a run as REVOKED in the database at once, from any replica, whatever its
 *   coordinator is doing, and publishes it.
 * - {@link stop} (graceful shutdown) stops scanning, aborts running coordinations and hands their
 *   leases back, so another replica resumes them at once.
 */
export class TaskHost<W = unknown> {
  private readonly running = new Map<string, Coordination>();
  private scanTimer?: NodeJS.Timeout;
  private stopped = false;
  protected readonly ttlMs: number;
  private readonly scanMs: number;

  constructor(
    protected readonly store: TaskRunStore,
    /** This process's lease owner name (`leaseOwnerName(...)`). */
    readonly owner: string,
    private readonly executor: TaskExecutor<W> | undefined,
    protected readonly logger: Logger,
    private readonly board: TaskBoardOptions | undefined,
    private readonly options: TaskHostOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
    this.scanMs = options.scanMs ?? 5000;
  }

  /**
   * Creates a run with `details` (e.g. its parameters, read back by a replica taking it over),
   * publishes it and starts coordinating it here. Returns the new row (NEW) at once.
   * @throws ConflictError (409, code task_already_running) while another run is live.
   */
  async start(details: Record<string, unknown> = {}): Promise<TaskRun> {
    const run = await this.startNew(details);
    await this.publish(run, false);
    return run;
  }

  /** Creates a run with `details` (409 while one is live) and starts coordinating it here, without publishing it. */
  async startNew(details: Record<string, unknown> = {}): Promise<TaskRun> {
    const { run, lease } = await this.store.create(this.owner, this.ttlMs, undefined, details);
    this.launch(run, lease);
    return run;
  }

  /**
   * Ends a live run as REVOKED at once (database first, so it holds even when its coordinator is
   * dead or the broker is down), then publishes it. Unknown or finished runs are ignored.
   * @returns the ended run, or undefined.
   */
  async cancel(runId: string): Promise<TaskRun | undefined> {
    const run = await this.store.cancel(runId, this.options.cancelMessage);
    if (!run) return undefined;
    this.board?.metrics?.metrics.tasks.inc({ task: this.board.metrics.task, outcome: 'REVOKED' });
    await this.publish(run, false);
    return run;
  }

  /** Starts the takeover scan (and runs one scan now). */
  startScanning(): void {
    const tick = async () => {
      if (this.stopped) return;
      try {
        await this.scanOnce();
      } catch (err) {
        this.logger.warn('task-run takeover scan failed', { err: (err as Error).message });
      }
      if (!this.stopped) this.scanTimer = setTimeout(() => void tick(), this.scanMs);
    };
    void tick();
  }

  /** Takes over one expired run, if any; returns its id. */
  async scanOnce(): Promise<string | undefined> {
    if (this.stopped) return undefined;
    const claimed = await this.store.claimExpired(this.owner, this.ttlMs);
    if (!claimed) return undefined;
    this.logger.warn('taking over a run whose coordinator lease expired', { runId: claimed.run.id, leaseGeneration: claimed.lease.generation, previousHeartbeat: claimed.run.heartbeatAt });
    this.launch(claimed.run, claimed.lease);
    return claimed.run.id;
  }

  /** Resolves when no run is coordinated here (tests, graceful shutdown). */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.all([...this.running.values()].map((r) => r.done));
  }

  /** Ids of the runs coordinated by this process. */
  get active(): string[] {
    return [...this.running.keys()];
  }

  /** Graceful shutdown: no more takeovers, running coordinations stop and hand their leases back. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.scanTimer) clearTimeout(this.scanTimer);
    for (const r of this.running.values()) r.stop.abort(new Error('shutting down'));
    await Promise.all([...this.running.values()].map((r) => r.done));
  }

  /** Publishes a run's row to the board; never throws (the next snapshot carries the full state). */
  async publish(run: TaskRun, final: boolean): Promise<void> {
    const board = this.board;
    if (!board) return;
    const send = () => board.bus.publish(RoutingKeys.taskUpdated, toTaskEvent(run, board.type, board.owner));
    try {
      if (final) await withTransientRetry(send, { maxAttempts: 12, initialDelayMs: 500, maxDelayMs: 15_000 });
      else await send();
    } catch (err) {
      this.logger.warn('task board update not published (the next snapshot carries it)', { taskId: run.id, seq: run.seq, err: (err as Error).message });
    }
  }

  /** One coordination: the executor's start, then its steps until it ends or must stop. */
  protected async coordinate(run: TaskRun, keeper: LeaseKeeper, stop: AbortSignal): Promise<void> {
    const executor = this.executor;
    if (!executor) throw new Error('TaskHost without an executor');
    const ctx = new TaskContext(run, keeper, stop, this.store, (r, final) => this.publish(r, final), this.logger, this.board?.type ?? 'task');
    if (ctx.resumed) ctx.note(`resumed by ${ctx.lease.owner} (lease generation ${ctx.lease.generation})`);
    const work = await executor.start(ctx);
    try {
      for (;;) {
        const end = await executor.step(work, ctx);
        if (end) {
          const saved = await ctx.finish(end.state, end);
          this.board?.metrics?.metrics.tasks.inc({ task: this.board.metrics.task, outcome: end.state });
          this.logger.info('task run ended', { taskId: run.id, type: this.board?.type, state: saved.state, message: end.message });
          return;
        }
        if (await ctx.stopped()) return;
      }
    } finally {
      if (executor.cancel && (await this.store.isCancelled(run.id).catch(() => false))) await executor.cancel(work, ctx);
    }
  }

  private launch(run: TaskRun, lease: Lease): void {
    const keeper = new LeaseKeeper(this.store, lease, { ttlMs: this.ttlMs, logger: this.logger }).start();
    const stop = new AbortController();
    const body = () => this.coordinate(run, keeper, stop.signal);
    const prefix = this.options.requestIdPrefix;
    const done = (prefix ? runWithContext({ requestId: `${prefix}-${run.id}` }, body) : body())
      .catch((err: unknown) => {
        if (keeper.signal.aborted || stop.signal.aborted || err instanceof LeaseLostError) this.logger.warn('run coordination stopped', { runId: run.id, err: (err as Error).message });
        else this.logger.error('run coordinator crashed; another replica resumes it when the lease expires', { runId: run.id, err });
      })
      .finally(async () => {
        // Hand the lease back when stopping (SIGTERM) so another replica resumes without waiting for the TTL.
        await keeper.stop(stop.signal.aborted && !keeper.signal.aborted);
        this.running.delete(run.id);
      });
    this.running.set(run.id, { keeper, stop, done });
  }
}

/**
 * The host's earlier entry point, kept until the index service's radio runs adopt {@link TaskExecutor}:
 * `execute(run, keeper, stop)` is the whole coordination (it writes and publishes every snapshot itself,
 * fenced by `keeper.lease`). Lease keeping, takeover, hand-back and idle are the host's.
 * @deprecated give the host a {@link TaskExecutor} instead (see docs/architecture.md, "Task runs").
 */
export class TaskRunHost extends TaskHost<never> {
  constructor(
    store: TaskRunStore,
    owner: string,
    private readonly execute: (run: TaskRun, keeper: LeaseKeeper, stop: AbortSignal) => Promise<void>,
    logger: Logger,
    options: Pick<TaskHostOptions, 'ttlMs' | 'scanMs'> = {},
  ) {
    super(store, owner, undefined, logger, undefined, options);
  }

  protected override coordinate(run: TaskRun, keeper: LeaseKeeper, stop: AbortSignal): Promise<void> {
    return this.execute(run, keeper, stop);
  }
}
