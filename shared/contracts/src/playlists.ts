import { defineRoute, ServerParam } from './openapi';
import { z } from './zod';

/**
 * Public API of the playlist service: playlist creation on the selected media server, the list of
 * playlists this service wrote, and the clustering task. Shapes follow the reference implementation's
 * endpoints (reference-implementation.md section 3) so existing plugins and clients keep working.
 */

/** Longest playlist name accepted (before the `_instant` / `_automatic` suffix). */
export const PLAYLIST_NAME_MAX = 200;
/** Most track ids one create_playlist call may carry. */
export const CREATE_PLAYLIST_MAX_TRACKS = 10_000;

/** A track id as callers send it: a string (provider id of the selected server or canonical id), a number, or `{item_id}`. */
const TrackIdValue = z.union([z.string().trim().min(1).max(500), z.number().int().nonnegative().transform(String)]);
export const TrackRef = z.union([TrackIdValue, z.object({ item_id: TrackIdValue }).passthrough().transform((o) => o.item_id)]).openapi({
  description: 'A provider id of the selected server, a canonical id, or an object {item_id}',
});

const TrackList = z.array(TrackRef).min(1).max(CREATE_PLAYLIST_MAX_TRACKS);

/**
 * POST /api/create_playlist body. `item_ids` is accepted as an alias of `track_ids` (the AI-chat
 * create call of the reference uses it). `server` is resolved by the gateway; other reference fields
 * (`user_creds`, ...) are tolerated and ignored.
 */
export const CreatePlaylistBody = z
  .object({
    playlist_name: z.string().trim().min(1).max(PLAYLIST_NAME_MAX),
    track_ids: TrackList.optional(),
    item_ids: TrackList.optional(),
    server: ServerParam,
  })
  .passthrough()
  .refine((b) => b.track_ids !== undefined || b.item_ids !== undefined, { message: 'track_ids (or item_ids) is required', path: ['track_ids'] })
  .openapi('CreatePlaylistBody');
export type CreatePlaylistBody = z.infer<typeof CreatePlaylistBody>;

export const CreatePlaylistResponse = z
  .object({
    message: z.string(),
    /** The provider's id of the new playlist on the selected server. */
    playlist_id: z.string(),
    /** Name as written on the server (`<playlist_name>_instant`). */
    playlist_name: z.string(),
    server_id: z.string(),
    /** Tracks written to the playlist. */
    mapped: z.number().int(),
    /** Tracks dropped because they are not on the selected server (same as `unavailable`). */
    skipped: z.number().int(),
    unavailable: z.number().int(),
    /** The dropped ids, as the caller sent them. */
    unavailable_ids: z.array(z.string()),
    /** Whose media-server account holds the playlist: the caller's own linked account (`user`; private to them in GET /api/playlists) or the server's (`server`). */
    account: z.enum(['user', 'server']).optional(),
  })
  .openapi('CreatePlaylistResponse');
export type CreatePlaylistResponse = z.infer<typeof CreatePlaylistResponse>;

export const PlaylistTrackDto = z.object({ item_id: z.string(), title: z.string(), author: z.string() }).openapi('PlaylistTrack');

/** GET /api/playlists: the playlists this service wrote, grouped by server (default first). Ids are each server's provider ids. */
export const PlaylistsResponse = z
  .object({
    multi_server: z.literal(true),
    servers: z.array(
      z.object({
        server_id: z.string(),
        server_name: z.string(),
        is_default: z.boolean(),
        playlists: z.record(z.array(PlaylistTrackDto)),
      }),
    ),
  })
  .openapi('Playlists');
export type PlaylistsResponse = z.infer<typeof PlaylistsResponse>;

/** An optional integer that may also arrive as a numeric string (form-style clients); null and '' mean absent. */
const optionalInt = (min: number, max: number) =>
  z.preprocess((v) => (v === null || v === '' ? undefined : typeof v === 'string' && /^\s*-?\d+\s*$/.test(v) ? Number(v) : v), z.number().int().min(min).max(max).optional());

/** Bounds of the cluster count (k) a clustering run accepts. */
export const CLUSTERS_MIN = 2;
export const CLUSTERS_MAX = 200;

