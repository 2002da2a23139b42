import { defineRoute, ServerParam } from './openapi';
import { z } from './zod';

/**
 * Search by recording (issue 33): a clip recorded by a phone or a browser microphone finds the song of the
 * library it was recorded from (landmark fingerprints, `@polyphony/landmarks`; method and figures in
 * docs/architecture.md "Search by recording"). Shapes are the reference's `/api/recording_search/*`. Every
 * route honours `server`: only songs available on the selected server vote or appear, and `item_id`s are that
 * server's provider ids.
 */

/** Default `n_results` of a clip search (reference). */
export const RECORDING_DEFAULT_RESULTS = 100;
/** Largest `n_results`. The matcher ranks at most RECORDING_MAX_CANDIDATES songs per clip, so fewer may come back. */
export const RECORDING_MAX_RESULTS = 100;
/** Songs the matcher ranks per clip (candidates with an offset histogram): the most results a search can give. */
export const RECORDING_MAX_CANDIDATES = 32;

/**
 * Limits of an uploaded clip (defaults; README "Search by recording" names the settings that change them):
 * - RECORDING_MAX_UPLOAD_BYTES: the multipart body; larger is a 413 `payload_too_large` (16 MiB holds 60 s of
 *   48 kHz stereo 16-bit WAV, 11.5 MB, and minutes of any compressed format);
 * - RECORDING_MAX_CLIP_SECONDS: decoded length; a longer clip is a 413 `clip_too_long`;
 * - RECORDING_MIN_CLIP_SECONDS: a shorter one is a 400 `clip_too_short` (too few landmarks to decide).
 */
export const RECORDING_LIMITS = Object.freeze({ maxUploadBytes: 16 * 1024 * 1024, maxClipSeconds: 60, minClipSeconds: 2 });

/**
 * Media types a clip may have (what browsers' MediaRecorder and phones write), all decoded by ffmpeg:
 * WebM/Opus, Ogg (Opus, Vorbis), MP4/AAC (also `audio/x-m4a`), WAV, MP3, FLAC. `application/octet-stream`
 * (a file picker with no type) is accepted and sniffed by ffmpeg. Anything ffmpeg cannot decode is a 400
 * `bad_clip`.
 */
export const RECORDING_CLIP_TYPES = Object.freeze([
  'audio/webm',
  'video/webm',
  'audio/ogg',
  'audio/opus',
  'audio/mp4',
  'video/mp4',
  'audio/aac',
  'audio/x-m4a',
  'audio/m4a',
  'audio/wav',
  'audio/x-wav',
  'audio/wave',
  'audio/vnd.wave',
  'audio/mpeg',
  'audio/mp3',
  'audio/flac',
  'audio/x-flac',
  'application/octet-stream',
] as const);

/** `n_results` as a form field, a query parameter or a JSON body value (numeric strings accepted). */
const NResults = z.preprocess(
  (v) => (v === '' || v === null ? undefined : v),
  z.coerce
    .number({ invalid_type_error: 'n_results must be an integer' })
    .int('n_results must be an integer')
    .min(1, `n_results must be between 1 and ${RECORDING_MAX_RESULTS}`)
    .max(RECORDING_MAX_RESULTS, `n_results must be between 1 and ${RECORDING_MAX_RESULTS}`)
    .optional(),
);

/**
 * POST /api/recording_search/search: a `multipart/form-data` body with the file field `clip` (one of
 * RECORDING_CLIP_TYPES) and the optional text field `n_results`; `n_results` and `server` may also be query
 * parameters (a form field wins). Errors: 400 `bad_clip` (no `clip` field, not decodable, not audio),
 * `clip_too_short`, `clip_silent` (nothing above -70 dBFS: check the microphone); 413 `payload_too_large`
 * (body over the upload limit), `clip_too_long`; 415 for a body that is not multipart; 503
 * `index_not_ready` while the fingerprint index of the live generation is not loaded (POST warmup loads it), 503
 * `match_unavailable` when matching runs in a worker thread (RECORDING_MATCH_THREAD=1) and it stopped during the
 * query (retryable: the next request starts a new thread and sends it the index again).
 */
