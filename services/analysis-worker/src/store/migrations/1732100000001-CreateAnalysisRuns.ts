import type { MigrationInterface, QueryRunner } from 'typeorm';
import { taskRunColumnsSql } from '@polyphony/platform';

/**
 * Analysis runs and their per-track outcomes (idempotent: one row per run and provider file, so a
 * redelivered message never counts twice), and per-file exclusions of undecodable/unreadable
 * files, retried only when the file's metadata changes.
 */
export class CreateAnalysisRuns1732100000001 implements MigrationInterface {
  name = 'CreateAnalysisRuns1732100000001';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE analysis.runs (${taskRunColumnsSql('      ', 1)}
    )`);
    // At most one live run: a second start is refused by the database, not only by a check.
    await q.query(`CREATE UNIQUE INDEX runs_one_live ON analysis.runs ((true)) WHERE state IN ('NEW','RUNNING')`);
    await q.query(`CREATE TABLE analysis.run_servers (
      run_id uuid NOT NULL REFERENCES analysis.runs(id) ON DELETE CASCADE,
      server_id text NOT NULL,
      enqueued integer NOT NULL DEFAULT 0,
      PRIMARY KEY (run_id, server_id)
    )`);
    await q.query(`CREATE TABLE analysis.run_tracks (
      run_id uuid NOT NULL REFERENCES analysis.runs(id) ON DELETE CASCADE,
      server_id text NOT NULL,
      provider_id text NOT NULL,
      outcome text NOT NULL,
      item_id text,
      error text,
      finished_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (run_id, server_id, provider_id)
    )`);
    await q.query(`CREATE TABLE analysis.exclusions (
      server_id text NOT NULL,
      provider_id text NOT NULL,
      metadata_hash text NOT NULL,
      reason text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (server_id, provider_id)
    )`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE analysis.exclusions');
    await q.query('DROP TABLE analysis.run_tracks');
    await q.query('DROP TABLE analysis.run_servers');
    await q.query('DROP TABLE analysis.runs');
  }
}
