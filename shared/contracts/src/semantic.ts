import { SearchRowDto, SongRowFields } from './features';
import { OTHER_FEATURE_LABELS } from './learned';
import { defineRoute } from './openapi';
import { ClapConceptsResponse, Steering } from './steering';
import { z } from './zod';

/**
 * Text and mood search, lyrics search, SemGrove, mood centroids and the dashboard
 * summary (issue 14; reference-implementation.md sections 2.3-2.4 and 3; plugin-calls.md L2, L7, L9,
 * L10, L15, L16, P11; anchors and radios, L17, are in anchors.ts). Response shapes are the ones the Lyrion and Jellyfin plugins read: ids are
 * JSON strings (provider ids of the selected server), numbers are numbers.
 */

/** Integer body/query value in [min, max]; numeric strings accepted (plugins send both). */
function intIn(min: number, max: number) {
  return z.preprocess((v) => (v === '' || v === null ? undefined : v), z.coerce.number().int().min(min).max(max).optional());
}

/** Free text of a search: trimmed, at least 3 characters (reference), at most 500. */
const QueryText = z.preprocess((v) => (typeof v === 'string' ? v.trim() : v), z.string().min(3, 'query must have at least 3 characters').max(500));

/** Track id as callers send it (provider id of the selected server or canonical id); numbers accepted. */
const IdValue = z.preprocess((v) => (typeof v === 'number' ? String(v) : v), z.string().min(1).max(500));

/**
 * Mood names accepted as a seed (`similar_tracks?mood=`, `find_path?start_mood`, alchemy `type: mood`): every
 * mood GET /api/mood_centroids lists, i.e. the six `other_features` labels of the reference's catalogue
 * (danceable, aggressive, happy, party, relaxed, sad).
 */
export const MOOD_NAMES = OTHER_FEATURE_LABELS;
export type MoodName = (typeof MOOD_NAMES)[number];
export const MoodParam = z.preprocess((v) => (typeof v === 'string' ? v.trim().toLowerCase() : v), z.enum(MOOD_NAMES, { errorMap: () => ({ message: `mood must be one of ${MOOD_NAMES.join(', ')}` }) }));

// ---------------------------------------------------------------------------------------------------
// Text search (/api/clap/*)

/** Default and largest `limit` of /api/clap/search (reference: 100, at most 500). */
export const CLAP_DEFAULT_LIMIT = 100;
export const CLAP_MAX_LIMIT = 500;

/** `steering` (steering.ts): concepts to steer the ranking by; absent or empty = the plain text search. */
export const ClapSearchBody = z.object({ query: QueryText, limit: intIn(1, CLAP_MAX_LIMIT), steering: Steering.optional() }).passthrough();
export type ClapSearchBody = z.infer<typeof ClapSearchBody>;

/** A search row (features.ts SearchRowDto) with its text-match score. */
export const ClapResultRow = SearchRowDto.extend({
  /** Documented text-match score in [0, 1] (docs/architecture.md "Text search"); higher is better. */
  similarity: z.number(),
}).openapi('ClapResultRow');
export const ClapSearchResponse = z
  .object({
    query: z.string(),
    count: z.number().int(),
    results: z.array(ClapResultRow),
    /** Query words the scorer understood (tag labels, synonyms, descriptors, metadata matches). */
    understood: z.array(z.string()),
    /** Query words it ignored. */
    ignored: z.array(z.string()),
    /** The steering applied (concept names folded); present only when the request steered. */
    steering: z.array(z.object({ concept: z.string(), weight: z.number() })).optional(),
  })
  .openapi('ClapSearchResponse');
export type ClapSearchResponse = z.infer<typeof ClapSearchResponse>;

export const ClapWarmupResponse = z
  .object({ status: z.enum(['ready', 'no_tags']), scorer: z.string(), tagged_songs: z.number().int(), message: z.string() })
  .openapi('ClapWarmupResponse');
export const TopQueriesResponse = z.object({ queries: z.array(z.string()) }).openapi('TopQueriesResponse');

