import { randomBytes } from 'node:crypto';
import type { ExportJson, QueueResponse } from '@polyphony/contracts';
import { isMediaServerError, subsonicToken, type ServerType } from '@polyphony/media-servers';
import { AppError, NotFoundError, UpstreamUnavailableError, ValidationError, type Logger } from '@polyphony/platform';
import type { PlaylistService } from './playlist.service';
import type { CataloguePort, MediaClientFactory, PlaylistAccount, RegistryPort, ServerInfo } from './ports';

/** Media type of an M3U8 export (RFC 8216 names `application/vnd.apple.mpegurl`; players and servers read this one). */
export const M3U8_TYPE = 'audio/x-mpegurl; charset=utf-8';

/** What to export: one of our playlists (by name or provider id) or a list of ids. */
export interface ExportRequest {
  playlist?: string;
  trackIds?: readonly string[];
  name?: string;
  locations: 'auto' | 'path' | 'stream';
  embedCredentials: boolean;
}

/** A server as the portable features use it: its connection and whose account that is. */
type Target = ServerInfo & { account: PlaylistAccount };

/** An export before it is written as M3U8 or JSON. */
export type PlaylistExport = ExportJson;

/**
 * Portable playlists (issue 34): export as M3U8 / JSON, and "add to queue".
 *
 * Export locations: the selected server's file path of each song (what its API reported: the catalogue's
 * mapping `filePath`), else a stream URL on the server's own address. Stream URLs carry no credentials unless
 * the caller asks (`embedCredentials`) AND has their own linked account on the server: the server's account
 * (the admin's) is never written into a file a user downloads. Embedded credentials are the narrowest the
 * kind allows: a Subsonic salted token (`t`+`s`, not the password) or the `apiKey`; the Jellyfin/Emby access
 * token; the Plex token. Such a file is a credential: unlinking the account does not revoke a token already
 * exported (revoke it on the server).
 */
export class PortablePlaylistService {
  constructor(
    private readonly registry: RegistryPort,
    private readonly catalogue: CataloguePort,
    private readonly playlists: PlaylistService,
    private readonly clientFactory: MediaClientFactory,
    private readonly logger: Logger,
  ) {}

  /**
   * Builds the export of a playlist we wrote on the server (visible to `userId`) or of a result list.
   * @throws ValidationError (400) without a server; 404 unknown playlist; AppError 400 `own_account_required`
   *   for embedded credentials without the caller's own linked account.
   */
  async export(serverId: string | undefined, userId: string | undefined, req: ExportRequest): Promise<PlaylistExport> {
    const server = await this.target(serverId, userId);
    if (req.embedCredentials && server.account !== 'user') {
      throw new AppError('own_account_required', `Credentials are only embedded from your own linked account on "${server.name}" (link it under My accounts); the server's account is never exported`, 400);
    }
    let name: string;
    let canonical: string[];
    const inputs = new Map<string, string>();
    if (req.playlist !== undefined) {
      const found = await this.playlists.trackIdsOf(server.id, req.playlist, userId);
      name = req.name ?? found.name;
      canonical = found.itemIds;
      for (const id of canonical) inputs.set(id, id);
    } else {
      const ids = req.trackIds ?? [];
      name = req.name ?? 'polyphony export';
      const resolved = await this.catalogue.resolveInput(server.id, ids);
      resolved.forEach((c, i) => {
        if (!inputs.has(c)) inputs.set(c, ids[i]!);
      });
      canonical = [...inputs.keys()];
    }
    const unique = [...new Set(canonical)];
    const toProvider = await this.catalogue.mapOutput(server.id, unique);
    const details = await this.catalogue.lookupDetails(unique.filter((id) => toProvider.has(id)));
    const tracks: ExportJson['tracks'] = [];
    const unavailable: string[] = [];
    for (const itemId of unique) {
      const providerId = toProvider.get(itemId);
      if (providerId === undefined) {
        unavailable.push(inputs.get(itemId) ?? itemId);
        continue;
      }
      const d = details.get(itemId);
      tracks.push({
        item_id: itemId,
        provider_id: providerId,
        title: d?.title ?? '',
        artist: d?.artist ?? '',
        album: d?.album ?? null,
        duration_seconds: d?.durationSeconds ?? null,
        path: d?.paths.get(server.id) ?? null,
        stream_url: streamUrl(server.type, server.connection.creds, providerId, req.embedCredentials),
      });
    }
    this.logger.info('playlist exported', { serverId: server.id, tracks: tracks.length, unavailable: unavailable.length, credentialsEmbedded: req.embedCredentials });
    return {
      format: 'polyphony-playlist',
      version: 1,
      name,
      server_id: server.id,
      server_name: server.name,
      server_type: server.type,
      exported_at: new Date().toISOString(),
      credentials_embedded: req.embedCredentials,
      tracks,
      unavailable_ids: unavailable,
    };
  }

