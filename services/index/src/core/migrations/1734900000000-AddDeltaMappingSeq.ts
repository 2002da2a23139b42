import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * index schema: each live-library batch keeps the mapping-log position read before its songs' mappings were read
 * (`mapping_seq`). A replica applying the batch replays the log from there over the batch's mappings, so a mapping
 * removed or moved after the batch was read is not brought back by it (docs/architecture.md "Live library
 * (incremental index)"). NULL (batches stored before this column): replayed from the start of the log, which the
 * catalogue answers with a reset, i.e. every mapping reloaded once.
 */
export class AddDeltaMappingSeq1734900000000 implements MigrationInterface {
  name = 'AddDeltaMappingSeq1734900000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".deltas ADD COLUMN IF NOT EXISTS mapping_seq bigint`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".deltas DROP COLUMN IF EXISTS mapping_seq`);
  }
}
