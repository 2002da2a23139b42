import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Playlists of kind `album_of_the_week`: the one fixed playlist per server the Album of the Week schedule refills (issue 31). */
export class AlbumOfTheWeekPlaylists1733900000000 implements MigrationInterface {
  name = 'AlbumOfTheWeekPlaylists1733900000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE playlist.playlists DROP CONSTRAINT IF EXISTS playlists_kind_check`);
    await q.query(`ALTER TABLE playlist.playlists ADD CONSTRAINT playlists_kind_check CHECK (kind IN ('instant','automatic','radio','album_of_the_week'))`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM playlist.playlists WHERE kind = 'album_of_the_week'`);
    await q.query(`ALTER TABLE playlist.playlists DROP CONSTRAINT IF EXISTS playlists_kind_check`);
    await q.query(`ALTER TABLE playlist.playlists ADD CONSTRAINT playlists_kind_check CHECK (kind IN ('instant','automatic','radio'))`);
  }
}
