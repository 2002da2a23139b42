import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * index schema: the delta base of a generation (issue 35 delta snapshot; docs/architecture.md "Delta snapshot"),
 * written with the build before its activation when every row of the build was fed and its link contributions
 * recorded. `feed_mark` is the catalogue change-feed position taken before the build read the catalogue
 * (GET /internal/snapshot/changes `mark`), `feed_catalogue` the change-log identity it belongs to, `feed_rows` the
 * generation's row count as built, `feed_links` its provider-artist-link contributions (generation/snapshot-delta.ts
 * `LinkRecorder.encode`). All null for builds from before the columns, builds without a change feed and builds that
 * could not record them: the next build after a restart (or on another replica) then reads the full snapshot.
 */
export class AddBuildFeedMark1734800000000 implements MigrationInterface {
  name = 'AddBuildFeedMark1734800000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".builds ADD COLUMN feed_mark text, ADD COLUMN feed_catalogue text, ADD COLUMN feed_rows integer, ADD COLUMN feed_links bytea`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".builds DROP COLUMN feed_mark, DROP COLUMN feed_catalogue, DROP COLUMN feed_rows, DROP COLUMN feed_links`);
  }
}
