import type { DataSource } from 'typeorm';
import type { ChatCatalogPort, DescriptorFilter } from './tools';
import { foldText } from '../core/text';

/**
 * Catalogue queries of the instant-playlist tools over the index's track copy. Energy filters are
 * ranks within the library (percent_rank over `energy`), so "low" means the quietest third whatever
 * the embedder's energy unit. Every value is a bound parameter.
 */
export class PgChatCatalog implements ChatCatalogPort {
  constructor(private readonly ds: DataSource) {}

  async filter(f: DescriptorFilter & { artist?: string }, limit: number): Promise<string[]> {
    const rows: Array<{ item_id: string }> = await this.ds.query(
      `WITH ranked AS (
         SELECT item_id, year, tempo, key, scale, artist_n, percent_rank() OVER (ORDER BY energy) AS energy_rank, energy
           FROM "index".tracks
       )
       SELECT item_id FROM ranked
        WHERE ($1::int IS NULL OR year >= $1) AND ($2::int IS NULL OR year <= $2)
          AND ($3::real IS NULL OR tempo >= $3) AND ($4::real IS NULL OR tempo <= $4)
          AND ($5::float8 IS NULL OR (energy IS NOT NULL AND energy_rank >= $5)) AND ($6::float8 IS NULL OR (energy IS NOT NULL AND energy_rank <= $6))
          AND ($7::text IS NULL OR key = $7) AND ($8::text IS NULL OR scale = $8)
          AND ($9::text IS NULL OR artist_n = $9)
        ORDER BY md5(item_id)
        LIMIT $10`,
      [f.yearMin ?? null, f.yearMax ?? null, f.tempoMin ?? null, f.tempoMax ?? null, f.energyRankMin ?? null, f.energyRankMax ?? null, f.key ?? null, f.scale ?? null, f.artist !== undefined ? foldText(f.artist) : null, limit],
    );
    return rows.map((r) => r.item_id);
  }

  async artistsNamed(folded: string[]): Promise<Map<string, string>> {
    if (!folded.length) return new Map();
    const rows: Array<{ artist_n: string; artist: string }> = await this.ds.query(`SELECT DISTINCT ON (artist_n) artist_n, artist FROM "index".tracks WHERE artist_n = ANY($1) ORDER BY artist_n, artist`, [folded]);
    return new Map(rows.map((r) => [r.artist_n, r.artist]));
  }
}
