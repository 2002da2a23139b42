import type { DataSource } from 'typeorm';
import { queryRows } from '@polyphony/platform';
import type { ChangeWatchStore, WatchOutcome, WatchState } from '../domain/ports';

interface Row {
  server_id: string;
  token: string | null;
  next_check_at: Date;
  checked_at: Date | null;
  changed_at: Date | null;
  failures: number;
  last_error: string | null;
  last_added: number;
  last_removed: number;
}

/** analysis.change_watch: the change detection's per-server state and leases (database clock throughout). */
export class ChangeWatchRepository implements ChangeWatchStore {
  constructor(private readonly ds: DataSource) {}

  async sync(serverIds: string[]): Promise<void> {
    await this.ds.query(`INSERT INTO analysis.change_watch (server_id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, [serverIds]);
    await this.ds.query(`DELETE FROM analysis.change_watch WHERE NOT (server_id = ANY($1::text[]))`, [serverIds]);
  }

  async claimDue(serverIds: string[], owner: string, leaseSeconds: number, intervalSeconds?: number[]): Promise<WatchState[]> {
    if (serverIds.length === 0) return [];
    // Under READ COMMITTED a concurrent claimer re-checks the WHERE on the row after the winner commits and skips it.
    // A row is also due when its last successful check is older than the server's CURRENT interval (an admin shortened
    // it: next_check_at was computed with the old one); rows in failure backoff keep their next_check_at.
    const rows = await queryRows<Row>(this.ds,
      `UPDATE analysis.change_watch w SET lease_owner = $2, lease_expires_at = now() + make_interval(secs => $3), nudged = false
         FROM unnest($1::text[], $4::int[]) AS s(id, secs)
        WHERE w.server_id = s.id
          AND (w.next_check_at <= now() OR w.nudged
               OR (s.secs IS NOT NULL AND w.failures = 0 AND w.checked_at IS NOT NULL AND w.checked_at + make_interval(secs => s.secs) <= now()))
          AND (w.lease_owner IS NULL OR w.lease_owner = $2 OR w.lease_expires_at < now())
        RETURNING w.server_id, w.token, w.failures`,
      [serverIds, owner, leaseSeconds, serverIds.map((_, i) => intervalSeconds?.[i] ?? null)],
    );
    return rows.map((r) => ({ serverId: r.server_id, token: r.token, failures: r.failures }));
  }

  async renew(serverId: string, owner: string, leaseSeconds: number): Promise<boolean> {
    const rows = await queryRows(this.ds, `UPDATE analysis.change_watch SET lease_expires_at = now() + make_interval(secs => $3) WHERE server_id = $1 AND lease_owner = $2 RETURNING 1`, [serverId, owner, leaseSeconds]);
    return rows.length > 0;
  }

  async finish(serverId: string, owner: string, o: WatchOutcome): Promise<void> {
    await this.ds.query(
      `UPDATE analysis.change_watch SET token = $3, next_check_at = now() + make_interval(secs => $4), checked_at = now(), failures = $5, last_error = $6,
              changed_at = CASE WHEN $7 THEN now() ELSE changed_at END,
              last_added = CASE WHEN $7 THEN $8 ELSE last_added END, last_removed = CASE WHEN $7 THEN $9 ELSE last_removed END,
              lease_owner = NULL, lease_expires_at = NULL
        WHERE server_id = $1 AND lease_owner = $2`,
      [serverId, owner, o.token, o.nextCheckSeconds, o.failures, o.lastError?.slice(0, 500) ?? null, o.change !== undefined, o.change?.added ?? 0, o.change?.removed ?? 0],
    );
  }

  async nudge(serverId: string): Promise<boolean> {
    const rows = await queryRows(this.ds, `UPDATE analysis.change_watch SET nudged = true WHERE server_id = $1 RETURNING 1`, [serverId]);
    return rows.length > 0;
  }

  async releaseAll(owner: string): Promise<void> {
    await this.ds.query(`UPDATE analysis.change_watch SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1`, [owner]);
  }

  async inFlight(serverId: string, providerIds: string[], maxAgeSeconds: number): Promise<Set<string>> {
    if (providerIds.length === 0) return new Set();
    const rows: Array<{ provider_id: string }> = await this.ds.query(
      `SELECT DISTINCT provider_id FROM analysis.run_tracks
        WHERE server_id = $1 AND provider_id = ANY($2) AND outcome = 'queued' AND published AND finished_at > now() - make_interval(secs => $3)`,
      [serverId, providerIds, maxAgeSeconds],
    );
    return new Set(rows.map((r) => r.provider_id));
  }

  async fullRunLive(): Promise<boolean> {
    const rows = await this.ds.query(`SELECT 1 FROM analysis.runs WHERE state IN ('NEW','RUNNING') LIMIT 1`);
    return (rows as unknown[]).length > 0;
  }

  async pruneBatches(days: number): Promise<number> {
    const rows = await queryRows(this.ds,
      `DELETE FROM analysis.run_tracks t WHERE t.finished_at < now() - make_interval(days => $1)
          AND NOT EXISTS (SELECT 1 FROM analysis.runs r WHERE r.id = t.run_id) RETURNING 1`,
      [days],
    );
    return rows.length;
  }

  async list() {
    const rows: Row[] = await this.ds.query(`SELECT * FROM analysis.change_watch ORDER BY server_id`);
    return rows.map((r) => ({ serverId: r.server_id, token: r.token, nextCheckAt: r.next_check_at, checkedAt: r.checked_at, changedAt: r.changed_at, failures: r.failures, lastError: r.last_error, lastAdded: r.last_added, lastRemoved: r.last_removed }));
  }
}
