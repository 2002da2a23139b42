/**
 * Lyrics of songs (catalogue.lyrics, catalogue.lyrics_term; migration 1732810000000): the outcome of each
 * lookup, PostgreSQL full-text search over the texts, the TF-IDF lyrics similarity of SemGrove, the
 * backfill's work list and the dashboard counts.
 */
import type { DataSource, EntityManager } from 'typeorm';
import { MSD_GENRES, type CatalogueStats, type LyricsPendingPage, type PutLyricsRequest } from '@polyphony/contracts';
import { LANDMARK_CODEC_VERSION } from '@polyphony/landmarks';
import type { LyricsHit, LyricsStore } from '../domain/ports';
import { returnedRows } from './sql';


/**
 * Language detection at write time, inside PostgreSQL, with PostgreSQL's own stop-word lists: for every
 * built-in text-search configuration except `simple`, count the words of the first 3000 characters that
 * the configuration drops as stop words; the configuration with the most (at least 3, ties by name) is the
 * song's language, otherwise `simple` (no stemming, no stop words). `$1` is the text.
 */
const DETECT_LANGUAGE_SQL = `COALESCE((
  SELECT c.oid::regconfig FROM pg_ts_config c
   CROSS JOIN LATERAL (
     SELECT count(*) AS n FROM regexp_split_to_table(lower(left($1::text, 3000)), '[^[:alpha:]]+') w
      WHERE w <> '' AND to_tsvector(c.oid::regconfig, w) = ''::tsvector) s
   WHERE c.cfgnamespace = 'pg_catalog'::regnamespace AND c.cfgname <> 'simple' AND s.n >= 3
   ORDER BY s.n DESC, c.cfgname LIMIT 1), 'simple'::regconfig)`;

/** Terms of the seed kept for SemGrove's candidate query (highest TF-IDF weight first). */
export const SIMILAR_QUERY_TERMS = 40;
/** Candidates (by ts_rank of those terms) whose exact TF-IDF cosine is computed. */
export const SIMILAR_CANDIDATES = 2000;

export class LyricsRepository implements LyricsStore {
  constructor(private readonly ds: DataSource) {}

  /**
   * Stores the outcome of a lookup (replacing an earlier one) and keeps the document frequencies in step.
   * @returns false when the song does not exist.
   */
  async put(itemId: string, req: PutLyricsRequest): Promise<boolean> {
    return this.ds.transaction(async (m) => {
      const exists = await m.query(`SELECT 1 FROM catalogue.score WHERE item_id = $1 FOR UPDATE`, [itemId]);
      if (exists.length === 0) return false;
      await this.adjustTerms(m, itemId, -1);
      const text = req.status === 'found' ? (req.text ?? '') : null;
      await m.query(
        `INSERT INTO catalogue.lyrics (item_id, status, body, language, tsv, source_server_id, source_kind, fetched_at)
         SELECT $2, $3, $1::text, lang, CASE WHEN $1::text IS NULL THEN NULL ELSE to_tsvector(lang, $1::text) END, $4, $5, now()
           FROM (SELECT CASE WHEN $1::text IS NULL THEN 'simple'::regconfig ELSE ${DETECT_LANGUAGE_SQL} END AS lang) d
         ON CONFLICT (item_id) DO UPDATE SET status = EXCLUDED.status, body = EXCLUDED.body, language = EXCLUDED.language, tsv = EXCLUDED.tsv,
           source_server_id = EXCLUDED.source_server_id, source_kind = EXCLUDED.source_kind, fetched_at = now()`,
        [text, itemId, req.status, req.sourceServerId ?? null, req.sourceKind ?? null],
      );
      await this.adjustTerms(m, itemId, +1);
      return true;
    });
  }

  /** Adds `delta` to the document frequency of every lexeme of the song's stored text (if any). */
  private async adjustTerms(m: EntityManager, itemId: string, delta: 1 | -1): Promise<void> {
    if (delta > 0) {
      await m.query(
        `INSERT INTO catalogue.lyrics_term (language, lexeme, df)
         SELECT l.language, u.lexeme, 1 FROM catalogue.lyrics l, unnest(l.tsv) u WHERE l.item_id = $1 AND l.tsv IS NOT NULL
         ON CONFLICT (language, lexeme) DO UPDATE SET df = catalogue.lyrics_term.df + 1`,
        [itemId],
      );
    } else {
      await m.query(
        `UPDATE catalogue.lyrics_term t SET df = t.df - 1
           FROM catalogue.lyrics l, unnest(l.tsv) u
          WHERE l.item_id = $1 AND l.tsv IS NOT NULL AND t.language = l.language AND t.lexeme = u.lexeme`,
        [itemId],
      );
    }
  }

