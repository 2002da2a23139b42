import type { MigrationInterface, QueryRunner } from 'typeorm';
import { settingsTableSql } from '@polyphony/platform';

/** catalogue schema: service settings (seeded from the environment on first start). */
export class CreateCatalogue1732100000000 implements MigrationInterface {
  name = 'CreateCatalogue1732100000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(settingsTableSql('catalogue'));
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE "catalogue".settings');
  }
}
