import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { DataSource } from 'typeorm';
import type { ServerTaskCounts, TaskState } from '@polyphony/contracts';
import { ConflictError, mapUniqueViolation } from '../errors';
import { queryRows } from '../db';
import { DEFAULT_LEASE_TTL_MS, LeaseLostError, type Lease, type LeaseStore } from './lease-keeper';
import { RUN_LOG_LINES, clampProgress, type TaskRun } from './state';

interface Row {
  id: string;
  state: TaskState;
  message: string;
  progress: number;
  servers: ServerTaskCounts[];
  log: string[];
  details: Record<string, unknown>;
  seq: number;
  cancel_requested: boolean;
  started_at: Date;
  finished_at: Date | null;
  heartbeat_at: Date;
  lease_owner: string | null;
  lease_generation: number;
  lease_expires_at: Date | null;
}

const toRun = (r: Row): TaskRun => ({
  id: r.id,
  state: r.state,
  message: r.message,
  progress: r.progress,
  servers: r.servers,
  log: r.log,
  details: r.details ?? {},
  seq: r.seq,
  cancelRequested: r.cancel_requested,
  startedAt: r.started_at,
  finishedAt: r.finished_at ?? undefined,
  heartbeatAt: r.heartbeat_at,
  leaseOwner: r.lease_owner ?? undefined,
  leaseGeneration: r.lease_generation,
  leaseExpiresAt: r.lease_expires_at ?? undefined,
});

/** What a coordinator writes on progress (fenced). */
export interface RunSnapshot {
  state?: Extract<TaskState, 'RUNNING'>;
  message: string;
  progress: number;
  servers: ServerTaskCounts[];
  log?: string[];
  details?: Record<string, unknown>;
}

/** A run and the lease its caller now holds on it. */
export interface LeasedRun<R = TaskRun> {
  run: R;
  lease: Lease;
}

/** What the task host needs to know of a stored run, whatever its table. */
export interface StoredRun {
  id: string;
  /** Grows by one at every claim (first run or takeover); fences the holder's writes. */
  leaseGeneration: number;
  details: Record<string, unknown>;
}

/**
 * The persistence a {@link TaskHost} drives (a port): {@link TaskRunStore} for a platform task-run table
 * (at most one live run); a service with its own run table (the catalogue's batch queue) implements
 * the same statements. Fenced methods throw {@link LeaseLostError} when the lease is no longer held.
 */
export interface TaskStore<R extends StoredRun = TaskRun> extends LeaseStore {
  /**
   * Claims the next run this process should coordinate, with a lease of `ttlMs`: a live run whose lease
   * expired or was handed back (a takeover), or (for a queue) the next queued one. Undefined when none.
   */
  claim(owner: string, ttlMs?: number): Promise<LeasedRun<R> | undefined>;
  /** Fenced RUNNING snapshot; returns the row after the write. */
  save(lease: Lease, s: RunSnapshot): Promise<R>;
  /** Fenced final write (SUCCESS or FAIL); clears the lease. */
  finish(lease: Lease, state: Extract<TaskState, 'SUCCESS' | 'FAIL'>, s: Omit<RunSnapshot, 'state'>): Promise<R>;
  /** Ends a live run as REVOKED at once, unfenced; undefined when it was not live. */
  cancel(id: string, message?: string): Promise<R | undefined>;
  /** True when the run was cancelled (or is gone). */
  isCancelled(id: string): Promise<boolean>;
  /** The run with this id. */
  find(id: string): Promise<R | undefined>;
}

const LIVE = `state IN ('NEW','RUNNING')`;

