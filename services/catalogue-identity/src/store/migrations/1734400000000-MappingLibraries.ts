import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The library of each mapping (issue 34: results limited to the libraries a user's account can see):
 * `track_server_map.library_id`, the provider's library id the listing found the file in (Subsonic music-folder
 * id, Jellyfin/Emby library view id, Plex section key; NULL for Lyrion and until the next sweep or analysis of the
 * server lists the file: never guessed). Indexed by (server_id, library_id) for the per-library availability read.
 */
export class MappingLibraries1734400000000 implements MigrationInterface {
  name = 'MappingLibraries1734400000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE catalogue.track_server_map ADD COLUMN IF NOT EXISTS library_id text NULL');
    await q.query('CREATE INDEX IF NOT EXISTS track_server_map_library_idx ON catalogue.track_server_map (server_id, library_id) WHERE library_id IS NOT NULL');
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX IF EXISTS catalogue.track_server_map_library_idx');
    await q.query('ALTER TABLE catalogue.track_server_map DROP COLUMN IF EXISTS library_id');
  }
}
