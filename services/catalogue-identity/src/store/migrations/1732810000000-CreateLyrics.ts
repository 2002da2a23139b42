import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * catalogue schema, lyrics (issue 14; reference-implementation.md 2.4):
 *
 * - lyrics: one row per song whose lyrics were looked up: status found | none | instrumental (tagged
 *   instrumental by MusiCNN, not fetched), the plain text, the server it came from, the text-search
 *   configuration chosen for its language (store/lyrics.repository.ts `detectLanguageSql`) and the
 *   tsvector built with it (GIN index: POST /api/lyrics/search/text). A song without a row has not been
 *   looked up yet (the backfill's work list).
 * - lyrics_term: document frequency of every lexeme per text-search configuration over the found
 *   lyrics (the idf of SemGrove's TF-IDF cosine), maintained by the repository on every write.
 *
 * The old `score.lyrics` column moves here (rows with text become status found, source unknown).
 */
export class CreateLyrics1732810000000 implements MigrationInterface {
  name = 'CreateLyrics1732810000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE catalogue.lyrics (
      item_id text PRIMARY KEY REFERENCES catalogue.score (item_id) ON DELETE CASCADE ON UPDATE CASCADE,
      status text NOT NULL CHECK (status IN ('found', 'none', 'instrumental')),
      body text,
      language regconfig NOT NULL DEFAULT 'simple',
      tsv tsvector,
      source_server_id text,
      source_kind text,
      fetched_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((status = 'found') = (body IS NOT NULL))
    )`);
    await q.query(`CREATE INDEX lyrics_tsv ON catalogue.lyrics USING gin (tsv)`);
    await q.query(`CREATE TABLE catalogue.lyrics_term (
      language regconfig NOT NULL,
      lexeme text NOT NULL,
      df integer NOT NULL,
      PRIMARY KEY (language, lexeme)
    )`);
    await q.query(`INSERT INTO catalogue.lyrics (item_id, status, body, language, tsv)
      SELECT item_id, 'found', lyrics, 'simple', to_tsvector('simple', lyrics) FROM catalogue.score WHERE lyrics IS NOT NULL AND btrim(lyrics) <> ''`);
    await q.query(`INSERT INTO catalogue.lyrics_term (language, lexeme, df)
      SELECT 'simple', u.lexeme, count(*) FROM catalogue.lyrics l, unnest(l.tsv) u GROUP BY u.lexeme`);
    await q.query(`ALTER TABLE catalogue.score DROP COLUMN lyrics`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE catalogue.score ADD COLUMN lyrics text`);
    await q.query(`UPDATE catalogue.score s SET lyrics = l.body FROM catalogue.lyrics l WHERE l.item_id = s.item_id AND l.status = 'found'`);
    await q.query(`DROP TABLE catalogue.lyrics_term`);
    await q.query(`DROP TABLE catalogue.lyrics`);
  }
}
