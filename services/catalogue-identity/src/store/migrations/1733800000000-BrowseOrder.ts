import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The browse order of songs (GET /api/dashboard/browse, issue 32): artist, album, title (case-folded), id. With this
 * index a browse page reads the songs in order and stops after the page (and the count after BROWSE_COUNT_CAP + 1
 * rows) instead of sorting the whole catalogue: bench/src/catalogue-identity/browse-1m.ts. Idempotent.
 */
export class BrowseOrder1733800000000 implements MigrationInterface {
  name = 'BrowseOrder1733800000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS score_browse_order ON catalogue.score (lower(artist), lower(coalesce(album, '')), lower(title), item_id)`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX IF EXISTS catalogue.score_browse_order');
  }
}
