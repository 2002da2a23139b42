import { defineRoute } from './openapi';
import { Steering } from './steering';
import { z } from './zod';

/**
 * Album creation and Album of the Week (issue 31; owner: the index service, `services/index/src/album`).
 * A seed (one song, or a few words) becomes a sequenced album of songs available on the selected server,
 * answered in that server's ids. Design and measurements: docs/architecture.md "Album creation".
 */

/** Tracks of an album when `length` is not given (the reference's default, ~48 min). */
export const ALBUM_DEFAULT_LENGTH = 12;
/** Fewest tracks an album may have: fewer candidates than this is 404 (also the Album of the Week floor). */
export const ALBUM_MIN_LENGTH = 4;
/** Most tracks an album may have. */
export const ALBUM_MAX_LENGTH = 30;
/** Name of the playlist Album of the Week empties and refills on every server (one per server). */
export const ALBUM_OF_THE_WEEK_PLAYLIST = 'Album of the Week';

/** Body of POST /api/album_creation/generate (`server` may be given here or in the query, as on every route). */
export const AlbumGenerateBody = z
  .object({
    seed_type: z.enum(['song', 'text']),
    /** Song seed: a track id of the selected server (or a canonical id). Numbers accepted. */
    item_id: z.preprocess((v) => (typeof v === 'number' ? String(v) : v), z.string().trim().min(1).max(500)).optional(),
    /** Text seed: genre, instrument and mood words, e.g. "dark ambient with piano" (3-500 characters). */
    query: z.preprocess((v) => (typeof v === 'string' ? v.trim() : v), z.string().min(3, 'query must have at least 3 characters').max(500)).optional(),
    /** Tracks wanted (default 12). */
    length: z.coerce.number().int().min(ALBUM_MIN_LENGTH).max(ALBUM_MAX_LENGTH).optional(),
    /** Optional concept directions added to the seed point before the pool is drawn: text search's steering list (steering.ts). */
    steering: Steering.optional(),
  })
  .passthrough()
  .superRefine((b, ctx) => {
    if (b.seed_type === 'song' && !b.item_id) ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['item_id'], message: 'a song seed needs item_id' });
    if (b.seed_type === 'text' && !b.query) ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['query'], message: 'a text seed needs query' });
  })
  .openapi('AlbumGenerateBody');
export type AlbumGenerateBody = z.infer<typeof AlbumGenerateBody>;

/** Role of a track in the sequence: the first, the two most intense early ones, the last, and the rest. */
export const AlbumRole = z.enum(['opener', 'single', 'track', 'closer']);
export type AlbumRole = z.infer<typeof AlbumRole>;

export const AlbumTrackDto = z
  .object({
    /** Provider id on the selected server. */
    item_id: z.string(),
    title: z.string(),
    /** Track artist. */
    author: z.string(),
    album: z.string().nullable(),
    /** Seconds; null when the catalogue does not know it. */
    duration: z.number().nullable(),
    /** 1-based position in the album. */
    slot: z.number().int(),
    role: AlbumRole,
  })
  .openapi('AlbumTrack');
export type AlbumTrackDto = z.infer<typeof AlbumTrackDto>;

export const AlbumGenerateResponse = z
  .object({
    seed: z.object({ type: z.enum(['song', 'text']), label: z.string() }),
    suggested_name: z.string(),
    tracks: z.array(AlbumTrackDto),
    stats: z.object({
      tracks: z.number().int(),
      /** Total duration in minutes (1 decimal; unknown durations count 0). */
      minutes: z.number(),
      /** Distinct track artists. */
      artists: z.number().int(),
      /** Mean pairwise cosine similarity of the tracks' embeddings (3 decimals). */
      cohesion: z.number(),
      /** The cohesion the greedy pass aimed at. */
      target_cohesion: z.number(),
      /** "intro": a calm, typical opener (hip-hop, R&B, metal, electronic); "bang": the most intense early track opens. */
      opener_style: z.enum(['intro', 'bang']),
    }),
  })
  .openapi('AlbumGenerateResponse');
export type AlbumGenerateResponse = z.infer<typeof AlbumGenerateResponse>;

/** One server's outcome of an Album of the Week run. */
export const AlbumOfTheWeekServerResult = z.object({
  server_id: z.string(),
  server_name: z.string(),
  /** Name written on the server; null when nothing was written. */
  playlist: z.string().nullable(),
  /** Songs written (4-12), 0 on failure. */
  written: z.number().int(),
  /** The seed's label ("Title - Artist"); null when no seed could be drawn. */
  seed: z.string().nullable(),
  /** Why nothing was written (null on success). */
  error: z.string().nullable(),
});
export const AlbumOfTheWeekRunResponse = z
  .object({
    status: z.enum(['SUCCESS', 'PARTIAL', 'FAILURE']),
    servers: z.array(AlbumOfTheWeekServerResult),
  })
  .openapi('AlbumOfTheWeekRun');
export type AlbumOfTheWeekRunResponse = z.infer<typeof AlbumOfTheWeekRunResponse>;

const tags = ['album creation'];
export const albumRoutes = {
  generate: defineRoute({
    method: 'post',
    path: '/api/album_creation/generate',
    summary: 'Proposes a sequenced album from a song or a few words, on the selected server (400 bad seed, 404 too few neighbours, 503 no index)',
    tags,
    access: 'user',
    service: 'index',
    body: AlbumGenerateBody,
    response: AlbumGenerateResponse,
  }),
  weeklyRun: defineRoute({
    method: 'post',
    path: '/api/album_creation/album_of_the_week/run',
    summary: `Builds one album per server from a random analysed seed and empties and refills its "${ALBUM_OF_THE_WEEK_PLAYLIST}" playlist (schedule kind album_of_the_week)`,
    tags,
    access: 'admin',
    service: 'index',
    body: z.object({}).passthrough(),
    response: AlbumOfTheWeekRunResponse,
  }),
};
