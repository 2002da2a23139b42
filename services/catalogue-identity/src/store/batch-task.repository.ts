/**
 * The catalogue's batch-task queue (table catalogue.batch_task): sweeps of one server, alignments over
 * every server, cleaning runs. Admission, coalescing and cancel-running happen in one transaction under
 * the admission advisory lock, so two replicas receiving requests at once agree; execution is claimed by
 * the one process holding the runner lock (domain/batch-runner.ts).
 *
 * Rules (spec "Setup-time alignment" 7, "Cleaning", reference section 1.2 "one live main task"):
 * - a sweep request with `cancelRunning` (a server save) revokes every queued sweep/alignment and flags
 *   the running one for cancel (its matches are kept), then enqueues its alignment;
 * - a request whose work is already queued is coalesced: an alignment into a queued alignment, a
 *   sweep of server S into a queued alignment or a queued sweep of S; its task id becomes an alias that
 *   gets the same status on the task board;
 * - a cleaning is admitted only while no sweep, alignment or cleaning is queued or running (409).
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { SweepRequestedEvent, TaskState } from '@polyphony/contracts';
import { ConflictError, queryRows } from '@polyphony/platform';
import { BATCH_ADMISSION_LOCK, lockExclusive } from './locks';
import type { Queryable } from './sql';

/** Kinds of batch task this service runs. */
export type BatchTaskType = 'sweep' | 'alignment' | 'cleaning';

/** One row of catalogue.batch_task. */
export interface BatchTask {
  readonly id: string;
  readonly type: BatchTaskType;
  readonly state: TaskState;
  /** The server of a one-server sweep; null for alignments and cleanings. */
  readonly serverId: string | null;
  /** Prune stale mappings (manual sweeps, alignments). */
  readonly fullRefresh: boolean;
  /** Orphan deletion asked by the run (cleaning); null = follow the CLEANING_CATALOGUE setting. */
  readonly cleanCatalogue: boolean | null;
  /** What started it: 'api', 'save' (a server save), 'schedule'. */
  readonly trigger: string;
  /** Task ids of requests coalesced into this one. */
  readonly aliases: string[];
  readonly cancelRequested: boolean;
  readonly seq: number;
  readonly progress: number;
  readonly message: string;
  readonly details: Record<string, unknown>;
  readonly createdAt: Date;
  readonly startedAt: Date | null;
  readonly finishedAt: Date | null;
}

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
});

/** Outcome of a sweep request. */
export interface SweepAdmission {
  /** 'queued': a new task; 'coalesced': joined `task` as an alias; 'duplicate': this task id was seen before. */
  readonly outcome: 'queued' | 'coalesced' | 'duplicate';
  /** The task that will do the work. */
  readonly task: BatchTask;
  /** Queued sweeps/alignments revoked by `cancelRunning` (now REVOKED). */
  readonly revoked: BatchTask[];
  /** Running sweeps/alignments flagged for cancel by `cancelRunning`. */
  readonly cancelledRunning: string[];
}

/** A snapshot write: the row's new seq and what the task board needs. */
export interface SnapshotWrite {
  readonly seq: number;
  readonly task: BatchTask;
}

const SWEEP_TYPES = ['sweep', 'alignment'];

/** Persistence of the batch-task queue. */
export class BatchTaskRepository {
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
        cancelledRunning = (
          await queryRows<{ id: string }>(m, `UPDATE catalogue.batch_task SET cancel_requested = true WHERE type = ANY($1::text[]) AND state = 'RUNNING' RETURNING id`, [SWEEP_TYPES])
        ).map((r) => r.id);
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
   * Claims the oldest queued task for execution (RUNNING, started now, runner = `runner`). Call only
   * while holding the runner lock.
   */
  async claimNext(runner: string): Promise<BatchTask | undefined> {
    const rows = await queryRows<Row>(
      this.ds,
      `UPDATE catalogue.batch_task SET state = 'RUNNING', started_at = now(), heartbeat_at = now(), runner = $1, seq = seq + 1, message = 'Starting'
        WHERE id = (SELECT id FROM catalogue.batch_task WHERE state = 'NEW' ORDER BY created_at, id LIMIT 1) AND state = 'NEW' RETURNING *`,
      [runner],
    );
    return rows[0] ? toTask(rows[0]) : undefined;
  }

