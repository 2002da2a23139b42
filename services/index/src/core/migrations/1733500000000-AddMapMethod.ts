import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * index schema: the method of a stored map projection ('umap' or 'pca', issue 17 "Map"). Generations
 * stored before this migration were PCA projections, hence the default.
 */
export class AddMapMethod1733500000000 implements MigrationInterface {
  name = 'AddMapMethod1733500000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".map_projections ADD COLUMN method text NOT NULL DEFAULT 'pca' CHECK (method IN ('pca', 'umap'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE "index".map_projections DROP COLUMN method');
  }
}
