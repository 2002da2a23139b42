import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The file stamp of each mapping (issue 35: a file changed in place under the same provider id):
 * `track_server_map.file_stamp`, the provider's stamp of the file's content when the mapping was written
 * (`ProviderTrack.fileStamp`: Subsonic and Plex `size:<bytes>`; NULL for Jellyfin/Emby/Lyrion and until a sweep lists
 * the file). A sweep only fills a NULL stamp: a listed stamp that differs from the stored one is left for the
 * re-analysis of a changed file (not wired yet).
 */
export class MappingFileStamps1734400000001 implements MigrationInterface {
  name = 'MappingFileStamps1734400000001';
  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE catalogue.track_server_map ADD COLUMN IF NOT EXISTS file_stamp text NULL');
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE catalogue.track_server_map DROP COLUMN IF EXISTS file_stamp');
  }
}