// ---------------------------------------------------------------------------------------------------
// Lyrics

export const LYRICS_DEFAULT_LIMIT = 50;
export const LYRICS_MAX_LIMIT = 500;

export const LyricsSearchBody = z.object({ query: QueryText, limit: intIn(1, LYRICS_MAX_LIMIT) }).passthrough();
export const LyricsResultRow = z
  .object({
    ...SongRowFields,
    /** PostgreSQL ts_rank_cd of the match (cover density, normalised by document length: rank/(rank+1)), in [0, 1). */
    score: z.number(),
    /** A few words around the match, matched words in <b>…</b>. */
    snippet: z.string(),
  })
  .openapi('LyricsResultRow');
export const LyricsSearchResponse = z.object({ query: z.string(), count: z.number().int(), results: z.array(LyricsResultRow) }).openapi('LyricsSearchResponse');
export type LyricsSearchResponse = z.infer<typeof LyricsSearchResponse>;

/** How a song's lyrics lookup ended: text found, nothing found, or skipped because the song is tagged instrumental. */
export const LyricsStatus = z.enum(['found', 'none', 'instrumental']);
export type LyricsStatus = z.infer<typeof LyricsStatus>;

/** PUT /internal/tracks/:itemId/lyrics: the outcome of one lookup (replaces an earlier one). 204; 404 unknown song. */
export const PutLyricsRequest = z
  .object({
    status: LyricsStatus,
    /** Plain text (LRC time tags removed); required when status = found. */
    text: z.string().min(1).max(200_000).optional(),
    /** Registry id and kind of the server the text came from. */
    sourceServerId: z.string().max(200).optional(),
    sourceKind: z.string().max(40).optional(),
  })
  .refine((v) => (v.status === 'found') === (v.text !== undefined), { message: 'text is required exactly when status is found' });
export type PutLyricsRequest = z.infer<typeof PutLyricsRequest>;

/** GET /internal/lyrics/pending?after=&limit=: songs without a lyrics lookup yet (backfill), keyset-paged by item id. */
export const LyricsPendingPage = z.object({
  items: z.array(
    z.object({
      itemId: z.string(),
      title: z.string(),
      artist: z.string(),
      /** True when the song's top MusiCNN tags include "instrumental" (no lookup needed). */
      instrumental: z.boolean(),
      mappings: z.array(z.object({ serverId: z.string(), providerId: z.string() })),
    }),
  ),
  next: z.string().nullable(),
  /** Songs still without a lookup (all pages). */
  remaining: z.number().int(),
});
export type LyricsPendingPage = z.infer<typeof LyricsPendingPage>;

/** POST /internal/lyrics/similar: songs whose lyrics are closest to the seed's (TF-IDF cosine), on one server. */
export const LyricsSimilarRequest = z.object({ itemId: z.string().min(1).max(500), serverId: z.string().min(1).max(200), limit: z.number().int().min(1).max(5000) });
export const LyricsSimilarResponse = z.object({
  /** False when the seed has no lyrics text (SemGrove then falls back to audio alone). */
  seedHasLyrics: z.boolean(),
  /** Canonical ids with their cosine in [0, 1], best first. */
  matches: z.array(z.object({ itemId: z.string(), similarity: z.number() })),
});
export type LyricsSimilarResponse = z.infer<typeof LyricsSimilarResponse>;

/** Songs per tempo band (BPM of the analysis): slow < 90, medium 90-119, fast 120-149, very_fast >= 150. */
export const TempoProfile = z.object({ slow: z.number().int(), medium: z.number().int(), fast: z.number().int(), very_fast: z.number().int() }).openapi('TempoProfile');

