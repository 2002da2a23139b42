import type { MigrationInterface, QueryRunner } from 'typeorm';
import { taskRunUpgradeSql } from '@polyphony/platform';

/**
 * Fault-tolerant runs (issue 12): the run row gains the platform task-run lease columns (owner,
 * generation for fencing, expiry) and details; every per-server counter the status board shows is
 * now durable in `run_servers` (position, status, enumeration counts, consecutive failures), and
 * `run_tracks` also holds tracks enqueued but not finished (`outcome = 'queued'`, `published` once
 * the broker confirmed the message), so progress is derived from durable rows and a coordinator that
 * takes the run over knows exactly what is left. Idempotent (IF NOT EXISTS).
 */
export class RunLeases1732100000002 implements MigrationInterface {
  name = 'RunLeases1732100000002';
  async up(q: QueryRunner): Promise<void> {
    for (const sql of taskRunUpgradeSql('analysis', 'runs')) await q.query(sql);
    await q.query(`ALTER TABLE analysis.run_servers
      ADD COLUMN IF NOT EXISTS position integer NOT NULL DEFAULT 0,
      ADD COLUMN IF NOT EXISTS server_name text,
      ADD COLUMN IF NOT EXISTS status text NOT NULL DEFAULT 'pending',
      ADD COLUMN IF NOT EXISTS seen integer NOT NULL DEFAULT 0,
      ADD COLUMN IF NOT EXISTS skipped_mapped integer NOT NULL DEFAULT 0,
      ADD COLUMN IF NOT EXISTS excluded integer NOT NULL DEFAULT 0,
      ADD COLUMN IF NOT EXISTS enumerated boolean NOT NULL DEFAULT false,
      ADD COLUMN IF NOT EXISTS failures integer NOT NULL DEFAULT 0,
      ADD COLUMN IF NOT EXISTS error text`);
    await q.query(`ALTER TABLE analysis.run_tracks ADD COLUMN IF NOT EXISTS published boolean NOT NULL DEFAULT true`);
    await q.query(`CREATE INDEX IF NOT EXISTS run_tracks_open ON analysis.run_tracks (run_id, server_id) WHERE outcome = 'queued'`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX IF EXISTS analysis.run_tracks_open');
    await q.query('ALTER TABLE analysis.run_tracks DROP COLUMN IF EXISTS published');
    await q.query(`ALTER TABLE analysis.run_servers DROP COLUMN IF EXISTS position, DROP COLUMN IF EXISTS server_name, DROP COLUMN IF EXISTS status, DROP COLUMN IF EXISTS seen,
      DROP COLUMN IF EXISTS skipped_mapped, DROP COLUMN IF EXISTS excluded, DROP COLUMN IF EXISTS enumerated, DROP COLUMN IF EXISTS failures, DROP COLUMN IF EXISTS error`);
    await q.query('DROP INDEX IF EXISTS analysis.runs_lease');
    await q.query('ALTER TABLE analysis.runs DROP COLUMN IF EXISTS lease_expires_at, DROP COLUMN IF EXISTS lease_generation, DROP COLUMN IF EXISTS lease_owner, DROP COLUMN IF EXISTS details');
  }
}
