import { chatRoutes, playlistRoutes as defs, type CreatePlaylistBody, type CreatePlaylistResponse, type PlaylistsResponse, api } from '@polyphony/contracts';
import type { Request } from 'express';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { InstantPlaylistResult, PlaylistService, ServerPlaylists } from '../domain/playlist.service';

/** 201 body of POST /api/create_playlist (reference shape plus the unavailable ids). */
export function toCreateDto(r: InstantPlaylistResult): CreatePlaylistResponse {
  const dropped = r.unavailable.length;
  return {
    message: `Playlist "${r.name}" created on ${r.serverName} with ${r.written.length} track(s)${dropped ? `; ${dropped} not available on that server were skipped` : ''}`,
    playlist_id: r.playlistId,
    playlist_name: r.name,
    server_id: r.serverId,
    mapped: r.written.length,
    skipped: dropped,
    unavailable: dropped,
    unavailable_ids: r.unavailable,
    account: r.account,
  };
}

/** The polyphony user a request acts for (a signed-in user); API-token, Setup and anonymous callers have none. */
export function playlistOwner(identity: { sub: string; via: string } | undefined): string | undefined {
  return identity && identity.via === 'cookie' ? identity.sub : undefined;
}

/** Body of GET /api/playlists (reference shape). */
export function toPlaylistsDto(servers: ServerPlaylists[]): PlaylistsResponse {
  return {
    multi_server: true,
    servers: servers.map((s) => ({
      server_id: s.serverId,
      server_name: s.serverName,
      is_default: s.isDefault,
      playlists: Object.fromEntries(Object.entries(s.playlists).map(([name, tracks]) => [name, tracks.map((t) => ({ item_id: t.itemId, title: t.title, author: t.author }))])),
    })),
  };
}

/**
 * POST /api/create_playlist (any authenticated caller; the selected server is the gateway-resolved
 * `identity.serverId`) -> 201; 400 for a malformed body, no server, or no track on the server; 502 when
 * the media server fails. GET /api/playlists -> the playlists this service wrote, per server.
 */
export function playlistRoutes(service: PlaylistService): RouteHandlers {
  const r = routeHandlers();
  // Internal (service callers only): the tracks of a playlist we wrote (alchemy items of type playlist).
  r.json(api.internal.playlistTracks, ({ query: q }) => service.trackIdsOf(q.serverId, q.playlist, q.userId));
  // Internal: replace a radio playlist (radio runs of the index service).
  r.json(api.internal.playlistRadio, ({ body }) => service.replaceRadio(body.serverId, body.name, body.ids, body.runId, body.kind, body.userId));
  // The chat page saves its result through /chat/api/create_playlist: same body, same answer.
  // Households: a signed-in user's playlist is written with their own linked account when they have one.
  const create = async (req: Request, body: CreatePlaylistBody) =>
    toCreateDto(await service.createInstant(req.identity?.serverId, body.playlist_name, (body.track_ids ?? body.item_ids)!, playlistOwner(req.identity)));
  r.json(defs.createPlaylist, ({ body }, req) => create(req, body));
  r.json(chatRoutes.chatCreatePlaylist, ({ body }, req) => create(req, body));
  r.json(defs.playlists, async (_input, req) => toPlaylistsDto(await service.listWritten(playlistOwner(req.identity))));
  return r;
}
