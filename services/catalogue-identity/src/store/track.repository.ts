/**
 * Reads of score rows for other services: one track with its mappings, several at once, the keyset-paged
 * snapshot the index builds its projections from. Lyrics live in lyrics.repository.ts.
 */
import type { DataSource } from 'typeorm';
import { SNAPSHOT_MAX_LIMIT, type LearnedFeatures, type SnapshotTrack, type SnapshotTrackBytes, type TrackDetail, type TrackMappingView } from '@polyphony/contracts';
import { learnedFromRow, learnedParams, LEARNED_COLUMNS_SQL, type LearnedColumns } from './learned';
import type { TrackStore } from '../domain/ports';
import { returnedRows } from './sql';

interface ScoreRow extends LearnedColumns {
  item_id: string;
  title: string;
  artist: string;
  album: string | null;
  album_artist: string | null;
  year: number | null;
  rating: number | null;
  duration_seconds: number | null;
  file_path: string | null;
  tempo: number | null;
  key: string | null;
  scale: string | null;
  energy: number | null;
  lyrics: string | null;
  embedder_version: string;
  embedder_versions: string[] | null;
  created_at: Date;
  updated_at: Date;
  vector?: Buffer | null;
  mappings: Array<{ serverId: string; providerId: string; filePath: string | null; artistId: string | null; matchTier: string; durationSeconds: number | null }>;
}

const MAPPINGS_JSON = `COALESCE((SELECT json_agg(json_build_object('serverId', m.server_id, 'providerId', m.provider_id, 'filePath', m.file_path,
    'artistId', m.artist_id, 'matchTier', m.match_tier, 'durationSeconds', m.duration_seconds) ORDER BY m.server_id, m.provider_id)
    FROM catalogue.track_server_map m WHERE m.item_id = s.item_id), '[]'::json)`;

/** The descriptive columns of a score row that a track detail and a snapshot track both carry, in their order. */
function songColumns(r: ScoreRow): Pick<TrackDetail, 'title' | 'artist' | 'album' | 'albumArtist' | 'year' | 'rating' | 'durationSeconds'> {
  return { title: r.title, artist: r.artist, album: r.album, albumArtist: r.album_artist, year: r.year, rating: r.rating, durationSeconds: r.duration_seconds };
}

function toDetail(r: ScoreRow, includeEmbedding: boolean): TrackDetail {
  const detail: TrackDetail = {
    itemId: r.item_id,
    ...songColumns(r),
    filePath: r.file_path,
    tempo: r.tempo,
    key: r.key,
    scale: r.scale,
    energy: r.energy,
    lyrics: r.lyrics,
    learned: learnedFromRow(r),
    embedderVersion: r.embedder_version,
    embedderVersions: r.embedder_versions ?? [],
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    mappings: r.mappings as TrackMappingView[],
  };
  if (includeEmbedding && r.vector) detail.embedding = r.vector.toString('base64');
  return detail;
}

/** Reads of the score table. */
export class TrackRepository implements TrackStore {
  constructor(private readonly ds: DataSource) {}

  /** One track with its mappings (and its embedding as base64 float32 LE when asked), or undefined. */
  async find(itemId: string, includeEmbedding = true): Promise<TrackDetail | undefined> {
    return (await this.findMany([itemId], includeEmbedding))[0];
  }

  /** Several tracks, in the order asked; unknown ids are left out. */
  async findMany(itemIds: readonly string[], includeEmbedding = false): Promise<TrackDetail[]> {
    if (itemIds.length === 0) return [];
    const rows: ScoreRow[] = await this.ds.query(
      `SELECT s.*, (SELECT l.body FROM catalogue.lyrics l WHERE l.item_id = s.item_id) AS lyrics, ${includeEmbedding ? 'e.vector' : 'NULL::bytea AS vector'}, ${MAPPINGS_JSON} AS mappings,
              (SELECT array_agg(v ORDER BY v) FROM (SELECT e.embedder_version AS v WHERE e.item_id IS NOT NULL
                 UNION SELECT a.embedder_version FROM catalogue.embedding_alt a WHERE a.item_id = s.item_id) vv) AS embedder_versions
         FROM catalogue.score s LEFT JOIN catalogue.embedding e ON e.item_id = s.item_id
        WHERE s.item_id = ANY($1::text[])`,
      [[...new Set(itemIds)]],
    );
    const byId = new Map(rows.map((r) => [r.item_id, toDetail(r, includeEmbedding)]));
    const out: TrackDetail[] = [];
    const seen = new Set<string>();
    for (const id of itemIds) {
      const d = byId.get(id);
      if (d && !seen.has(id)) {
        out.push(d);
        seen.add(id);
      }
    }
    return out;
  }

