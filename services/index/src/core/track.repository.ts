import { createHash } from 'node:crypto';
import { MSD_TAGS, MTT_TAGS, OTHER_FEATURE_LABELS, parseLabelScores, type LearnedFeatures, type SnapshotTrackBytes } from '@polyphony/contracts';
import type { DataSource, EntityManager } from 'typeorm';
import { foldText } from './text';
import { bufferToF32 } from './codec';
import type { SearchHit, TrackDetails, TrackFilter, TrackMeta, TrackVectorBatch } from './track-records';

export type { SearchHit, TrackDetails, TrackFilter, TrackMeta, TrackVectorBatch } from './track-records';

/** Tag bytes per tagged song: MSD then MTT probabilities, round(p * 255) each (migration 1732810000001). */
export const TAG_COUNT = MSD_TAGS.length + MTT_TAGS.length;

/** The quantised tag bytes (the `tags` column: MSD then MTT, round(p * 255) each), or null when the song has no tags (MTT absent = zeros). */
export function tagBytesOf(learned: LearnedFeatures | null | undefined): Buffer | null {
  if (!learned) return null;
  const out = Buffer.alloc(TAG_COUNT);
  const put = (values: readonly number[] | undefined, offset: number) => values?.forEach((p, i) => (out[offset + i] = Math.max(0, Math.min(255, Math.round(p * 255)))));
  put(learned.tags.msd, 0);
  put(learned.tags.mtt, MSD_TAGS.length);
  return out;
}

/** base64 of the quantised tag bytes (`tagBytesOf`), or null when the song has no tags. */
export function encodeTags(learned: LearnedFeatures | null | undefined): string | null {
  return tagBytesOf(learned)?.toString('base64') ?? null;
}

/** `danceable,aggressive,happy,party,relaxed,sad` probabilities as a comma list (real[] text), or null without tags. */
export function otherFeaturesOf(learned: LearnedFeatures | null | undefined): string | null {
  if (!learned) return null;
  const pairs = new Map(parseLabelScores(learned.otherFeatures) ?? []);
  return OTHER_FEATURE_LABELS.map((l) => String(pairs.get(l) ?? 0)).join(',');
}

/** Dimension of the embeddings the index holds (the contract's 200-d MusiCNN vectors). */
export const VECTOR_DIM = 200;

/**
 * The float32 values of a snapshot embedding (little-endian bytes), or undefined when the index cannot hold it:
 * not VECTOR_DIM values, a non-finite value, or all zeros (no direction: it cannot be ranked by cosine distance).
 * The one rule for both the catalogue copy (`upsertSnapshot` skips such tracks) and the build fed from the pages.
 */
export function snapshotVector(bytes: Uint8Array): Float32Array | undefined {
  if (bytes.byteLength !== VECTOR_DIM * 4) return undefined;
  const f = bufferToF32(bytes);
  let nonZero = false;
  for (let i = 0; i < f.length; i++) {
    const x = f[i]!;
    if (!Number.isFinite(x)) return undefined;
    if (x !== 0) nonZero = true;
  }
  return nonZero ? f : undefined;
}

const T = '"index".tracks';

const META_COLUMNS = 'item_id, title, artist, album, album_artist, mood_vector, other_features, tempo, energy';
type MetaRow = { item_id: string; title: string; artist: string; album: string | null; album_artist: string | null; mood_vector: string | null; other_features: string | null; tempo: number | null; energy: number | null };
function metaOfRow(r: MetaRow): TrackMeta {
  return { itemId: r.item_id, title: r.title, artist: r.artist, album: r.album, albumArtist: r.album_artist, moodVector: r.mood_vector, otherFeatures: r.other_features, tempo: r.tempo === null ? null : Number(r.tempo), energy: r.energy === null ? null : Number(r.energy) };
}

/** Embedder versions of neural (TensorFlow.js) models start with this prefix (analysis-worker NeuralEmbedder). */
export const NEURAL_EMBEDDER_PREFIX = 'tfjs:';
const FILTER_SQL: Record<TrackFilter, string> = {
  learned: 'tags_model IS NOT NULL',
  lyrics: 'has_lyrics',
  neural: `embedder_version LIKE '${NEURAL_EMBEDDER_PREFIX}%'`,
};

/**
 * The index service's copy of the catalogue (`index.tracks`): vectors, display metadata and the folded
 * search columns. Written only by the rebuild (snapshot sync), read by every feature.
 */
export class TrackRepository {
  constructor(private readonly ds: DataSource) {}

