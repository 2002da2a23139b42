import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The tables a snapshot row (`TrackRepository.snapshotRows`) is read from: every write to them is logged. */
export const SNAPSHOT_SOURCE_TABLES = ['score', 'embedding', 'lyrics', 'track_server_map'] as const;

/**
 * The catalogue's change feed (issue 35; read by store/change-feed.repository.ts):
 *  - `catalogue.snapshot_change (xid, item_id, at)`: one row per song id a statement on a snapshot source table touched
 *    (insert, update: old and new id, so a relabel logs both; delete), stamped with the writing transaction's
 *    64-bit id (`pg_current_xact_id()`, xid8, never wraps). Statement-level triggers with transition tables: one
 *    INSERT ... SELECT DISTINCT per statement, not one per row (an import of 5,000 songs adds one statement per table).
 *  - `catalogue.snapshot_feed`: this log's identity (`catalogue`, a random uuid: a schema reset or a new database has
 *    another) and `floor`, the oldest xid the log is complete from: the migration's own transaction, raised when old
 *    rows are pruned or a source table is truncated (a TRUNCATE names no ids: every mark up to its xid becomes unusable).
 * `updated_at` is not used: it is not set by every write path and is not commit-ordered; the xid is read with the
 * snapshot-xmin rule instead (see the repository).
 */
export class SnapshotChangeFeed1734500000000 implements MigrationInterface {
  name = 'SnapshotChangeFeed1734500000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE catalogue.snapshot_change (
      xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
      item_id text NOT NULL,
      at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query('CREATE INDEX snapshot_change_xid ON catalogue.snapshot_change (xid)');
    await q.query(`CREATE TABLE catalogue.snapshot_feed (
      id boolean PRIMARY KEY DEFAULT true CHECK (id),
      catalogue uuid NOT NULL DEFAULT gen_random_uuid(),
      floor xid8 NOT NULL DEFAULT pg_current_xact_id()
    )`);
    await q.query('INSERT INTO catalogue.snapshot_feed DEFAULT VALUES');
    await q.query(`CREATE FUNCTION catalogue.log_snapshot_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO catalogue.snapshot_change (item_id) SELECT DISTINCT item_id FROM new_rows;
        ELSIF TG_OP = 'UPDATE' THEN
          INSERT INTO catalogue.snapshot_change (item_id) SELECT item_id FROM new_rows UNION SELECT item_id FROM old_rows;
        ELSIF TG_OP = 'DELETE' THEN
          INSERT INTO catalogue.snapshot_change (item_id) SELECT DISTINCT item_id FROM old_rows;
        ELSE
          -- A TRUNCATE names no ids: every mark up to this transaction's xid (a reader that has not seen it) is refused.
          UPDATE catalogue.snapshot_feed SET floor = (pg_current_xact_id()::text::numeric + 1)::text::xid8;
        END IF;
        RETURN NULL;
      END $$`);
    for (const t of SNAPSHOT_SOURCE_TABLES) {
      await q.query(`CREATE TRIGGER ${t}_change_ins AFTER INSERT ON catalogue.${t} REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalogue.log_snapshot_change()`);
      await q.query(`CREATE TRIGGER ${t}_change_upd AFTER UPDATE ON catalogue.${t} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalogue.log_snapshot_change()`);
      await q.query(`CREATE TRIGGER ${t}_change_del AFTER DELETE ON catalogue.${t} REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION catalogue.log_snapshot_change()`);
      await q.query(`CREATE TRIGGER ${t}_change_trunc AFTER TRUNCATE ON catalogue.${t} FOR EACH STATEMENT EXECUTE FUNCTION catalogue.log_snapshot_change()`);
    }
  }
  async down(q: QueryRunner): Promise<void> {
    for (const t of SNAPSHOT_SOURCE_TABLES) for (const k of ['ins', 'upd', 'del', 'trunc']) await q.query(`DROP TRIGGER IF EXISTS ${t}_change_${k} ON catalogue.${t}`);
    await q.query('DROP FUNCTION IF EXISTS catalogue.log_snapshot_change()');
    await q.query('DROP TABLE IF EXISTS catalogue.snapshot_feed');
    await q.query('DROP TABLE IF EXISTS catalogue.snapshot_change');
  }
}
