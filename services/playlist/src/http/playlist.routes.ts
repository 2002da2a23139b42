import { PlaylistTracksQuery, PlaylistTracksResponse, RadioPlaylistRequest, chatRoutes, playlistRoutes as defs, type CreatePlaylistResponse, type PlaylistsResponse, api } from '@polyphony/contracts';
import { ForbiddenError, NotFoundError, asyncRoute, parseOrThrow, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { PlaylistRepository } from '../store/playlist.repository';
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
  };
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
export function playlistRoutes(service: PlaylistService, repo: PlaylistRepository): RouteHandlers {
  const r = routeHandlers();
  // Internal: the tracks of a playlist we wrote (alchemy items of type playlist). Signed internal callers only.
  r.on(api.internal.playlistTracks,
    asyncRoute(async (req, res) => {
      if (req.identity?.via !== 'internal') throw new ForbiddenError('Internal endpoint');
      const q = parseOrThrow(PlaylistTracksQuery, req.query, 'query');
      const found = await repo.trackIdsOf(q.serverId, q.playlist);
      if (!found) throw new NotFoundError(`No playlist "${q.playlist}" written by this service on that server`);
      res.json(PlaylistTracksResponse.parse(found));
    }),
  );
  // Internal: replace a radio playlist (radio runs of the index service). Signed internal callers only.
  r.on(api.internal.playlistRadio,
    asyncRoute(async (req, res) => {
      if (req.identity?.via !== 'internal') throw new ForbiddenError('Internal endpoint');
      const body = parseOrThrow(RadioPlaylistRequest, req.body ?? {}, 'body');
      res.json(await service.replaceRadio(body.serverId, body.name, body.ids, body.runId));
    }),
  );
  // The chat page saves its result through /chat/api/create_playlist: same body, same answer.
  const create = asyncRoute(async (req, res) => {
    const body = parseOrThrow(defs.createPlaylist.body, req.body ?? {}, 'playlist request');
    const ids = (body.track_ids ?? body.item_ids)!;
    const result = await service.createInstant(req.identity?.serverId, body.playlist_name, ids);
    res.status(201).json(toCreateDto(result));
  });
  r.on(defs.createPlaylist, create);
  r.on(chatRoutes.chatCreatePlaylist, create);
  r.json(defs.playlists, async () => toPlaylistsDto(await service.listWritten()));
  return r;
}
