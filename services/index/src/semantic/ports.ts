import type { SemanticRowSource } from './semantic-table';

/** What the text search reads and writes in the index schema (store: semantic.repository.ts). */
export interface SemanticStore {
  /** Tags, other features, tempo and energy of every track row, as keyset pages in item-id order. */
  semanticPages(): AsyncIterable<SemanticRowSource[]>;
  /**
   * The same columns of the given canonical ids (absent ids are missing; any order): a live-library revision's
   * appended rows. Optional: without it a revision's table is read from the pages.
   */
  semanticRows?(itemIds: readonly string[]): Promise<SemanticRowSource[]>;
  /** Canonical ids whose folded title, artist, album or year contain `word` as a whole word. */
  metadataMatches(word: string): Promise<string[]>;
  /** Counts one text query (top_queries). */
  countQuery(query: string): Promise<void>;
  /** The `limit` most asked queries, most asked first. */
  topQueries(limit: number): Promise<string[]>;
}
