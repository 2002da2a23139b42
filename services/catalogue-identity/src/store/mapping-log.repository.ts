/**
 * Reads of the mapping change log and the full mapping set for the index replicas (issue 19), and the
 * log's retention. The log itself is written by triggers (migration 1732700000000-CreateMappingLog).
 */
import type { DataSource } from 'typeorm';
import { MAPPING_PAGE_MAX, type MappingChangesPage, type MappingRowsPage } from '@polyphony/contracts';
import { ValidationError, queryRows } from '@polyphony/platform';
import type { MappingLogStore } from '../domain/ports';

/** How long log entries are kept (a replica further behind reloads the maps in full): 24 h. */
export const MAPPING_LOG_RETENTION_HOURS = 24;

/** The mapping log and full-map paging. */
export class MappingLogRepository implements MappingLogStore {
  constructor(private readonly ds: DataSource) {}

  /**
   * Highest committed log position: the last entry's seq, or the retention's pruning mark when that is higher (0 for a
   * log never written). The mark matters once retention has removed every entry (a library whose mappings did not
   * change for 24 h): the head was then 0, below the mark, so a reader that loaded the full set at that head was told
   * to reset on its first changes call, loaded the set again at the same head, and so on for ever (an index replica
   * spinning at 100 % CPU in activation; seen on an install restored a day after it was written).
   */
  async head(): Promise<number> {
    const rows = await queryRows<{ s: string | null }>(
      this.ds,
      `SELECT greatest((SELECT max(seq) FROM catalogue.mapping_log), (SELECT pruned_through FROM catalogue.mapping_log_state LIMIT 1)) AS s`,
    );
    return Number(rows[0]?.s ?? 0);
  }

  /**
   * One page of every mapping row, keyset-paged by (server_id, provider_id). The log head is read
   * first, in its own statement, so the page is at least as new as `seq` (see MappingRowsPage).
   * @param after opaque cursor of the previous page (undefined = first page)
   * @throws ValidationError (400) when the cursor is malformed
   */
  async rows(after: string | undefined, limit: number): Promise<MappingRowsPage> {
    const key = after === undefined ? undefined : decodeCursor(after);
    if (after !== undefined && key === undefined) throw new ValidationError('after is not a cursor of this endpoint');
    const n = Math.min(Math.max(1, limit), MAPPING_PAGE_MAX);
    const seq = await this.head();
    const rows = await queryRows<{ server_id: string; provider_id: string; item_id: string }>(
      this.ds,
      key
        ? `SELECT server_id, provider_id, item_id FROM catalogue.track_server_map WHERE (server_id, provider_id) > ($1, $2) ORDER BY server_id, provider_id LIMIT $3`
        : `SELECT server_id, provider_id, item_id FROM catalogue.track_server_map ORDER BY server_id, provider_id LIMIT $1`,
      key ? [key[0], key[1], n] : [n],
    );
    const last = rows[rows.length - 1];
    return {
      seq,
      rows: rows.map((r) => [r.server_id, r.provider_id, r.item_id] as [string, string, string]),
      next: rows.length === n && last ? encodeCursor([last.server_id, last.provider_id]) : null,
    };
  }

  /**
   * Log entries after `after`, in seq (= commit) order, and whether retention removed some of them
   * (one statement, so the pruning mark and the entries come from one snapshot).
   */
  async changes(after: number, limit: number): Promise<MappingChangesPage> {
    const n = Math.min(Math.max(1, limit), MAPPING_PAGE_MAX);
    const rows = await queryRows<{ seq: string; server_id: string; provider_id: string; item_id: string | null; pruned: string }>(
      this.ds,
      `SELECT l.seq, l.server_id, l.provider_id, l.item_id, s.pruned_through AS pruned
         FROM catalogue.mapping_log_state s LEFT JOIN LATERAL (
           SELECT seq, server_id, provider_id, item_id FROM catalogue.mapping_log WHERE seq > $1 ORDER BY seq LIMIT $2
         ) l ON true`,
      [after, n + 1],
    );
    const pruned = Number(rows[0]?.pruned ?? 0);
    if (after < pruned) return { reset: true, seq: after, more: false, changes: [] };
    const entries = rows.filter((r) => r.seq !== null);
    const more = entries.length > n;
    const page = more ? entries.slice(0, n) : entries;
    return {
      reset: false,
      seq: page.length ? Number(page[page.length - 1]!.seq) : after,
      more,
      changes: page.map((r) => [Number(r.seq), r.server_id, r.provider_id, r.item_id] as [number, string, string, string | null]),
    };
  }

  /** Deletes entries older than the retention and records the highest deleted seq; returns how many were deleted. */
  async prune(retentionHours = MAPPING_LOG_RETENTION_HOURS): Promise<number> {
    const rows = await queryRows<{ n: string }>(
      this.ds,
      `WITH d AS (DELETE FROM catalogue.mapping_log WHERE at < now() - make_interval(hours => $1) RETURNING seq),
            u AS (UPDATE catalogue.mapping_log_state SET pruned_through = greatest(pruned_through, (SELECT max(seq) FROM d)) WHERE EXISTS (SELECT 1 FROM d))
       SELECT count(*) AS n FROM d`,
      [retentionHours],
    );
    return Number(rows[0]?.n ?? 0);
  }
}

/** Cursor of the rows endpoint: base64url of the JSON pair [serverId, providerId]. */
export function encodeCursor(key: [string, string]): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

/** @returns the pair, or undefined when `cursor` is not one this service issued */
export function decodeCursor(cursor: string): [string, string] | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string') return [v[0], v[1]];
  } catch {
    /* malformed */
  }
  return undefined;
}
