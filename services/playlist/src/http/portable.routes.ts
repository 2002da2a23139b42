import { api } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import { M3U8_TYPE, toM3u8, type PortablePlaylistService } from '../domain/portable.service';
import { playlistOwner } from './playlist.routes';

/** A file name for Content-Disposition: letters, digits, space, dot, dash and underscore only. */
function fileName(name: string, ext: string): string {
  const base = name.replace(/[^\p{L}\p{N} ._-]+/gu, '_').trim().slice(0, 120) || 'playlist';
  return `${base}.${ext}`;
}

/**
 * POST /api/playlists/export (M3U8 text or JSON, as a download) and POST /api/queue (add to the caller's
 * play queue). The selected server is the gateway-resolved `identity.serverId`.
 */
export function portableRoutes(service: PortablePlaylistService): RouteHandlers {
  const r = routeHandlers();
  r.json(api.portable.export, async ({ body }, req, res) => {
    const e = await service.export(req.identity?.serverId, playlistOwner(req.identity), {
      playlist: body.playlist,
      trackIds: body.track_ids,
      name: body.name,
      locations: body.locations,
      embedCredentials: body.embed_credentials,
    });
    res.setHeader('Cache-Control', 'no-store');
    const ascii = fileName(e.name, body.format).replace(/[^\x20-\x7e]/g, '_');
    res.setHeader('Content-Disposition', `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(fileName(e.name, body.format))}`);
    if (body.format === 'json') {
      res.status(200).json(e);
      return;
    }
    res.status(200).type(M3U8_TYPE).send(toM3u8(e, body.locations));
  });
  r.json(api.portable.queue, ({ body }, req) =>
    service.queue(req.identity?.serverId, playlistOwner(req.identity), req.identity?.role === 'admin', body.track_ids, body.session_id),
  );
  return r;
}
