import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Operations: schedules (cron expression + IANA time zone, the next due time the scheduler claims
 * with a compare-and-set), their firing history, and the backup catalogue (archives live on the
 * backup volume; these rows say what each one is).
 */
export class CreateOperations1732700000000 implements MigrationInterface {
  name = 'CreateOperations1732700000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE registry.schedules (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      name text NOT NULL,
      kind text NOT NULL,
      cron text NOT NULL,
      timezone text NOT NULL DEFAULT 'UTC',
      enabled boolean NOT NULL DEFAULT true,
      params jsonb NOT NULL DEFAULT '{}'::jsonb,
      next_run_at timestamptz,
      last_run_at timestamptz,
      last_result text,
      last_task_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE UNIQUE INDEX schedules_name_ci ON registry.schedules (lower(name))`);
    await q.query(`CREATE INDEX schedules_due ON registry.schedules (next_run_at) WHERE enabled`);
    await q.query(`CREATE TABLE registry.schedule_runs (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      schedule_id uuid NOT NULL REFERENCES registry.schedules (id) ON DELETE CASCADE,
      due_at timestamptz NOT NULL,
      fired_at timestamptz NOT NULL DEFAULT now(),
      outcome text NOT NULL DEFAULT 'pending',
      task_id text,
      message text NOT NULL DEFAULT '',
      UNIQUE (schedule_id, due_at)
    )`);
    await q.query(`CREATE INDEX schedule_runs_recent ON registry.schedule_runs (schedule_id, fired_at DESC)`);
    await q.query(`CREATE TABLE registry.backups (
      id text PRIMARY KEY,
      status text NOT NULL DEFAULT 'running',
      file_name text NOT NULL,
      size_bytes bigint,
      sha256 text,
      format_version integer NOT NULL,
      secrets text NOT NULL,
      rows bigint,
      message text NOT NULL DEFAULT '',
      task_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz
    )`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE registry.backups');
    await q.query('DROP TABLE registry.schedule_runs');
    await q.query('DROP TABLE registry.schedules');
  }
}