  /**
   * Puts songs into the caller's play queue on the server (see MediaServerClient.addToQueue for the APIs).
   * A non-admin needs their own linked account (the server's account is the admin's queue).
   * @throws ValidationError (400) without a server or with no song on it; AppError 400 `own_account_required`,
   *   400 `queue_not_supported` (Lyrion); NotFoundError (404) no controllable Jellyfin/Emby session;
   *   UpstreamUnavailableError (502) when the media server fails.
   */
  async queue(serverId: string | undefined, userId: string | undefined, isAdmin: boolean, ids: readonly string[], sessionId?: string): Promise<QueueResponse> {
    const server = await this.target(serverId, userId);
    if (server.account !== 'user' && !isAdmin) {
      throw new AppError('own_account_required', `Link your own account on "${server.name}" (My accounts) to use its play queue`, 400);
    }
    const client = this.clientFactory(server.connection);
    if (!client.addToQueue) throw new AppError('queue_not_supported', `${server.type} has no per-account play queue API (Lyrion queues belong to players)`, 400);
    const canonical = [...new Set(await this.catalogue.resolveInput(server.id, ids))];
    const toProvider = await this.catalogue.mapOutput(server.id, canonical);
    const providerIds = canonical.flatMap((c) => (toProvider.has(c) ? [toProvider.get(c)!] : []));
    if (providerIds.length === 0) throw new ValidationError(`None of the ${canonical.length} track(s) is available on server "${server.name}"`);
    try {
      const r = await client.addToQueue(providerIds, { sessionId });
      return { server_id: server.id, server_type: server.type, method: r.method, account: server.account, queued: providerIds.length, unavailable: canonical.length - providerIds.length, queue_id: r.queueId ?? null };
    } catch (err) {
      if (isMediaServerError(err) && err.kind === 'not_found' && (server.type === 'jellyfin' || server.type === 'emby')) throw new NotFoundError(`No player session of your account on "${server.name}" can be controlled (start a player first)`);
      if (isMediaServerError(err) && (err.kind === 'bad_credentials' || err.kind === 'permission_denied')) {
        throw new AppError('media_server_auth_failed', `Media server "${server.name}" refused the account for its play queue`, 400);
      }
      const reason = isMediaServerError(err) ? err.kind : 'unexpected error';
      throw new UpstreamUnavailableError(`Media server "${server.name}" did not take the play queue (${reason})`, 502, { cause: err });
    }
  }

  private async target(serverId: string | undefined, userId: string | undefined): Promise<Target> {
    if (!serverId) throw new ValidationError('No media server is configured');
    const server = await this.registry.getServerForUser(serverId, userId);
    if (!server) throw new ValidationError('Invalid server selection.');
    return server;
  }
}

/** Characters that would end an M3U line or field early. */
function oneLine(s: string): string {
  return s.replace(/[\r\n\u2028\u2029]+/g, ' ').trim();
}

/**
 * The M3U8 text of an export (UTF-8, extended M3U): `#EXTM3U`, `#PLAYLIST:<name>`, then per song
 * `#EXTINF:<whole seconds or -1>,<artist> - <title>` and its location (`locations`: the path, the stream URL,
 * or the path where known else the stream URL). Songs without a path under `path` are left out and counted in
 * a final `#EXT-X-POLYPHONY-MISSING:<n>` comment line. Names and titles lose line breaks (no line injection).
 */
export function toM3u8(e: PlaylistExport, locations: 'auto' | 'path' | 'stream'): string {
  const lines = ['#EXTM3U', `#PLAYLIST:${oneLine(e.name)}`];
  let missing = 0;
  for (const t of e.tracks) {
    const location = locations === 'stream' ? t.stream_url : locations === 'path' ? t.path : (t.path ?? t.stream_url);
    if (!location) {
      missing++;
      continue;
    }
    const secs = t.duration_seconds === null ? -1 : Math.round(t.duration_seconds);
    const label = oneLine(t.artist ? `${t.artist} - ${t.title}` : t.title);
    lines.push(`#EXTINF:${secs},${label}`, oneLine(location));
  }
  if (missing) lines.push(`#EXT-X-POLYPHONY-MISSING:${missing}`);
  return `${lines.join('\n')}\n`;
}

/**
 * A stream URL of a song on the server's own address. Without `embed` it carries no credential (a player must
 * authenticate itself); with it, the account's narrowest credential for the kind (see the class comment).
 */
export function streamUrl(type: ServerType, creds: Record<string, string | undefined>, providerId: string, embed: boolean): string {
  const root = (creds.url ?? '').replace(/\/+$/, '');
  const id = encodeURIComponent(providerId);
  switch (type) {
    case 'navidrome': {
      const q = new URLSearchParams({ id: providerId, v: '1.16.1', c: 'polyphony' });
      if (embed && creds.api_key) q.set('apiKey', creds.api_key);
      else if (embed && creds.user && creds.password) {
        const salt = randomBytes(6).toString('hex');
        q.set('u', creds.user);
        q.set('t', subsonicToken(creds.password, salt));
        q.set('s', salt);
      }
      return `${root}/rest/stream?${q}`;
    }
    case 'jellyfin':
    case 'emby': {
      const base = type === 'emby' ? `${root.replace(/\/emby$/i, '')}/emby` : root;
      const token = embed && creds.token ? `&api_key=${encodeURIComponent(creds.token)}` : '';
      return `${base}/Audio/${id}/stream?static=true${token}`;
    }
    case 'plex': {
      const q = new URLSearchParams({ path: `/library/metadata/${providerId}`, protocol: 'http', mediaIndex: '0', partIndex: '0' });
      if (embed && creds.token) q.set('X-Plex-Token', creds.token);
      return `${root}/music/:/transcode/universal/start.mp3?${q}`;
    }
    case 'lyrion':
      return `${root}/music/${id}/download`;
  }
}
