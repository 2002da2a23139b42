import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the Browse page shows of an excluded file (issue 32): the reason as a code (`download_failed`,
 * `undecodable`, `too_short`: contracts UNANALYZABLE_REASONS) and the metadata the server reported when it was
 * excluded (title, artist, album, path, duration). Rows excluded before get a code from their reason text
 * ("download failed: ..." and "... too short ..." are the worker's own wording) and no metadata. Idempotent.
 */
export class ExclusionDetails1732100000004 implements MigrationInterface {
  name = 'ExclusionDetails1732100000004';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE analysis.exclusions
      ADD COLUMN IF NOT EXISTS reason_code text,
      ADD COLUMN IF NOT EXISTS title text,
      ADD COLUMN IF NOT EXISTS artist text,
      ADD COLUMN IF NOT EXISTS album text,
      ADD COLUMN IF NOT EXISTS path text,
      ADD COLUMN IF NOT EXISTS duration_seconds double precision`);
    await q.query(`UPDATE analysis.exclusions SET reason_code = CASE
        WHEN reason LIKE 'download failed%' THEN 'download_failed'
        WHEN reason ILIKE '%too short%' THEN 'too_short'
        ELSE 'undecodable' END
      WHERE reason_code IS NULL`);
    await q.query(`ALTER TABLE analysis.exclusions ALTER COLUMN reason_code SET DEFAULT 'undecodable', ALTER COLUMN reason_code SET NOT NULL`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE analysis.exclusions DROP COLUMN IF EXISTS duration_seconds, DROP COLUMN IF EXISTS path, DROP COLUMN IF EXISTS album,
      DROP COLUMN IF EXISTS artist, DROP COLUMN IF EXISTS title, DROP COLUMN IF EXISTS reason_code`);
  }
}
