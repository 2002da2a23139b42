import { defineRoute, ServerParam } from './openapi';
import { CREATE_PLAYLIST_MAX_TRACKS, PLAYLIST_NAME_MAX, TrackRef } from './playlists';
import { ServerTypeSchema } from './servers';
import { z } from './zod';

/**
 * Portable playlists (issue 34): export a playlist polyphony wrote, or any result list, as M3U8 or JSON,
 * and "add to queue" on servers whose API has a play queue.
 *
 * Locations in an export (`locations`):
 * - `path`: the selected server's file path of each song, as the server's API reported it (Subsonic `path`
 *   is relative to its music folder; Jellyfin/Emby `Path`, Plex `Part.file` and Lyrion `url` are absolute);
 *   a song without a known path is left out of the M3U8 (counted in `#EXT-X-POLYPHONY-MISSING`, and listed
 *   with `path: null` in JSON);
 * - `stream`: a stream URL on the server's own address WITHOUT credentials: a player has to authenticate itself;
 * - `auto` (default): the path where known, else the stream URL.
 * `embed_credentials: true` (explicit only) puts the caller's OWN linked account into stream URLs
 * (Subsonic `u`+`t`+`s` salted token, or `apiKey`; Jellyfin/Emby `api_key`; Plex `X-Plex-Token`): the file
 * is then a credential and must be kept like one. The server's account (the admin's) is never embedded: a
 * caller without a linked account on the server is refused (400 `own_account_required`).
 */
export const ExportBody = z
  .object({
    /** A playlist polyphony wrote on the selected server (name with or without suffix, or provider playlist id). */
    playlist: z.string().trim().min(1).max(1000).optional(),
    /** Or a result list: ids of the selected server or canonical ids, in order. */
    track_ids: z.array(TrackRef).min(1).max(CREATE_PLAYLIST_MAX_TRACKS).optional(),
    /** Name written in the export (default: the playlist's name, or "polyphony export"). */
    name: z.string().trim().min(1).max(PLAYLIST_NAME_MAX).optional(),
    format: z.enum(['m3u8', 'json']).default('m3u8'),
    locations: z.enum(['auto', 'path', 'stream']).default('auto'),
    embed_credentials: z.boolean().default(false),
    server: ServerParam,
  })
  .strict()
  .refine((b) => (b.playlist === undefined) !== (b.track_ids === undefined), { message: 'give either playlist or track_ids', path: ['track_ids'] })
  .openapi('PlaylistExportBody');
export type ExportBody = z.infer<typeof ExportBody>;

/** One song of a JSON export. */
export const ExportTrack = z.object({
  item_id: z.string(),
  /** The selected server's id of the song. */
  provider_id: z.string(),
  title: z.string(),
  artist: z.string(),
  album: z.string().nullable(),
  duration_seconds: z.number().nullable(),
  /** The server's file path (see `locations`), null when unknown. */
  path: z.string().nullable(),
  /** Stream URL on the server (credentials only with `embed_credentials`). */
  stream_url: z.string(),
});

/** JSON export (format `json`); M3U8 is `audio/x-mpegurl; charset=utf-8` text. */
export const ExportJson = z
  .object({
    format: z.literal('polyphony-playlist'),
    version: z.literal(1),
    name: z.string(),
    server_id: z.string(),
    server_name: z.string(),
    server_type: ServerTypeSchema,
    exported_at: z.string(),
    credentials_embedded: z.boolean(),
    tracks: z.array(ExportTrack),
    /** Ids the caller gave that are not on the selected server (left out). */
    unavailable_ids: z.array(z.string()),
  })
  .openapi('PlaylistExport');
export type ExportJson = z.infer<typeof ExportJson>;

/** POST /api/queue body. */
export const QueueBody = z
  .object({
    track_ids: z.array(TrackRef).min(1).max(1000),
    /** Jellyfin/Emby: the session (player) to start on; default the caller's most recently active controllable session. */
    session_id: z.string().trim().min(1).max(200).optional(),
    server: ServerParam,
  })
  .strict()
  .openapi('QueueBody');

export const QueueResponse = z
  .object({
    server_id: z.string(),
    server_type: ServerTypeSchema,
    /** The media server call used: Subsonic savePlayQueue, Jellyfin/Emby Sessions/{id}/Playing, Plex POST /playQueues. */
    method: z.enum(['savePlayQueue', 'sessions_playing', 'play_queues']),
    /** Whose account holds the queue. */
    account: z.enum(['user', 'server']),
    queued: z.number().int(),
    unavailable: z.number().int(),
    /** Plex play queue id, or the Jellyfin/Emby session id played on. */
    queue_id: z.string().nullable(),
  })
  .openapi('QueueResult');
export type QueueResponse = z.infer<typeof QueueResponse>;

export const portableRoutes = {
  export: defineRoute({
    method: 'post',
    path: '/api/playlists/export',
    summary: 'Export a playlist polyphony wrote, or a result list, as M3U8 (audio/x-mpegurl) or JSON with the selected server\'s paths or stream URLs (no credentials unless embed_credentials and your own linked account)',
    tags: ['playlists'], access: 'user', service: 'playlist', bodyLimit: 4194304,
    body: ExportBody,
    response: ExportJson,
  }),
  queue: defineRoute({
    method: 'post',
    path: '/api/queue',
    summary: 'Add songs to your play queue on the selected server (Subsonic savePlayQueue, Jellyfin/Emby session Playing, Plex playQueues; Lyrion: 400). Needs your own linked account unless you are an admin',
    tags: ['playlists'], access: 'user', service: 'playlist', bodyLimit: 262144,
    body: QueueBody,
    response: QueueResponse,
  }),
};
