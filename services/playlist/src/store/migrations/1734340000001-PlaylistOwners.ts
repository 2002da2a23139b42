import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Households (issue 34): who created a playlist (`owner_user_id`, the gateway's user id; null for system
 * playlists: clustering, radios, Album of the Week) and whose media-server account holds it (`account`:
 * `user` = the owner's own linked account, private to the owner in polyphony's lists; `server` = the
 * server's account, visible to everyone as before).
 */
export class PlaylistOwners1734340000001 implements MigrationInterface {
  name = 'PlaylistOwners1734340000001';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE playlist.playlists ADD COLUMN IF NOT EXISTS owner_user_id text`);
    await q.query(`ALTER TABLE playlist.playlists ADD COLUMN IF NOT EXISTS account text NOT NULL DEFAULT 'server' CHECK (account IN ('user', 'server'))`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE playlist.playlists DROP COLUMN account');
    await q.query('ALTER TABLE playlist.playlists DROP COLUMN owner_user_id');
  }
}
