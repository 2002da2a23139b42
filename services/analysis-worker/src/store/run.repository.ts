import type { DataSource } from 'typeorm';
import type { BrowseUnanalyzableRowDto, UnanalyzableReasonCode } from '@polyphony/contracts';
import { TaskRunStore, queryRows, type Lease, type TaskRun } from '@polyphony/platform';
import type { AnalysisRunStore, ExcludedFile, OutcomeCounts, RunServerRow, TrackClaim, TrackOutcome } from '../domain/ports';

/** `q` as an ILIKE pattern matching it anywhere (`%`, `_` and `\` taken literally). */
function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export type { OutcomeCounts, RunServerRow, TrackClaim, TrackOutcome } from '../domain/ports';

export type RunRecord = TaskRun;

/**
 * Persistence of analysis runs (the platform task-run table `analysis.runs`), their durable
 * per-server state, per-track outcomes (one row per run, server and provider file, so a redelivered
 * message never counts twice) and exclusions.
 */
export class RunRepository implements AnalysisRunStore {
  /** The platform task-run store of `analysis.runs`. */
  readonly tasks: TaskRunStore;

  constructor(private readonly ds: DataSource) {
    this.tasks = new TaskRunStore(ds, 'analysis', 'runs', 'An analysis is already running');
  }

  find(id: string): Promise<RunRecord | undefined> {
    return this.tasks.find(id);
  }

  /**
   * True when the run was cancelled or is no longer live. A change batch (change detection: track rows under a batch
   * id, no run row) is never cancelled; an id with neither is (the platform's rule for an unknown run).
   */
  async isCancelled(id: string): Promise<boolean> {
    const batch: unknown[] = await this.ds.query(
      `SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM analysis.runs WHERE id = $1) AND EXISTS (SELECT 1 FROM analysis.run_tracks WHERE run_id = $1)`,
      [id],
    );
    if (batch.length > 0) return false;
    return this.tasks.isCancelled(id);
  }

  /** Database clock (the index compares its build start with it). */
  async now(): Promise<Date> {
    const rows: Array<{ now: Date }> = await this.ds.query('SELECT now() AS now');
    return rows[0]!.now;
  }

  /** Creates the per-server rows once (a takeover finds them and keeps the original order). */
  async initServers(lease: Lease, servers: Array<{ id: string; name: string }>): Promise<void> {
    await this.ds.query(
      `INSERT INTO analysis.run_servers (run_id, server_id, server_name, position)
       SELECT $1, u.id, u.name, u.pos FROM unnest($2::text[], $3::text[], $4::int[]) AS u(id, name, pos)
        WHERE EXISTS (SELECT 1 FROM analysis.runs r WHERE r.id = $1 AND r.lease_generation = $5)
       ON CONFLICT (run_id, server_id) DO NOTHING`,
      [lease.runId, servers.map((s) => s.id), servers.map((s) => s.name), servers.map((_, i) => i), lease.generation],
    );
  }

  /** The per-server rows of a run, in analysis order. */
  async servers(runId: string): Promise<RunServerRow[]> {
    const rows: Array<{ server_id: string; server_name: string | null; position: number; status: RunServerRow['status']; seen: number; skipped_mapped: number; excluded: number; enumerated: boolean; failures: number; error: string | null }> =
      await this.ds.query(`SELECT * FROM analysis.run_servers WHERE run_id = $1 ORDER BY position, server_id`, [runId]);
    return rows.map((r) => ({
      serverId: r.server_id,
      serverName: r.server_name ?? r.server_id,
      position: r.position,
      status: r.status,
      seen: r.seen,
      skippedMapped: r.skipped_mapped,
      excluded: r.excluded,
      enumerated: r.enumerated,
      failures: r.failures,
      error: r.error ?? undefined,
    }));
  }