/** GET /internal/stats (catalogue): content counts of the dashboard. */
export const CatalogueStats = z.object({
  songs: z.number().int(),
  analyzed: z.number().int(),
  tagged: z.number().int(),
  lyrics: z.number().int(),
  /** Songs with a recording fingerprint of the current landmark codec version (search by recording; a print of an older version is not counted). */
  fingerprinted: z.number().int(),
  distinct_albums: z.number().int(),
  distinct_artists: z.number().int(),
  /** Songs mapped on no server. */
  orphans: z.number().int(),
  /** Per server with mappings: distinct songs mapped there, its extra tracks that are copies of a song it already holds, and its songs with a recording fingerprint of the current landmark codec version. */
  per_server: z.array(z.object({ server_id: z.string(), unique_songs: z.number().int(), duplicate_copies: z.number().int(), fingerprinted: z.number().int() })),
  /** The genre (MSD_GENRES) that is the strongest genre tag of the most tagged songs; null without tags. */
  top_genre: z.string().nullable(),
  tempo_profile: TempoProfile,
});
export type CatalogueStats = z.infer<typeof CatalogueStats>;

/** GET /internal/analysis/stats (analysis): the analysis numbers of the dashboard. */
export const AnalysisStats = z.object({
  /** Files excluded as undecodable or unreadable (analysis.exclusions). */
  unanalyzable_tracks: z.number().int(),
  /** Tracks of the live run still queued (0 when no run is live). */
  queue_backlog: z.number().int(),
  /** Tracks with a live worker claim right now. */
  active: z.number().int(),
});
export type AnalysisStats = z.infer<typeof AnalysisStats>;

/**
 * GET /internal/analysis/run (analysis): whether a full analysis run is live (NEW or RUNNING, its end-of-run index
 * rebuild included). The index asks before it requests the first build of an empty index for songs that arrived by
 * change detection: a live run's own end-of-run rebuild covers them (issue 35).
 */
export const AnalysisRunLive = z.object({
  live: z.boolean(),
  /** The live run's task id, null when none is live. */
  task_id: z.string().nullable(),
});
export type AnalysisRunLive = z.infer<typeof AnalysisRunLive>;

/** GET /internal/stats (index): what the live generation holds. */
export const IndexStats = z.object({
  generation: z.number().int(),
  items: z.number().int(),
  /** Songs the text search can rank by tags. */
  clap_indexed: z.number().int(),
  /** Artists with a fitted song mixture (similar artists). */
  gmm_indexed: z.number().int(),
  /** Per mood: mean of the mood score over tagged songs, in [0, 1]. */
  moods_coverage: z.array(z.object({ label: z.string(), score: z.number() })),
});
export type IndexStats = z.infer<typeof IndexStats>;

/** What one index replica serves (GET /internal/index/live `replicas`, from the index's per-replica heartbeat rows). */
export const IndexReplicaLive = z.object({
  replica: z.string(),
  /** Generation the replica answers queries from (0 = nothing built yet). */
  generation: z.number().int(),
  items: z.number().int(),
  /** When that generation's build began (ISO, database clock): songs stored before it are queryable there. */
  buildStartedAt: z.string().nullable(),
  heartbeatAt: z.string(),
  /** Heart-beat within `liveWithinMs`: counted when a run waits for every replica. */
  live: z.boolean(),
});
export type IndexReplicaLive = z.infer<typeof IndexReplicaLive>;

/**
 * GET /internal/index/live: the answering replica's own generation (`generation`, `items`,
 * `buildStartedAt`) plus every replica's report. A batch run waits until every `live` replica serves a
 * generation whose build began after its rebuild request.
 */
export const IndexLive = z.object({
  generation: z.number().int(),
  items: z.number().int(),
  buildStartedAt: z.string().nullable(),
  replicas: z.array(IndexReplicaLive),
  /** Heartbeat age (ms) under which a replica counts as live. */
  liveWithinMs: z.number().int(),
});
export type IndexLive = z.infer<typeof IndexLive>;

// ---------------------------------------------------------------------------------------------------
// SemGrove

