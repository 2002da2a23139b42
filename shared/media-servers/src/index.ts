/** @polyphony/media-servers: one client interface over Jellyfin, Emby, Navidrome, Lyrion and Plex. */
export * from './types';
export * from './errors';
export {
  HttpClient,
  redactUrl,
  buildUrl,
  basicAuthHeader,
  parseRetryAfter,
  type HttpClientOptions,
  type RequestOptions,
  type DownloadOptions,
  type DownloadResponse,
  type HttpResponse,
  mayCarryCredentials,
  MAX_REDIRECTS,
  type Query,
  type QueryValue,
  type MediaServerLogger,
} from './http';
export { CLIENT_NAME, CLIENT_VERSION, DEFAULT_LYRICS_TIMEOUT_MS, providerHttp, type ClientOptions } from './options';
export {
  ABSOLUTE_PATH_RATIO,
  SAMPLE_TRACK_COUNT,
  fileUrlToPath,
  isAbsolutePath,
  lyricsToPlain,
  pathsLookAbsolute,
} from './common';
export { JellyfinFamilyClient, JELLYFIN_PAGE_SIZE, JELLYFIN_PLAYLIST_BATCH, TICKS_PER_SECOND, mapJellyfinTrack } from './jellyfin-family';
export { JellyfinClient, jellyfinAuthorization } from './jellyfin';
export { EmbyClient } from './emby';
export {
  NavidromeClient,
  SUBSONIC_API_VERSION,
  SUBSONIC_PAGE_SIZE,
  SUBSONIC_PLAYLIST_BATCH,
  mapSubsonicSong,
  subsonicError,
  subsonicToken,
} from './navidrome';
export { LyrionClient, LYRION_PAGE_SIZE, LYRION_PLAYLIST_BATCH, LYRION_TRACK_TAGS, mapLyrionTitle } from './lyrion';
export { PlexClient, PLEX_PAGE_SIZE, PLEX_PLAYLIST_BATCH, PLEX_TYPE, PLEX_LYRIC_STREAM_TYPE, mapPlexTrack } from './plex';
export { createPin, checkPin, PLEX_TV_URL, type PlexPin, type PlexPinStatus, type PlexPinOptions } from './plex-pin';
export {
  createMediaServerClient,
  validateCreds,
  credsProblems,
  isValidServerUrl,
  REQUIRED_CRED_KEYS,
  type CredsProblem,
  type CreateClientOptions,
} from './factory';
export { signInWithPassword, type SignInResult } from './signin';
