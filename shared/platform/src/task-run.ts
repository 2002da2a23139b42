import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { DataSource } from 'typeorm';
import type { ServerTaskCounts, TaskState, TaskType, TaskUpdatedEvent } from '@polyphony/contracts';
import { ConflictError, mapUniqueViolation } from './errors';
import { queryRows } from './db';
import { isTransientFault } from './faults';
import type { Logger } from './logger';

/**
 * The platform task-run module (issues 11 and 12): one model of a batch run, stored in the owning
 * service's schema, that is the single source of truth for both the owner's run table and the
 * registry's status board (the board only ever receives snapshots built from the row by
 * {@link toTaskEvent}).
 *
 * State machine: NEW -> RUNNING -> SUCCESS | FAIL | REVOKED (FAIL is shown to plugins as FAILURE,
 * see {@link pluginStatus}). Terminal states never change again; every transition bumps `seq`.
 *
 * Coordination that no single process owns: the process driving a run holds a lease
 * (`lease_owner`, `lease_expires_at`) renewed by heartbeat; `lease_generation` grows by one at every
 * acquisition and every write of the coordinator is fenced by it, so a coordinator that lost its
 * lease (paused, partitioned) can no longer change the run. When a lease expires any replica may take
 * the run over ({@link TaskRunStore.claimExpired}) and resume it from its durable per-item results.
 * Cancel ({@link TaskRunStore.cancel}) ends the run in the database directly, whatever state its
 * coordinator is in.
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

/**
 * Columns of a task-run table (the analysis service's `runs` uses exactly these). For a new owner:
 * `CREATE TABLE <schema>.<table> (${TASK_RUN_COLUMNS_SQL})` plus {@link taskRunIndexesSql}.
 */
export const TASK_RUN_COLUMNS_SQL = `
  id uuid PRIMARY KEY,
  state text NOT NULL CHECK (state IN ('NEW','RUNNING','SUCCESS','FAIL','REVOKED')),
  message text NOT NULL DEFAULT '',
  progress real NOT NULL DEFAULT 0,
  servers jsonb NOT NULL DEFAULT '[]'::jsonb,
  log jsonb NOT NULL DEFAULT '[]'::jsonb,
  details jsonb NOT NULL DEFAULT '{}'::jsonb,
  seq integer NOT NULL DEFAULT 0,
  cancel_requested boolean NOT NULL DEFAULT false,
  started_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  lease_owner text,
  lease_generation integer NOT NULL DEFAULT 0,
  lease_expires_at timestamptz`;

/** The one-live-run index (a second start is refused by the database: 409) and the lease scan index. */
export function taskRunIndexesSql(schema: string, table: string): string[] {
  return [
    `CREATE UNIQUE INDEX IF NOT EXISTS ${table}_one_live ON "${schema}".${table} ((true)) WHERE state IN ('NEW','RUNNING')`,
    `CREATE INDEX IF NOT EXISTS ${table}_lease ON "${schema}".${table} (lease_expires_at) WHERE state IN ('NEW','RUNNING')`,
  ];
}

/** Adds the lease and details columns to a task-run table created before this module (idempotent). */
export function taskRunUpgradeSql(schema: string, table: string): string[] {
  return [
    `ALTER TABLE "${schema}".${table} ADD COLUMN IF NOT EXISTS details jsonb NOT NULL DEFAULT '{}'::jsonb`,
    `ALTER TABLE "${schema}".${table} ADD COLUMN IF NOT EXISTS lease_owner text`,
    `ALTER TABLE "${schema}".${table} ADD COLUMN IF NOT EXISTS lease_generation integer NOT NULL DEFAULT 0`,
    `ALTER TABLE "${schema}".${table} ADD COLUMN IF NOT EXISTS lease_expires_at timestamptz`,
    ...taskRunIndexesSql(schema, table).slice(1),
  ];
}

/**
 * Plugin vocabulary for a task's `status` (Celery-style, as existing plugins read it: the Lyrion
 * plugin counts a task as active only when status is PENDING, STARTED or PROGRESS).
 */
export function pluginStatus(state: TaskState): 'PENDING' | 'PROGRESS' | 'SUCCESS' | 'FAILURE' | 'REVOKED' {
  switch (state) {
    case 'NEW':
      return 'PENDING';
    case 'RUNNING':
      return 'PROGRESS';
    case 'SUCCESS':
      return 'SUCCESS';
    case 'FAIL':
      return 'FAILURE';
    case 'REVOKED':
      return 'REVOKED';
  }
}

/** Whether a state is terminal. */
export function isTerminal(state: TaskState): boolean {
  return state === 'SUCCESS' || state === 'FAIL' || state === 'REVOKED';
}