  /** Updates a server row (fenced by the run's lease generation). */
  async updateServer(lease: Lease, serverId: string, patch: Partial<Pick<RunServerRow, 'status' | 'seen' | 'skippedMapped' | 'excluded' | 'enumerated' | 'failures' | 'error'>>): Promise<void> {
    await this.ds.query(
      `UPDATE analysis.run_servers s SET status = COALESCE($3, s.status), seen = COALESCE($4, s.seen), skipped_mapped = COALESCE($5, s.skipped_mapped),
              excluded = COALESCE($6, s.excluded), enumerated = COALESCE($7, s.enumerated), failures = COALESCE($8, s.failures), error = COALESCE($9, s.error)
        WHERE s.run_id = $1 AND s.server_id = $2 AND EXISTS (SELECT 1 FROM analysis.runs r WHERE r.id = $1 AND r.lease_generation = $10)`,
      [lease.runId, serverId, patch.status ?? null, patch.seen ?? null, patch.skippedMapped ?? null, patch.excluded ?? null, patch.enumerated ?? null, patch.failures ?? null, patch.error?.slice(0, 300) ?? null, lease.generation],
    );
  }

  /** Provider ids among `providerIds` that already have a row (queued or finished) in this run. */
  async inRun(runId: string, serverId: string, providerIds: string[]): Promise<Set<string>> {
    if (providerIds.length === 0) return new Set();
    const rows: Array<{ provider_id: string }> = await this.ds.query(
      `SELECT provider_id FROM analysis.run_tracks WHERE run_id = $1 AND server_id = $2 AND provider_id = ANY($3)`,
      [runId, serverId, providerIds],
    );
    return new Set(rows.map((r) => r.provider_id));
  }

  /** Records tracks as queued (not yet published); returns the provider ids that were new. */
  async enqueue(runId: string, serverId: string, providerIds: string[]): Promise<string[]> {
    if (providerIds.length === 0) return [];
    const rows: Array<{ provider_id: string }> = await this.ds.query(
      `INSERT INTO analysis.run_tracks (run_id, server_id, provider_id, outcome, published)
       SELECT $1, $2, p, 'queued', false FROM unnest($3::text[]) AS p ON CONFLICT DO NOTHING RETURNING provider_id`,
      [runId, serverId, providerIds],
    );
    return rows.map((r) => r.provider_id);
  }

  /** Marks queued tracks as published (the broker confirmed their messages). */
  async markPublished(runId: string, serverId: string, providerIds: string[]): Promise<void> {
    if (providerIds.length === 0) return;
    await this.ds.query(`UPDATE analysis.run_tracks SET published = true WHERE run_id = $1 AND server_id = $2 AND provider_id = ANY($3)`, [runId, serverId, providerIds]);
  }

  /** Queued tracks whose message was never confirmed (a coordinator stopped between insert and publish). */
  async unpublished(runId: string, serverId: string, limit: number): Promise<string[]> {
    const rows: Array<{ provider_id: string }> = await this.ds.query(
      `SELECT provider_id FROM analysis.run_tracks WHERE run_id = $1 AND server_id = $2 AND outcome = 'queued' AND NOT published LIMIT $3`,
      [runId, serverId, limit],
    );
    return rows.map((r) => r.provider_id);
  }

  /**
   * Records a track's final outcome once: a queued row becomes final, an absent row is inserted, a
   * final row is never changed (a redelivered message does not count twice). Returns false when a
   * final outcome was already recorded.
   */
  async recordOutcome(runId: string, serverId: string, providerId: string, outcome: TrackOutcome, itemId?: string, error?: string): Promise<boolean> {
    const rows: unknown[] = await this.ds.query(
      `INSERT INTO analysis.run_tracks AS t (run_id, server_id, provider_id, outcome, item_id, error) VALUES ($1,$2,$3,$4,$5,$6)
       ON CONFLICT (run_id, server_id, provider_id) DO UPDATE SET outcome = EXCLUDED.outcome, item_id = EXCLUDED.item_id, error = EXCLUDED.error, finished_at = now()
        WHERE t.outcome = 'queued' RETURNING 1`,
      [runId, serverId, providerId, outcome, itemId ?? null, error?.slice(0, 1000) ?? null],
    );
    return rows.length > 0;
  }

