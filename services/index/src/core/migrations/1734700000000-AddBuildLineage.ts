import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * index schema: the reuse lineage of a generation (issue 35; docs/architecture.md "Generation reuse"). A build that
 * keeps the serving generation's IVF cells, basis and map carries its lineage on: `lineage_trained_rows` is the row
 * count of the build that last trained k-means and laid out the map (the lineage's root), `lineage_placed_rows` the
 * rows placed without training since (changed and removed rows of every reusing build after the root, live appends
 * included as the next build's changed rows). Null / 0 for builds from before the column (their lineage starts at
 * themselves) and for builds that trained.
 */
export class AddBuildLineage1734700000000 implements MigrationInterface {
  name = 'AddBuildLineage1734700000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".builds ADD COLUMN lineage_trained_rows integer, ADD COLUMN lineage_placed_rows integer NOT NULL DEFAULT 0`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".builds DROP COLUMN lineage_trained_rows, DROP COLUMN lineage_placed_rows`);
  }
}
