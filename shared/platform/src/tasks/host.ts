import { RoutingKeys, type ServerTaskCounts, type TaskType, type TaskUpdatedEvent } from '@polyphony/contracts';
import type { Bus } from '../bus';
import { runWithContext } from '../context';
import { isTransientFault, jitteredBackoffMs, withTransientRetry } from '../faults';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics';
import { TaskContext, type LiveRunState } from './context';
import { DEFAULT_LEASE_TTL_MS, LeaseKeeper, LeaseLostError, type Lease } from './lease-keeper';
import { toTaskEvent, type TaskRun } from './state';
import type { LeasedRun, StoredRun, TaskRunStore, TaskStore } from './store';

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
 * expires (or, with `transientBackoff`, a transient fault hands the lease back at once).
 *
 * Adopting it (a kind with a platform task-run table, e.g. `createTaskRunTableSql('index', 'radio_runs')`):
 * ```ts
 * const host = new TaskHost<Work>(new TaskRunStore(ds, 'index', 'radio_runs', 'A radio run is already running'),
 *   leaseOwnerName('index-radios'),
 *   { start: (ctx) => begin(ctx), step: (work, ctx) => step(work, ctx) },
 *   logger, { bus, type: 'radios', owner: 'index' }, { requestIdPrefix: 'radios' });
 * await host.start({ ...parameters });   // POST .../run: 409 while one is live
 * await host.cancel(taskId);             // task.cancel.requested.v1
 * host.startScanning();                  // service start: takeovers
 * await host.stop();                     // SIGTERM: hand the lease back
 * ```
 */
export interface TaskExecutor<W, R extends StoredRun = TaskRun> {
  start(ctx: TaskContext<R>): Promise<W>;
  step(work: W, ctx: TaskContext<R>): Promise<TaskEnd | undefined>;
  cancel?(work: W, ctx: TaskContext<R>): Promise<void>;
}

/** Where a host reports its runs: the task board (task.status.updated.v1) and the `tasks_total` counter. */
export interface TaskBoardOptions<R extends StoredRun = TaskRun> {
  bus: Bus;
  /**
   * The board events of a run (default: `toTaskEvent` of the row). A store whose rows keep no
   * per-server counts or log gets them from `live` (the coordination's, empty outside one).
   */
  events?: (run: R, live: LiveRunState) => TaskUpdatedEvent[];
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
  /**
   * A run whose step hit a transient fault of this service's own infrastructure (platform
   * `isTransientFault`: database or broker away) is not failed: its lease is handed back and this
   * process claims nothing for a jittered backoff (`baseMs` doubling per consecutive fault up to
   * `maxMs`); any replica may resume it first. Without this option such a fault is a crash (the run
   * is resumed when its lease expires).
   */
  transientBackoff?: { baseMs: number; maxMs: number };
  /** Publish the row again after handing a lease back (for stores whose release writes the row). */
  publishHandBack?: boolean;
  /** Message of the service-log lines of `ctx.note` (default the board's task type). */
  logLabel?: string;
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
export class TaskHost<W = unknown, R extends StoredRun = TaskRun> {
  private readonly running = new Map<string, Coordination>();
  private scanTimer?: NodeJS.Timeout;
  private resumeTimer?: NodeJS.Timeout;
  private stopped = false;
  private readonly ttlMs: number;
  private readonly scanMs: number;
  /** Claims in progress (a scan or a drain), so {@link stop} and {@link idle} wait for them. */
  private claiming?: Promise<unknown>;
  private claimAgain = false;
  /** Consecutive transient faults of coordinations (reset by a coordination that ends otherwise). */
  private transientStreak = 0;
  /** No claim before this time (ms epoch) after a transient fault. */
  private pausedUntil = 0;

