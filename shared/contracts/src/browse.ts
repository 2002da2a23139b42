import { intParam } from './features';
import { defineRoute } from './openapi';
import { z } from './zod';

/**
 * Browse (issue 32): pages of the catalogue's songs, artists and albums, the duplicate files of one
 * server, the songs mapped on no server, and the files analysis could not use.
 *
 * `GET /api/dashboard/browse` is owned by the registry, which composes it like the dashboard summary: the
 * catalogue answers songs/artists/albums (`GET /internal/browse`), the analysis worker answers
 * `unanalyzable` (`GET /internal/analysis/unanalyzable`) from its exclusions. The registry resolves `server`
 * itself (the gateway does not resolve the registry's routes): absent = the whole catalogue, every server.
 */

/** Rows per page of every browse answer. */
export const BROWSE_PAGE_SIZE = 100;
/**
 * `total` is counted up to this many rows; past it the answer says `capped: true` and `total` is the cap
 * (counting a million-song catalogue exactly on every page costs a full scan; the pages themselves are not capped).
 */
export const BROWSE_COUNT_CAP = 10_000;

export const BROWSE_KINDS = ['songs', 'artists', 'albums', 'unanalyzable'] as const;
export const BROWSE_FILTERS = ['all', 'unique', 'duplicates', 'orphan'] as const;
export type BrowseKind = (typeof BROWSE_KINDS)[number];
export type BrowseFilter = (typeof BROWSE_FILTERS)[number];

/**
 * Why a file could not be analysed (analysis.exclusions.reason_code), with the readable reason the API answers.
 * `download_failed`: the media server refused the file for good (a 4xx, not a timeout); `undecodable`: ffmpeg
 * could not decode it; `too_short`: it decodes to less than the embedder's minimum (MIN_AUDIO_SECONDS, 1 s).
 */
export const UNANALYZABLE_REASONS = {
  download_failed: 'Could not download the file from the media server',
  undecodable: 'Could not decode the audio',
  too_short: 'Too short to analyse (under 1 second of audio)',
} as const;
export type UnanalyzableReasonCode = keyof typeof UNANALYZABLE_REASONS;
export const UNANALYZABLE_REASON_CODES = Object.keys(UNANALYZABLE_REASONS) as UnanalyzableReasonCode[];

const blankToUndefined = (v: unknown): unknown => (v === '' ? undefined : v);

/** GET /api/dashboard/browse query. */
export const BrowseQuery = z
  .object({
    /** What to list (default `songs`). */
    kind: z.preprocess(blankToUndefined, z.enum(BROWSE_KINDS, { errorMap: () => ({ message: `kind must be one of ${BROWSE_KINDS.join(', ')}` }) }).optional()),
    /**
     * Which songs (default `all`): `unique` = songs with exactly one file (on `server`, else in the whole
     * catalogue), `duplicates` = songs with several files on `server` (needs `server`), `orphan` = songs mapped
     * on no server (canonical ids; `server` does not narrow them). Artists and albums are grouped over the
     * songs the filter keeps. Ignored by `unanalyzable`.
     */
    filter: z.preprocess(blankToUndefined, z.enum(BROWSE_FILTERS, { errorMap: () => ({ message: `filter must be one of ${BROWSE_FILTERS.join(', ')}` }) }).optional()),
    /** Case-insensitive substring of the title, artist, album or album artist (artists and albums: the groups holding a matching song; unanalyzable: title, artist, album, path or the file id). */
    q: z.string().max(200).optional(),
    /** 1-based page of BROWSE_PAGE_SIZE rows (default 1). */
    page: intParam(1, 1_000_000),
    /** Display name or id of a server: its songs only, in its own ids. Absent = every server. */
    server: z.string().max(200).optional(),
  })
  .passthrough();

/** One file of a song on the selected server (duplicates rows). */
export const BrowseFile = z.object({
  /** The server's own id of the file. */
  item_id: z.string(),
  /** The file path the server reported, when it reports one. */
  path: z.string().nullable(),
});

/** A songs row. */
export const BrowseSongRow = z.object({
  /** The selected server's id of the song (its first file's, by id); canonical id without `server` and for orphans. */
  item_id: z.string(),
  title: z.string(),
  author: z.string(),
  album: z.string().nullable(),
  album_artist: z.string().nullable(),
  year: z.number().int().nullable(),
  /** Length in seconds, when known. */
  duration: z.number().nullable(),
  /** Files of the song (on the selected server; on every server without one; 0 for orphans). */
  copies: z.number().int(),
  /** Servers holding the song (1 with `server`; 0 for orphans). */
  servers: z.number().int(),
  /** The files on the selected server (filter `duplicates` only), ordered by id. */
  files: z.array(BrowseFile).optional(),
});

