/**
 * One interface over the five media-server kinds. Every client normalises its server's
 * records to these shapes; nothing above this package sees a provider's own field names.
 */

/** Server kinds, as stored in `music_servers.server_type` (reference implementation ids). */
export const SERVER_TYPES = ['jellyfin', 'emby', 'navidrome', 'lyrion', 'plex'] as const;
export type ServerType = (typeof SERVER_TYPES)[number];

/** Credentials per kind, keys exactly as the reference implementation stores them. */
export interface JellyfinCreds { url: string; user_id: string; token: string }
export type EmbyCreds = JellyfinCreds;
export interface NavidromeCreds { url: string; user: string; password: string }
export interface LyrionCreds { url: string; user?: string; password?: string }
export interface PlexCreds { url: string; token: string }
export type ServerCreds = JellyfinCreds | NavidromeCreds | LyrionCreds | PlexCreds;

/** Connection settings handed to a client: kind, credentials and the optional library filter. */
export interface ServerConnection {
  type: ServerType;
  creds: Record<string, string | undefined>;
  /**
   * Library filter: ids (jellyfin/emby view ids, navidrome music-folder ids, plex section keys)
   * or path prefixes (lyrion). Empty or undefined means the whole server.
   */
  musicLibraries?: string[];
}

/** A library / section / music folder / path that can be selected in the filter. */
export interface LibraryInfo { id: string; name: string; path?: string }

/** A track as every client returns it. Durations in seconds (float), times as ISO-8601 UTC. */
export interface ProviderTrack {
  /** The server's own id, always as a string. */
  id: string;
  title: string;
  artist: string;
  artistId?: string;
  album?: string;
  albumId?: string;
  albumArtist?: string;
  year?: number;
  /** Normalised to 0-5 stars. */
  rating?: number;
  /** Seconds; undefined when the server does not say. */
  durationSeconds?: number;
  /** The server's file path (decoded from file:// URLs where needed). */
  path?: string;
  playCount?: number;
  lastPlayed?: string;
  /**
   * The library the listing found the track in (issue 34: results limited to a user's libraries), in the ids of
   * {@link LibraryInfo}: Subsonic the `musicFolderId` the page was listed under, Jellyfin/Emby the library view
   * (`ParentId`) the page was listed under, Plex the track's own `librarySectionID`. Undefined where the kind has
   * none (Lyrion) or the listing could not tell (a server without music folders / views).
   */
  libraryId?: string;
  /**
   * A stamp of the file's content as the server lists it, which changes when the file is replaced in place under the
   * same provider id (issue 35): Subsonic `size:<bytes>` (`size`), Plex `size:<bytes>` (`Media[0].Part[0].size`).
   * Undefined for Jellyfin/Emby (their item listing gives no size or modified time without `Fields=MediaSources`,
   * not requested) and Lyrion (`filesize`, tag `f`, not requested).
   */
  fileStamp?: string;
}

/** What a caller may know of a song to help a lyrics lookup. */
export interface LyricsHint { artist?: string; title?: string }

export interface ProviderArtist { id: string; name: string }

/** What {@link MediaServerClient.addToQueue} did: the API used and the queue or session it filled. */
export interface QueueResult {
  /** Subsonic `savePlayQueue`, Jellyfin/Emby `POST /Sessions/{id}/Playing`, Plex `POST /playQueues`. */
  method: 'savePlayQueue' | 'sessions_playing' | 'play_queues';
  /** Plex play queue id, or the Jellyfin/Emby session played on; absent for Subsonic (one queue per user). */
  queueId?: string;
}
export interface ProviderPlaylist { id: string; name: string; trackCount?: number }

export interface ConnectionTestResult {
  ok: boolean;
  serverName?: string;
  version?: string;
  /** Up to a few tracks read to prove credentials and paths. */
  sampleTrackCount: number;
  libraries: LibraryInfo[];
  /** True when the sampled paths look absolute (needed for path-tier matching). */
  pathsLookAbsolute: boolean;
  message?: string;
  /** Set when `ok` is false: the kind of the error that stopped the test (see errors.ts). */
  errorKind?: 'bad_credentials' | 'permission_denied' | 'unreachable' | 'protocol' | 'not_found';
}

