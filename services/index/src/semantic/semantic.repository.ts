/**
 * Reads and writes of the text search in the index schema: the learned features of the tracks (for the
 * per-generation SemanticTable), metadata full-text matches, and the query counts of top_queries.
 */
import type { DataSource } from 'typeorm';
import type { SemanticStore } from './ports';
import type { SemanticRowSource } from './semantic-table';

const T = '"index".tracks';

/** Largest number of metadata matches read per word (a word matching more songs says little). */
export const META_MATCH_LIMIT = 100_000;

export class SemanticRepository implements SemanticStore {
  constructor(private readonly ds: DataSource) {}

  /**
   * Tags, other features, tempo and energy of every track row, as keyset pages of 20,000 rows in item-id order
   * (one page alive at a time while the caller folds it into its columns).
   */
  async *semanticPages(): AsyncGenerator<SemanticRowSource[]> {
    let after: string | null = null;
    for (;;) {
      const rows: Array<{ item_id: string; tags: Buffer | null; other_scores: number[] | null; tempo: number | null; energy: number | null }> = await this.ds.query(
        `SELECT item_id, tags, other_scores, tempo, energy FROM ${T}
          WHERE ($1::text IS NULL OR item_id COLLATE "C" > $1::text COLLATE "C") ORDER BY item_id COLLATE "C" LIMIT 20000`,
        [after],
      );
      yield rows.map((r) => ({ itemId: r.item_id, tags: r.tags, other: r.other_scores, tempo: r.tempo, energy: r.energy }));
      if (rows.length < 20000) return;
      after = rows[rows.length - 1]!.item_id;
    }
  }

  /** Tags, other features, tempo and energy of the given canonical ids (chunks of 10,000 ids, `= ANY` on the key). */
  async semanticRows(itemIds: readonly string[]): Promise<SemanticRowSource[]> {
    const out: SemanticRowSource[] = [];
    for (let i = 0; i < itemIds.length; i += 10_000) {
      const rows: Array<{ item_id: string; tags: Buffer | null; other_scores: number[] | null; tempo: number | null; energy: number | null }> = await this.ds.query(
        `SELECT item_id, tags, other_scores, tempo, energy FROM ${T} WHERE item_id = ANY($1::text[])`,
        [itemIds.slice(i, i + 10_000)],
      );
      for (const r of rows) out.push({ itemId: r.item_id, tags: r.tags, other: r.other_scores, tempo: r.tempo, energy: r.energy });
    }
    return out;
  }

  /**
   * Canonical ids whose folded title, artist, album or year contain `word` as a whole word
   * (PostgreSQL full-text search, configuration simple, GIN index tracks_meta_tsv).
   */
  async metadataMatches(word: string): Promise<string[]> {
    const rows: Array<{ item_id: string }> = await this.ds.query(
      `SELECT item_id FROM ${T} WHERE meta_tsv @@ plainto_tsquery('simple'::regconfig, $1) LIMIT ${META_MATCH_LIMIT}`,
      [word],
    );
    return rows.map((r) => r.item_id);
  }

  /** Counts one more asking of a (normalised) query. */
  async countQuery(query: string): Promise<void> {
    await this.ds.query(
      `INSERT INTO "index".text_queries (query, count, last_asked_at) VALUES ($1, 1, now())
       ON CONFLICT (query) DO UPDATE SET count = "index".text_queries.count + 1, last_asked_at = now()`,
      [query],
    );
  }

  /** The most asked queries, most frequent first (ties: most recent first). */
  async topQueries(limit: number): Promise<string[]> {
    const rows: Array<{ query: string }> = await this.ds.query(`SELECT query FROM "index".text_queries ORDER BY count DESC, last_asked_at DESC, query LIMIT $1`, [limit]);
    return rows.map((r) => r.query);
  }
}
