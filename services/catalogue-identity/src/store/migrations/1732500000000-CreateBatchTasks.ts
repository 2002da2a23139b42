import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * catalogue schema, batch tasks of the catalogue (spec "Setup-time alignment", "Cleaning", "Batch tasks"):
 *
 * - batch_task: every sweep (one server), alignment (every server) and cleaning run. The queue lives
 *   here, not in memory, so a request survives a restart, a cancel reaches the process running the
 *   task, and several replicas agree on "one at a time". `aliases` are the task ids of requests
 *   coalesced into this one (each gets the same status on the task board). `seq` feeds the monotonic
 *   `seq` of task.status.updated.v1. At most one live (NEW or RUNNING) cleaning (partial unique index).
 * - schedule_state: when the scheduled cleaning last started (manual runs count), per schedule name.
 */
export class CreateBatchTasks1732500000000 implements MigrationInterface {
  name = 'CreateBatchTasks1732500000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE catalogue.batch_task (
      id text PRIMARY KEY,
      type text NOT NULL CHECK (type IN ('sweep', 'alignment', 'cleaning')),
      state text NOT NULL CHECK (state IN ('NEW', 'RUNNING', 'SUCCESS', 'FAIL', 'REVOKED')),
      server_id text,
      full_refresh boolean NOT NULL DEFAULT true,
      clean_catalogue boolean,
      trigger text NOT NULL DEFAULT 'api',
      aliases text[] NOT NULL DEFAULT '{}',
      cancel_requested boolean NOT NULL DEFAULT false,
      seq integer NOT NULL DEFAULT 0,
      progress real NOT NULL DEFAULT 0,
      message text NOT NULL DEFAULT '',
      details jsonb NOT NULL DEFAULT '{}',
      runner text,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      started_at timestamptz,
      heartbeat_at timestamptz,
      finished_at timestamptz
    )`);
    await q.query(`CREATE INDEX batch_task_live ON catalogue.batch_task (created_at, id) WHERE state IN ('NEW', 'RUNNING')`);
    await q.query(`CREATE UNIQUE INDEX batch_task_one_live_cleaning ON catalogue.batch_task (type) WHERE type = 'cleaning' AND state IN ('NEW', 'RUNNING')`);
    await q.query(`CREATE TABLE catalogue.schedule_state (
      name text PRIMARY KEY,
      last_at timestamptz NOT NULL
    )`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE catalogue.schedule_state`);
    await q.query(`DROP TABLE catalogue.batch_task`);
  }
}