export const RecordingSearchQuery = z.object({ n_results: NResults, server: ServerParam }).passthrough();
export type RecordingSearchQuery = z.infer<typeof RecordingSearchQuery>;

/** The text fields of the search form (the file field `clip` is read as a stream, not validated here). */
export const RecordingSearchForm = z.object({ n_results: NResults }).passthrough();
export type RecordingSearchForm = z.infer<typeof RecordingSearchForm>;

/** One song of a recording search or of `by_track`, best first. */
export const RecordingResultRow = z
  .object({
    /** Provider id of the song on the selected server. */
    item_id: z.string(),
    title: z.string().nullable(),
    /** Track artist (plugin name). */
    author: z.string().nullable(),
    album: z.string().nullable(),
    /**
     * Fraction of the query's landmarks found in this song at one consistent time offset, in [0, 1] (Wang
     * 2003's aligned-hash count over the query's). A clean clip scores ~0.1-0.4; a degraded one less: read
     * `identified`, not the score, for the decision.
     */
    score: z.number(),
    /** Query landmarks aligned at the song's best offset (+-1 frame of 32 ms): the evidence. */
    votes: z.number().int(),
    /** Where the clip (or the shared material, for `by_track`) starts in this song, seconds. */
    offset_seconds: z.number(),
    /**
     * True only for the first result, when it has at least the decision's minimum votes (10) and leads the
     * next song by at least 6 votes: the song is identified. A search whose first result is not identified
     * means "no match" (the rows are then only the nearest candidates).
     */
    identified: z.boolean(),
    /** `votes` minus the next result's votes (0 for the last). */
    lead: z.number().int(),
  })
  .openapi('RecordingResultRow');
export type RecordingResultRow = z.infer<typeof RecordingResultRow>;

export const RecordingSearchResponse = z
  .object({
    /** Decoded length of the clip, seconds. */
    clip_seconds: z.number(),
    /** RMS level of the clip as received, dBFS (it is normalised before matching; -20 to -40 is a usual recording). */
    clip_level_db: z.number(),
    count: z.number().int(),
    results: z.array(RecordingResultRow),
  })
  .openapi('RecordingSearchResponse');
export type RecordingSearchResponse = z.infer<typeof RecordingSearchResponse>;

/**
 * POST /api/recording_search/by_track: songs that share recorded material with a stored song (live versions
 * with the studio take in them, remasters, samples, a song and its edit), the song itself left out. The
 * stored song's own fingerprint is the query. 404 `not_found` for an unknown song, 404 `no_fingerprint` when
 * it has none yet, 503 `index_not_ready` and `match_unavailable` as for search.
 */
export const RecordingByTrackBody = z
  .object({
    item_id: z.preprocess((v) => (typeof v === 'number' ? String(v) : v), z.string({ required_error: 'item_id is required' }).min(1).max(500)),
    n_results: NResults,
  })
  .passthrough();
export type RecordingByTrackBody = z.infer<typeof RecordingByTrackBody>;

export const RecordingByTrackResponse = z
  .object({
    /** The seed as sent. */
    item_id: z.string(),
    count: z.number().int(),
    results: z.array(RecordingResultRow),
  })
  .openapi('RecordingByTrackResponse');
export type RecordingByTrackResponse = z.infer<typeof RecordingByTrackResponse>;

/**
 * GET /api/recording_search/status (and the answer of POST warmup): the fingerprint index of the live
 * generation on the answering index replica.
 * - `status`: `ready` (searchable), `loading` (being built from the catalogue), `empty` (loaded, but no
 *   song has a fingerprint yet: every search answers no match), `not_loaded` (nothing built yet: searches
 *   answer 503 until a warmup or the first search loads it).
 */
