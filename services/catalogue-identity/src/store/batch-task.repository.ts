/**
 * The catalogue's batch-task queue (table catalogue.batch_task): sweeps of one server, alignments over
 * every server, cleaning runs. Admission, coalescing and cancel-running happen in one transaction under
 * the admission advisory lock, so two replicas receiving requests at once agree.
 *
 * Execution follows the platform task-run lease model (shared/platform/src/tasks/; the lease
 * columns come from `taskRunUpgradeSql`); this repository is the platform task host's store (TaskStore): a replica claims the next task with a lease (owner, generation,
 * expiry) renewed by heartbeat, and every write of the running task is fenced by the lease generation.
 * At most one task runs at a time across replicas (a claim is refused while a RUNNING task holds a live
 * lease). A RUNNING task whose lease expired (its process died) or was handed back (SIGTERM) is claimed
 * again by any replica and run again (sweeps and cleanings are idempotent). Cancel ends a task at once
 * in the database (REVOKED), whatever its runner is doing; the runner notices at its next fenced write
 * or heartbeat and may only amend the details of the row it held.
 *
 * Rules (spec "Setup-time alignment" 7, "Cleaning", reference section 1.2 "one live main task"):
 * - a sweep request with `cancelRunning` (a server save) revokes every queued sweep/alignment and ends
 *   the running one as REVOKED (its matches are kept), then enqueues its alignment;
 * - a request whose work is already queued is coalesced: an alignment into a queued alignment, a
 *   sweep of server S into a queued alignment or a queued sweep of S; its task id becomes an alias that
 *   gets the same status on the task board;
 * - a cleaning is admitted only while no sweep, alignment or cleaning is queued or running (409).
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { SweepRequestedEvent, TaskState } from '@polyphony/contracts';
import { ConflictError, DEFAULT_LEASE_TTL_MS, LeaseLostError, queryRows, type Lease, type LeasedRun, type RunSnapshot } from '@polyphony/platform';
import { BATCH_ADMISSION_LOCK, lockExclusive } from './locks';
import type { Queryable } from './sql';

import type { BatchTask, BatchTaskStore, BatchTaskType, SweepAdmission } from '../domain/ports';

export type { BatchTask, BatchTaskType, SweepAdmission };

interface Row {
  id: string;
  type: BatchTaskType;
  state: TaskState;
  server_id: string | null;
  full_refresh: boolean;
  clean_catalogue: boolean | null;
  trigger: string;
  aliases: string[];
  cancel_requested: boolean;
  seq: number;
  progress: number;
  message: string;
  details: Record<string, unknown>;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  lease_generation: number;
}

const toTask = (r: Row): BatchTask => ({
  id: r.id,
  type: r.type,
  state: r.state,
  serverId: r.server_id,
  fullRefresh: r.full_refresh,
  cleanCatalogue: r.clean_catalogue,
  trigger: r.trigger,
  aliases: r.aliases ?? [],
  cancelRequested: r.cancel_requested,
  seq: r.seq,
  progress: r.progress,
  message: r.message,
  details: r.details ?? {},
  createdAt: r.created_at,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
  leaseGeneration: r.lease_generation ?? 0,
});


/** A snapshot write: the row's new seq and what the task board needs. */
export interface SnapshotWrite {
  readonly seq: number;
  readonly task: BatchTask;
}

const SWEEP_TYPES = ['sweep', 'alignment'];

/** Persistence of the batch-task queue; the task store of the batch lane's platform task host. */
export class BatchTaskRepository implements BatchTaskStore {
  constructor(private readonly ds: DataSource) {}

  private async admission<T>(work: (m: EntityManager) => Promise<T>): Promise<T> {
    return this.ds.transaction(async (m) => {
      await lockExclusive(m, [BATCH_ADMISSION_LOCK]);
      return work(m);
    });
  }

