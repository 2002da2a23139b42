import type { MigrationInterface, QueryRunner } from 'typeorm';
import { settingsTableSql } from '@polyphony/platform';

/** playlist schema: service settings (seeded from the environment on first start). */
export class CreatePlaylist1732100000000 implements MigrationInterface {
  name = 'CreatePlaylist1732100000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(settingsTableSql('playlist'));
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE "playlist".settings');
  }
}
