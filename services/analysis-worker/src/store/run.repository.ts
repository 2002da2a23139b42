import type { DataSource } from 'typeorm';
import type { ServerTaskCounts, TaskState } from '@polyphony/contracts';
import { ConflictError, mapUniqueViolation, queryRows } from '@polyphony/platform';

export type TrackOutcome = 'analyzed' | 'mapped_existing' | 'skipped_mapped' | 'failed' | 'excluded' | 'cancelled';

export interface RunRecord {
  id: string;
  state: TaskState;
  message: string;
  progress: number;
  servers: ServerTaskCounts[];
  log: string[];
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
  servers: ServerTaskCounts[];
  log: string[];
  seq: number;
  cancel_requested: boolean;
  started_at: Date;
  finished_at: Date | null;
}
const toRun = (r: Row): RunRecord => ({
  id: r.id,
  state: r.state,
  message: r.message,
  progress: r.progress,
  servers: r.servers,
  log: r.log,
  seq: r.seq,
  cancelRequested: r.cancel_requested,
  startedAt: r.started_at,
  finishedAt: r.finished_at ?? undefined,
});

/** Persistence of analysis runs, per-track outcomes and exclusions. */
export class RunRepository {
  constructor(private readonly ds: DataSource) {}

  /** Creates a run in NEW; ConflictError (409) when another run is live (unique partial index). */
  async create(id: string): Promise<RunRecord> {
    try {
      const rows: Row[] = await this.ds.query(`INSERT INTO analysis.runs (id, state, message) VALUES ($1, 'NEW', 'Queued') RETURNING *`, [id]);
      return toRun(rows[0]!);
    } catch (err) {
      try {
        mapUniqueViolation(err, 'An analysis is already running');
      } catch (mapped) {
        if (mapped instanceof ConflictError) throw new ConflictError('An analysis is already running', 'task_already_running');
        throw mapped;
      }
    }
  }