  /**
   * Admits a `registry.sweep.requested.v1` (see module doc). Idempotent per task id: a redelivered
   * request answers 'duplicate' and changes nothing.
   */
  async requestSweep(e: SweepRequestedEvent): Promise<SweepAdmission> {
    return this.admission(async (m) => {
      const known = await queryRows<Row>(m, `SELECT * FROM catalogue.batch_task WHERE id = $1 OR $1 = ANY(aliases) LIMIT 1`, [e.taskId]);
      if (known[0]) return { outcome: 'duplicate', task: toTask(known[0]), revoked: [], cancelledRunning: [] };
      let revoked: BatchTask[] = [];
      let cancelledRunning: string[] = [];
      if (e.cancelRunning) {
        revoked = (
          await queryRows<Row>(
            m,
            `UPDATE catalogue.batch_task SET state = 'REVOKED', message = 'Cancelled: a server was saved; one new alignment is queued', seq = seq + 1, finished_at = now()
              WHERE type = ANY($1::text[]) AND state = 'NEW' RETURNING *`,
            [SWEEP_TYPES],
          )
        ).map(toTask);
        const ended = (
          await queryRows<Row>(
            m,
            `UPDATE catalogue.batch_task SET state = 'REVOKED', cancel_requested = true, message = 'Cancelled: a server was saved; matches written so far are kept', seq = seq + 1,
                    finished_at = now(), lease_owner = NULL, lease_expires_at = NULL
              WHERE type = ANY($1::text[]) AND state = 'RUNNING' RETURNING *`,
            [SWEEP_TYPES],
          )
        ).map(toTask);
        revoked = [...revoked, ...ended];
        cancelledRunning = ended.map((t) => t.id);
      }
      const type: BatchTaskType = e.serverId ? 'sweep' : 'alignment';
      const target = await queryRows<Row>(
        m,
        `SELECT * FROM catalogue.batch_task
          WHERE state = 'NEW' AND NOT cancel_requested AND (type = 'alignment' OR ($1::text IS NOT NULL AND type = 'sweep' AND server_id = $1))
          ORDER BY (type = 'alignment') DESC, created_at LIMIT 1`,
        [e.serverId ?? null],
      );
      if (target[0]) {
        const merged = await queryRows<Row>(
          m,
          `UPDATE catalogue.batch_task SET aliases = array_append(aliases, $2), full_refresh = full_refresh OR $3 WHERE id = $1 RETURNING *`,
          [target[0].id, e.taskId, e.fullRefresh],
        );
        return { outcome: 'coalesced', task: toTask(merged[0]!), revoked, cancelledRunning };
      }
      const inserted = await queryRows<Row>(
        m,
        `INSERT INTO catalogue.batch_task (id, type, state, server_id, full_refresh, trigger, message) VALUES ($1, $2, 'NEW', $3, $4, $5, 'Queued') RETURNING *`,
        [e.taskId, type, e.serverId ?? null, e.fullRefresh, e.cancelRunning ? 'save' : 'api'],
      );
      return { outcome: 'queued', task: toTask(inserted[0]!), revoked, cancelledRunning };
    });
  }

  /**
   * Admits a cleaning run (POST /api/cleaning/start, also what a registry schedule calls). `trigger`
   * 'schedule' is only found on rows of the retired cleaning timer.
   * @param cleanCatalogue the run's orphan-deletion choice (null: follow CLEANING_CATALOGUE).
   * @throws ConflictError (409, code task_running) while a sweep, alignment or cleaning is queued or running.
   */
  async admitCleaning(id: string, cleanCatalogue: boolean | null, trigger: 'api' | 'schedule'): Promise<BatchTask> {
    return this.admission((m) => this.insertCleaning(m, id, cleanCatalogue, trigger));
  }

  private async insertCleaning(m: Queryable, id: string, cleanCatalogue: boolean | null, trigger: string): Promise<BatchTask> {
    const live = await queryRows<{ id: string; type: string; state: string }>(m, `SELECT id, type, state FROM catalogue.batch_task WHERE state IN ('NEW', 'RUNNING') ORDER BY created_at LIMIT 1`);
    if (live[0]) throw new ConflictError(`A ${live[0].type} task is ${live[0].state === 'NEW' ? 'queued' : 'running'} (${live[0].id}); cleaning starts when it is done`, 'task_running');
    const inserted = await queryRows<Row>(
      m,
      `INSERT INTO catalogue.batch_task (id, type, state, clean_catalogue, trigger, message) VALUES ($1, 'cleaning', 'NEW', $2, $3, 'Queued') RETURNING *`,
      [id, cleanCatalogue, trigger],
    );
    return toTask(inserted[0]!);
  }

