/**
 * Executes the catalogue's batch tasks one at a time (spec "Batch tasks", "Setup-time alignment" 7,
 * "Cleaning"): sweeps, alignments and cleanings share one lane, because they write the same mapping rows.
 *
 * - Queue: catalogue.batch_task (store/batch-task.repository.ts). Requests from the bus and the HTTP API
 *   are admitted there (with coalescing and cancel-running), then the runner is kicked.
 * - One runner across replicas: the process that executes holds a SESSION-level advisory lock
 *   (BATCH_RUNNER_LOCK) on a dedicated connection while it drains the queue. A process that cannot take
 *   it leaves the work to the holder; a periodic re-check (BATCH_RECHECK_MS) picks up anything queued
 *   when the holder was just letting go. Whoever takes the lock first fails the tasks a dead process
 *   left RUNNING.
 * - Cancel: the task row's flag (any replica can set it) plus an in-process abort of the running task
 *   when the cancel is handled by the process running it. A cancelled task keeps all its writes.
 * - Shutdown: the running task stops at its next chunk and goes back to the queue (it runs again after
 *   the restart), unless it was being cancelled anyway.
 * - Schedules are not kept here: a scheduled cleaning is a firing of the registry's /api/cron (the
 *   built-in "Cleaning" schedule replaced the CLEANING_SCHEDULE_HOURS timer), admitted like any
 *   POST /api/cleaning/start.
 */
import { randomUUID } from 'node:crypto';
import type { SweepRequestedEvent } from '@polyphony/contracts';
import type { Logger } from '@polyphony/platform';
import type { DataSource } from 'typeorm';
import type { CatalogueSettings } from '../settings';
import type { BatchTask, BatchTaskRepository } from '../store/batch-task.repository';
import { BATCH_RUNNER_LOCK } from '../store/locks';
import type { CleaningExecutor } from './cleaning.service';
import type { SweepExecutor } from './sweep.service';
import { type TaskBoard, type TaskOutcome, TaskRun } from './task-run';

/** Timing of the runner. */
export interface BatchRunnerOptions {
  /** Queue re-check period, ms. */
  recheckMs: number;
  /** Shortest interval between two progress snapshots, ms. */
  progressIntervalMs: number;
}

/** The batch lane of this process (see module doc). */
export class BatchRunner {
  /** Identifies this process in batch_task.runner. */
  readonly instanceId = randomUUID();
  private loop?: Promise<void>;
  private rekick = false;
  private stopping = false;
  private current?: { task: BatchTask; abort: AbortController };
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly inflight = new Set<Promise<void>>();

  constructor(
    private readonly ds: DataSource,
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
          .catch((err: unknown) => {
            this.logger.error('batch timer failed', { err: (err as Error).message });
          })
          .finally(() => this.inflight.delete(p));
        this.inflight.add(p);
      }, ms);
      t.unref?.();
      this.timers.push(t);
    };
    every(this.options.recheckMs, async () => {
      if (!this.loop && (await this.repo.hasQueued())) this.kick();
    });
    this.kick();
  }

  /** Stops timers, asks the running task to stop (it is re-queued) and waits for the lane to be idle. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
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
    if (r.running && this.current?.task.id === r.running.id) this.current.abort.abort();
  }

  /** Drains the queue in the background when this process can take the runner lock. */
  kick(): void {
    if (this.stopping) return;
    if (this.loop) {
      this.rekick = true;
      return;
    }
    this.loop = this.drain()
      .catch((err: unknown) => {
        this.logger.error('batch lane failed', { err: (err as Error).message });
        return false;
      })
      .then(async (ran) => {
        this.loop = undefined;
        const again = this.rekick;
        this.rekick = false;
        // A task queued between the last claim and the unlock would otherwise wait for the re-check.
        if (!this.stopping && (again || (ran && (await this.repo.hasQueued().catch(() => false))))) this.kick();
      });
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

  /** Takes the runner lock (returns false when another process holds it) and executes queued tasks in order. */
  private async drain(): Promise<boolean> {
    const qr = this.ds.createQueryRunner();
    await qr.connect();
    try {
      const got: Array<{ ok: boolean }> = await qr.query(`SELECT pg_try_advisory_lock($1, $2) AS ok`, [BATCH_RUNNER_LOCK[0], BATCH_RUNNER_LOCK[1]]);
      if (!got[0]?.ok) return false;
      try {
        for (const t of await this.repo.failInterrupted()) {
          this.logger.warn('batch task interrupted by a stopped process', { taskId: t.id, type: t.type });
          await this.board.publish(t);
        }
        while (!this.stopping) {
          const task = await this.repo.claimNext(this.instanceId);
          if (!task) break;
          await this.execute(task);
        }
        return true;
      } finally {
        await qr.query(`SELECT pg_advisory_unlock($1, $2)`, [BATCH_RUNNER_LOCK[0], BATCH_RUNNER_LOCK[1]]);
      }
    } finally {
      await qr.release();
    }
  }

  private async execute(task: BatchTask): Promise<void> {
    const abort = new AbortController();
    this.current = { task, abort };
    if (this.stopping) abort.abort();
    const run = new TaskRun(task, this.repo, this.board, abort, this.logger.child({ component: 'batch-task', taskId: task.id }), this.options.progressIntervalMs);
    let outcome: TaskOutcome;
    try {
      await run.progress(0, 'Starting', true);
      outcome = task.type === 'cleaning' ? await this.cleanings.run(run) : await this.sweeps.run(run);
    } catch (err) {
      this.logger.error('batch task failed', { taskId: task.id, type: task.type, err: (err as Error).message });
      outcome = { state: 'FAIL', message: `Failed: ${(err as Error).message}`.slice(0, 500), details: {} };
    } finally {
      this.current = undefined;
    }
    if (outcome.cancelled) {
      if (this.stopping && !(await this.repo.isCancelRequested(task.id))) {
        const requeued = await this.repo.requeue(task.id);
        if (requeued) {
          await this.board.publish(requeued);
          return;
        }
      }
      await run.finish('REVOKED', outcome.message, outcome.details);
      return;
    }
    await run.finish(outcome.state, outcome.message, outcome.details);
  }
}