/** Errors: see errors.ts (BadCredentialsError, UnreachableError, ProtocolError). */
export interface MediaServerClient {
  readonly type: ServerType;
  testConnection(): Promise<ConnectionTestResult>;
  listLibraries(): Promise<LibraryInfo[]>;
  /**
   * The libraries the client's own account can see (issue 34), asked with its credentials, or `null` where the kind
   * has no per-account libraries (Lyrion: one account sees the whole server). Subsonic `getMusicFolders` as that user
   * (Navidrome answers the folders the user was given), Jellyfin/Emby the user's views (`/UserViews` /
   * `/Users/{id}/Views`, music collections only), Plex `/library/sections` with the account's token (a shared user's
   * token lists the sections shared with them). Errors throw like any call.
   */
  visibleLibraries(): Promise<LibraryInfo[] | null>;
  /**
   * The full catalogue (library filter applied), streamed page by page so memory stays bounded.
   * A failure mid-enumeration throws; it never ends early as if complete.
   */
  iterateTracks(): AsyncIterable<ProviderTrack[]>;
  /**
   * The tracks of the `albums` most recently added albums (library filter applied; newest album first,
   * one page per album), for an analysis limited to recent additions (reference NUM_RECENT_ALBUMS).
   * `albums` >= 1. A failure throws, like iterateTracks.
   */
  iterateRecentAlbumTracks(albums: number): AsyncIterable<ProviderTrack[]>;
  listArtists(): Promise<ProviderArtist[]>;
  /** Streams the original audio of a track to `destPath` (never buffered whole). Returns bytes written. */
  downloadTrack(trackId: string, destPath: string, signal?: AbortSignal): Promise<number>;
  /** Creates a playlist holding `trackIds` (provider ids, in order), batched as the kind needs. */
  createPlaylist(name: string, trackIds: string[]): Promise<ProviderPlaylist>;
  listPlaylists(): Promise<ProviderPlaylist[]>;
  deletePlaylist(playlistId: string): Promise<void>;
  /** Most played / recent history, newest first, with lastPlayed where the kind offers it. */
  getListeningHistory(limit: number): Promise<ProviderTrack[]>;
  /**
   * Plain-text lyrics (LRC time tags removed), or undefined where the kind or the track has none.
   * The whole lookup is bounded by `lyricsTimeoutMs` (default 2.5 s, reference
   * `MUSICSERVER_LYRICS_TIMEOUT`) and never retried; a timeout or an unreachable server throws
   * UnreachableError, so a backfill can tell "no lyrics" (undefined) from "could not ask" (throws).
   * `hint` (the song's artist and title, when the caller knows them) saves a lookup on servers
   * that search lyrics by artist and title (Subsonic `getLyrics`).
   */
  getLyrics(trackId: string, hint?: LyricsHint): Promise<string | undefined>;
  /**
   * A short opaque token that changes when the library changes (change detection, issue 35), from one cheap call
   * (never a catalogue walk). Equal tokens mean "nothing added or removed since"; a new token may also follow a
   * rescan that changed nothing. `previous` (the last token) lets a kind ask for a small answer when unchanged.
   * Per kind: Subsonic `getIndexes?ifModifiedSince` (`lastModified`, the last scan); Jellyfin/Emby the audio item
   * count plus the newest item's id (`/Items?SortBy=DateCreated&Limit=1`); Plex the music sections' `updatedAt`/`scannedAt`
   * (`/library/sections`); Lyrion `serverstatus` (`lastscan` and the song count). Errors throw like any call.
   */
  libraryChangeToken(previous?: string): Promise<string>;
  /**
   * Puts `trackIds` (provider ids, in order) into the account's play queue, on kinds whose API has one:
   * Subsonic `savePlayQueue` (the account's saved queue, replaced; clients resume it), Jellyfin/Emby
   * `POST /Sessions/{id}/Playing?PlayCommand=PlayNow` on a controllable session of the user (`sessionId`,
   * default the most recently active one; NotFoundError when none), Plex `POST /playQueues` (a new audio
   * play queue, answered by id). Absent on Lyrion (its queues belong to players, not accounts).
   */
  addToQueue?(trackIds: string[], opts?: { sessionId?: string }): Promise<QueueResult>;
}