  /**
   * Tasks left RUNNING by a process that died become FAIL. Call only while holding the runner lock: then
   * no other process can be running them.
   */
  async failInterrupted(): Promise<BatchTask[]> {
    const rows = await queryRows<Row>(
      this.ds,
      `UPDATE catalogue.batch_task SET state = 'FAIL', message = 'Interrupted: the process running it stopped', seq = seq + 1, finished_at = now()
        WHERE state = 'RUNNING' RETURNING *`,
    );
    return rows.map(toTask);
  }

  /** Puts a running task back in the queue (graceful shutdown: it runs again after the restart). */
  async requeue(id: string): Promise<BatchTask | undefined> {
    const rows = await queryRows<Row>(
      this.ds,
      `UPDATE catalogue.batch_task SET state = 'NEW', started_at = NULL, runner = NULL, progress = 0, message = 'Queued again: the service restarted', seq = seq + 1
        WHERE id = $1 AND state = 'RUNNING' AND NOT cancel_requested RETURNING *`,
      [id],
    );
    return rows[0] ? toTask(rows[0]) : undefined;
  }

  /**
   * Writes a progress or final snapshot and bumps the row's seq (the task board keeps the highest).
   * @param patch state (omit to keep), progress 0-100, one-line message, details (omit to keep), finished.
   */
  async snapshot(id: string, patch: { state?: TaskState; progress: number; message: string; details?: Record<string, unknown>; finished?: boolean }): Promise<SnapshotWrite | undefined> {
    const rows = await queryRows<Row>(
      this.ds,
      `UPDATE catalogue.batch_task SET seq = seq + 1, state = COALESCE($2, state), progress = $3, message = $4, details = COALESCE($5::jsonb, details),
              heartbeat_at = now(), finished_at = CASE WHEN $6 THEN now() ELSE finished_at END
        WHERE id = $1 RETURNING *`,
      [id, patch.state ?? null, patch.progress, patch.message.slice(0, 500), patch.details === undefined ? null : JSON.stringify(patch.details), patch.finished ?? false],
    );
    return rows[0] ? { seq: rows[0].seq, task: toTask(rows[0]) } : undefined;
  }

  /**
   * Cancel of a task id (or one of its aliases): a queued task becomes REVOKED at once; a running one is
   * flagged (its runner stops at the next chunk, keeping its work). Finished tasks are left alone.
   */
  async requestCancel(taskId: string): Promise<{ revoked?: BatchTask; running?: BatchTask }> {
    return this.admission(async (m) => {
      const revoked = await queryRows<Row>(
        m,
        `UPDATE catalogue.batch_task SET state = 'REVOKED', message = 'Cancelled before it started', seq = seq + 1, finished_at = now()
          WHERE (id = $1 OR $1 = ANY(aliases)) AND state = 'NEW' RETURNING *`,
        [taskId],
      );
      if (revoked[0]) return { revoked: toTask(revoked[0]) };
      const running = await queryRows<Row>(m, `UPDATE catalogue.batch_task SET cancel_requested = true WHERE (id = $1 OR $1 = ANY(aliases)) AND state = 'RUNNING' RETURNING *`, [taskId]);
      return running[0] ? { running: toTask(running[0]) } : {};
    });
  }

  /** Whether a cancel was requested for the task. */
  async isCancelRequested(id: string): Promise<boolean> {
    const rows = await queryRows<{ c: boolean }>(this.ds, `SELECT cancel_requested AS c FROM catalogue.batch_task WHERE id = $1`, [id]);
    return rows[0]?.c ?? false;
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