  /**
   * One snapshot page: songs with an embedding whose id sorts after `after` (the database's text order, which the primary key index serves), at most `limit`,
   * with their mappings. `next` is the last id of the page, or null at the end. Orphans are included
   * (the availability masks hide them). JSON form (`SnapshotPage`): the embedding as base64; see `snapshotBytes`.
   */
  async snapshot(after: string | undefined, limit: number): Promise<{ tracks: SnapshotTrack[]; next: string | null; total?: number }> {
    const page = await this.snapshotBytes(after, limit);
    const tracks = page.tracks.map(({ itemId, vector, ...rest }) => ({ itemId, embedding: Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64'), ...rest }));
    return { tracks, next: page.next, ...(page.total !== undefined ? { total: page.total } : {}) };
  }

  /**
   * The same page as `snapshot`, each embedding as its stored bytes (little-endian float32): what the binary page
   * (`SNAPSHOT_PAGE_BINARY_TYPE`, contracts snapshot-binary.ts) carries. The first page (no `after`) also carries
   * `total`, the number of songs with an embedding at that moment (one count over the two primary keys).
   */
  async snapshotBytes(after: string | undefined, limit: number): Promise<{ tracks: SnapshotTrackBytes[]; next: string | null; total?: number }> {
    const n = Math.max(1, Math.min(SNAPSHOT_MAX_LIMIT, Math.floor(limit)));
    // The keyset bound on both sides of the join: with it on `s` only, the merge join's scan of `embedding` started at
    // the first id and read every row before the page (EXPLAIN at 200k: 104,770 embedding rows fetched for a page
    // half-way, so a whole snapshot was quadratic in the catalogue's size); with both, each page reads its own rows.
    const rows = await this.snapshotRows(`WHERE ($1::text IS NULL OR (s.item_id > $1::text AND e.item_id > $1::text)) ORDER BY s.item_id LIMIT $2`, [after ?? null, n]);
    const tracks = rows.map(toSnapshotBytes);
    const next = rows.length === n ? (rows[rows.length - 1] as ScoreRow).item_id : null;
    if (after !== undefined) return { tracks, next };
    const counted: Array<{ n: string }> = await this.ds.query('SELECT count(*) AS n FROM catalogue.score s JOIN catalogue.embedding e ON e.item_id = s.item_id');
    return { tracks, next, total: Number(counted[0]?.n ?? tracks.length) };
  }

  /**
   * The snapshot rows (the same columns as a snapshot page's, embedding as bytes) of the songs `itemIds`, in their
   * order, each once; unknown ids and songs without an embedding are absent. One query (`= ANY`) on the primary keys.
   */
  async snapshotByIds(itemIds: readonly string[]): Promise<SnapshotTrackBytes[]> {
    if (itemIds.length === 0) return [];
    const rows = await this.snapshotRows(`WHERE s.item_id = ANY($1::text[])`, [[...new Set(itemIds)]]);
    const byId = new Map(rows.map((r) => [(r as ScoreRow).item_id, toSnapshotBytes(r)]));
    const out: SnapshotTrackBytes[] = [];
    for (const id of new Set(itemIds)) {
      const t = byId.get(id);
      if (t) out.push(t);
    }
    return out;
  }

  /**
   * `has_lyrics` is one primary-key lookup per row (lyrics has one row per song): written as EXISTS with the status
   * filter, the planner hashed every 'found' lyrics row for each page instead (a sequential scan of the table a page).
   */
  private snapshotRows(where: string, params: unknown[]): Promise<SnapshotRow[]> {
    return this.ds.query(
      `SELECT s.item_id, s.title, s.artist, s.album, s.album_artist, s.year, s.rating, s.duration_seconds, s.tempo, s.key, s.scale, s.energy, ${LEARNED_COLUMNS_SQL},
              COALESCE((SELECT l.status = 'found' FROM catalogue.lyrics l WHERE l.item_id = s.item_id), false) AS has_lyrics,
              e.vector, e.embedder_version AS embedding_version,
              COALESCE((SELECT json_agg(json_build_object('serverId', m.server_id, 'providerId', m.provider_id, 'artistId', m.artist_id) ORDER BY m.server_id, m.provider_id)
                        FROM catalogue.track_server_map m WHERE m.item_id = s.item_id), '[]'::json) AS map_rows
         FROM catalogue.score s JOIN catalogue.embedding e ON e.item_id = s.item_id
        ${where}`,
      params,
    );
  }

  /**
   * Replaces the learned features (tags, mood_vector, other_features, tags model) of an existing song, e.g.
   * after a re-analysis once the model is installed. Song id, mappings and embedding are untouched. `keepExisting`:
   * only when the song has no tags of `learned.tagsModel` (another copy of a stored song was analysed).
   * @returns false when the song does not exist.
   */
  async setLearned(itemId: string, learned: LearnedFeatures, keepExisting = false): Promise<boolean> {
    // One statement: the song's row is found (`s`) and updated unless `keepExisting` and it already has this model's
    // tags; the answer is whether the song exists, updated or not.
    const rows = returnedRows(
      await this.ds.query(
        `WITH s AS (SELECT item_id, tags_model FROM catalogue.score WHERE item_id = $1),
              u AS (UPDATE catalogue.score c SET mood_vector = $2, other_features = $3, tag_scores = $4::jsonb, tags_model = $5, updated_at = now()
                    FROM s WHERE c.item_id = s.item_id AND (NOT $6::boolean OR s.tags_model IS DISTINCT FROM $5) RETURNING 1)
         SELECT (SELECT count(*) FROM u)::int AS updated FROM s`,
        [itemId, ...learnedParams(learned), keepExisting],
      ),
    );
    return rows.length > 0;
  }

}

/** A song's snapshot row as selected by `snapshotRows`. */
type SnapshotRow = ScoreRow & { vector: Buffer; embedding_version: string; has_lyrics: boolean; map_rows: Array<{ serverId: string; providerId: string; artistId: string | null }> };

function toSnapshotBytes(r: SnapshotRow): SnapshotTrackBytes {
  return {
    itemId: r.item_id,
    vector: r.vector,
    embedderVersion: r.embedding_version,
    ...songColumns(r),
    tempo: r.tempo,
    key: r.key,
    scale: r.scale,
    energy: r.energy,
    learned: learnedFromRow(r),
    hasLyrics: r.has_lyrics,
    mappings: r.map_rows,
  };
}
