import { HttpClient, type MediaServerLogger } from './http';

/** Tuning shared by every client; all optional. */
export interface ClientOptions {
  /** Per-request timeout in ms (downloads: inactivity timeout). Default 30 000. */
  timeoutMs?: number;
  /** Extra attempts for transient failures (network, 429, 502-504). Default 3. */
  retries?: number;
  /** First backoff delay in ms (doubles per attempt). Default 500. */
  backoffMs?: number;
  /** Timeout of a lyrics lookup in ms. Default 2 500 (reference `MUSICSERVER_LYRICS_TIMEOUT`). */
  lyricsTimeoutMs?: number;
  logger?: MediaServerLogger;
  /** Plex: stable `X-Plex-Client-Identifier`. Default `polyphony`. */
  plexClientId?: string;
  /**
   * Lyrion: how tracks are added to a new playlist.
   * - `player` (the reference behaviour): load the new playlist into the first connected
   *   player, add tracks in batches of 50 with `playlistcontrol`, then `playlist save`. This
   *   REPLACES that player's current queue. Falls back to `edit` when no player is connected.
   * - `edit` (default): `playlists edit cmd:add` once per track; needs no player and touches no
   *   queue, so a user's playback is never replaced by ours.
   */
  lyrionPlaylistMode?: 'player' | 'edit';
}

/** Client name sent to servers (Subsonic `c`, Jellyfin `Client`, Plex `X-Plex-Product`). */
export const CLIENT_NAME = 'polyphony';
/** Client version sent to servers. */
export const CLIENT_VERSION = '0.1.0';
/** Default lyrics timeout (AudioMuse-AI `MUSICSERVER_LYRICS_TIMEOUT` = 2.5 s). */
export const DEFAULT_LYRICS_TIMEOUT_MS = 2_500;

/**
 * The HttpClient of one provider client: the shared tuning of `opts` plus the kind's base URL,
 * message label, auth headers and the secret values to scrub from messages.
 */
export function providerHttp(
  label: string,
  baseUrl: string,
  opts: ClientOptions,
  auth: { headers?: Record<string, string>; secrets?: ReadonlyArray<string | undefined> } = {},
): HttpClient {
  return new HttpClient({
    baseUrl,
    label,
    timeoutMs: opts.timeoutMs,
    retries: opts.retries,
    backoffMs: opts.backoffMs,
    logger: opts.logger,
    headers: auth.headers,
    secrets: auth.secrets,
  });
}