export const SEM_GROVE_DEFAULT_LIMIT = 50;
export const SEM_GROVE_MAX_LIMIT = 500;
export const SemGroveBody = z.object({ item_id: IdValue, limit: intIn(1, SEM_GROVE_MAX_LIMIT) }).passthrough();
export const SemGroveRow = z
  .object({
    ...SongRowFields,
    /** 1 - merged similarity, in [0, 1]. */
    distance: z.number(),
    /** Merged similarity: 0.75 lyrics + 0.25 audio (audio alone when the seed has no lyrics). */
    similarity: z.number(),
    lyrics_similarity: z.number().nullable(),
    audio_similarity: z.number(),
    is_seed: z.boolean(),
  })
  .openapi('SemGroveRow');
export const SemGroveResponse = z.object({ results: z.array(SemGroveRow), count: z.number().int(), mode: z.enum(['lyrics+audio', 'audio']) }).openapi('SemGroveResponse');
export type SemGroveResponse = z.infer<typeof SemGroveResponse>;

// ---------------------------------------------------------------------------------------------------
// Moods

/**
 * One centroid of a mood, as `similar_tracks?mood=<mood>&centroid_index=<index>` picks it: index 0 is the whole
 * mood, 1.. the clusters of its songs (spherical k-means, at most 3, each at least 5 songs), largest first.
 */
export const MoodCluster = z
  .object({
    index: z.number().int(),
    /** The three MSD tags with the highest mean probability over the centroid's songs. */
    top_tags: z.array(z.string()),
    /** Songs whose mean embedding the centroid is. */
    n_songs: z.number().int(),
    /** The centroid on the live generation's 2-D map (null before the map exists). */
    embedding_2d: z.tuple([z.number(), z.number()]).nullable(),
    /** Index 0 only: the lowest mood score among the mood's songs. */
    min_score: z.number().optional(),
  })
  .openapi('MoodCluster');

/**
 * GET /api/mood_centroids: an object keyed by mood (the reference's reading: clients build their mood pickers
 * from the keys and send `mood=<key>&centroid_index=<index>` back), each value the mood's centroids. A mood
 * with no usable centroid is absent. The live index generation is in the `X-Index-Generation` header.
 */
export const MoodCentroidsResponse = z.record(z.enum(MOOD_NAMES), z.array(MoodCluster)).openapi('MoodCentroidsResponse');
export type MoodCentroidsResponse = z.infer<typeof MoodCentroidsResponse>;

// ---------------------------------------------------------------------------------------------------
// Dashboard

/** A server of the dashboard `content.music_servers` (reference names). */
export const DashboardMusicServer = z.object({
  name: z.string(),
  server_type: z.string(),
  is_default: z.boolean(),
  /** True once any of its tracks is resolved to a catalogue song (mapped by analysis or by a sweep). */
  resolved: z.boolean(),
  /** Distinct catalogue songs mapped on the server. */
  unique_songs: z.number().int(),
  /** Its tracks beyond one per song: further copies of a song it already holds. */
  duplicate_copies: z.number().int(),
  /** Its songs with a recording fingerprint of the current landmark codec version (search by recording can find them). */
  fingerprinted: z.number().int(),
});

/**
 * GET /api/dashboard/summary. `content` carries the reference's block (the Lyrion plugin and other clients read
 * it) beside the fields of the polyphony UI. A part whose service did not answer is named in `unavailable`:
 * its reference fields are then absent (a client reads a missing `total_songs` as "unknown", 0 as "never
 * scanned"), its UI counts 0.
 */