/** An artists row: an artist (case-insensitive name) among the songs the filter keeps. */
export const BrowseArtistRow = z.object({ artist: z.string(), songs: z.number().int(), albums: z.number().int() });

/** An albums row: (album artist, else artist; album), case-insensitive, among the songs the filter keeps. */
export const BrowseAlbumRow = z.object({ album: z.string(), album_artist: z.string(), songs: z.number().int(), year: z.number().int().nullable() });

/** An unanalyzable row: a file analysis excluded, not retried until its metadata changes. */
export const BrowseUnanalyzableRow = z.object({
  /** The server's own id of the file. */
  item_id: z.string(),
  /** Display name of the server that holds it (null when the server was deleted since). */
  server: z.string().nullable(),
  server_id: z.string(),
  /** Metadata the server reported when the file was excluded (null for files excluded before it was kept). */
  title: z.string().nullable(),
  author: z.string().nullable(),
  album: z.string().nullable(),
  path: z.string().nullable(),
  duration: z.number().nullable(),
  reason_code: z.enum(UNANALYZABLE_REASON_CODES as [UnanalyzableReasonCode, ...UnanalyzableReasonCode[]]),
  /** The readable reason (UNANALYZABLE_REASONS). */
  reason: z.string(),
  /** The failure as the worker saw it (ffmpeg's or the server's message). */
  detail: z.string(),
  /** When it was excluded (ISO 8601). */
  excluded_at: z.string(),
});

export type BrowseUnanalyzableRowDto = z.infer<typeof BrowseUnanalyzableRow>;

/** GET /api/dashboard/browse answer. `results` holds rows of the `kind` asked. */
export const BrowseResponse = z
  .object({
    kind: z.enum(BROWSE_KINDS),
    filter: z.enum(BROWSE_FILTERS),
    page: z.number().int(),
    page_size: z.number().int(),
    /** A next page exists. */
    has_more: z.boolean(),
    /** `total` stopped at BROWSE_COUNT_CAP. */
    capped: z.boolean(),
    /** Display name of the selected server; null = every server. */
    server: z.string().nullable(),
    /** Rows matching, up to BROWSE_COUNT_CAP. */
    total: z.number().int(),
    results: z.array(z.union([BrowseSongRow, BrowseArtistRow, BrowseAlbumRow, BrowseUnanalyzableRow])),
  })
  .openapi('BrowseResponse');
export type BrowseResponse = z.infer<typeof BrowseResponse>;

/** GET /internal/browse (catalogue) query: the public query with the server resolved to its registry id. */
export const CatalogueBrowseQuery = z.object({
  kind: z.enum(['songs', 'artists', 'albums']),
  filter: z.enum(BROWSE_FILTERS),
  q: z.string().max(200).optional(),
  page: z.coerce.number().int().min(1).max(1_000_000),
  server_id: z.string().max(200).optional(),
});
export type CatalogueBrowseQuery = z.infer<typeof CatalogueBrowseQuery>;

/** A page of rows with its count (the internal answers of the catalogue and the analysis worker). */
export const BrowsePageResult = z.object({ has_more: z.boolean(), capped: z.boolean(), total: z.number().int(), results: z.array(z.record(z.unknown())) });
export type BrowsePageResult = z.infer<typeof BrowsePageResult>;

/** GET /internal/analysis/unanalyzable query. */
export const UnanalyzableQuery = z.object({
  q: z.string().max(200).optional(),
  page: z.coerce.number().int().min(1).max(1_000_000),
  server_id: z.string().max(200).optional(),
});
export type UnanalyzableQuery = z.infer<typeof UnanalyzableQuery>;

export const browseRoutes = {
  browse: defineRoute({
    method: 'get',
    path: '/api/dashboard/browse',
    summary: 'Pages of songs, artists, albums (all, unique, duplicates of one server, orphans) and of the files analysis could not use, with their reason',
    tags: ['semantic'],
    access: 'user',
    service: 'registry',
    query: BrowseQuery,
    response: BrowseResponse,
  }),
  catalogueBrowse: defineRoute({ method: 'get', path: '/internal/browse', service: 'catalogue', access: 'internal', tags: ['internal'], summary: 'A browse page of songs, artists or albums', query: CatalogueBrowseQuery, response: BrowsePageResult }),
  unanalyzable: defineRoute({ method: 'get', path: '/internal/analysis/unanalyzable', service: 'analysis', access: 'internal', tags: ['internal'], summary: 'A browse page of the files analysis excluded, with their reason', query: UnanalyzableQuery, response: BrowsePageResult }),
};