  /**
   * Upserts one snapshot page, marking every row with `build` (rows not marked by a successful build are
   * deleted when it goes live, see GenerationRepository.activate). A row already marked by a newer build is left
   * as it is: a live-library batch of the serving generation (issue 35) that lands while the next build writes its
   * snapshot must neither overwrite that build's row nor take its mark away (the activation would delete the row). Tracks whose embedding is not 200
   * finite float32 values, or is all zeros (`snapshotVector`), are skipped and returned.
   * One INSERT ... SELECT FROM unnest(...) statement per call; the vectors go as one binary parameter.
   */
  async upsertSnapshot(tracks: readonly SnapshotTrackBytes[], build: number): Promise<{ written: number; skipped: string[] }> {
    const cols: unknown[][] = Array.from({ length: 24 }, () => []);
    const vectors: Buffer[] = [];
    const skipped: string[] = [];
    for (const t of tracks) {
      if (!snapshotVector(t.vector)) {
        skipped.push(t.itemId);
        continue;
      }
      const vector = Buffer.from(t.vector.buffer, t.vector.byteOffset, t.vector.byteLength);
      const titleN = foldText(t.title);
      const artistN = foldText(t.artist);
      const albumN = foldText(t.album);
      const learned = t.learned ?? null;
      // Changes whenever the analysis a client stores changes (reference: md5 of mood_vector|energy|other_features|tempo|key|scale).
      const fp = createHash('md5')
        .update(vector)
        .update(`|${t.embedderVersion}|${t.tempo ?? ''}|${t.key ?? ''}|${t.scale ?? ''}|${t.energy ?? ''}|${learned?.moodVector ?? ''}|${learned?.otherFeatures ?? ''}`)
        .digest('hex')
        .slice(0, 16);
      vectors.push(vector);
      const values = [
        t.itemId,
        t.embedderVersion,
        t.title,
        t.artist,
        t.album,
        t.albumArtist,
        t.year === null ? null : Math.round(t.year),
        t.rating,
        t.durationSeconds,
        t.tempo,
        t.key,
        t.scale,
        t.energy,
        titleN,
        artistN,
        albumN,
        ` ${titleN} ${artistN} ${albumN}`.trimEnd(),
        fp,
        learned?.moodVector ?? null,
        learned?.otherFeatures ?? null,
        learned?.tagsModel ?? null,
        t.hasLyrics ?? false,
        encodeTags(t.learned),
        otherFeaturesOf(t.learned),
      ];
      values.forEach((v, i) => cols[i]!.push(v));
    }
    if (cols[0]!.length === 0) return { written: 0, skipped };
    // Vectors travel as one binary parameter, cut per row by ordinality (fixed 800-byte records).
    const blob = Buffer.concat(vectors);
    await this.ds.query(
      `INSERT INTO ${T} (item_id, vector, embedder_version, title, artist, album, album_artist, year, rating, duration, tempo, key, scale, energy,
                         title_n, artist_n, album_n, search_text, fp, mood_vector, other_features, tags_model, has_lyrics, tags, other_scores, seen_build, updated_at)
       SELECT u.item_id, substring($25::bytea FROM ((u.ord - 1) * ${VECTOR_DIM * 4} + 1)::int FOR ${VECTOR_DIM * 4}), u.ev, u.title, u.artist, u.album, u.album_artist,
              u.year, u.rating, u.duration, u.tempo, u.key, u.scale, u.energy, u.title_n, u.artist_n, u.album_n, u.search_text, u.fp,
              u.mood_vector, u.other_features, u.tags_model, u.has_lyrics,
              CASE WHEN u.tags IS NULL THEN NULL ELSE decode(u.tags, 'base64') END,
              CASE WHEN u.other IS NULL THEN NULL ELSE string_to_array(u.other, ',')::real[] END, $26::bigint, now()
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::real[], $9::float8[], $10::real[],
                     $11::text[], $12::text[], $13::real[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[],
                     $19::text[], $20::text[], $21::text[], $22::boolean[], $23::text[], $24::text[])
              WITH ORDINALITY AS u(item_id, ev, title, artist, album, album_artist, year, rating, duration, tempo, key, scale, energy,
                                   title_n, artist_n, album_n, search_text, fp, mood_vector, other_features, tags_model, has_lyrics, tags, other, ord)
       ON CONFLICT (item_id) DO UPDATE SET
         vector = EXCLUDED.vector, embedder_version = EXCLUDED.embedder_version, title = EXCLUDED.title, artist = EXCLUDED.artist,
         album = EXCLUDED.album, album_artist = EXCLUDED.album_artist, year = EXCLUDED.year, rating = EXCLUDED.rating,
         duration = EXCLUDED.duration, tempo = EXCLUDED.tempo, key = EXCLUDED.key, scale = EXCLUDED.scale, energy = EXCLUDED.energy,
         title_n = EXCLUDED.title_n, artist_n = EXCLUDED.artist_n, album_n = EXCLUDED.album_n, search_text = EXCLUDED.search_text,
         fp = EXCLUDED.fp, mood_vector = EXCLUDED.mood_vector, other_features = EXCLUDED.other_features, tags_model = EXCLUDED.tags_model,
         has_lyrics = EXCLUDED.has_lyrics, tags = EXCLUDED.tags, other_scores = EXCLUDED.other_scores, seen_build = EXCLUDED.seen_build, updated_at = now()
       WHERE ${T}.seen_build <= EXCLUDED.seen_build`,
      [...cols, blob, build],
    );
    return { written: cols[0]!.length, skipped };
  }