  constructor(
    private readonly store: TaskStore<R> & { create?: TaskRunStore['create'] },
    /** This process's lease owner name (`leaseOwnerName(...)`). */
    readonly owner: string,
    private readonly executor: TaskExecutor<W, R>,
    private readonly logger: Logger,
    private readonly board: TaskBoardOptions<R> | undefined,
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
  async start(details: Record<string, unknown> = {}): Promise<R> {
    const run = await this.startNew(details);
    await this.publish(run, false);
    return run;
  }

  /** Creates a run with `details` (409 while one is live) and starts coordinating it here, without publishing it. */
  async startNew(details: Record<string, unknown> = {}): Promise<R> {
    if (!this.store.create) throw new Error('this task store creates no runs (a queue admits them, then kick the host)');
    const { run, lease } = (await this.store.create(this.owner, this.ttlMs, undefined, details)) as unknown as LeasedRun<R>;
    this.launch(run, lease);
    return run;
  }

  /**
   * Ends a live run as REVOKED at once (database first, so it holds even when its coordinator is
   * dead or the broker is down), then publishes it. Unknown or finished runs are ignored.
   * @returns the ended run, or undefined.
   */
  async cancel(runId: string): Promise<R | undefined> {
    const run = await this.store.cancel(runId, this.options.cancelMessage);
    if (!run) return undefined;
    this.interrupt(run.id);
    this.board?.metrics?.metrics.tasks.inc({ task: this.board.metrics.task, outcome: 'REVOKED' });
    await this.publish(run, false);
    return run;
  }

  /**
   * Stops the coordination of `runId` in this process now (its run was ended in the database, e.g. by a
   * cancel handled elsewhere in this service); its lease is not handed back. No-op when not coordinated here.
   */
  interrupt(runId: string): void {
    this.running.get(runId)?.stop.abort(new LeaseLostError(runId));
  }

  /** Starts the periodic claim scan (and runs one scan now). */
  startScanning(): void {
    const tick = async () => {
      if (this.stopped) return;
      await this.kick();
      if (!this.stopped) this.scanTimer = setTimeout(() => void tick(), this.scanMs);
    };
    void tick();
  }

  /**
   * Claims runs now (a takeover, or the next queued run) until none is left to this process; a claim
   * already in progress runs once more after it. Never throws (a failed claim is logged and retried at
   * the next scan).
   */
  kick(): Promise<void> {
    if (this.claiming) {
      this.claimAgain = true;
      return this.claiming.then(() => undefined);
    }
    const drain = async () => {
      do {
        this.claimAgain = false;
        try {
          while ((await this.scanOnce()) !== undefined);
        } catch (err) {
          const transient = isTransientFault(err);
          this.logger[transient ? 'warn' : 'error'](`task claim failed${transient ? ' (transient; retried)' : ''}`, { err: (err as Error).message });
        }
      } while (this.claimAgain && !this.stopped);
    };
    const p = drain().finally(() => {
      if (this.claiming === p) this.claiming = undefined;
      // A kick that arrived after the drain's last check: claim once more.
      if (this.claimAgain && !this.stopped) void this.kick();
    });
    this.claiming = p;
    return p;
  }

  /**
   * Claims one run (a takeover, or the next queued run) and coordinates it here; returns its id. A claim that was in
   * flight when {@link stop} ran hands its lease back at once instead (another replica claims the run now): launched,
   * it would have run unstopped after stop() had aborted the coordinations it knew of, and stop() waited for it.
   */
  async scanOnce(): Promise<string | undefined> {
    if (this.stopped || Date.now() < this.pausedUntil) return undefined;
    const claimed = await this.store.claim(this.owner, this.ttlMs);
    if (!claimed) return undefined;
    if (this.stopped) {
      await this.store.release(claimed.lease).catch((err: unknown) => this.logger.warn('lease release failed (it will expire)', { runId: claimed.run.id, err: (err as Error).message }));
      this.logger.info('run claimed while shutting down; its lease is handed back', { runId: claimed.run.id });
      return undefined;
    }
    if (claimed.lease.generation > 1) this.logger.warn('taking over a run whose coordinator lease expired or was handed back', { runId: claimed.run.id, leaseGeneration: claimed.lease.generation });
    this.launch(claimed.run, claimed.lease);
    return claimed.run.id;
  }

  /** Resolves when no run is coordinated here and no claim is in progress (tests, graceful shutdown). */
  async idle(): Promise<void> {
    while (this.running.size || this.claiming) {
      if (this.claiming) await this.claiming;
      await Promise.all([...this.running.values()].map((r) => r.done));
    }
  }

  /** Ids of the runs coordinated by this process. */
  get active(): string[] {
    return [...this.running.keys()];
  }

  /** Graceful shutdown: no more takeovers, running coordinations stop and hand their leases back. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.scanTimer) clearTimeout(this.scanTimer);
    if (this.resumeTimer) clearTimeout(this.resumeTimer);
    for (const r of this.running.values()) r.stop.abort(new Error('shutting down'));
    await this.idle();
  }

  /** Publishes a run's row to the board; never throws (the next snapshot carries the full state). */
  async publish(run: R, final: boolean, live: LiveRunState = { servers: [], log: [] }): Promise<void> {
    const board = this.board;
    if (!board) return;
    const events = board.events ? board.events(run, live) : [toTaskEvent(run as unknown as TaskRun, board.type, board.owner)];
    for (const event of events) {
      const send = () => board.bus.publish(RoutingKeys.taskUpdated, event);
      try {
        if (final) await withTransientRetry(send, { maxAttempts: 12, initialDelayMs: 500, maxDelayMs: 15_000 });
        else await send();
      } catch (err) {
        this.logger.warn('task board update not published (the next snapshot carries it)', { taskId: event.taskId, seq: event.seq, err: (err as Error).message });
      }
    }
  }

  /** One coordination: the executor's start, then its steps until it ends or must stop. */
  private async coordinate(run: R, keeper: LeaseKeeper, stop: AbortSignal): Promise<void> {
    const executor = this.executor;
    const ctx = new TaskContext<R>(run, keeper, stop, this.store, (r, final, live) => this.publish(r, final, live), this.logger, this.options.logLabel ?? this.board?.type ?? 'task');
    if (ctx.resumed) ctx.note(`resumed by ${ctx.lease.owner} (lease generation ${ctx.lease.generation})`);
    let work: W | undefined;
    try {
      work = await executor.start(ctx);
      for (;;) {
        const end = await executor.step(work, ctx);
        if (end) {
          const saved = await ctx.finish(end.state, end);
          this.board?.metrics?.metrics.tasks.inc({ task: this.board.metrics.task, outcome: end.state });
          this.logger.info('task run ended', { taskId: saved.id, type: this.board?.type, state: end.state, message: end.message });
          return;
        }
        if (await ctx.stopped()) return;
      }
    } finally {
      if (work !== undefined && executor.cancel && (await this.store.isCancelled(run.id).catch(() => false))) await executor.cancel(work, ctx);
    }
  }

  private launch(run: R, lease: Lease): void {
    const keeper = new LeaseKeeper(this.store, lease, { ttlMs: this.ttlMs, logger: this.logger }).start();
    const stop = new AbortController();
    const body = () => this.coordinate(run, keeper, stop.signal);
    const prefix = this.options.requestIdPrefix;
    let transient = false;
    let transientWaitMs = 0;
    const done = (prefix ? runWithContext({ requestId: `${prefix}-${run.id}` }, body) : body())
      .then(
        () => {
          this.transientStreak = 0;
        },
        (err: unknown) => {
          const backoff = this.options.transientBackoff;
          if (keeper.signal.aborted || stop.signal.aborted || err instanceof LeaseLostError) {
            this.transientStreak = 0;
            this.logger.warn('run coordination stopped', { runId: run.id, err: (err as Error).message });
          } else if (backoff && isTransientFault(err)) {
            transient = true;
            const waitMs = jitteredBackoffMs(++this.transientStreak, backoff.baseMs, backoff.maxMs);
            // No claims from now on; the backoff (and the claim after it) is counted from the hand-back
            // below, so the resume never races the lease still being held by this coordination.
            transientWaitMs = waitMs;
            this.pausedUntil = Number.POSITIVE_INFINITY;
            this.logger.warn('task run hit a transient fault; it is handed back and resumes', { runId: run.id, retryInMs: waitMs, streak: this.transientStreak, err: (err as Error).message });
          } else {
            this.transientStreak = 0;
            this.logger.error('run coordinator crashed; another replica resumes it when the lease expires', { runId: run.id, err });
          }
        },
      )
      .finally(async () => {
        // Hand the lease back when stopping (SIGTERM) or after a transient fault, so a replica (or this one,
        // after the backoff) resumes without waiting for the TTL.
        // (Not when the run was cancelled meanwhile: it is REVOKED and stays so.)
        const handBack = (stop.signal.aborted || transient) && !keeper.signal.aborted && !(await this.store.isCancelled(run.id).catch(() => false));
        try {
          await keeper.stop(handBack);
        } finally {
          this.running.delete(run.id);
          // Claims resume after the backoff, counted from the hand-back (also when handing back failed:
          // the lease then expires and the scan takes the run over).
          if (transient) this.pause(transientWaitMs);
        }
        if (handBack && this.options.publishHandBack) {
          const row = await this.store.find(run.id).catch(() => undefined);
          if (row) await this.publish(row, false);
        }
        // A queue may hold the next run already.
        if (!this.stopped && !handBack) void this.kick();
      });
    this.running.set(run.id, { keeper, stop, done });
  }

  /** No claims for `ms`; then the host claims again. */
  private pause(ms: number): void {
    this.pausedUntil = Date.now() + ms;
    if (this.resumeTimer) clearTimeout(this.resumeTimer);
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = undefined;
      // The pause is over when its timer fires (a newer pause clears this timer). Not compared with Date.now():
      // a timer may fire a millisecond before the wall clock reaches pausedUntil, and the claim then refused
      // would wait for the next scan (CI saw a run resumed only by the 60 s scan).
      this.pausedUntil = 0;
      if (!this.stopped) void this.kick();
    }, ms);
    this.resumeTimer.unref?.();
  }
}
