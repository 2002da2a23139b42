import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Playlists of kind `radio`: written by the radio runs of the index service (`<anchor name>_radio`, issue 14). */
export class RadioPlaylists1732900000000 implements MigrationInterface {
  name = 'RadioPlaylists1732900000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE playlist.playlists DROP CONSTRAINT IF EXISTS playlists_kind_check`);
    await q.query(`ALTER TABLE playlist.playlists ADD CONSTRAINT playlists_kind_check CHECK (kind IN ('instant','automatic','radio'))`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM playlist.playlists WHERE kind = 'radio'`);
    await q.query(`ALTER TABLE playlist.playlists DROP CONSTRAINT IF EXISTS playlists_kind_check`);
    await q.query(`ALTER TABLE playlist.playlists ADD CONSTRAINT playlists_kind_check CHECK (kind IN ('instant','automatic'))`);
  }
}
