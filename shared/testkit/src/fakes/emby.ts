/**
 * Fake Emby server (4.8 API surface), per media-server-apis.md §3 and §8: the Jellyfin DTOs with
 * these differences.
 *
 * - Served under `/emby/...` (the documented form) and also without the prefix.
 * - Auth: `X-Emby-Token` header, `?api_key=`, or a `Token="…"` part in `X-Emby-Authorization` /
 *   `Authorization` (schemes `Emby` or `MediaBrowser`). Bad/missing → 401.
 * - Ids: numeric strings (`<type digit><7 digits>`, e.g. tracks `1000000`+index). User id 32 hex.
 * - `QueryResult` is `{Items, TotalRecordCount}` (no `StartIndex`).
 * - `/System/Info/Public` has `LocalAddresses`, `WanAddress`, `RemoteAddresses` and no `ProductName`.
 * - Libraries: `/Library/VirtualFolders` (bare array, admin only), `/Library/VirtualFolders/Query`
 *   (`{Items,TotalRecordCount}`), `/Users/{uid}/Views`, `/Library/SelectableMediaFolders`.
 * - Playlists: `POST /Playlists?Name=&Ids=&MediaType=` (query only, a JSON body is ignored) →
 *   `{Id, Name, ItemAddedCount}`; `POST /Playlists/{id}/Items?Ids=` → `{ItemAddedCount}`;
 *   `POST /Items/Delete?Ids=` and `DELETE /Items/{id}` → 204. More than `maxIdsPerRequest`
 *   (default 100) ids → 400; request lines over 8 KiB → 414 (unverified for Emby's HTTP stack).
 * - Lyrics: `GET /Audio/{id}/Lyrics` as in the Jellyfin fake (`{Metadata, Lyrics:[{Text}]}`, 404 when
 *   none). Real Emby 4.8 documents lyrics only as subtitle streams (unverified whether it serves this
 *   route); the client treats a 404 as "no lyrics".
 * - A catalogue page (for `failAfterPages`) is any item query with `IncludeItemTypes` containing Audio.
 */
import type { Request, Router } from 'express';
import { MbType, MediaBrowserFake, type CiQuery, type MbIdScheme, type MediaBrowserOptions } from './mediabrowser';
import { parseMediaBrowserAuth } from './jellyfin';

/** Ids per type block (tracks `1_0000000 + n`, albums `2_0000000 + n`, …). */
const BLOCK = 10_000_000;

/** Numeric id scheme of the Emby fake. */
export const embyIds: MbIdScheme = {
  encode: (type, n) => String(type * BLOCK + n),
  decode: (id) => {
    if (!/^\d{8,9}$/.test(id)) return undefined;
    const v = Number(id);
    const type = Math.floor(v / BLOCK) as MbType;
    if (type < MbType.Track || type > MbType.User) return undefined;
    return { type, n: v % BLOCK };
  },
};

/** Options of {@link createFakeEmby}. */
export type FakeEmbyOptions = MediaBrowserOptions;
/** A fake Emby (see {@link MediaBrowserFake}). */
export type FakeEmby = MediaBrowserFake;

/** Builds a fake Emby over `opts.catalogue`. Call `start()` to listen on 127.0.0.1. */
export function createFakeEmby(opts: FakeEmbyOptions): FakeEmby {
  const tokenOf = (req: Request, q: CiQuery): string | undefined => {
    const header = req.header('x-emby-token') ?? req.header('x-mediabrowser-token');
    if (header) return header;
    for (const name of ['x-emby-authorization', 'authorization']) {
      const v = req.header(name);
      const parsed = v ? parseMediaBrowserAuth(v) : undefined;
      if (parsed && (parsed.scheme === 'emby' || parsed.scheme === 'mediabrowser') && parsed.params.token) return parsed.params.token;
    }
    return q.get('api_key');
  };
  const qp = (req: Request) => new URLSearchParams(req.originalUrl.split('?')[1] ?? '');
  const qv = (req: Request, name: string) => [...qp(req)].find(([k]) => k.toLowerCase() === name)?.[1];
  return new MediaBrowserFake(
    {
      kind: 'emby',
      ids: embyIds,
      tokenOf,
      startIndexInResult: false,
      mounts: ['/emby', ''],
      publicInfo: (f, req) => ({
        LocalAddress: `http://${req.headers.host ?? '127.0.0.1:8096'}`,
        LocalAddresses: [],
        WanAddress: '',
        RemoteAddresses: [],
        ServerName: f.opts.serverName,
        Version: f.opts.version,
        Id: f.serverId,
      }),
      extraRoutes: (r: Router, f) => {
        r.get('/Library/VirtualFolders/Query', (req, res) => {
          if (!f.opts.admin) {
            res.status(403).type('text/plain').send('Forbidden');
            return;
          }
          const all = f.virtualFolders();
          const start = Number(qv(req, 'startindex') ?? 0) || 0;
          const limitRaw = qv(req, 'limit');
          const items = all.slice(start, limitRaw ? start + Number(limitRaw) : undefined);
          res.json({ Items: items, TotalRecordCount: all.length });
        });
        r.get('/Library/SelectableMediaFolders', (_req, res) => {
          res.json(f.views().map((v) => ({ Name: v.name, Id: v.id, Guid: `${v.id.slice(-8)}-0000-4000-8000-000000000000`, SubFolders: v.locations.map((p, i) => ({ Name: p, Id: String(i), Path: p })), IsUserAccessConfigurable: true })));
        });
        r.post('/Playlists', (req, res) => {
          const name = qv(req, 'name');
          const ids = (qv(req, 'ids') ?? '').split(',').filter(Boolean);
          if (!name) {
            res.status(400).type('text/plain').send('Name is required');
            return;
          }
          if (!f.checkBatch(res, ids.length)) return;
          const tracks = f.resolveTracks(res, ids);
          if (!tracks) return;
          const p = f.createPlaylist(name, tracks, true);
          res.json({ Id: p.id, Name: p.name, ItemAddedCount: tracks.length });
        });
        r.post('/Playlists/:pid/Items', (req, res) => {
          const p = f.playlistById(String(req.params.pid));
          if (!p) {
            res.status(404).type('text/plain').send('Playlist not found');
            return;
          }
          const ids = [...qp(req)].filter(([k]) => k.toLowerCase() === 'ids').flatMap(([, v]) => v.split(',')).filter(Boolean);
          if (!f.checkBatch(res, ids.length)) return;
          const tracks = f.resolveTracks(res, ids);
          if (!tracks) return;
          f.addEntries(p, tracks);
          res.json({ ItemAddedCount: tracks.length });
        });
        r.post('/Items/Delete', (req, res) => {
          const ids = (qv(req, 'ids') ?? '').split(',').filter(Boolean);
          const lists = ids.map((id) => f.playlistById(id));
          if (ids.length === 0 || lists.some((p) => !p)) {
            res.status(404).type('text/plain').send('Item not found');
            return;
          }
          if (!f.opts.canDelete) {
            res.status(401).type('text/plain').send('Unauthorized access');
            return;
          }
          for (const p of lists) if (p) f.deletePlaylist(p);
          res.status(204).end();
        });
      },
    },
    opts,
  );
}