  /**
   * Claims a task for this process with a lease of `ttlMs` (one transaction under the admission lock):
   * nothing while a RUNNING task holds a live lease (one task at a time across replicas); else a
   * RUNNING task whose lease expired or was handed back (takeover: `resumed`); else the oldest queued
   * task. The lease generation grows by one at every claim.
   */
  async claimNext(owner: string, ttlMs = DEFAULT_LEASE_TTL_MS): Promise<{ task: BatchTask; lease: Lease; resumed: boolean } | undefined> {
    return this.admission(async (m) => {
      const busy = await queryRows(m, `SELECT 1 FROM catalogue.batch_task WHERE state = 'RUNNING' AND lease_expires_at >= now() LIMIT 1`);
      if (busy.length) return undefined;
      const lease = `lease_owner = $1, lease_generation = lease_generation + 1, lease_expires_at = now() + make_interval(secs => $2), heartbeat_at = now(), runner = $1, seq = seq + 1`;
      const taken = await queryRows<Row>(
        m,
        `UPDATE catalogue.batch_task SET ${lease}, message = 'Resumed by another process'
          WHERE id = (SELECT id FROM catalogue.batch_task WHERE state = 'RUNNING' AND (lease_expires_at IS NULL OR lease_expires_at < now()) ORDER BY created_at, id LIMIT 1) RETURNING *`,
        [owner, ttlMs / 1000],
      );
      let resumed = true;
      let rows = taken;
      if (!rows[0]) {
        resumed = false;
        rows = await queryRows<Row>(
          m,
          `UPDATE catalogue.batch_task SET ${lease}, state = 'RUNNING', started_at = now(), message = 'Starting'
            WHERE id = (SELECT id FROM catalogue.batch_task WHERE state = 'NEW' ORDER BY created_at, id LIMIT 1) RETURNING *`,
          [owner, ttlMs / 1000],
        );
      }
      const task = rows[0] ? toTask(rows[0]) : undefined;
      return task ? { task, lease: { runId: task.id, owner, generation: task.leaseGeneration }, resumed } : undefined;
    });
  }

  /** TaskStore `claim`: {@link claimNext}. */
  async claim(owner: string, ttlMs = DEFAULT_LEASE_TTL_MS): Promise<LeasedRun<BatchTask> | undefined> {
    const claimed = await this.claimNext(owner, ttlMs);
    return claimed && { run: claimed.task, lease: claimed.lease };
  }

  /** TaskStore `save`: a fenced RUNNING snapshot (the row keeps no per-server counts or log: the board gets them from the run). */
  async save(lease: Lease, s: RunSnapshot): Promise<BatchTask> {
    return (await this.snapshot(lease, { progress: s.progress, message: s.message, details: s.details })).task;
  }

  /** TaskStore `finish`: the fenced final snapshot; clears the lease. */
  async finish(lease: Lease, state: 'SUCCESS' | 'FAIL', s: Omit<RunSnapshot, 'state'>): Promise<BatchTask> {
    return (await this.snapshot(lease, { state, progress: s.progress, message: s.message, details: s.details, finished: true })).task;
  }

  /** TaskStore `cancel`: {@link requestCancel} (its own messages; `message` is not used). Returns the REVOKED task. */
  async cancel(taskId: string): Promise<BatchTask | undefined> {
    return (await this.requestCancel(taskId)).revoked;
  }

  /** TaskStore `isCancelled`: {@link isCancelRequested}. */
  isCancelled(id: string): Promise<boolean> {
    return this.isCancelRequested(id);
  }

  /** Heartbeat of a running task's lease (LeaseStore): extends it, answers the cancel flag; LeaseLostError when no longer held. */
  async renew(lease: Lease, ttlMs = DEFAULT_LEASE_TTL_MS): Promise<{ cancelRequested: boolean }> {
    const rows = await queryRows<{ c: boolean }>(
      this.ds,
      `UPDATE catalogue.batch_task SET lease_expires_at = now() + make_interval(secs => $3), heartbeat_at = now()
        WHERE id = $1 AND lease_generation = $2 AND state = 'RUNNING' RETURNING cancel_requested AS c`,
      [lease.runId, lease.generation, ttlMs / 1000],
    );
    if (!rows[0]) throw new LeaseLostError(lease.runId);
    return { cancelRequested: rows[0].c };
  }

  /** Hands a running task's lease back (graceful shutdown, LeaseStore): any replica claims it at once and runs it again. */
  async release(lease: Lease): Promise<void> {
    await this.ds.query(
      `UPDATE catalogue.batch_task SET lease_owner = NULL, lease_expires_at = now() - interval '1 second', message = 'Handed back: the process running it stopped', seq = seq + 1
        WHERE id = $1 AND lease_generation = $2 AND state = 'RUNNING'`,
      [lease.runId, lease.generation],
    );
  }

  /** Whether a task is queued, or running with an expired lease (something to claim). */
  async hasClaimable(): Promise<boolean> {
    const rows = await queryRows(this.ds, `SELECT 1 FROM catalogue.batch_task WHERE state = 'NEW' OR (state = 'RUNNING' AND (lease_expires_at IS NULL OR lease_expires_at < now())) LIMIT 1`);
    return rows.length > 0;
  }