export const RecordingStatus = z
  .object({
    status: z.enum(['ready', 'loading', 'empty', 'not_loaded']),
    /** Index generation the fingerprint index belongs to (0 before any). */
    generation: z.number().int(),
    /** Songs of the generation with a fingerprint in the index. */
    fingerprinted_songs: z.number().int(),
    /** Of them, songs available on the selected server (what a search there can find). */
    available_songs: z.number().int(),
    /** Songs of the generation (fingerprinted or not). */
    total_songs: z.number().int(),
    /** Landmarks stored in the index (postings). */
    landmarks: z.number().int(),
    /**
     * Memory the index holds in the process, bytes: the offsets tables (4 MiB per 65,536 rows), the postings (4 bytes
     * each) while they are resident (`RECORDING_POSTINGS_RESIDENT_MIB`; a larger library's are in a local file), the
     * matcher's per-row scratch (8 bytes per row) and 1 byte per row.
     */
    memory_bytes: z.number().int(),
    /** Wall time of the last load, ms (null before one). */
    load_ms: z.number().nullable(),
    /** When it was loaded (ISO), null before. */
    loaded_at: z.string().nullable(),
    /** The clip limits in force. */
    limits: z.object({ max_upload_bytes: z.number().int(), max_clip_seconds: z.number(), min_clip_seconds: z.number() }),
  })
  .openapi('RecordingStatus');
export type RecordingStatus = z.infer<typeof RecordingStatus>;

const tags = ['recording'];
const ServerQuery = z.object({ server: ServerParam }).passthrough();
export const recordingRoutes = {
  search: defineRoute({
    method: 'post',
    path: '/api/recording_search/search',
    summary: 'Identifies the song a recorded clip was taken from (multipart field `clip`: WebM/Opus, Ogg, MP4/AAC, WAV, MP3; optional `n_results`, default 100). 400 bad clip, 413 too large or long, 503 index not ready',
    tags,
    access: 'user',
    service: 'index',
    uploadTypes: ['multipart/form-data'],
    query: RecordingSearchQuery,
    form: RecordingSearchForm.extend({ clip: z.string().openapi({ type: 'string', format: 'binary', description: 'The recorded clip (one of RECORDING_CLIP_TYPES)' }) }),
    response: RecordingSearchResponse,
  }),
  byTrack: defineRoute({ method: 'post', path: '/api/recording_search/by_track', summary: 'Songs sharing recorded material with a stored song (the song itself left out)', tags, access: 'user', service: 'index', query: ServerQuery, body: RecordingByTrackBody, response: RecordingByTrackResponse }),
  warmup: defineRoute({ method: 'post', path: '/api/recording_search/warmup', summary: 'Loads the fingerprint index of the live generation (answers once loaded) and returns its status', tags, access: 'user', service: 'index', query: ServerQuery, body: z.object({}).passthrough(), response: RecordingStatus }),
  status: defineRoute({ method: 'get', path: '/api/recording_search/status', summary: 'Readiness of the fingerprint index: songs fingerprinted, available on the selected server, memory', tags, access: 'user', service: 'index', query: ServerQuery, response: RecordingStatus }),
};

// ---------------------------------------------------------------------------------------------------
// Internal: fingerprint storage in the catalogue (written by the analysis worker, read by the index)

/** Largest fingerprint blob (bytes): ~3 bytes per landmark, ~5-10 landmarks/s; 2 MiB holds hours of audio. */
export const FINGERPRINT_MAX_BYTES = 2 * 1024 * 1024;
/** Largest page of GET /internal/fingerprints (songs; ~6 KB each for a 4-minute song). */
export const FINGERPRINT_PAGE_MAX = 2000;

/**
 * PUT /internal/tracks/:itemId/fingerprint: a song's landmark fingerprint (replaces an earlier one). 204; 404
 * unknown song. `blob` is the `@polyphony/landmarks` codec's bytes in base64; `codec` its version byte.
 */