/**
 * POST /api/clustering/start body. `{}` is valid (all defaults). The reference's other parameters
 * (clustering_method, AI naming, weights, ...) are tolerated and ignored; the ones below are validated.
 */
export const ClusteringStartBody = z
  .object({
    /** Exact number of clusters per server (alias `k`); default: sqrt(n/2) clamped to num_clusters_min..max. */
    num_clusters: optionalInt(CLUSTERS_MIN, CLUSTERS_MAX),
    k: optionalInt(CLUSTERS_MIN, CLUSTERS_MAX),
    num_clusters_min: optionalInt(CLUSTERS_MIN, CLUSTERS_MAX),
    num_clusters_max: optionalInt(CLUSTERS_MIN, CLUSTERS_MAX),
    /** Songs per playlist, closest to the cluster centre first (default 200). */
    max_songs_per_playlist: optionalInt(1, 5000),
    /** Clusters smaller than this make no playlist (default 3). */
    min_songs_per_playlist: optionalInt(1, 1000),
    /** Keep only the N largest clusters per server (default: all). */
    top_n_playlists: optionalInt(1, CLUSTERS_MAX),
    /** kmeans (default), gmm (diagonal Gaussian mixture) or dbscan (reference CLUSTER_ALGORITHM). */
    clustering_method: z.preprocess((v) => (typeof v === 'string' ? v.toLowerCase() : v), z.enum(['kmeans', 'gmm', 'dbscan'])).optional(),
    /** DBSCAN radius (cosine distance) and core size; absent = searched over 0.1-0.5 and 5-20. */
    dbscan_eps: z.coerce.number().min(0.01).max(1).optional(),
    dbscan_min_samples: optionalInt(2, 100),
    /** Principal components kept before clustering (0 = none; default 0). */
    pca_components: optionalInt(0, 199),
    /** Candidate clusterings the parameter search may evaluate per server (default 6, at most 20). */
    search_runs: optionalInt(1, 20),
  })
  .passthrough()
  .refine((b) => b.num_clusters_min === undefined || b.num_clusters_max === undefined || b.num_clusters_min <= b.num_clusters_max, {
    message: 'num_clusters_min must not exceed num_clusters_max',
    path: ['num_clusters_min'],
  })
  .openapi('ClusteringStartBody');
export type ClusteringStartBody = z.infer<typeof ClusteringStartBody>;

export const TaskStartResponse = z.object({ task_id: z.string(), task_type: z.string(), status: z.string() }).openapi('TaskStart');

export const playlistRoutes = {
  createPlaylist: defineRoute({
    method: 'post',
    path: '/api/create_playlist',
    summary: 'Create `<playlist_name>_instant` on the selected server; tracks not on it are dropped and counted',
    tags: ['playlists'],
    access: 'user', service: 'playlist', bodyLimit: 4194304,
    body: CreatePlaylistBody,
    response: CreatePlaylistResponse,
    status: 201,
  }),
  playlists: defineRoute({ method: 'get', path: '/api/playlists', summary: 'Playlists this service wrote, per server', tags: ['playlists'], access: 'user', service: 'playlist', response: PlaylistsResponse }),
  clusteringStart: defineRoute({
    method: 'post',
    path: '/api/clustering/start',
    summary: 'Cluster every server (default first) into `<name>_automatic` playlists (202; 409 while one runs)',
    tags: ['tasks', 'playlists'],
    access: 'admin', service: 'playlist',
    body: ClusteringStartBody,
    response: TaskStartResponse,
    status: 202,
  }),
};

/**
 * GET /internal/playlists/tracks?serverId=&playlist=: canonical ids, in order, of a playlist this service
 * wrote on the server (`playlist` = provider playlist id or name, with or without its suffix); 404 when
 * no such playlist was written here (or it is private to another user than `userId`). Used by alchemy items of `type: playlist`.
 */
export const PlaylistTracksQuery = z.object({ serverId: z.string().min(1).max(200), playlist: z.string().min(1).max(1000), userId: z.string().min(1).max(200).optional() });
export const PlaylistTracksResponse = z.object({ name: z.string(), itemIds: z.array(z.string()) });
