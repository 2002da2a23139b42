import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropLeaseColumnsSql, taskRunUpgradeSql } from '@polyphony/platform';

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
    for (const sql of dropLeaseColumnsSql('catalogue', 'batch_task')) await q.query(sql);
  }
}
