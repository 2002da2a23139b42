import type { DataSource } from 'typeorm';
import type { BrowseSelection, BrowseStore } from '../domain/ports';

/** `q` as an ILIKE pattern matching it anywhere (`%`, `_` and `\` taken literally). */
export function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The browse order of songs: the expressions of the `score_browse_order` index (migration BrowseOrder), selected as
 * k_artist, k_album, k_title so the ORDER BY over the inlined CTE matches the index.
 */
const BROWSE_ORDER_KEYS = `lower(s.artist) AS k_artist, lower(coalesce(s.album, '')) AS k_album, lower(s.title) AS k_title`;

/**
 * The browse queries over catalogue.score and catalogue.track_server_map (GET /internal/browse).
 * One SQL text per selection: a `songs` CTE keeps the songs of the filter (with their files counted on the
 * selected server, or on every server), then rows are the songs themselves or their groups per artist or album.
 * Parameters: $1 = server id or null, $2 = ILIKE pattern or null.
 */
export class BrowseRepository implements BrowseStore {
  constructor(private readonly ds: DataSource) {}

  /**
   * The `songs` CTE (inlined by PostgreSQL: referenced once). The songs are read in the browse order from the
   * `score_browse_order` index and each song's files are counted by an index lookup (`track_server_map_item`), so a
   * page or a capped count stops after the rows it needs instead of grouping every mapping row first.
   */
  private songsCte(sel: BrowseSelection): string {
    const text = `($2::text IS NULL OR s.title ILIKE $2 OR s.artist ILIKE $2 OR coalesce(s.album, '') ILIKE $2 OR coalesce(s.album_artist, '') ILIKE $2)`;
    const cols = `s.item_id, s.title, s.artist, s.album, s.album_artist, s.year, s.duration_seconds, ${BROWSE_ORDER_KEYS}`;
    if (sel.filter === 'orphan') {
      return `songs AS (SELECT ${cols}, NULL::text AS first_id, 0 AS copies, 0 AS servers FROM catalogue.score s
                WHERE NOT EXISTS (SELECT 1 FROM catalogue.track_server_map m WHERE m.item_id = s.item_id) AND ($1::text IS NULL OR true) /* $1 typed, unused: orphans are on no server */ AND ${text})`;
    }
    const copies = sel.filter === 'unique' ? 'f.copies = 1' : sel.filter === 'duplicates' ? 'f.copies > 1' : 'f.copies > 0';
    return `songs AS (SELECT ${cols}, f.first_id, f.copies, f.servers FROM catalogue.score s
              CROSS JOIN LATERAL (SELECT count(*)::int AS copies, count(DISTINCT m.server_id)::int AS servers, min(m.provider_id COLLATE "C") AS first_id
                                    FROM catalogue.track_server_map m WHERE m.item_id = s.item_id AND ($1::text IS NULL OR m.server_id = $1)) f
             WHERE ${text} AND ${copies})`;
  }

  /** The SELECT over `songs` for the kind, in its stable order (without LIMIT). */
  private select(sel: BrowseSelection): string {
    if (sel.kind === 'artists') {
      return `SELECT min(artist) AS artist, count(*)::int AS songs, count(DISTINCT lower(album)) FILTER (WHERE coalesce(album, '') <> '')::int AS albums
                FROM songs WHERE artist <> '' GROUP BY k_artist ORDER BY k_artist`;
    }
    if (sel.kind === 'albums') {
      return `SELECT min(album) AS album, min(coalesce(nullif(album_artist, ''), artist)) AS album_artist, count(*)::int AS songs, max(year) AS year
                FROM songs WHERE coalesce(album, '') <> ''
               GROUP BY lower(coalesce(nullif(album_artist, ''), artist)), lower(album) ORDER BY lower(coalesce(nullif(album_artist, ''), artist)), lower(album)`;
    }
    return `SELECT * FROM songs ORDER BY k_artist, k_album, k_title, item_id`;
  }

  private params(sel: BrowseSelection): unknown[] {
    return [sel.serverId ?? null, sel.q ? likePattern(sel.q) : null];
  }

  async rows(sel: BrowseSelection, limit: number, offset: number): Promise<Array<Record<string, unknown>>> {
    const rows: Array<Record<string, unknown>> = await this.ds.query(`WITH ${this.songsCte(sel)} ${this.select(sel)} LIMIT ${Math.trunc(limit)} OFFSET ${Math.trunc(offset)}`, this.params(sel));
    if (sel.kind !== 'songs') return rows;
    const files = new Map<string, Array<{ item_id: string; path: string | null }>>();
    if (sel.filter === 'duplicates' && sel.serverId && rows.length > 0) {
      const found: Array<{ item_id: string; provider_id: string; file_path: string | null }> = await this.ds.query(
        `SELECT item_id, provider_id, file_path FROM catalogue.track_server_map WHERE server_id = $1 AND item_id = ANY($2) ORDER BY item_id, provider_id COLLATE "C"`,
        [sel.serverId, rows.map((r) => r.item_id)],
      );
      for (const f of found) {
        const list = files.get(f.item_id) ?? [];
        list.push({ item_id: f.provider_id, path: f.file_path });
        files.set(f.item_id, list);
      }
    }
    return rows.map((r) => ({
      // The selected server's id (first file by id) with a server, the canonical id without one and for orphans.
      item_id: sel.serverId && r.first_id ? r.first_id : r.item_id,
      title: r.title,
      author: r.artist,
      album: r.album ?? null,
      album_artist: r.album_artist ?? null,
      year: r.year ?? null,
      duration: r.duration_seconds === null || r.duration_seconds === undefined ? null : Number(r.duration_seconds),
      copies: Number(r.copies),
      servers: Number(r.servers),
      ...(sel.filter === 'duplicates' ? { files: files.get(r.item_id as string) ?? [] } : {}),
    }));
  }

  async count(sel: BrowseSelection, cap: number): Promise<number> {
    const [r] = await this.ds.query(`WITH ${this.songsCte(sel)} SELECT count(*)::int AS n FROM (${this.select(sel)} LIMIT ${Math.trunc(cap) + 1}) x`, this.params(sel));
    return Number(r?.n ?? 0);
  }
}
