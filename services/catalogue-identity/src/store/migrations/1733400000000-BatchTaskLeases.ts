import type { MigrationInterface, QueryRunner } from 'typeorm';
import { taskRunUpgradeSql } from '@polyphony/platform';

/**
 * Batch tasks on the platform task-run lease model (issue 12: one run model for every batch kind):
 * `catalogue.batch_task` gains the lease columns (owner, generation, expiry) and the lease scan index.
 * A RUNNING task whose lease expired (its process died) or was handed back (SIGTERM) is taken over by
 * any replica and run again (sweeps and cleanings are idempotent), instead of failing it.
 */
export class BatchTaskLeases1733400000000 implements MigrationInterface {
  name = 'BatchTaskLeases1733400000000';
  async up(q: QueryRunner): Promise<void> {
    for (const sql of taskRunUpgradeSql('catalogue', 'batch_task')) await q.query(sql);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS catalogue.batch_task_lease`);
    for (const c of ['lease_expires_at', 'lease_generation', 'lease_owner']) await q.query(`ALTER TABLE catalogue.batch_task DROP COLUMN ${c}`);
  }
}
