import type { DataSource } from 'typeorm';
import type { TaskUpdatedEvent } from '@polyphony/contracts';
import type { TaskBoardStore, TaskRecord } from '../domain/ports';

interface Row {
  id: string;
  type: TaskUpdatedEvent['type'];
  owner: TaskUpdatedEvent['owner'];
  state: TaskUpdatedEvent['state'];
  progress: number;
  message: string;
  servers: TaskUpdatedEvent['servers'];
  log: string[];
  details: Record<string, unknown>;
  seq: number;
  started_at: Date | null;
  finished_at: Date | null;
  created_at: Date;
  cancel_requested_at: Date | null;
}
const toTask = (r: Row): TaskRecord => ({
  taskId: r.id,
  type: r.type,
  owner: r.owner,
  state: r.state,
  progress: r.progress,
  message: r.message,
  servers: r.servers,
  log: r.log,
  details: r.details,
  seq: r.seq,
  startedAt: r.started_at ?? undefined,
  finishedAt: r.finished_at ?? undefined,
  createdAt: r.created_at,
  cancelRequestedAt: r.cancel_requested_at ?? undefined,
});

/** The task board: latest snapshot of every batch task, fed by task.status.updated events. */
export class TaskRepository implements TaskBoardStore {
  constructor(private readonly ds: DataSource) {}

  /** Upserts a snapshot unless a newer one (higher seq) is already stored. */
  async upsert(e: TaskUpdatedEvent): Promise<void> {
    await this.ds.query(
      `INSERT INTO registry.tasks (id, type, owner, state, progress, message, servers, log, details, seq, started_at, finished_at, updated_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7::jsonb,$8::jsonb,$9::jsonb,$10,$11,$12, now())
       ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, progress = EXCLUDED.progress, message = EXCLUDED.message,
         servers = EXCLUDED.servers, log = EXCLUDED.log, details = EXCLUDED.details, seq = EXCLUDED.seq,
         started_at = COALESCE(registry.tasks.started_at, EXCLUDED.started_at), finished_at = EXCLUDED.finished_at, updated_at = now()
       WHERE registry.tasks.seq < EXCLUDED.seq`,
      [e.taskId, e.type, e.owner, e.state, e.progress, e.message, JSON.stringify(e.servers), JSON.stringify(e.log), JSON.stringify(e.details), e.seq, e.startedAt ?? null, e.finishedAt ?? null],
    );
  }

  async find(id: string): Promise<TaskRecord | undefined> {
    const rows: Row[] = await this.ds.query(`SELECT * FROM registry.tasks WHERE id = $1`, [id]);
    return rows[0] && toTask(rows[0]);
  }

  async active(): Promise<TaskRecord[]> {
    const rows: Row[] = await this.ds.query(`SELECT * FROM registry.tasks WHERE state IN ('NEW','RUNNING') ORDER BY created_at DESC`);
    return rows.map(toTask);
  }

  /** Task history, newest first, optionally of one type prefix and one state. */
  async history(f: { kind?: string; state?: string; limit: number }): Promise<TaskRecord[]> {
    const rows: Row[] = await this.ds.query(
      `SELECT * FROM registry.tasks WHERE ($1::text IS NULL OR type LIKE $1 || '%') AND ($2::text IS NULL OR state = $2) ORDER BY created_at DESC LIMIT $3`,
      [f.kind ?? null, f.state ?? null, f.limit],
    );
    return rows.map(toTask);
  }

  async last(): Promise<TaskRecord | undefined> {
    const rows: Row[] = await this.ds.query(`SELECT * FROM registry.tasks ORDER BY created_at DESC LIMIT 1`);
    return rows[0] && toTask(rows[0]);
  }

  /** The most recent task of every type (dashboard). */
  async lastPerType(): Promise<TaskRecord[]> {
    const rows: Row[] = await this.ds.query(`SELECT DISTINCT ON (type) * FROM registry.tasks ORDER BY type, created_at DESC`);
    return rows.map(toTask);
  }

  /**
   * Records that a user asked to cancel a live task. The task's state is not touched: only its owning
   * service writes it (it ends the run and its snapshot brings REVOKED); the board shows the request
   * meanwhile ({@link toStatusDto}).
   */
  async requestCancel(id: string): Promise<void> {
    await this.ds.query(`UPDATE registry.tasks SET cancel_requested_at = COALESCE(cancel_requested_at, now()), updated_at = now() WHERE id = $1 AND state IN ('NEW','RUNNING')`, [id]);
  }
}
