/**
 * Executes the catalogue's batch tasks one at a time (spec "Batch tasks", "Setup-time alignment" 7,
 * "Cleaning"): sweeps, alignments and cleanings share one lane, because they write the same mapping rows.
 *
 * - Queue: catalogue.batch_task (store/batch-task.repository.ts). Requests from the bus and the HTTP API
 *   are admitted there (with coalescing and cancel-running), then the runner is kicked.
 * - One runner across replicas, on the platform task-run lease model (shared/platform/src/task-run.ts):
 *   a process claims the next task with a lease renewed by a LeaseKeeper heartbeat; no claim succeeds
 *   while a RUNNING task holds a live lease, and every write of the task is fenced by its lease
 *   generation. A periodic re-check (BATCH_RECHECK_MS) picks up tasks queued elsewhere and takes over a
 *   RUNNING task whose lease expired (its process died) or was handed back: the task runs again from
 *   the start (sweeps and cleanings are idempotent; matches written before are kept and skipped).
 * - Cancel: ends the task in the database at once (REVOKED), from any replica; the runner stops at its
 *   next check (in-process abort, lease heartbeat, or fenced write) and records what it did on the row.
 * - Shutdown: the running task stops at its next chunk and its lease is handed back, so another replica
 *   (or this one after the restart) runs it again at once.
 * - Transient faults (database or broker connection lost, timeouts: platform `isTransientFault`): the task
 *   is not failed. Its lease is handed back (or expires when the database is away) and this process claims
 *   it again after a jittered backoff (TRANSIENT_BACKOFF_BASE_MS doubling up to TRANSIENT_BACKOFF_MAX_MS per
 *   consecutive fault; any replica may take it first); it resumes from its durable state like a takeover.
 *   Only a permanent error ends it FAIL.
 * - Schedules are not kept here: a scheduled cleaning is a firing of the registry's /api/cron (the
 *   built-in "Cleaning" schedule replaced the CLEANING_SCHEDULE_HOURS timer), admitted like any
 *   POST /api/cleaning/start.
 */
import { randomUUID } from 'node:crypto';
import type { SweepRequestedEvent } from '@polyphony/contracts';
import { DEFAULT_LEASE_TTL_MS, LeaseKeeper, LeaseLostError, isTransientFault, jitteredBackoffMs, leaseOwnerName, type Lease, type Logger } from '@polyphony/platform';
import type { CatalogueSettings } from '../settings';
import type { BatchTask, BatchTaskRepository } from '../store/batch-task.repository';
import type { CleaningExecutor } from './cleaning.service';
import type { SweepExecutor } from './sweep.service';
import { type TaskBoard, type TaskOutcome, TaskRun } from './task-run';

/** First wait before a task that hit a transient fault is claimed again, ms (doubles per consecutive fault). */
export const TRANSIENT_BACKOFF_BASE_MS = 1_000;
/** Longest such wait, ms. */
export const TRANSIENT_BACKOFF_MAX_MS = 30_000;

/** Timing of the runner. */
export interface BatchRunnerOptions {
  /** Queue re-check period, ms. */
  recheckMs: number;
  /** Shortest interval between two progress snapshots, ms. */
  progressIntervalMs: number;
  /** Lease time-to-live of the running task, ms (default the platform's 60 s). */
  leaseTtlMs?: number;
}

/** The batch lane of this process (see module doc). */
export class BatchRunner {
  /** Identifies this process in batch_task.runner and lease_owner. */
  readonly instanceId = leaseOwnerName('catalogue-batch');
  private loop?: Promise<void>;
  private rekick = false;
  private stopping = false;
  private current?: { task: BatchTask; abort: AbortController };
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly inflight = new Set<Promise<void>>();
  /** Consecutive transient faults of executed tasks (reset by a task that ends). */
  private transientStreak = 0;
  /** No claim before this time (ms epoch) after a transient fault; a timer kicks the lane then. */
  private pausedUntil = 0;
  private resumeTimer?: NodeJS.Timeout;

  constructor(
    private readonly repo: BatchTaskRepository,
    private readonly board: TaskBoard,
    private readonly sweeps: SweepExecutor,
    private readonly cleanings: CleaningExecutor,
    private readonly settings: CatalogueSettings,
    private readonly logger: Logger,
    private readonly options: BatchRunnerOptions,
  ) {}

