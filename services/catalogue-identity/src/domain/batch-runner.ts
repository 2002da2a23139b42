/**
 * Executes the catalogue's batch tasks one at a time (spec "Batch tasks", "Setup-time alignment" 7,
 * "Cleaning"): sweeps, alignments and cleanings share one lane, because they write the same mapping rows.
 *
 * - Queue: catalogue.batch_task (store/batch-task.repository.ts). Requests from the bus and the HTTP API
 *   are admitted there (with coalescing and cancel-running), then the runner is kicked.
 * - One runner across replicas, on the platform task host (shared/platform/src/tasks/), whose store is
 *   the queue (BatchTaskRepository implements TaskStore): a process claims the next task with a lease
 *   renewed by the host's LeaseKeeper; no claim succeeds while a RUNNING task holds a live lease, and
 *   every write of the task is fenced by its lease generation. The host's periodic scan
 *   (BATCH_RECHECK_MS) picks up tasks queued elsewhere and takes over a RUNNING task whose lease expired
 *   (its process died) or was handed back: the task runs again from the start (sweeps and cleanings are
 *   idempotent; matches written before are kept and skipped). This class is the executor: one step runs
 *   the sweep or cleaning executor; the host writes the end.
 * - Cancel: ends the task in the database at once (REVOKED), from any replica; the runner stops at its
 *   next check (in-process abort, lease heartbeat, or fenced write) and records what it did on the row.
 * - Shutdown: the running task stops at its next chunk and the host hands its lease back, so another
 *   replica (or this one after the restart) runs it again at once.
 * - Transient faults (database or broker connection lost, timeouts: platform `isTransientFault`): the task
 *   is not failed. The host hands its lease back (or it expires when the database is away) and this
 *   process claims again after a jittered backoff (TRANSIENT_BACKOFF_BASE_MS doubling up to
 *   TRANSIENT_BACKOFF_MAX_MS per consecutive fault; any replica may take it first); it resumes from its
 *   durable state like a takeover. Only a permanent error ends it FAIL.
 * - Schedules are not kept here: a scheduled cleaning is a firing of the registry's /api/cron (the
 *   built-in "Cleaning" schedule replaced the CLEANING_SCHEDULE_HOURS timer), admitted like any
 *   POST /api/cleaning/start.
 */
import { randomUUID } from 'node:crypto';
import type { SweepRequestedEvent } from '@polyphony/contracts';
import { TaskHost, leaseOwnerName, type Bus, type Logger, type TaskContext, type TaskEnd } from '@polyphony/platform';
import type { CatalogueSettings } from '../settings';
import type { CleaningExecutor } from './cleaning.service';
import type { BatchTask, BatchTaskStore } from './ports';
import type { SweepExecutor } from './sweep.service';
import { BatchTaskRun, batchTaskEvents } from './batch-task-run';

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

/** The executor's state of the task it runs. */
interface BatchWork {
  run: BatchTaskRun;
  /** What the sweep or cleaning recorded, kept on the row when a cancel ended the task. */
  details: Record<string, unknown>;
}

/** The batch lane of this process (see module doc). */
export class BatchRunner {
  /** Identifies this process in batch_task.runner and lease_owner. */
  readonly instanceId = leaseOwnerName('catalogue-batch');
  /** Claims, runs, takes over and hands back the queue's tasks. */
  readonly host: TaskHost<BatchWork, BatchTask>;

  constructor(
    private readonly repo: BatchTaskStore,
    bus: Bus,
    private readonly sweeps: SweepExecutor,
    private readonly cleanings: CleaningExecutor,
    private readonly settings: CatalogueSettings,
    private readonly logger: Logger,
    private readonly options: BatchRunnerOptions,
  ) {
    this.host = new TaskHost<BatchWork, BatchTask>(
      repo,
      this.instanceId,
      { start: (ctx) => this.begin(ctx), step: (work) => this.step(work), cancel: (work, ctx) => this.closeRevoked(work, ctx) },
      logger,
      { bus, type: 'sweep', owner: 'catalogue', events: batchTaskEvents },
      {
        ttlMs: options.leaseTtlMs,
        scanMs: options.recheckMs,
        transientBackoff: { baseMs: TRANSIENT_BACKOFF_BASE_MS, maxMs: TRANSIENT_BACKOFF_MAX_MS },
        publishHandBack: true,
        logLabel: 'batch task',
      },
    );
  }

  /** Starts the periodic queue re-check and drains anything already queued. */
  start(): void {
    this.host.startScanning();
  }

  /** Stops the re-check, asks the running task to stop (its lease is handed back) and waits for the lane to be idle. */
  async stop(): Promise<void> {
    await this.host.stop();
  }

  /**
   * Handles `registry.sweep.requested.v1`: admission (coalescing, cancel-running), task-board snapshots
   * for every task it changed, then the lane is kicked.
   */
  async onSweepRequested(e: SweepRequestedEvent): Promise<void> {
    const a = await this.repo.requestSweep(e);
    for (const t of a.revoked) await this.host.publish(t, false);
    for (const id of a.cancelledRunning) this.host.interrupt(id);
    if (a.outcome !== 'duplicate') await this.host.publish(a.task, false);
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
    await this.host.publish(task, false);
    this.kick();
    return task;
  }

  /** Handles `task.cancel.requested.v1` for a task of this service (or one of its aliases). */
  async onCancelRequested(taskId: string): Promise<void> {
    await this.host.cancel(taskId);
  }

  /** Drains the queue in the background (claims while this process gets tasks). */
  kick(): void {
    void this.host.kick();
  }

  /** Resolves when this process's lane is idle and nothing is queued (tests and benchmarks). */
  async idle(pollMs = 25): Promise<void> {
    for (;;) {
      await this.host.idle();
      if (!(await this.repo.hasQueued())) return;
      this.kick();
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  /** Executor `start`: the first snapshot of the claimed task. */
  private async begin(ctx: TaskContext<BatchTask>): Promise<BatchWork> {
    const run = new BatchTaskRun(ctx, this.options.progressIntervalMs);
    const work = { run, details: {} };
    await run.progress(0, ctx.resumed ? 'Starting again (taken over)' : 'Starting', true);
    return work;
  }

  /** Executor `step`: the whole sweep or cleaning (both resume from durable state); undefined when it stopped early. */
  private async step(work: BatchWork): Promise<TaskEnd | undefined> {
    const { run } = work;
    const outcome = run.task.type === 'cleaning' ? await this.cleanings.run(run) : await this.sweeps.run(run);
    work.details = outcome.details;
    if (outcome.cancelled) return undefined;
    return { state: outcome.state, message: outcome.message, details: outcome.details, servers: run.servers };
  }

  /** Executor `cancel`: the task was REVOKED while it ran here; records what the run did on the row (if it held it last) and publishes it. */
  private async closeRevoked(work: BatchWork, ctx: TaskContext<BatchTask>): Promise<void> {
    const task = await this.repo.amendRevoked(ctx.lease, work.details);
    if (task) await this.host.publish(task, false, ctx.live);
  }
}