/** One run as stored. */
export interface TaskRun {
  id: string;
  state: TaskState;
  message: string;
  /** 0-100 */
  progress: number;
  servers: ServerTaskCounts[];
  log: string[];
  details: Record<string, unknown>;
  seq: number;
  cancelRequested: boolean;
  startedAt: Date;
  finishedAt?: Date;
  heartbeatAt: Date;
  leaseOwner?: string;
  leaseGeneration: number;
  leaseExpiresAt?: Date;
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

const LIVE = `state IN ('NEW','RUNNING')`;

/** A process-unique lease owner name: host, pid and a random suffix (shown in logs and the row). */
export function leaseOwnerName(service: string): string {
  return `${service}@${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/**
 * Persistence of task runs in `<schema>.<table>` (columns {@link TASK_RUN_COLUMNS_SQL}). Every method
 * is one SQL statement; fenced methods take a {@link Lease} and throw {@link LeaseLostError} when the
 * row no longer carries that lease generation (or the run has ended).
 */
export class TaskRunStore {
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
  async create(owner: string, ttlMs = DEFAULT_LEASE_TTL_MS, id: string = randomUUID(), details: Record<string, unknown> = {}): Promise<{ run: TaskRun; lease: Lease }> {
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
  async claimExpired(owner: string, ttlMs = DEFAULT_LEASE_TTL_MS): Promise<{ run: TaskRun; lease: Lease } | undefined> {
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
      [lease.runId, lease.generation, s.message.slice(0, 500), clampProgress(s.progress), JSON.stringify(s.servers), s.log ? JSON.stringify(s.log.slice(-100)) : null, s.details ? JSON.stringify(s.details) : null],
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
      [lease.runId, lease.generation, state, s.message.slice(0, 500), clampProgress(s.progress), JSON.stringify(s.servers), s.log ? JSON.stringify(s.log.slice(-100)) : null, s.details ? JSON.stringify(s.details) : null],
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

function clampProgress(p: number): number {
  return Number.isFinite(p) ? Math.max(0, Math.min(100, p)) : 0;
}

/** The status-board snapshot of a run: the board never holds anything the row does not. */
export function toTaskEvent(run: TaskRun, type: TaskType, owner: TaskUpdatedEvent['owner']): TaskUpdatedEvent {
  return {
    taskId: run.id,
    type,
    owner,
    state: run.state,
    progress: run.progress,
    message: run.message.slice(0, 500),
    servers: run.servers,
    log: run.log.slice(-100),
    details: run.details,
    startedAt: run.startedAt.toISOString(),
    finishedAt: run.finishedAt?.toISOString(),
    seq: run.seq,
  };
}

/**
 * What a {@link LeaseKeeper} needs from a run table: {@link TaskRunStore} is one; a service whose run
 * table has more columns (the catalogue's batch queue) implements the same two fenced statements.
 */
export interface LeaseStore {
  /** Extends the lease; answers the cancel flag; throws {@link LeaseLostError} when the lease is no longer held. */
  renew(lease: Lease, ttlMs?: number): Promise<{ cancelRequested: boolean }>;
  /** Hands the lease back at once (another replica may claim the run). */
  release(lease: Lease): Promise<void>;
}

export interface LeaseKeeperOptions {
  ttlMs?: number;
  logger?: Logger;
  /** Called once when the lease is lost or the run was cancelled (the coordinator must stop). */
  onLost?: (reason: 'lost' | 'cancelled' | 'unreachable') => void;
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

  private lose(reason: 'lost' | 'cancelled' | 'unreachable'): void {
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

export interface TaskRunHostOptions {
  ttlMs?: number;
  /** How often this replica looks for runs whose lease expired (ms, default 5000). */
  scanMs?: number;
}

/**
 * Drives the runs of one task kind in one process: starts new runs, and every `scanMs` takes over a
 * live run whose lease expired (its coordinator died, lost the database for longer than the TTL, or
 * handed it back on SIGTERM). `execute` receives the run and a {@link LeaseKeeper} whose `signal`
 * aborts when it must stop; it must make every write fenced and be resumable from durable state.
 * `stop()` aborts running executions and releases their leases so another replica resumes at once.
 */
export class TaskRunHost {
  private readonly running = new Map<string, { keeper: LeaseKeeper; stop: AbortController; done: Promise<void> }>();
  private scanTimer?: NodeJS.Timeout;
  private stopped = false;
  private readonly ttlMs: number;
  private readonly scanMs: number;

  constructor(
    private readonly store: TaskRunStore,
    readonly owner: string,
    private readonly execute: (run: TaskRun, keeper: LeaseKeeper, stop: AbortSignal) => Promise<void>,
    private readonly logger: Logger,
    options: TaskRunHostOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
    this.scanMs = options.scanMs ?? 5000;
  }

  /** Creates a run with `details` (409 while one is live) and starts coordinating it here. */
  async startNew(details: Record<string, unknown> = {}): Promise<TaskRun> {
    const { run, lease } = await this.store.create(this.owner, this.ttlMs, undefined, details);
    this.launch(run, lease);
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

  private launch(run: TaskRun, lease: Lease): void {
    const keeper = new LeaseKeeper(this.store, lease, { ttlMs: this.ttlMs, logger: this.logger }).start();
    const stop = new AbortController();
    const done = this.execute(run, keeper, stop.signal)
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

  /** Resolves when no run is coordinated here (tests). */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.all([...this.running.values()].map((r) => r.done));
  }

  /** Ids of the runs coordinated by this process. */
  get active(): string[] {
    return [...this.running.keys()];
  }

  /** Graceful shutdown: no more takeovers, running coordinations stop and release their leases. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.scanTimer) clearTimeout(this.scanTimer);
    for (const r of this.running.values()) r.stop.abort(new Error('shutting down'));
    await Promise.all([...this.running.values()].map((r) => r.done));
  }
}
