import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * index schema, replica reports (issue 12 "SUCCESS means queryable"): one row per serving index
 * replica with the generation it answers queries from and a heartbeat. A run that must end only once
 * its songs are queryable on every replica reads these rows (through GET /internal/index/live).
 * Rows of a replica that stopped gracefully are deleted; a replica that died stops heart-beating and
 * is no longer counted as live. Run bookkeeping: left out of backups.
 */
export class AddReplicas1733400000000 implements MigrationInterface {
  name = 'AddReplicas1733400000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "index".replicas (
      replica_id text PRIMARY KEY,
      generation integer NOT NULL,
      items integer NOT NULL,
      build_started_at timestamptz,
      started_at timestamptz NOT NULL DEFAULT now(),
      heartbeat_at timestamptz NOT NULL DEFAULT now()
    )`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE "index".replicas');
  }
}