/** A process-unique lease owner name: host, pid and a random suffix (shown in logs and the row). */
export function leaseOwnerName(service: string): string {
  return `${service}@${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/**
 * Persistence of task runs in `<schema>.<table>` (columns from `schema.ts`; at most one live run per
 * table). Every method is one SQL statement; fenced methods take a {@link Lease} and throw
 * {@link LeaseLostError} when the row no longer carries that lease generation (or the run has ended).
 */
export class TaskRunStore implements TaskStore<TaskRun> {
  private readonly t: string;

  constructor(
    private readonly ds: DataSource,
    schema: string,
    table = 'runs',
    /** Message of the 409 when a run is live. */
    private readonly conflictMessage = 'A task of this kind is already running',
  ) {
    this.t = `"${schema}".${table}`;
  }

  /**
   * Creates a run in NEW with its lease held by `owner` (generation 1). `details` are stored with it
   * (e.g. the run's parameters, which a replica taking the run over reads back).
   * @throws ConflictError (409, code task_already_running) while another run is live
   */
  async create(owner: string, ttlMs = DEFAULT_LEASE_TTL_MS, id: string = randomUUID(), details: Record<string, unknown> = {}): Promise<LeasedRun> {
    try {
      const rows: Row[] = await this.ds.query(
        `INSERT INTO ${this.t} (id, state, message, details, lease_owner, lease_generation, lease_expires_at)
         VALUES ($1, 'NEW', 'Queued', $4::jsonb, $2, 1, now() + make_interval(secs => $3)) RETURNING *`,
        [id, owner, ttlMs / 1000, JSON.stringify(details)],
      );
      const run = toRun(rows[0]!);
      return { run, lease: { runId: run.id, owner, generation: run.leaseGeneration } };
    } catch (err) {
      try {
        mapUniqueViolation(err, this.conflictMessage);
      } catch (mapped) {
        if (mapped instanceof ConflictError) throw new ConflictError(this.conflictMessage, 'task_already_running');
        throw mapped;
      }
    }
  }

  /** The run with this id (undefined for an unknown or malformed id). */
  async find(id: string): Promise<TaskRun | undefined> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
    const rows: Row[] = await this.ds.query(`SELECT * FROM ${this.t} WHERE id = $1`, [id]);
    return rows[0] && toRun(rows[0]);
  }

  /** The live run (NEW or RUNNING), if any. */
  async live(): Promise<TaskRun | undefined> {
    const rows: Row[] = await this.ds.query(`SELECT * FROM ${this.t} WHERE ${LIVE} LIMIT 1`);
    return rows[0] && toRun(rows[0]);
  }

  /**
   * Takes over a live run whose lease expired (or was released): bumps the lease generation, so the
   * previous holder's fenced writes fail from now on. Returns the run and the new lease, or undefined.
   */
  async claimExpired(owner: string, ttlMs = DEFAULT_LEASE_TTL_MS): Promise<LeasedRun | undefined> {
    const rows = await queryRows<Row>(this.ds,
      `UPDATE ${this.t} SET lease_owner = $1, lease_generation = lease_generation + 1,
              lease_expires_at = now() + make_interval(secs => $2), heartbeat_at = now()
        WHERE id = (SELECT id FROM ${this.t} WHERE ${LIVE} AND (lease_expires_at IS NULL OR lease_expires_at < now()) LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING *`,
      [owner, ttlMs / 1000],
    );
    if (!rows[0]) return undefined;
    const run = toRun(rows[0]);
    return { run, lease: { runId: run.id, owner, generation: run.leaseGeneration } };
  }

  /** {@link TaskStore.claim}: a live run whose lease expired ({@link claimExpired}); a run table has no queue. */
  claim(owner: string, ttlMs = DEFAULT_LEASE_TTL_MS): Promise<LeasedRun | undefined> {
    return this.claimExpired(owner, ttlMs);
  }

  /**
   * Heartbeat: extends the lease. Returns the run's cancel flag, or throws {@link LeaseLostError} when
   * the lease is no longer ours (taken over, or the run ended, e.g. cancelled).
   */
  async renew(lease: Lease, ttlMs = DEFAULT_LEASE_TTL_MS): Promise<{ cancelRequested: boolean }> {
    const rows = await queryRows<{ cancel_requested: boolean }>(this.ds,
      `UPDATE ${this.t} SET lease_expires_at = now() + make_interval(secs => $3), heartbeat_at = now()
        WHERE id = $1 AND lease_generation = $2 AND ${LIVE} RETURNING cancel_requested`,
      [lease.runId, lease.generation, ttlMs / 1000],
    );
    if (!rows[0]) throw new LeaseLostError(lease.runId);
    return { cancelRequested: rows[0].cancel_requested };
  }

  /** Gives the lease up at once (graceful shutdown): another replica may claim the run immediately. */
  async release(lease: Lease): Promise<void> {
    await this.ds.query(`UPDATE ${this.t} SET lease_owner = NULL, lease_expires_at = now() - interval '1 second' WHERE id = $1 AND lease_generation = $2 AND ${LIVE}`, [lease.runId, lease.generation]);
  }

  /** Fenced progress write (state RUNNING); returns the new seq and the run. */
  async save(lease: Lease, s: RunSnapshot): Promise<TaskRun> {
    const rows = await queryRows<Row>(this.ds,
      `UPDATE ${this.t} SET state = 'RUNNING', message = $3, progress = $4, servers = $5::jsonb,
              log = COALESCE($6::jsonb, log), details = COALESCE($7::jsonb, details), seq = seq + 1, heartbeat_at = now()
        WHERE id = $1 AND lease_generation = $2 AND ${LIVE} RETURNING *`,
      [lease.runId, lease.generation, s.message.slice(0, 500), clampProgress(s.progress), JSON.stringify(s.servers), s.log ? JSON.stringify(s.log.slice(-RUN_LOG_LINES)) : null, s.details ? JSON.stringify(s.details) : null],
    );
    if (!rows[0]) throw new LeaseLostError(lease.runId);
    return toRun(rows[0]);
  }

  /** Fenced final write: SUCCESS or FAIL (REVOKED goes through {@link cancel}); clears the lease. */
  async finish(lease: Lease, state: Extract<TaskState, 'SUCCESS' | 'FAIL'>, s: Omit<RunSnapshot, 'state'>): Promise<TaskRun> {
    const rows = await queryRows<Row>(this.ds,
      `UPDATE ${this.t} SET state = $3, message = $4, progress = $5, servers = $6::jsonb,
              log = COALESCE($7::jsonb, log), details = COALESCE($8::jsonb, details), seq = seq + 1, finished_at = now(),
              lease_owner = NULL, lease_expires_at = NULL
        WHERE id = $1 AND lease_generation = $2 AND ${LIVE} RETURNING *`,
      [lease.runId, lease.generation, state, s.message.slice(0, 500), clampProgress(s.progress), JSON.stringify(s.servers), s.log ? JSON.stringify(s.log.slice(-RUN_LOG_LINES)) : null, s.details ? JSON.stringify(s.details) : null],
    );
    if (!rows[0]) throw new LeaseLostError(lease.runId);
    return toRun(rows[0]);
  }

  /**
   * Ends a live run as REVOKED at once, unfenced: works whether its coordinator is alive, stuck or
   * gone (the coordinator notices at its next fenced write or heartbeat and stops). Work done so far
   * is kept. Returns the ended run, or undefined when it was not live.
   */
  async cancel(id: string, message = 'Cancelled; work done so far is kept'): Promise<TaskRun | undefined> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
    const rows = await queryRows<Row>(this.ds,
      `UPDATE ${this.t} SET state = 'REVOKED', cancel_requested = true, message = $2, seq = seq + 1, finished_at = now(),
              lease_owner = NULL, lease_expires_at = NULL
        WHERE id = $1 AND ${LIVE} RETURNING *`,
      [id, message],
    );
    return rows[0] && toRun(rows[0]);
  }

  /** True when the run was cancelled or is no longer live. */
  async isCancelled(id: string): Promise<boolean> {
    const rows: Array<{ c: boolean; state: TaskState }> = await this.ds.query(`SELECT cancel_requested AS c, state FROM ${this.t} WHERE id = $1`, [id]);
    return !rows[0] || rows[0].c || rows[0].state === 'REVOKED';
  }
}
