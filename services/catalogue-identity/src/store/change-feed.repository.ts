/**
 * The catalogue's change feed for index builds (issue 35): which songs' snapshot rows may have changed since a mark.
 * The log is written by triggers on every table a snapshot row is read from (migration 1734500000000-SnapshotChangeFeed).
 */
import type { DataSource } from 'typeorm';
import type { SnapshotChangesResponse } from '@polyphony/contracts';
import type { SnapshotChangeFeed } from '../domain/ports';

/** Log rows older than this are pruned by the next read (a reader whose mark is older then takes a full snapshot): 30 days. */
export const CHANGE_LOG_RETENTION_DAYS = 30;

/** What `changesSince` is asked: the reader's last mark and the catalogue it came from (both absent the first time), and the most ids it takes. */
export interface ChangesQuery {
  since?: string;
  catalogue?: string;
  limit: number;
}

/** Reads and prunes `catalogue.snapshot_change`. */
export class ChangeFeedRepository implements SnapshotChangeFeed {
  constructor(private readonly ds: DataSource) {}

  /**
   * The ids of every song whose snapshot row may differ from what a reader that read the catalogue "as of mark
   * `since`" holds, and the mark to ask with next time.
   *
   * The rule (the snapshot-xmin rule of PostgreSQL queue and outbox readers: PgQ / Skytools' txid module, "txid -
   * export transaction IDs to user level", and the PostgreSQL manual, "Transaction ID and Snapshot Information
   * Functions": a snapshot's xmin is the "earliest transaction ID that is still active; all earlier transactions
   * will either be committed and visible, or rolled back"): in one REPEATABLE READ transaction the new mark is
   * `pg_snapshot_xmin(pg_current_snapshot())` and the answer is every logged id with `xid >= since` visible to that
   * snapshot. A transaction with an xid below the new mark has ended, so every change below it is either in this
   * answer or was in an earlier one; a transaction still running (or committing late, after a later one) has
   * `xid >= mark` and is read by the next call, however late it commits. Ids at or above the mark that are already
   * visible come back again next time (harmless: the reader re-reads a song's current row by id). The reader must
   * take the mark BEFORE it reads the rows (a full snapshot: ask without `since` first, then page).
   *
   * No usable delta (`changed: null`, `reason`): no `since` ('first'), a mark of another change log ('other-catalogue':
   * the schema was reset or the database replaced), a mark below the log's floor ('too-old': pruned, or a source table
   * truncated), a mark above the database's next xid ('future': a restore into a younger cluster), more than `limit`
   * distinct ids ('too-many'). The reader then takes a full snapshot.
   * Afterwards log rows below `since` (that reader no longer needs them) and rows older than CHANGE_LOG_RETENTION_DAYS
   * are pruned, the floor raised past them.
   * @returns `{ catalogue, mark, changed, reason? }` (marks are decimal xid8 strings)
   */
  async changesSince(q: ChangesQuery): Promise<SnapshotChangesResponse> {
    const answer = await this.ds.transaction('REPEATABLE READ', async (m) => {
      const head: Array<{ catalogue: string; mark: string; floor: string; xmax: string }> = await m.query(
        `SELECT f.catalogue::text || ':' || 'catalogue.snapshot_change'::regclass::oid::text AS catalogue, pg_snapshot_xmin(pg_current_snapshot())::text AS mark,
                f.floor::text AS floor, pg_snapshot_xmax(pg_current_snapshot())::text AS xmax
           FROM catalogue.snapshot_feed f`,
      );
      const h = head[0];
      if (!h) throw new Error('catalogue.snapshot_feed has no row (migration 1734500000000 not applied)');
      const base = { catalogue: h.catalogue, mark: h.mark };
      if (q.since === undefined) return { ...base, changed: null, reason: 'first' as const };
      if (q.catalogue !== h.catalogue) return { ...base, changed: null, reason: 'other-catalogue' as const };
      const since = BigInt(q.since);
      if (since < BigInt(h.floor)) return { ...base, changed: null, reason: 'too-old' as const };
      if (since > BigInt(h.xmax)) return { ...base, changed: null, reason: 'future' as const };
      const rows: Array<{ item_id: string }> = await m.query(`SELECT DISTINCT item_id FROM catalogue.snapshot_change WHERE xid >= $1::xid8 LIMIT $2`, [q.since, q.limit + 1]);
      if (rows.length > q.limit) return { ...base, changed: null, reason: 'too-many' as const };
      return { ...base, changed: rows.map((r) => r.item_id) };
    });
    const usable = answer.changed !== null || answer.reason === 'too-many' ? q.since : undefined;
    await this.prune(usable);
    return answer;
  }

  /**
   * Deletes log rows with `xid < upTo` (a reader's usable mark) and rows older than CHANGE_LOG_RETENTION_DAYS, and
   * raises the floor past every deleted xid, so a mark that needed them is answered 'too-old' (a full snapshot).
   */
  async prune(upTo: string | undefined): Promise<void> {
    await this.ds.query(
      `WITH gone AS (
         DELETE FROM catalogue.snapshot_change
          WHERE ($1::xid8 IS NOT NULL AND xid < $1::xid8) OR at < now() - make_interval(days => $2)
          RETURNING xid::text::numeric AS x)
       UPDATE catalogue.snapshot_feed SET floor = ((SELECT max(x) FROM gone) + 1)::text::xid8
        WHERE EXISTS (SELECT 1 FROM gone) AND floor::text::numeric < (SELECT max(x) FROM gone) + 1`,
      [upTo ?? null, CHANGE_LOG_RETENTION_DAYS],
    );
  }
}
