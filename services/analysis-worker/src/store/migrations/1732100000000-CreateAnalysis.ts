import type { MigrationInterface, QueryRunner } from 'typeorm';
import { settingsTableSql } from '@polyphony/platform';

/** analysis schema: service settings (seeded from the environment on first start). */
export class CreateAnalysis1732100000000 implements MigrationInterface {
  name = 'CreateAnalysis1732100000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(settingsTableSql('analysis'));
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE "analysis".settings');
  }
}