  /**
   * Writes a progress or final snapshot of a running task and bumps the row's seq (the task board keeps
   * the highest). Fenced by `lease`: throws LeaseLostError when the task is no longer RUNNING under that
   * lease generation (cancelled, or taken over). A final write (`finished`) clears the lease.
   * @param patch state (omit to keep), progress 0-100, one-line message, details (omit to keep), finished.
   */
  async snapshot(lease: Lease, patch: { state?: TaskState; progress: number; message: string; details?: Record<string, unknown>; finished?: boolean }): Promise<SnapshotWrite> {
    const rows = await queryRows<Row>(
      this.ds,
      `UPDATE catalogue.batch_task SET seq = seq + 1, state = COALESCE($2, state), progress = $3, message = $4, details = COALESCE($5::jsonb, details),
              heartbeat_at = now(), finished_at = CASE WHEN $6 THEN now() ELSE finished_at END,
              lease_owner = CASE WHEN $6 THEN NULL ELSE lease_owner END, lease_expires_at = CASE WHEN $6 THEN NULL ELSE lease_expires_at END
        WHERE id = $1 AND lease_generation = $7 AND state = 'RUNNING' RETURNING *`,
      [lease.runId, patch.state ?? null, patch.progress, patch.message.slice(0, 500), patch.details === undefined ? null : JSON.stringify(patch.details), patch.finished ?? false, lease.generation],
    );
    if (!rows[0]) throw new LeaseLostError(lease.runId);
    return { seq: rows[0].seq, task: toTask(rows[0]) };
  }

  /**
   * The last holder of a task that a cancel ended (REVOKED) records what it did (e.g. the matches kept)
   * on the row: allowed only under the lease generation it held. Returns the row, or undefined.
   */
  async amendRevoked(lease: Lease, details: Record<string, unknown>): Promise<BatchTask | undefined> {
    const rows = await queryRows<Row>(
      this.ds,
      `UPDATE catalogue.batch_task SET details = $3::jsonb, seq = seq + 1 WHERE id = $1 AND lease_generation = $2 AND state = 'REVOKED' RETURNING *`,
      [lease.runId, lease.generation, JSON.stringify(details)],
    );
    return rows[0] ? toTask(rows[0]) : undefined;
  }

  /**
   * Cancel of a task id (or one of its aliases): a queued or running task becomes REVOKED at once,
   * whatever its runner is doing (the runner stops at its next fenced write or heartbeat; work written
   * so far is kept). Finished tasks are left alone. `running` tells whether it was running.
   */
  async requestCancel(taskId: string): Promise<{ revoked?: BatchTask; running?: boolean }> {
    return this.admission(async (m) => {
      const rows = await queryRows<Row & { was_running: boolean }>(
        m,
        `UPDATE catalogue.batch_task t SET state = 'REVOKED', cancel_requested = true, seq = seq + 1, finished_at = now(), lease_owner = NULL, lease_expires_at = NULL,
                message = CASE WHEN t.state = 'NEW' THEN 'Cancelled before it started' ELSE 'Cancelled; work written so far is kept' END
           FROM (SELECT id, state AS old_state FROM catalogue.batch_task WHERE (id = $1 OR $1 = ANY(aliases)) AND state IN ('NEW', 'RUNNING') LIMIT 1 FOR UPDATE) o
          WHERE t.id = o.id RETURNING t.*, o.old_state = 'RUNNING' AS was_running`,
        [taskId],
      );
      return rows[0] ? { revoked: toTask(rows[0]), running: rows[0].was_running } : {};
    });
  }

  /** Whether a cancel was requested for the task (or it was ended). */
  async isCancelRequested(id: string): Promise<boolean> {
    const rows = await queryRows<{ c: boolean; state: string }>(this.ds, `SELECT cancel_requested AS c, state FROM catalogue.batch_task WHERE id = $1`, [id]);
    return rows[0] ? rows[0].c || rows[0].state === 'REVOKED' : false;
  }

  /** Whether any task is queued. */
  async hasQueued(): Promise<boolean> {
    const rows = await queryRows(this.ds, `SELECT 1 FROM catalogue.batch_task WHERE state = 'NEW' LIMIT 1`);
    return rows.length > 0;
  }

  /** The task with this id, or the task it was coalesced into. */
  async find(id: string): Promise<BatchTask | undefined> {
    const rows = await queryRows<Row>(this.ds, `SELECT * FROM catalogue.batch_task WHERE id = $1 OR $1 = ANY(aliases) ORDER BY (id = $1) DESC LIMIT 1`, [id]);
    return rows[0] ? toTask(rows[0]) : undefined;
  }

  /** Queued and running tasks, oldest first. */
  async live(): Promise<BatchTask[]> {
    return (await queryRows<Row>(this.ds, `SELECT * FROM catalogue.batch_task WHERE state IN ('NEW', 'RUNNING') ORDER BY created_at, id`)).map(toTask);
  }
}