  /**
   * Full-text search on one server: the query is parsed with `websearch_to_tsquery` (quotes, `or`, `-word`)
   * in every built-in configuration, and each song is matched in the configuration of its own language,
   * so the GIN index serves every branch. Rank: `ts_rank_cd(tsv, q, 1|32)` (cover density, divided by
   * 1 + log(document length), then rank/(rank+1)), in [0, 1). Only songs mapped on the server; one row
   * per song (its smallest provider id there).
   */
  async search(serverId: string, query: string, limit: number): Promise<LyricsHit[]> {
    const rows: Array<{ provider_id: string; title: string; artist: string; album: string | null; album_artist: string | null; score: number; snippet: string }> = await this.ds.query(
      `WITH q AS (
         SELECT c.oid::regconfig AS cfg, websearch_to_tsquery(c.oid::regconfig, $2) AS tq
           FROM pg_ts_config c WHERE c.cfgnamespace = 'pg_catalog'::regnamespace),
       hits AS (
         SELECT l.item_id, max(ts_rank_cd(l.tsv, q.tq, 1 | 32)) AS score, (array_agg(q.tq))[1] AS tq, min(l.language::text) AS cfg
           FROM q JOIN catalogue.lyrics l ON l.language = q.cfg AND l.tsv @@ q.tq
          WHERE numnode(q.tq) > 0
          GROUP BY l.item_id),
       mapped AS (
         SELECT h.item_id, h.score, h.tq, h.cfg, (SELECT min(m.provider_id) FROM catalogue.track_server_map m WHERE m.item_id = h.item_id AND m.server_id = $1) AS provider_id
           FROM hits h),
       top AS (
         SELECT * FROM mapped WHERE provider_id IS NOT NULL ORDER BY score DESC, item_id LIMIT $3)
       SELECT t.provider_id, s.title, s.artist, s.album, s.album_artist, t.score::float8 AS score,
              ts_headline(t.cfg::regconfig, l.body, t.tq, 'MaxWords=18, MinWords=6, MaxFragments=1') AS snippet
         FROM top t JOIN catalogue.score s ON s.item_id = t.item_id JOIN catalogue.lyrics l ON l.item_id = t.item_id
        ORDER BY t.score DESC, t.item_id`,
      [serverId, query, limit],
    );
    return rows.map((r) => ({ providerId: r.provider_id, title: r.title, artist: r.artist, album: r.album, albumArtist: r.album_artist, score: Number(r.score), snippet: r.snippet }));
  }

