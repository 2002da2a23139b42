import type { MigrationInterface, QueryRunner } from 'typeorm';
import { settingsTableSql } from '@polyphony/platform';

/** index schema: service settings (seeded from the environment on first start). */
export class CreateIndex1732100000000 implements MigrationInterface {
  name = 'CreateIndex1732100000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(settingsTableSql('index'));
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE "index".settings');
  }
}
