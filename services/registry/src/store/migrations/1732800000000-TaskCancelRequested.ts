import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When a user asked to cancel a live task (issue 12): a fact of the registry, kept apart from the task's
 * state, which only its owning service writes (through its snapshots).
 */
export class TaskCancelRequested1732800000000 implements MigrationInterface {
  name = 'TaskCancelRequested1732800000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE registry.tasks ADD COLUMN IF NOT EXISTS cancel_requested_at timestamptz`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE registry.tasks DROP COLUMN cancel_requested_at');
  }
}
