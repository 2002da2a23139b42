import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Change detection per server (issue 35): mode (off / poll / push) and interval on the server row, every
 * existing and new server polling every 900 s by default, and the sha256 of the optional push token that
 * authenticates the server's webhook calls (the token itself is never stored).
 */
export class ChangeDetection1734500000000 implements MigrationInterface {
  name = 'ChangeDetection1734500000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE registry.music_servers
      ADD COLUMN IF NOT EXISTS change_detection_mode text NOT NULL DEFAULT 'poll' CHECK (change_detection_mode IN ('off','poll','push')),
      ADD COLUMN IF NOT EXISTS change_detection_interval_seconds integer NOT NULL DEFAULT 900 CHECK (change_detection_interval_seconds BETWEEN 5 AND 86400),
      ADD COLUMN IF NOT EXISTS change_push_token_sha256 text`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE registry.music_servers DROP COLUMN IF EXISTS change_detection_mode, DROP COLUMN IF EXISTS change_detection_interval_seconds, DROP COLUMN IF EXISTS change_push_token_sha256`);
  }
}