  /**
   * Songs on `serverId` whose lyrics are closest to the seed's, by TF-IDF cosine in the seed's language
   * configuration: weight of a lexeme in a song = (1 + ln tf) * ln(1 + N / df), N = songs with lyrics
   * text, df from lyrics_term. Candidates are the songs sharing any of the seed's SIMILAR_QUERY_TERMS
   * heaviest lexemes, the best SIMILAR_CANDIDATES by ts_rank get the exact cosine (over all their
   * lexemes). @returns seedHasLyrics false when the seed has no text (then no matches).
   */
  async similar(itemId: string, serverId: string, limit: number): Promise<{ seedHasLyrics: boolean; matches: Array<{ itemId: string; similarity: number }> }> {
    const seed = await this.ds.query(`SELECT 1 FROM catalogue.lyrics WHERE item_id = $1 AND status = 'found' AND tsv IS NOT NULL AND tsv <> ''::tsvector`, [itemId]);
    if (seed.length === 0) return { seedHasLyrics: false, matches: [] };
    const rows: Array<{ item_id: string; sim: number }> = await this.ds.query(
      `WITH seed AS (SELECT language, tsv FROM catalogue.lyrics WHERE item_id = $1),
       n AS (SELECT greatest(count(*), 1)::float8 AS n FROM catalogue.lyrics WHERE status = 'found'),
       sw AS (
         SELECT u.lexeme, (1 + ln(coalesce(array_length(u.positions, 1), 1))) * ln(1 + n.n / greatest(t.df, 1)) AS w
           FROM seed CROSS JOIN n CROSS JOIN unnest(seed.tsv) u
           JOIN catalogue.lyrics_term t ON t.language = seed.language AND t.lexeme = u.lexeme),
       snorm AS (SELECT sqrt(sum(w * w)) AS norm FROM sw),
       topq AS (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS q FROM (SELECT lexeme FROM sw ORDER BY w DESC, lexeme LIMIT ${SIMILAR_QUERY_TERMS}) x),
       cand AS (
         SELECT l.item_id, l.tsv FROM catalogue.lyrics l, seed, topq
          WHERE l.language = seed.language AND l.tsv @@ topq.q AND l.item_id <> $1
            AND EXISTS (SELECT 1 FROM catalogue.track_server_map m WHERE m.item_id = l.item_id AND m.server_id = $2)
          ORDER BY ts_rank(l.tsv, topq.q) DESC, l.item_id LIMIT ${SIMILAR_CANDIDATES}),
       cw AS (
         SELECT c.item_id, u.lexeme, (1 + ln(coalesce(array_length(u.positions, 1), 1))) * ln(1 + n.n / greatest(t.df, 1)) AS w
           FROM cand c CROSS JOIN n CROSS JOIN seed CROSS JOIN unnest(c.tsv) u
           JOIN catalogue.lyrics_term t ON t.language = seed.language AND t.lexeme = u.lexeme),
       agg AS (
         SELECT cw.item_id, sum(cw.w * coalesce(sw.w, 0)) AS dot, sqrt(sum(cw.w * cw.w)) AS norm
           FROM cw LEFT JOIN sw ON sw.lexeme = cw.lexeme GROUP BY cw.item_id)
       SELECT agg.item_id, (agg.dot / nullif(agg.norm * snorm.norm, 0))::float8 AS sim
         FROM agg, snorm WHERE agg.dot > 0
        ORDER BY sim DESC, agg.item_id LIMIT $3`,
      [itemId, serverId, limit],
    );
    return { seedHasLyrics: true, matches: rows.map((r) => ({ itemId: r.item_id, similarity: Math.max(0, Math.min(1, Number(r.sim))) })) };
  }

  /**
   * Songs without a lookup yet, in item-id order after `after`, with their mappings (any server can be
   * asked) and whether MusiCNN put "instrumental" among their top tags (`mood_vector`, the reference's
   * LYRICS_MUSICNN_SKIP rule).
   */
  async pending(after: string | undefined, limit: number): Promise<LyricsPendingPage> {
    const rows: Array<{ item_id: string; title: string; artist: string; instrumental: boolean; mappings: Array<{ serverId: string; providerId: string }> }> = await this.ds.query(
      `SELECT s.item_id, s.title, s.artist, coalesce(s.mood_vector ~ '(^|,)instrumental:', false) AS instrumental,
              COALESCE((SELECT json_agg(json_build_object('serverId', m.server_id, 'providerId', m.provider_id) ORDER BY m.server_id, m.provider_id)
                          FROM catalogue.track_server_map m WHERE m.item_id = s.item_id), '[]'::json) AS mappings
         FROM catalogue.score s
        WHERE ($1::text IS NULL OR s.item_id > $1::text) AND NOT EXISTS (SELECT 1 FROM catalogue.lyrics l WHERE l.item_id = s.item_id)
        ORDER BY s.item_id LIMIT $2`,
      [after ?? null, limit],
    );
    const [{ n }] = await this.ds.query(`SELECT count(*)::int AS n FROM catalogue.score s WHERE NOT EXISTS (SELECT 1 FROM catalogue.lyrics l WHERE l.item_id = s.item_id)`);
    return { items: rows.map((r) => ({ itemId: r.item_id, title: r.title, artist: r.artist, instrumental: r.instrumental, mappings: r.mappings })), next: rows.length === limit ? rows[rows.length - 1]!.item_id : null, remaining: n };
  }

