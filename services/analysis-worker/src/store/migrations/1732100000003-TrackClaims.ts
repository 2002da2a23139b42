import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Per-track claims: a worker that starts the heavy work of a queued track (download, decode, networks,
 * identity) first claims its `run_tracks` row for a short lease (`claimed_by` = one processing attempt,
 * `claim_expires_at`), renewed while it works. A second delivery of the same message (the broker redelivers
 * unacked messages when a channel closes, e.g. on a broker restart, while the first attempt is still
 * running) finds the claim live and is retried later instead of analyzing the track a second time; a
 * claim of a killed worker lapses with its lease. Idempotent (IF NOT EXISTS).
 */
export class TrackClaims1732100000003 implements MigrationInterface {
  name = 'TrackClaims1732100000003';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE analysis.run_tracks ADD COLUMN IF NOT EXISTS claimed_by text, ADD COLUMN IF NOT EXISTS claim_expires_at timestamptz`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE analysis.run_tracks DROP COLUMN IF EXISTS claim_expires_at, DROP COLUMN IF EXISTS claimed_by');
  }
}
