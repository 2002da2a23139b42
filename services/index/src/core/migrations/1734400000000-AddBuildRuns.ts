import type { MigrationInterface, QueryRunner } from 'typeorm';
import { TASK_RUN_COLUMNS_SQL } from '@polyphony/platform';

/**
 * index schema: `index.build_runs`, the task-run table of index builds on the platform task host (issue 29;
 * docs/architecture.md "Task runs"). The platform's task-run columns plus `requested_at` (when the last request
 * coalesced into the run arrived: a generation whose build started at or after it covers the run). Unlike a
 * one-run table it is a queue of at most one running and one queued build (requests arriving while one is queued
 * join it), so it has two one-row indexes instead of the one-live index, and the lease scan index.
 * It replaces the PostgreSQL session advisory lock that serialised builds across replicas.
 */
export class AddBuildRuns1734400000000 implements MigrationInterface {
  name = 'AddBuildRuns1734400000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "index".build_runs (${TASK_RUN_COLUMNS_SQL},\n  requested_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE UNIQUE INDEX build_runs_one_queued ON "index".build_runs ((true)) WHERE state = 'NEW'`);
    await q.query(`CREATE UNIQUE INDEX build_runs_one_running ON "index".build_runs ((true)) WHERE state = 'RUNNING'`);
    await q.query(`CREATE INDEX build_runs_lease ON "index".build_runs (lease_expires_at) WHERE state IN ('NEW','RUNNING')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE "index".build_runs');
  }
}