  /**
   * Content counts of the dashboard (GET /internal/stats, contracts CatalogueStats): songs, analysed, tagged,
   * with lyrics, with a recording fingerprint of the current landmark codec version (`LANDMARK_CODEC_VERSION`; a
   * print of another version is ignored by the index and re-made by the backfill, the rule of
   * `FingerprintRepository.missing`), distinct albums and artists, orphans (mapped on no server), per server its
   * distinct songs, extra copies and fingerprinted songs, the top genre (MSD_GENRES: per tagged song the first
   * genre of its `mood_vector`, which lists its strongest MSD tags best first; the genre first in most songs, ties
   * by name) and the tempo profile (BPM bands: slow < 90, medium 90-119, fast 120-149, very_fast >= 150). Four statements, each
   * one scan of its table.
   */
  async stats(): Promise<CatalogueStats> {
    const [r] = await this.ds.query(
      `SELECT (SELECT count(*) FROM catalogue.score)::int AS songs,
              (SELECT count(*) FROM catalogue.embedding)::int AS analyzed,
              (SELECT count(*) FROM catalogue.score WHERE tag_scores IS NOT NULL)::int AS tagged,
              (SELECT count(*) FROM catalogue.lyrics WHERE status = 'found')::int AS lyrics,
              (SELECT count(*) FROM catalogue.fingerprint WHERE codec = $1)::int AS fingerprinted,
              (SELECT count(DISTINCT (lower(coalesce(nullif(album_artist, ''), artist)), lower(album))) FROM catalogue.score WHERE coalesce(album, '') <> '')::int AS distinct_albums,
              (SELECT count(DISTINCT lower(artist)) FROM catalogue.score WHERE artist <> '')::int AS distinct_artists,
              (SELECT count(*) FROM catalogue.score s WHERE NOT EXISTS (SELECT 1 FROM catalogue.track_server_map m WHERE m.item_id = s.item_id))::int AS orphans`,
      [LANDMARK_CODEC_VERSION],
    );
    const perServer: Array<{ server_id: string; unique_songs: number; duplicate_copies: number; fingerprinted: number }> = await this.ds.query(
      `SELECT m.server_id, count(DISTINCT m.item_id)::int AS unique_songs, (count(*) - count(DISTINCT m.item_id))::int AS duplicate_copies,
              count(DISTINCT f.item_id)::int AS fingerprinted
         FROM catalogue.track_server_map m LEFT JOIN catalogue.fingerprint f ON f.item_id = m.item_id AND f.codec = $1
        GROUP BY m.server_id ORDER BY m.server_id`,
      [LANDMARK_CODEC_VERSION],
    );
    const [genre] = await this.ds.query(
      `SELECT g FROM (
         SELECT (SELECT split_part(t, ':', 1) FROM unnest(string_to_array(s.mood_vector, ',')) WITH ORDINALITY AS x(t, o)
                  WHERE split_part(t, ':', 1) = ANY($1::text[]) ORDER BY o LIMIT 1) AS g
           FROM catalogue.score s WHERE s.mood_vector IS NOT NULL) y
        WHERE g IS NOT NULL GROUP BY g ORDER BY count(*) DESC, g LIMIT 1`,
      [MSD_GENRES],
    );
    const [tempo] = await this.ds.query(
      `SELECT count(*) FILTER (WHERE tempo < 90)::int AS slow, count(*) FILTER (WHERE tempo >= 90 AND tempo < 120)::int AS medium,
              count(*) FILTER (WHERE tempo >= 120 AND tempo < 150)::int AS fast, count(*) FILTER (WHERE tempo >= 150)::int AS very_fast
         FROM catalogue.score WHERE tempo IS NOT NULL AND tempo <> 'NaN'`,
    );
    return { ...(r as Omit<CatalogueStats, 'per_server' | 'top_genre' | 'tempo_profile'>), per_server: perServer, top_genre: (genre?.g as string | undefined) ?? null, tempo_profile: tempo };
  }

  /** Status of one song's lookup (tests, diagnostics), or undefined when never looked up. */
  async statusOf(itemId: string): Promise<{ status: string; language: string; sourceServerId: string | null; sourceKind: string | null } | undefined> {
    const rows = returnedRows(
      await this.ds.query(`SELECT status, language::text AS language, source_server_id, source_kind FROM catalogue.lyrics WHERE item_id = $1`, [itemId]),
    ) as Array<{ status: string; language: string; source_server_id: string | null; source_kind: string | null }>;
    const r = rows[0];
    return r ? { status: r.status, language: r.language, sourceServerId: r.source_server_id, sourceKind: r.source_kind } : undefined;
  }
}
