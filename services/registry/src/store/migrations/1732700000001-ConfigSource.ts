import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Where a config value came from: `env` (imported on first start) or `database` (set by an admin). */
export class ConfigSource1732700000001 implements MigrationInterface {
  name = 'ConfigSource1732700000001';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE registry.app_config ADD COLUMN source text NOT NULL DEFAULT 'database' CHECK (source IN ('env', 'database'))`);
    // Rows written before this column existed were imported from the environment on first start.
    await q.query(`UPDATE registry.app_config SET source = 'env'`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE registry.app_config DROP COLUMN source');
  }
}