export const DashboardSummary = z
  .object({
    content: z.object({
      /** Analysed songs (reference `total_songs`). */
      total_songs: z.number().int().optional(),
      distinct_albums: z.number().int(),
      distinct_artists: z.number().int(),
      songs: z.number().int(),
      analyzed: z.number().int(),
      tagged: z.number().int(),
      lyrics: z.number().int(),
      /** Songs with a recording fingerprint of the current landmark codec version (search by recording; a print of an older version is not counted). */
      fingerprinted: z.number().int(),
      clap_indexed: z.number().int(),
      gmm_indexed: z.number().int(),
      music_servers: z.array(DashboardMusicServer),
      /** Songs mapped on no server. */
      orphan_songs: z.number().int().optional(),
      /** Files the analysis excluded as undecodable or unreadable (GET /api/analysis/exclusions lists them). */
      unanalyzable_tracks: z.number().int().optional(),
      moods_coverage: z.array(z.object({ label: z.string(), score: z.number() })),
      top_genre: z.string().nullable().optional(),
      tempo_profile: TempoProfile.optional(),
    }),
    servers: z.array(z.object({ server_id: z.string(), name: z.string(), server_type: z.string(), is_default: z.boolean(), track_count: z.number().int().nullable(), matched_count: z.number().int().nullable() })),
    tasks: z.record(z.object({ task_id: z.string(), status: z.string(), progress: z.number(), updated_at: z.string().nullable() })),
    /** Analysis tracks being worked on right now (live claims of the workers); absent when the analysis service did not answer. */
    workers: z.object({ active: z.number().int() }).optional(),
    /** Tracks of the live analysis run still queued (0 when none runs); absent when the analysis service did not answer. */
    queue_backlog: z.number().int().optional(),
    /** The 10 newest tasks of every kind, newest first. */
    recent_tasks: z.array(z.object({ task_id: z.string(), task_type: z.string(), status: z.string(), progress: z.number(), message: z.string(), created_at: z.string(), finished_at: z.string().nullable() })),
    /** Parts that could not be read (a service down); their numbers are 0. */
    unavailable: z.array(z.string()),
    /** When the counts were read (the summary is cached DASHBOARD_CACHE_MS). */
    stats_updated_at: z.string(),
    /** When this answer was made. */
    generated_at: z.string(),
  })
  .openapi('DashboardSummary');
export type DashboardSummary = z.infer<typeof DashboardSummary>;

const tags = ['semantic'];
const ok = z.object({}).passthrough();
export const semanticRoutes = {
  clapSearch: defineRoute({ method: 'post', path: '/api/clap/search', summary: 'Songs matching a free-text description (tags, synonyms, descriptors, metadata), available on the selected server', tags, access: 'user', service: 'index', body: ClapSearchBody, response: ClapSearchResponse }),
  clapWarmup: defineRoute({ method: 'post', path: '/api/clap/warmup', summary: 'Readies the text scorer (answers at once)', tags, access: 'user', service: 'index', body: ok, response: ClapWarmupResponse }),
  clapConcepts: defineRoute({ method: 'get', path: '/api/clap/concepts', summary: 'The concepts text search can be steered by (learned tag labels), with their kind and how many songs on the selected server carry each', tags, access: 'user', service: 'index', response: ClapConceptsResponse }),
  clapTopQueries: defineRoute({ method: 'get', path: '/api/clap/top_queries', summary: 'The most frequent past text queries (counts only, no user)', tags, access: 'user', service: 'index', response: TopQueriesResponse }),
  lyricsSearch: defineRoute({ method: 'post', path: '/api/lyrics/search/text', summary: 'Songs whose lyrics match the query (PostgreSQL full-text search); 200 with an empty `results` when nothing matches', tags, access: 'user', service: 'catalogue', body: LyricsSearchBody, response: LyricsSearchResponse }),
  semGrove: defineRoute({ method: 'post', path: '/api/sem_grove/search', summary: 'Songs close to the seed in lyrics and audio, seed first (is_seed)', tags, access: 'user', service: 'index', body: SemGroveBody, response: SemGroveResponse }),
  moodCentroids: defineRoute({ method: 'get', path: '/api/mood_centroids', summary: 'The mood centroids of the live index generation', tags, access: 'user', service: 'index', response: MoodCentroidsResponse }),
  dashboardSummary: defineRoute({ method: 'get', path: '/api/dashboard/summary', summary: 'Library summary: content counts, servers, last task per kind (cached 30 s)', tags, access: 'user', service: 'registry', response: DashboardSummary }),
};
