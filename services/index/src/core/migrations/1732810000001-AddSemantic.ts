import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * index schema, text and mood search (issue 14):
 *
 * - tracks.tags: the song's MusiCNN tag probabilities from the catalogue snapshot, 100 bytes (MSD 50 then
 *   MTT 50, contracts MSD_TAGS / MTT_TAGS order), each round(p * 255); NULL = not tagged. Quantised so the
 *   in-memory table of a generation costs 100 bytes per song (about 100 MB at 1M songs).
 * - tracks.other_scores: danceable, aggressive, happy, party, relaxed, sad (contracts OTHER_FEATURE_LABELS
 *   order) as real[6]; NULL = not tagged.
 * - tracks.meta_tsv: PostgreSQL full-text vector of the folded title, artist, album and the year
 *   (configuration `simple`: names are neither stemmed nor stop-worded), GIN-indexed: the metadata part
 *   of the text search.
 * - text_queries: how often each (normalised) text query was asked; counts only, no user.
 */
export class AddSemantic1732810000001 implements MigrationInterface {
  name = 'AddSemantic1732810000001';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".tracks ADD COLUMN tags bytea, ADD COLUMN other_scores real[],
      ADD COLUMN meta_tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, search_text || ' ' || coalesce(year::text, ''))) STORED`);
    await q.query(`CREATE INDEX tracks_meta_tsv ON "index".tracks USING gin (meta_tsv)`);
    await q.query(`CREATE TABLE "index".text_queries (
      query text PRIMARY KEY,
      count bigint NOT NULL DEFAULT 0,
      last_asked_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE INDEX text_queries_count ON "index".text_queries (count DESC, last_asked_at DESC)`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE "index".text_queries');
    await q.query('ALTER TABLE "index".tracks DROP COLUMN meta_tsv, DROP COLUMN other_scores, DROP COLUMN tags');
  }
}