  /** Number of rows marked by `build`. */
  async countSeen(build: number): Promise<number> {
    const rows: Array<{ n: string }> = await this.ds.query(`SELECT count(*) AS n FROM ${T} WHERE seen_build = $1`, [build]);
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Deletes every row last marked by an OLDER build than `build` (inside the activation transaction): the songs the
   * build's snapshot did not see. Rows a newer build marked meanwhile stay (marks never go down, see upsertSnapshot).
   * Returns the count.
   */
  async deleteNotSeen(manager: EntityManager, build: number): Promise<number> {
    const res: [unknown[], number] = await manager.query(`DELETE FROM ${T} WHERE seen_build < $1`, [build]);
    return Array.isArray(res) && typeof res[1] === 'number' ? res[1] : 0;
  }

  /**
   * Deletes the rows `ids` last marked by an older build than `build` (a delta build's removed songs, inside the
   * activation transaction). @returns the count
   */
  async deleteIds(manager: EntityManager, ids: readonly string[], build: number): Promise<number> {
    if (ids.length === 0) return 0;
    const res: [unknown[], number] = await manager.query(`DELETE FROM ${T} WHERE item_id = ANY($1::text[]) AND seen_build < $2`, [[...ids], build]);
    return Array.isArray(res) && typeof res[1] === 'number' ? res[1] : 0;
  }

  /**
   * Streams the vectors marked by `build` in canonical-id byte order (keyset pagination on
   * `item_id COLLATE "C"`), `batchSize` rows per query, so the build reads the catalogue in one pass
   * without holding query results for all rows at once.
   */
  async *streamVectors(build: number, batchSize = 2000): AsyncGenerator<TrackVectorBatch> {
    let after: string | null = null;
    for (;;) {
      const rows: Array<{ item_id: string; vector: Buffer; artist: string; artist_n: string }> = await this.ds.query(
        `SELECT item_id, vector, artist, artist_n FROM ${T}
          WHERE seen_build = $1 AND ($2::text IS NULL OR item_id COLLATE "C" > $2::text COLLATE "C")
          ORDER BY item_id COLLATE "C" LIMIT $3`,
        [build, after, batchSize],
      );
      if (rows.length === 0) return;
      const vectors = new Float32Array(rows.length * VECTOR_DIM);
      const bytes = new Uint8Array(vectors.buffer);
      rows.forEach((r, i) => bytes.set(r.vector, i * VECTOR_DIM * 4));
      yield { ids: rows.map((r) => r.item_id), artistKeys: rows.map((r) => r.artist_n), artistNames: rows.map((r) => r.artist), vectors };
      after = rows[rows.length - 1]!.item_id;
      if (rows.length < batchSize) return;
    }
  }

  /**
   * Streams the display metadata of every row (what `metadata` returns), in primary-key order (the column's
   * collation: the key's index serves each page; a `COLLATE "C"` order made every page sort the whole table,
   * ~100 full scans at 1M songs), keyset paged `batchSize` rows per query: the bulk load of a generation's
   * in-memory metadata (TrackMetaStore), which does not depend on the order.
   */
  async *streamMetadata(batchSize = 10_000): AsyncGenerator<TrackMeta[]> {
    let after: string | null = null;
    for (;;) {
      const rows: MetaRow[] = await this.ds.query(
        `SELECT ${META_COLUMNS} FROM ${T} WHERE ($1::text IS NULL OR item_id > $1::text) ORDER BY item_id LIMIT $2`,
        [after, batchSize],
      );
      if (rows.length === 0) return;
      yield rows.map(metaOfRow);
      after = rows[rows.length - 1]!.item_id;
      if (rows.length < batchSize) return;
    }
  }

  /** Display metadata of the given canonical ids (absent ids are missing from the map). Chunked by 10000. */
  async metadata(ids: readonly string[]): Promise<Map<string, TrackMeta>> {
    const out = new Map<string, TrackMeta>();
    for (let i = 0; i < ids.length; i += 10_000) {
      const chunk = ids.slice(i, i + 10_000);
      const rows: MetaRow[] = await this.ds.query(`SELECT ${META_COLUMNS} FROM ${T} WHERE item_id = ANY($1::text[])`, [chunk]);
      for (const r of rows) out.set(r.item_id, metaOfRow(r));
    }
    return out;
  }

  /** Full rows (without vectors) of the given canonical ids. */
  async details(ids: readonly string[]): Promise<Map<string, TrackDetails>> {
    const out = new Map<string, TrackDetails>();
    if (ids.length === 0) return out;
    const rows: Array<Record<string, unknown>> = await this.ds.query(
      `SELECT item_id, title, artist, album, album_artist, year, rating, duration, tempo, key, scale, energy, fp, embedder_version,
              mood_vector, other_features, tags_model, has_lyrics, tags
         FROM ${T} WHERE item_id = ANY($1::text[])`,
      [ids],
    );
    for (const r of rows) {
      out.set(String(r.item_id), {
        itemId: String(r.item_id),
        title: String(r.title),
        artist: String(r.artist),
        album: (r.album as string | null) ?? null,
        albumArtist: (r.album_artist as string | null) ?? null,
        year: (r.year as number | null) ?? null,
        rating: (r.rating as number | null) ?? null,
        duration: (r.duration as number | null) ?? null,
        tempo: (r.tempo as number | null) ?? null,
        key: (r.key as string | null) ?? null,
        scale: (r.scale as string | null) ?? null,
        energy: (r.energy as number | null) ?? null,
        fp: String(r.fp),
        embedderVersion: String(r.embedder_version),
        moodVector: (r.mood_vector as string | null) ?? null,
        otherFeatures: (r.other_features as string | null) ?? null,
        tagsModel: (r.tags_model as string | null) ?? null,
        hasLyrics: r.has_lyrics === true,
        tags: Buffer.isBuffer(r.tags) ? r.tags : null,
      });
    }
    return out;
  }

  /** Raw (not normalised) stored vectors of the given ids. */
  async rawVectors(ids: readonly string[]): Promise<Map<string, Float32Array>> {
    const out = new Map<string, Float32Array>();
    if (ids.length === 0) return out;
    const rows: Array<{ item_id: string; vector: Buffer }> = await this.ds.query(`SELECT item_id, vector FROM ${T} WHERE item_id = ANY($1::text[])`, [ids]);
    for (const r of rows) out.set(r.item_id, bufferToF32(r.vector));
    return out;
  }

  /** Canonical ids whose folded title and artist equal the given folded values, byte order. */
  async findByTitleArtist(titleN: string, artistN: string): Promise<string[]> {
    const rows: Array<{ item_id: string }> = await this.ds.query(
      `SELECT item_id FROM ${T} WHERE artist_n = $1 AND title_n = $2 ORDER BY item_id COLLATE "C" LIMIT 100`,
      [artistN, titleN],
    );
    return rows.map((r) => r.item_id);
  }

  /**
   * Token AND search: every token must start a word of the folded ` title artist album` text (word-prefix
   * match, so "5" finds "Artist 5" and "Artist 50" but not "Artist 25"). Score per token and field, field
   * weights title 3 / artist 2 / album 1 (reference ranking): the full weight when the token is a whole
   * word of the field, half when it only starts one. Best first, then folded title, then id; at most
   * `limit`. Tokens are folded text (letters and digits), so no LIKE escaping is needed. The filter
   * uses the trigram GIN index on `search_text` where the migration could create it. `filter` keeps only
   * songs with learned tags, with lyrics, or embedded by a neural model.
   */
  async search(tokens: readonly string[], limit: number, filter?: TrackFilter): Promise<SearchHit[]> {
    if (tokens.length === 0) return [];
    const params: unknown[] = [];
    const where: string[] = [];
    const score: string[] = [];
    for (const t of tokens) {
      params.push(`% ${t}%`, `% ${t} %`);
      const prefix = `$${params.length - 1}`;
      const exact = `$${params.length}`;
      where.push(`search_text LIKE ${prefix}`);
      for (const [col, w] of [['title_n', 3], ['artist_n', 2], ['album_n', 1]] as const) {
        score.push(`(CASE WHEN (' ' || ${col} || ' ') LIKE ${exact} THEN ${w} WHEN (' ' || ${col}) LIKE ${prefix} THEN ${w / 2} ELSE 0 END)`);
      }
    }
    if (filter) where.push(FILTER_SQL[filter]);
    params.push(limit);
    const rows: Array<{ item_id: string; score: number }> = await this.ds.query(
      `SELECT item_id, (${score.join(' + ')})::float8 AS score FROM ${T} WHERE ${where.join(' AND ')}
        ORDER BY score DESC, title_n COLLATE "C", item_id COLLATE "C" LIMIT $${params.length}`,
      params,
    );
    return rows.map((r) => ({ itemId: r.item_id, score: Number(r.score) }));
  }
}
