import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * catalogue schema, embedder versions (issue 13, "Embedder versions"):
 *
 * - embedding_alt: a song's vectors of embedder versions other than its served one (`catalogue.embedding` keeps
 *   the served vector, its signature and bands). A worker with the learned model sends its dsp-v1 vector too,
 *   and re-analysis after installing the model adds the learned vector here, so the catalogue can switch
 *   versions without touching ids, mappings or playlists.
 * - embedding_state: one row; served_version = the version of every `catalogue.embedding` row (the index and the
 *   identity gate use it; NULL while the catalogue is empty), target_version = the version the workers produce
 *   now. Initialised from the stored vectors (their most common version).
 */
export class EmbeddingVersions1733600000000 implements MigrationInterface {
  name = 'EmbeddingVersions1733600000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE catalogue.embedding_alt (
      item_id text NOT NULL REFERENCES catalogue.score (item_id) ON DELETE CASCADE ON UPDATE CASCADE,
      embedder_version text NOT NULL,
      vector bytea NOT NULL,
      PRIMARY KEY (item_id, embedder_version)
    )`);
    await q.query(`CREATE INDEX embedding_alt_version ON catalogue.embedding_alt (embedder_version, item_id)`);
    await q.query(`CREATE TABLE catalogue.embedding_state (
      id smallint PRIMARY KEY CHECK (id = 1),
      served_version text,
      target_version text,
      switched_at timestamptz,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`INSERT INTO catalogue.embedding_state (id, served_version, target_version)
      SELECT 1, v, v FROM (SELECT (SELECT embedder_version FROM catalogue.embedding GROUP BY embedder_version ORDER BY count(*) DESC, embedder_version LIMIT 1) AS v) x`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE catalogue.embedding_state`);
    await q.query(`DROP TABLE catalogue.embedding_alt`);
  }
}