export const PutFingerprintRequest = z.object({
  codec: z.number().int().min(1).max(255),
  landmarks: z.number().int().min(0),
  blob: z.string().max(Math.ceil((FINGERPRINT_MAX_BYTES * 4) / 3) + 4),
  /** Seconds of audio the fingerprint covers. */
  seconds: z.number().min(0).max(1e6),
});
export type PutFingerprintRequest = z.infer<typeof PutFingerprintRequest>;

/** GET /internal/fingerprints?after=&limit=: keyset page (by item id) of stored fingerprints. */
export const FingerprintPageQuery = z.object({ after: z.string().max(500).optional(), limit: z.coerce.number().int().min(1).max(FINGERPRINT_PAGE_MAX).default(500) });
export const FingerprintPage = z.object({
  items: z.array(z.object({ itemId: z.string(), codec: z.number().int(), blob: z.string() })),
  /** Item id to pass as `after` for the next page; null after the last. */
  next: z.string().nullable(),
});
export type FingerprintPage = z.infer<typeof FingerprintPage>;

/** GET /internal/tracks/:itemId/fingerprint: one song's stored fingerprint (the seed of `by_track`). */
export const StoredFingerprint = z.object({ itemId: z.string(), codec: z.number().int(), landmarks: z.number().int(), seconds: z.number(), blob: z.string() });
export type StoredFingerprint = z.infer<typeof StoredFingerprint>;

/**
 * POST /internal/fingerprints/missing: which of a server's mapped provider ids belong to songs without a usable fingerprint.
 * `codec` (optional, the caller's landmark codec version, `LANDMARK_CODEC_VERSION`): a song whose stored fingerprint was
 * written by another codec version counts as missing too, so a codec change is backfilled without a full re-analysis.
 * Without it, only songs with no fingerprint at all are listed (callers from before the field).
 */
export const FingerprintMissingRequest = z.object({ serverId: z.string().min(1).max(200), providerIds: z.array(z.string().min(1).max(500)).max(5000), codec: z.number().int().min(1).max(255).optional() });
export const FingerprintMissingResponse = z.object({
  /** The provider id and its song's item id, one provider id per song (the smallest), for songs without a fingerprint. */
  missing: z.array(z.object({ providerId: z.string(), itemId: z.string() })),
});
export type FingerprintMissingResponse = z.infer<typeof FingerprintMissingResponse>;

const internal = 'internal' as const;
const itemIdParams = z.object({ itemId: z.string().min(1).max(500) });
export const recordingInternalRoutes = {
  trackFingerprint: defineRoute({ method: 'put', path: '/internal/tracks/:itemId/fingerprint', service: 'catalogue', access: internal, tags, summary: 'Store the landmark fingerprint of a song (204; 404 when unknown)', params: itemIdParams, body: PutFingerprintRequest, bodyLimit: Math.ceil((FINGERPRINT_MAX_BYTES * 4) / 3) + 4096, status: 204 }),
  fingerprintsPage: defineRoute({ method: 'get', path: '/internal/fingerprints', service: 'catalogue', access: internal, tags, summary: 'Keyset page of stored fingerprints (the index loads them per generation)', query: FingerprintPageQuery, response: FingerprintPage }),
  trackFingerprintGet: defineRoute({ method: 'get', path: '/internal/tracks/:itemId/fingerprint', service: 'catalogue', access: internal, tags, summary: "A song's stored fingerprint (404 when the song has none)", params: itemIdParams, response: StoredFingerprint }),
  fingerprintsMissing: defineRoute({ method: 'post', path: '/internal/fingerprints/missing', service: 'catalogue', access: internal, tags, summary: "Which of a server's provider ids map to songs without a fingerprint (analysis backfill)", body: FingerprintMissingRequest, response: FingerprintMissingResponse }),
};