  async find(id: string): Promise<RunRecord | undefined> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
    const rows: Row[] = await this.ds.query(`SELECT * FROM analysis.runs WHERE id = $1`, [id]);
    return rows[0] && toRun(rows[0]);
  }

  async live(): Promise<RunRecord | undefined> {
    const rows: Row[] = await this.ds.query(`SELECT * FROM analysis.runs WHERE state IN ('NEW','RUNNING') LIMIT 1`);
    return rows[0] && toRun(rows[0]);
  }

  /** Saves the coordinator's view and bumps seq; returns the new seq and the run's start time. */
  async save(run: { id: string; state: TaskState; message: string; progress: number; servers: ServerTaskCounts[]; log: string[]; finished?: boolean }): Promise<{ seq: number; startedAt?: Date }> {
    const rows = await queryRows<{ seq: number; started_at: Date }>(this.ds,
      `UPDATE analysis.runs SET state = $2, message = $3, progress = $4, servers = $5::jsonb, log = $6::jsonb, seq = seq + 1, heartbeat_at = now(),
         finished_at = CASE WHEN $7 THEN now() ELSE finished_at END WHERE id = $1 RETURNING seq, started_at`,
      [run.id, run.state, run.message.slice(0, 500), run.progress, JSON.stringify(run.servers), JSON.stringify(run.log.slice(-100)), Boolean(run.finished)],
    );
    return { seq: rows[0]?.seq ?? 0, startedAt: rows[0]?.started_at };
  }

  async requestCancel(id: string): Promise<void> {
    await this.ds.query(`UPDATE analysis.runs SET cancel_requested = true WHERE id = $1`, [id]);
  }

  async isCancelled(id: string): Promise<boolean> {
    const rows: Array<{ c: boolean; state: string }> = await this.ds.query(`SELECT cancel_requested AS c, state FROM analysis.runs WHERE id = $1`, [id]);
    return !rows[0] || rows[0].c || rows[0].state === 'REVOKED';
  }

  /** Marks runs left live by a process that died (no heartbeat for `staleSeconds`) as FAIL. */
  async failStale(staleSeconds: number): Promise<number> {
    const rows = await queryRows(this.ds,
      `UPDATE analysis.runs SET state = 'FAIL', message = 'Coordinator stopped unexpectedly', finished_at = now(), seq = seq + 1
       WHERE state IN ('NEW','RUNNING') AND heartbeat_at < now() - make_interval(secs => $1) RETURNING id`,
      [staleSeconds],
    );
    return rows.length;
  }

  async setEnqueued(runId: string, serverId: string, enqueued: number): Promise<void> {
    await this.ds.query(
      `INSERT INTO analysis.run_servers (run_id, server_id, enqueued) VALUES ($1, $2, $3)
       ON CONFLICT (run_id, server_id) DO UPDATE SET enqueued = EXCLUDED.enqueued`,
      [runId, serverId, enqueued],
    );
  }

  /** Records a track's outcome once (a redelivered message does not count twice). Returns false when already recorded. */
  async recordOutcome(runId: string, serverId: string, providerId: string, outcome: TrackOutcome, itemId?: string, error?: string): Promise<boolean> {
    const rows: unknown[] = await this.ds.query(
      `INSERT INTO analysis.run_tracks (run_id, server_id, provider_id, outcome, item_id, error) VALUES ($1,$2,$3,$4,$5,$6)
       ON CONFLICT DO NOTHING RETURNING 1`,
      [runId, serverId, providerId, outcome, itemId ?? null, error?.slice(0, 1000) ?? null],
    );
    return rows.length > 0;
  }

  /** Outcome counts of one server in one run. */
  async outcomeCounts(runId: string, serverId: string): Promise<Record<TrackOutcome, number>> {
    const rows: Array<{ outcome: TrackOutcome; n: number }> = await this.ds.query(
      `SELECT outcome, count(*)::int AS n FROM analysis.run_tracks WHERE run_id = $1 AND server_id = $2 GROUP BY outcome`,
      [runId, serverId],
    );
    const out = { analyzed: 0, mapped_existing: 0, skipped_mapped: 0, failed: 0, excluded: 0, cancelled: 0 };
    for (const r of rows) out[r.outcome] = r.n;
    return out;
  }

  /** Exclusion of a provider file, if its metadata hash still matches. */
  async isExcluded(serverId: string, providerIds: string[], hashes: Map<string, string>): Promise<Set<string>> {
    if (providerIds.length === 0) return new Set();
    const rows: Array<{ provider_id: string; metadata_hash: string }> = await this.ds.query(
      `SELECT provider_id, metadata_hash FROM analysis.exclusions WHERE server_id = $1 AND provider_id = ANY($2)`,
      [serverId, providerIds],
    );
    return new Set(rows.filter((r) => hashes.get(r.provider_id) === r.metadata_hash).map((r) => r.provider_id));
  }

  async exclude(serverId: string, providerId: string, metadataHash: string, reason: string): Promise<void> {
    await this.ds.query(
      `INSERT INTO analysis.exclusions (server_id, provider_id, metadata_hash, reason) VALUES ($1,$2,$3,$4)
       ON CONFLICT (server_id, provider_id) DO UPDATE SET metadata_hash = EXCLUDED.metadata_hash, reason = EXCLUDED.reason, created_at = now()`,
      [serverId, providerId, metadataHash, reason.slice(0, 1000)],
    );
  }

  async exclusions(serverId?: string): Promise<Array<{ serverId: string; providerId: string; reason: string }>> {
    const rows: Array<{ server_id: string; provider_id: string; reason: string }> = await this.ds.query(
      `SELECT server_id, provider_id, reason FROM analysis.exclusions WHERE $1::text IS NULL OR server_id = $1 ORDER BY created_at DESC LIMIT 1000`,
      [serverId ?? null],
    );
    return rows.map((r) => ({ serverId: r.server_id, providerId: r.provider_id, reason: r.reason }));
  }
}
