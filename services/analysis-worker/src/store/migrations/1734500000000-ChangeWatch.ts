import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Change detection (issue 35). `change_watch`: one row per server, the poller's durable state (the library's last
 * change token, when the next check is due, consecutive failures and the last error, what the last change added and
 * removed) and its lease, so one replica checks a server at a time and a restart resumes where it was.
 * `run_tracks.run_id` no longer references `runs`: the tracks of an incremental analysis (a change batch, no run row,
 * no index rebuild at its end) are claimed and counted in the same table under their batch id.
 */
export class ChangeWatch1734500000000 implements MigrationInterface {
  name = 'ChangeWatch1734500000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS analysis.change_watch (
      server_id text PRIMARY KEY,
      token text,
      next_check_at timestamptz NOT NULL DEFAULT now(),
      checked_at timestamptz,
      changed_at timestamptz,
      failures integer NOT NULL DEFAULT 0,
      last_error text,
      last_added integer NOT NULL DEFAULT 0,
      last_removed integer NOT NULL DEFAULT 0,
      nudged boolean NOT NULL DEFAULT false,
      lease_owner text,
      lease_expires_at timestamptz
    )`);
    await q.query(`ALTER TABLE analysis.run_tracks DROP CONSTRAINT IF EXISTS run_tracks_run_id_fkey`);
    await q.query(`CREATE INDEX IF NOT EXISTS run_tracks_queued_by_file ON analysis.run_tracks (server_id, provider_id) WHERE outcome = 'queued'`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX IF EXISTS analysis.run_tracks_queued_by_file');
    await q.query(`DELETE FROM analysis.run_tracks t WHERE NOT EXISTS (SELECT 1 FROM analysis.runs r WHERE r.id = t.run_id)`);
    await q.query(`ALTER TABLE analysis.run_tracks ADD CONSTRAINT run_tracks_run_id_fkey FOREIGN KEY (run_id) REFERENCES analysis.runs(id) ON DELETE CASCADE`);
    await q.query('DROP TABLE IF EXISTS analysis.change_watch');
  }
}
