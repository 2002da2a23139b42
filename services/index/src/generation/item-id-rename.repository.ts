import type { DataSource } from 'typeorm';

/**
 * Renames canonical item ids in the index's own tables (`tracks.item_id` and `cells.item_ids` of every
 * stored generation) in ONE transaction of the index schema: the SQL half of a repoint after the
 * catalogue relabelled its ids (domain: `RepointService`).
 */
export class ItemIdRenameStore {
  constructor(private readonly ds: DataSource) {}

  /**
   * Renames `olds[i]` to `news[i]` for every i (one-to-one; the caller refuses merges).
   * @throws Error when a new id is already held by another song that is not itself renamed away
   *   (nothing is changed then: the transaction rolls back).
   */
  async renameItemIds(olds: readonly string[], news: readonly string[]): Promise<void> {
    await this.ds.transaction(async (m) => {
      await m.query(`CREATE TEMP TABLE relabel_map (old_id text PRIMARY KEY, new_id text NOT NULL UNIQUE) ON COMMIT DROP`);
      await m.query(`INSERT INTO relabel_map (old_id, new_id) SELECT * FROM unnest($1::text[], $2::text[])`, [olds, news]);
      // A target id taken by a song that keeps its id would make two songs one.
      const clash: Array<{ n: number }> = await m.query(
        `SELECT count(*)::int AS n FROM relabel_map r JOIN "index".tracks t ON t.item_id = r.new_id WHERE NOT EXISTS (SELECT 1 FROM relabel_map r2 WHERE r2.old_id = r.new_id)`,
      );
      if ((clash[0]?.n ?? 0) > 0) throw new Error('a new id is already taken by another song in the index');
      await m.query(`UPDATE "index".tracks t SET item_id = r.new_id, updated_at = now() FROM relabel_map r WHERE t.item_id = r.old_id`);
      // Cell member lists keep their order; ids not in the map stay.
      await m.query(
        `UPDATE "index".cells c SET item_ids = (
           SELECT array_agg(COALESCE(r.new_id, u.id) ORDER BY u.ord) FROM unnest(c.item_ids) WITH ORDINALITY AS u(id, ord) LEFT JOIN relabel_map r ON r.old_id = u.id)
         WHERE c.item_ids && ARRAY(SELECT old_id FROM relabel_map)`,
      );
    });
  }
}