  /** Starts the periodic queue re-check and drains anything already queued. */
  start(): void {
    const every = (ms: number, fn: () => Promise<void>) => {
      const t = setInterval(() => {
        if (this.stopping) return;
        const p: Promise<void> = fn()
          .catch((err: unknown) => this.logFault('batch queue re-check failed', err))
          .finally(() => this.inflight.delete(p));
        this.inflight.add(p);
      }, ms);
      t.unref?.();
      this.timers.push(t);
    };
    every(this.options.recheckMs, async () => {
      if (!this.loop && (await this.repo.hasClaimable())) this.kick();
    });
    this.kick();
  }

  /** Stops timers, asks the running task to stop (its lease is handed back) and waits for the lane to be idle. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    if (this.resumeTimer) clearTimeout(this.resumeTimer);
    this.current?.abort.abort();
    await Promise.all([...this.inflight]);
    while (this.loop) await this.loop;
  }

  /**
   * Handles `registry.sweep.requested.v1`: admission (coalescing, cancel-running), task-board snapshots
   * for every task it changed, then the lane is kicked.
   */
  async onSweepRequested(e: SweepRequestedEvent): Promise<void> {
    const a = await this.repo.requestSweep(e);
    for (const t of a.revoked) await this.board.publish(t);
    if (this.current && a.cancelledRunning.includes(this.current.task.id)) this.current.abort.abort();
    if (a.outcome !== 'duplicate') await this.board.publish(a.task);
    this.logger.info('sweep requested', { taskId: e.taskId, serverId: e.serverId, outcome: a.outcome, into: a.task.id, revoked: a.revoked.length, cancelledRunning: a.cancelledRunning.length });
    this.kick();
  }

  /**
   * Admits a cleaning run (POST /api/cleaning/start).
   * @param cleanCatalogue the run's orphan-deletion choice; null follows CLEANING_CATALOGUE.
   * @throws ConflictError (409) while a sweep, alignment or cleaning is queued or running.
   */
  async startCleaning(cleanCatalogue: boolean | null): Promise<BatchTask> {
    const task = await this.repo.admitCleaning(randomUUID(), cleanCatalogue, 'api');
    await this.board.publish(task);
    this.kick();
    return task;
  }

  /** Handles `task.cancel.requested.v1` for a task of this service (or one of its aliases). */
  async onCancelRequested(taskId: string): Promise<void> {
    const r = await this.repo.requestCancel(taskId);
    if (r.revoked) await this.board.publish(r.revoked);
    const current = this.current;
    if (r.running && current && current.task.id === r.revoked?.id) current.abort.abort();
  }

  /** Drains the queue in the background when this process can take the runner lock. */
  kick(): void {
    if (this.stopping || Date.now() < this.pausedUntil) return;
    if (this.loop) {
      this.rekick = true;
      return;
    }
    this.loop = this.drain()
      .catch((err: unknown) => {
        this.logFault('batch lane failed', err);
        return false;
      })
      .then(async (ran) => {
        this.loop = undefined;
        const again = this.rekick;
        this.rekick = false;
        // A task queued between the last claim and the unlock would otherwise wait for the re-check.
        if (!this.stopping && (again || (ran && (await this.repo.hasClaimable().catch(() => false))))) this.kick();
      });
  }

  /** Error-level log for a bug, warn for a transient fault (database or broker away: expected, retried). */
  private logFault(message: string, err: unknown): void {
    if (isTransientFault(err)) this.logger.warn(`${message} (transient; retried)`, { err: (err as Error).message });
    else this.logger.error(message, { err: (err as Error).message });
  }

