import type { DataSource } from 'typeorm';
import type { ServerTaskCounts, TaskState } from '@polyphony/contracts';
import { ConflictError, queryRows } from '@polyphony/platform';

/** A clustering run as stored (playlist.clustering_runs). */
export interface ClusteringRunRecord {
  id: string;
  state: TaskState;
  message: string;
  /** 0-100 */
  progress: number;
  params: Record<string, unknown>;
  servers: ServerTaskCounts[];
  details: Record<string, unknown>;
  log: string[];
  /** Bumped on every save; the task board ignores snapshots with an older seq. */
  seq: number;
  cancelRequested: boolean;
  startedAt: Date;
  finishedAt?: Date;
}

interface Row {
  id: string;
  state: TaskState;
  message: string;
  progress: number;
  params: Record<string, unknown>;
  servers: ServerTaskCounts[];
  details: Record<string, unknown>;
  log: string[];
  seq: number;
  cancel_requested: boolean;
  started_at: Date;
  finished_at: Date | null;
}
const toRun = (r: Row): ClusteringRunRecord => ({
  id: r.id,
  state: r.state,
  message: r.message,
  progress: r.progress,
  params: r.params,
  servers: r.servers,
  details: r.details,
  log: r.log,
  seq: r.seq,
  cancelRequested: r.cancel_requested,
  startedAt: r.started_at,
  finishedAt: r.finished_at ?? undefined,
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Persistence of clustering runs: admission (one live run), progress snapshots, cancel flag. */
export class ClusteringRunRepository {
  constructor(private readonly ds: DataSource) {}

  /** Creates a run in NEW; ConflictError 409 `task_already_running` while another run is live (unique partial index). */
  async create(id: string, params: Record<string, unknown>): Promise<ClusteringRunRecord> {
    try {
      const rows: Row[] = await this.ds.query(`INSERT INTO playlist.clustering_runs (id, state, message, params) VALUES ($1, 'NEW', 'Queued', $2::jsonb) RETURNING *`, [id, JSON.stringify(params)]);
      return toRun(rows[0]!);
    } catch (err) {
      const code = (err as { code?: string; driverError?: { code?: string } }).code ?? (err as { driverError?: { code?: string } }).driverError?.code;
      if (code === '23505') throw new ConflictError('A clustering run is already in progress', 'task_already_running');
      throw err;
    }
  }

  async find(id: string): Promise<ClusteringRunRecord | undefined> {
    if (!UUID.test(id)) return undefined;
    const rows: Row[] = await this.ds.query(`SELECT * FROM playlist.clustering_runs WHERE id = $1`, [id]);
    return rows[0] && toRun(rows[0]);
  }

  /** The live run (NEW or RUNNING), if any. */
  async live(): Promise<ClusteringRunRecord | undefined> {
    const rows: Row[] = await this.ds.query(`SELECT * FROM playlist.clustering_runs WHERE state IN ('NEW','RUNNING') LIMIT 1`);
    return rows[0] && toRun(rows[0]);
  }

  /** Saves the coordinator's view, refreshes the heartbeat and bumps seq; returns the new seq and start time. */
  async save(run: {
    id: string;
    state: TaskState;
    message: string;
    progress: number;
    servers: ServerTaskCounts[];
    details: Record<string, unknown>;
    log: string[];
    finished?: boolean;
  }): Promise<{ seq: number; startedAt: Date }> {
    const rows = await queryRows<{ seq: number; started_at: Date }>(
      this.ds,
      `UPDATE playlist.clustering_runs SET state = $2, message = $3, progress = $4, servers = $5::jsonb, details = $6::jsonb, log = $7::jsonb,
         seq = seq + 1, heartbeat_at = now(), finished_at = CASE WHEN $8 THEN now() ELSE finished_at END
       WHERE id = $1 RETURNING seq, started_at`,
      [run.id, run.state, run.message.slice(0, 500), run.progress, JSON.stringify(run.servers), JSON.stringify(run.details), JSON.stringify(run.log.slice(-100)), Boolean(run.finished)],
    );
    const row = rows[0];
    if (!row) throw new Error(`clustering run ${run.id} vanished`);
    return { seq: row.seq, startedAt: row.started_at };
  }

  /** Sets the cancel flag; the run stops at its next check. Returns false for an unknown or finished run. */
  async requestCancel(id: string): Promise<boolean> {
    if (!UUID.test(id)) return false;
    const rows = await queryRows(this.ds, `UPDATE playlist.clustering_runs SET cancel_requested = true WHERE id = $1 AND state IN ('NEW','RUNNING') RETURNING id`, [id]);
    return rows.length > 0;
  }

  /** True when a cancel was requested (or the run is gone). */
  async isCancelled(id: string): Promise<boolean> {
    const rows: Array<{ c: boolean }> = await this.ds.query(`SELECT cancel_requested AS c FROM playlist.clustering_runs WHERE id = $1`, [id]);
    return !rows[0] || rows[0].c;
  }

  /** Marks runs left live by a process that died (no heartbeat for `staleSeconds`) as FAIL; returns how many. */
  async failStale(staleSeconds: number): Promise<number> {
    const rows = await queryRows(
      this.ds,
      `UPDATE playlist.clustering_runs SET state = 'FAIL', message = 'Coordinator stopped unexpectedly', finished_at = now(), seq = seq + 1
       WHERE state IN ('NEW','RUNNING') AND heartbeat_at < now() - make_interval(secs => $1) RETURNING id`,
      [staleSeconds],
    );
    return rows.length;
  }
}
