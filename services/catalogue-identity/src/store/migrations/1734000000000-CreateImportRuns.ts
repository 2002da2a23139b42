import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createTaskRunTableSql } from '@polyphony/platform';

/**
 * Runs of the import from the reference (issue 34): the platform's task-run table (`catalogue.import_runs`,
 * one live run, leases), so an import survives a restart (another replica or the restarted one takes it over
 * and runs it again: the import is idempotent) and shows on the task board.
 */
export class CreateImportRuns1734000000000 implements MigrationInterface {
  name = 'CreateImportRuns1734000000000';
  async up(q: QueryRunner): Promise<void> {
    for (const sql of createTaskRunTableSql('catalogue', 'import_runs')) await q.query(sql);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE IF EXISTS catalogue.import_runs');
  }
}
