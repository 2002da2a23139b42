import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * catalogue schema, the mapping change log (issue 19: the index holds provider <-> canonical maps and
 * availability itself and keeps them current from this log):
 *
 * - mapping_log: one row per change of a `track_server_map` key (server_id, provider_id): `item_id` is
 *   the key's new canonical id, NULL when the key was removed. Written by statement-level triggers, so
 *   every write path (resolve, sweep, cleaning, relabel cascade, server deletion cascade) is captured.
 *   Updates that leave the key's item_id unchanged (metadata refresh) are not logged.
 * - `seq` order equals commit order: a BEFORE STATEMENT trigger takes the transaction-level advisory lock
 *   (0x434c0000, 1) before the first map row of a transaction is touched, and holds it to commit, so a
 *   reader that sees seq n also sees every seq < n (no gaps to wait for). Every mapping writer already
 *   writes its map rows before `server_availability` (bumpAvailability), so the lock order is fixed.
 * - mapping_log_state: `pruned_through` = the highest seq deleted by retention; a reader whose cursor is
 *   below it must reload the maps in full.
 */
export class CreateMappingLog1732800000000 implements MigrationInterface {
  name = 'CreateMappingLog1732800000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE catalogue.mapping_log (
      seq bigserial PRIMARY KEY,
      server_id text NOT NULL,
      provider_id text NOT NULL,
      item_id text,
      at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE INDEX mapping_log_at ON catalogue.mapping_log (at)`);
    await q.query(`CREATE TABLE catalogue.mapping_log_state (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      pruned_through bigint NOT NULL DEFAULT 0
    )`);
    await q.query(`INSERT INTO catalogue.mapping_log_state (singleton) VALUES (true)`);
    await q.query(`CREATE FUNCTION catalogue.mapping_log_lock() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_advisory_xact_lock(1129054208, 1); RETURN NULL; END $$`);
    await q.query(`CREATE FUNCTION catalogue.mapping_log_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO catalogue.mapping_log (server_id, provider_id, item_id) SELECT n.server_id, n.provider_id, n.item_id FROM new_rows n;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE FUNCTION catalogue.mapping_log_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO catalogue.mapping_log (server_id, provider_id, item_id) SELECT o.server_id, o.provider_id, NULL FROM old_rows o;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE FUNCTION catalogue.mapping_log_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO catalogue.mapping_log (server_id, provider_id, item_id)
          SELECT o.server_id, o.provider_id, NULL FROM old_rows o
           WHERE NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.server_id = o.server_id AND n.provider_id = o.provider_id)
          UNION ALL
          SELECT n.server_id, n.provider_id, n.item_id FROM new_rows n
            LEFT JOIN old_rows o ON o.server_id = n.server_id AND o.provider_id = n.provider_id
           WHERE o.item_id IS DISTINCT FROM n.item_id;
        RETURN NULL;
      END $$`);
    for (const op of ['INSERT', 'UPDATE', 'DELETE']) {
      await q.query(`CREATE TRIGGER mapping_log_lock_${op.toLowerCase()} BEFORE ${op} ON catalogue.track_server_map FOR EACH STATEMENT EXECUTE FUNCTION catalogue.mapping_log_lock()`);
    }
    await q.query(`CREATE TRIGGER mapping_log_insert AFTER INSERT ON catalogue.track_server_map REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalogue.mapping_log_insert()`);
    await q.query(`CREATE TRIGGER mapping_log_delete AFTER DELETE ON catalogue.track_server_map REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION catalogue.mapping_log_delete()`);
    await q.query(
      `CREATE TRIGGER mapping_log_update AFTER UPDATE ON catalogue.track_server_map REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalogue.mapping_log_update()`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of ['mapping_log_lock_insert', 'mapping_log_lock_update', 'mapping_log_lock_delete', 'mapping_log_insert', 'mapping_log_delete', 'mapping_log_update']) {
      await q.query(`DROP TRIGGER ${t} ON catalogue.track_server_map`);
    }
    for (const f of ['mapping_log_lock', 'mapping_log_insert', 'mapping_log_delete', 'mapping_log_update']) await q.query(`DROP FUNCTION catalogue.${f}()`);
    await q.query(`DROP TABLE catalogue.mapping_log_state`);
    await q.query(`DROP TABLE catalogue.mapping_log`);
  }
}
