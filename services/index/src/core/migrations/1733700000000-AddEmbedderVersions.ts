import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * index schema: the embedder version (issue 13, docs/architecture.md "Embedder versions") of every build and every
 * saved anchor, so an anchor saved in one embedding space is never used against vectors of another after the
 * catalogue switches embedders (both spaces have 200 dimensions: the dimension check cannot tell them apart).
 * Rows that exist when this runs get the version of the index's catalogue copy (`index.tracks`): the space the live
 * generation and the anchors saved against it use. NULL (an empty index) means unknown and is never refused.
 */
export class AddEmbedderVersions1733700000000 implements MigrationInterface {
  name = 'AddEmbedderVersions1733700000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".builds ADD COLUMN embedder_version text`);
    await q.query(`ALTER TABLE "index".anchors ADD COLUMN embedder_version text`);
    const current = `(SELECT embedder_version FROM "index".tracks LIMIT 1)`;
    await q.query(`UPDATE "index".builds SET embedder_version = ${current} WHERE state = 'live'`);
    await q.query(`UPDATE "index".anchors SET embedder_version = ${current}`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE "index".anchors DROP COLUMN embedder_version');
    await q.query('ALTER TABLE "index".builds DROP COLUMN embedder_version');
  }
}