  /** No claims for `ms`; then the lane is kicked again. */
  private pause(ms: number): void {
    this.pausedUntil = Date.now() + ms;
    if (this.resumeTimer) clearTimeout(this.resumeTimer);
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = undefined;
      this.kick();
    }, ms);
    this.resumeTimer.unref?.();
  }

  /** Resolves when this process's lane is idle and nothing is queued (tests and benchmarks). */
  async idle(pollMs = 25): Promise<void> {
    for (;;) {
      while (this.loop) await this.loop;
      if (!(await this.repo.hasQueued())) return;
      this.kick();
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  /** The task this process is executing, if any. */
  get running(): BatchTask | undefined {
    return this.current?.task;
  }

  /** Claims and executes tasks in order while this process gets them (false when nothing could be claimed). */
  private async drain(): Promise<boolean> {
    let ran = false;
    while (!this.stopping && Date.now() >= this.pausedUntil) {
      const claimed = await this.repo.claimNext(this.instanceId, this.options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS);
      if (!claimed) break;
      if (claimed.resumed) this.logger.warn('taking over a batch task whose runner lease expired or was handed back', { taskId: claimed.task.id, type: claimed.task.type, leaseGeneration: claimed.lease.generation });
      ran = true;
      await this.execute(claimed.task, claimed.lease);
    }
    return ran;
  }

  private async execute(task: BatchTask, lease: Lease): Promise<void> {
    const abort = new AbortController();
    this.current = { task, abort };
    if (this.stopping) abort.abort();
    const log = this.logger.child({ component: 'batch-task', taskId: task.id });
    // Heartbeat of the lease: a cancel from another replica, a lost lease or the database gone for most
    // of the TTL stop the task at its next check.
    const keeper = new LeaseKeeper(this.repo, lease, { ttlMs: this.options.leaseTtlMs, logger: log, onLost: () => abort.abort() }).start();
    const run = new TaskRun(task, lease, this.repo, this.board, abort, log, this.options.progressIntervalMs);
    // How the task ended: its outcome, or 'transient' (a fault that hands the task back; nothing is written).
    let ending: TaskOutcome | 'transient';
    try {
      await run.progress(0, task.leaseGeneration > 1 ? 'Starting again (taken over)' : 'Starting', true);
      ending = task.type === 'cleaning' ? await this.cleanings.run(run) : await this.sweeps.run(run);
    } catch (err) {
      if (err instanceof LeaseLostError || abort.signal.aborted) ending = { state: 'FAIL', cancelled: true, message: 'stopped', details: {} };
      else if (isTransientFault(err)) {
        ending = 'transient';
        const waitMs = jitteredBackoffMs(++this.transientStreak, TRANSIENT_BACKOFF_BASE_MS, TRANSIENT_BACKOFF_MAX_MS);
        this.pause(waitMs);
        log.warn('batch task hit a transient fault; it is handed back and resumes', { taskId: task.id, type: task.type, retryInMs: waitMs, streak: this.transientStreak, err: (err as Error).message });
      } else {
        this.logger.error('batch task failed', { taskId: task.id, type: task.type, err: (err as Error).message });
        ending = { state: 'FAIL', message: `Failed: ${(err as Error).message}`.slice(0, 500), details: {} };
      }
    } finally {
      this.current = undefined;
    }
    const transient = ending === 'transient';
    if (!transient) this.transientStreak = 0;
    const details = ending === 'transient' ? {} : ending.details;
    const cancelRequested = await this.repo.isCancelRequested(task.id).catch(() => undefined);
    const handBack = (this.stopping || transient) && !keeper.signal.aborted && cancelRequested !== true;
    await keeper.stop(handBack);
    try {
      if (handBack) {
        // Shutdown or a transient fault: the lease was handed back; another replica (or this one, after the
        // restart or the backoff) runs it again.
        const row = await this.repo.find(task.id);
        if (row) await this.board.publish(row);
      } else if (ending === 'transient') {
        // Cancelled meanwhile: REVOKED. Otherwise the lease was lost (the database away past the TTL): write
        // nothing; the re-check (here after the backoff, or on another replica) takes the task over.
        if (cancelRequested === true) await run.closeRevoked(details);
      } else if (ending.cancelled) await run.closeRevoked(details);
      else await run.finish(ending.state, ending.message, details);
    } catch (err) {
      if (!(err instanceof LeaseLostError)) throw err;
      // Cancelled (REVOKED by the cancel) or taken over meanwhile: the row already tells the truth.
      await run.closeRevoked(details);
      log.warn('batch task ended elsewhere before its final write', { taskId: task.id });
    }
  }
}