  /**
   * Claims a queued track for one processing attempt (`owner`, unique per attempt) for `leaseSeconds`
   * (database clock). Succeeds when the row is queued and unclaimed, claimed by `owner`, or its claim
   * lapsed. Returns `claimed`; `final` with the recorded outcome (nothing left to do); `busy` with the
   * live claim's expiry (another attempt is working on it); or `absent` (no row: a message from before
   * run rows existed, processed without a claim). Concurrent claims serialise on the row lock; the loser
   * re-checks the claim after the winner commits and gets `busy`.
   */
  async claimTrack(runId: string, serverId: string, providerId: string, owner: string, leaseSeconds: number): Promise<TrackClaim> {
    const claimed = await queryRows(
      this.ds,
      `UPDATE analysis.run_tracks SET claimed_by = $4, claim_expires_at = now() + make_interval(secs => $5)
        WHERE run_id = $1 AND server_id = $2 AND provider_id = $3 AND outcome = 'queued'
          AND (claimed_by IS NULL OR claimed_by = $4 OR claim_expires_at < now()) RETURNING 1`,
      [runId, serverId, providerId, owner, leaseSeconds],
    );
    if (claimed.length > 0) return { state: 'claimed' };
    const rows: Array<{ outcome: string; claim_expires_at: Date | null }> = await this.ds.query(
      `SELECT outcome, claim_expires_at FROM analysis.run_tracks WHERE run_id = $1 AND server_id = $2 AND provider_id = $3`,
      [runId, serverId, providerId],
    );
    const row = rows[0];
    if (!row) return { state: 'absent' };
    if (row.outcome !== 'queued') return { state: 'final', outcome: row.outcome as TrackOutcome };
    return { state: 'busy', until: row.claim_expires_at ?? new Date() };
  }

  /** Extends `owner`'s live claim by `leaseSeconds` from now; false when the claim is no longer `owner`'s or the track is final. */
  async renewClaim(runId: string, serverId: string, providerId: string, owner: string, leaseSeconds: number): Promise<boolean> {
    const rows = await queryRows(
      this.ds,
      `UPDATE analysis.run_tracks SET claim_expires_at = now() + make_interval(secs => $5)
        WHERE run_id = $1 AND server_id = $2 AND provider_id = $3 AND claimed_by = $4 AND outcome = 'queued' RETURNING 1`,
      [runId, serverId, providerId, owner, leaseSeconds],
    );
    return rows.length > 0;
  }

  /** Gives `owner`'s claim back (the attempt ended without an outcome: the next delivery may start at once). */
  async releaseClaim(runId: string, serverId: string, providerId: string, owner: string): Promise<void> {
    await this.ds.query(
      `UPDATE analysis.run_tracks SET claimed_by = NULL, claim_expires_at = NULL WHERE run_id = $1 AND server_id = $2 AND provider_id = $3 AND claimed_by = $4`,
      [runId, serverId, providerId, owner],
    );
  }


  /** Outcome counts per server of one run. */
  async outcomeCounts(runId: string): Promise<Map<string, OutcomeCounts>> {
    const rows: Array<{ server_id: string; outcome: TrackOutcome | 'queued'; n: number }> = await this.ds.query(
      `SELECT server_id, outcome, count(*)::int AS n FROM analysis.run_tracks WHERE run_id = $1 GROUP BY server_id, outcome`,
      [runId],
    );
    const out = new Map<string, OutcomeCounts>();
    for (const r of rows) {
      const c = out.get(r.server_id) ?? { analyzed: 0, mapped_existing: 0, skipped_mapped: 0, retagged: 0, fingerprinted: 0, failed: 0, excluded: 0, cancelled: 0, queued: 0 };
      c[r.outcome] = r.n;
      out.set(r.server_id, c);
    }
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

  async exclude(serverId: string, file: ExcludedFile, metadataHash: string, code: UnanalyzableReasonCode, reason: string): Promise<void> {
    await this.ds.query(
      `INSERT INTO analysis.exclusions (server_id, provider_id, metadata_hash, reason, reason_code, title, artist, album, path, duration_seconds)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)
       ON CONFLICT (server_id, provider_id) DO UPDATE SET metadata_hash = EXCLUDED.metadata_hash, reason = EXCLUDED.reason, reason_code = EXCLUDED.reason_code,
         title = EXCLUDED.title, artist = EXCLUDED.artist, album = EXCLUDED.album, path = EXCLUDED.path, duration_seconds = EXCLUDED.duration_seconds, created_at = now()`,
      [serverId, file.providerId, metadataHash, reason.slice(0, 1000), code, file.title.slice(0, 1000), file.artist.slice(0, 1000), file.album?.slice(0, 1000) ?? null, file.path?.slice(0, 4000) ?? null, file.durationSeconds ?? null],
    );
  }

  /** WHERE of the browse queries: $1 = server id or null, $2 = ILIKE pattern or null. */
  private static readonly UNANALYZABLE_WHERE = `($1::text IS NULL OR server_id = $1) AND ($2::text IS NULL OR title ILIKE $2 OR artist ILIKE $2 OR album ILIKE $2 OR path ILIKE $2 OR provider_id ILIKE $2)`;

  async unanalyzable(serverId: string | undefined, q: string | undefined, limit: number, offset: number): Promise<Array<Omit<BrowseUnanalyzableRowDto, 'server' | 'reason'>>> {
    const rows: Array<{ server_id: string; provider_id: string; title: string | null; artist: string | null; album: string | null; path: string | null; duration_seconds: number | null; reason_code: UnanalyzableReasonCode; reason: string; created_at: Date }> = await this.ds.query(
      `SELECT server_id, provider_id, title, artist, album, path, duration_seconds, reason_code, reason, created_at FROM analysis.exclusions
        WHERE ${RunRepository.UNANALYZABLE_WHERE} ORDER BY created_at DESC, server_id, provider_id LIMIT ${Math.trunc(limit)} OFFSET ${Math.trunc(offset)}`,
      [serverId ?? null, q ? likePattern(q) : null],
    );
    return rows.map((r) => ({
      item_id: r.provider_id,
      server_id: r.server_id,
      title: r.title,
      author: r.artist,
      album: r.album,
      path: r.path,
      duration: r.duration_seconds === null ? null : Number(r.duration_seconds),
      reason_code: r.reason_code,
      detail: r.reason,
      excluded_at: new Date(r.created_at).toISOString(),
    }));
  }

  async countUnanalyzable(serverId: string | undefined, q: string | undefined, cap: number): Promise<number> {
    const [r] = await this.ds.query(`SELECT count(*)::int AS n FROM (SELECT 1 FROM analysis.exclusions WHERE ${RunRepository.UNANALYZABLE_WHERE} LIMIT ${Math.trunc(cap) + 1}) x`, [serverId ?? null, q ? likePattern(q) : null]);
    return Number(r?.n ?? 0);
  }

  async exclusions(serverId?: string): Promise<Array<{ serverId: string; providerId: string; reason: string }>> {
    const rows: Array<{ server_id: string; provider_id: string; reason: string }> = await this.ds.query(
      `SELECT server_id, provider_id, reason FROM analysis.exclusions WHERE $1::text IS NULL OR server_id = $1 ORDER BY created_at DESC LIMIT 1000`,
      [serverId ?? null],
    );
    return rows.map((r) => ({ serverId: r.server_id, providerId: r.provider_id, reason: r.reason }));
  }

  /**
   * The analysis numbers of the dashboard (GET /internal/analysis/stats): files excluded as undecodable or
   * unreadable, tracks of the live run still queued, and tracks with a live worker claim right now.
   */
  async stats(): Promise<{ unanalyzable_tracks: number; queue_backlog: number; active: number }> {
    const [r] = await this.ds.query(
      `SELECT (SELECT count(*) FROM analysis.exclusions)::int AS unanalyzable_tracks,
              (SELECT count(*) FROM analysis.run_tracks t JOIN analysis.runs r ON r.id = t.run_id WHERE r.state IN ('NEW', 'RUNNING') AND t.outcome = 'queued')::int AS queue_backlog,
              (SELECT count(*) FROM analysis.run_tracks t JOIN analysis.runs r ON r.id = t.run_id
                WHERE r.state IN ('NEW', 'RUNNING') AND t.outcome = 'queued' AND t.claimed_by IS NOT NULL AND t.claim_expires_at > now())::int AS active`,
    );
    return r as { unanalyzable_tracks: number; queue_backlog: number; active: number };
  }
}
