/**
 * Fake Jellyfin server (10.x/12.x API surface), per media-server-apis.md §2 and §8.
 *
 * - Auth: `Authorization: MediaBrowser Token="…"` (values URL-decoded) or `?ApiKey=`. The legacy
 *   forms (`X-Emby-Token`, `X-MediaBrowser-Token`, `X-Emby-Authorization`, scheme `Emby`,
 *   `?api_key=`) work only with `legacyAuth: true` (Jellyfin 12 turns them off). Bad/missing → 401.
 * - Ids: 32 lowercase hex, no dashes (dashed input accepted). Query names case-insensitive.
 * - `/Items`: StartIndex/Limit/ParentId/IncludeItemTypes/Recursive/SortBy/SortOrder/Filters/Ids/
 *   SearchTerm; `Path`, `DateCreated`, `Genres`, `ParentId`, `SortName`, `MediaSources` (one source: the file,
 *   `Size` in bytes) only with `Fields`;
 *   null properties left out; `RunTimeTicks` in 100 ns; `UserData` always (user token).
 *   A catalogue page (for `failAfterPages`) is any item query with `IncludeItemTypes` containing Audio.
 * - Libraries: `/Library/VirtualFolders` (admin only, else 403; bare array) and `/UserViews`,
 *   `/Users/{uid}/Views`; a "Movies" view (CollectionType movies) is included by default.
 * - Download: `/Items/{id}/Download` (403 without the download policy), `/Items/{id}/File`,
 *   `/Audio/{id}/stream?static=true` (no auth needed, as in source).
 * - Playlists: `POST /Playlists` (JSON body or obsolete query form) → `{Id}`;
 *   `POST /Playlists/{id}/Items?ids=` → 204; `GET/DELETE /Playlists/{id}/Items`; `DELETE /Items/{id}`
 *   → 204 (401 when the user may not delete). More than `maxIdsPerRequest` ids (default 100) → 400;
 *   request lines over 8 KiB → 414.
 * - Lyrics: `GET /Audio/{id}/Lyrics` → `LyricDto` `{Metadata, Lyrics:[{Text}]}`, 404 when none.
 */
import type { Request, Router } from 'express';
import { HexIds, sendAudio, type StartedFake } from './common';
import {
  MbType,
  MediaBrowserFake,
  type CiQuery,
  type MbIdScheme,
  type MediaBrowserOptions,
} from './mediabrowser';

/** Options of {@link createFakeJellyfin}. */
export interface FakeJellyfinOptions extends MediaBrowserOptions {
  /** Accept the legacy auth forms (Jellyfin 10.x behaviour). Default false (12.0 behaviour). */
  legacyAuth?: boolean;
}

/** Parses `Scheme k="v", k2="v2"` (values URL-decoded, keys case-insensitive). */
export function parseMediaBrowserAuth(header: string): { scheme: string; params: Record<string, string> } | undefined {
  const m = /^\s*(\S+)\s+(.*)$/s.exec(header);
  if (!m) return undefined;
  const params: Record<string, string> = {};
  for (const p of (m[2] ?? '').matchAll(/([A-Za-z]+)\s*=\s*"([^"]*)"/g)) {
    let v = p[2] ?? '';
    try {
      v = decodeURIComponent(v);
    } catch {
      /* keep raw */
    }
    params[(p[1] ?? '').toLowerCase()] = v;
  }
  return { scheme: (m[1] ?? '').toLowerCase(), params };
}

/** Hex id scheme of the Jellyfin fake. */
export const jellyfinIds = (salt = 'jellyfin'): MbIdScheme => {
  const hex = new HexIds(salt);
  return {
    encode: (type, n) => hex.encode(type, n),
    decode: (id) => hex.decode(id) as { type: MbType; n: number } | undefined,
  };
};

/** A fake Jellyfin: express `app`, `start()`, knobs and id helpers (see {@link MediaBrowserFake}). */
export type FakeJellyfin = MediaBrowserFake;

/** Builds a fake Jellyfin over `opts.catalogue`. Call `start()` to listen on 127.0.0.1. */
export function createFakeJellyfin(opts: FakeJellyfinOptions): FakeJellyfin {
  const legacy = opts.legacyAuth ?? false;
  const tokenOf = (req: Request, q: CiQuery): string | undefined => {
    const auth = req.header('authorization');
    if (auth) {
      const parsed = parseMediaBrowserAuth(auth);
      if (parsed && (parsed.scheme === 'mediabrowser' || (legacy && parsed.scheme === 'emby')) && parsed.params.token) return parsed.params.token;
    }
    const apiKey = q.get('ApiKey');
    if (apiKey) return apiKey;
    if (legacy) {
      const legacyAuthHeader = req.header('x-emby-authorization');
      const parsed = legacyAuthHeader ? parseMediaBrowserAuth(legacyAuthHeader) : undefined;
      return req.header('x-emby-token') ?? req.header('x-mediabrowser-token') ?? parsed?.params.token ?? q.get('api_key');
    }
    return undefined;
  };
  const fake = new MediaBrowserFake(
    {
      kind: 'jellyfin',
      ids: jellyfinIds(),
      tokenOf,
      startIndexInResult: true,
      mounts: [''],
      publicInfo: (f, req) => ({
        LocalAddress: `http://${req.headers.host ?? '127.0.0.1:8096'}`,
        ServerName: f.opts.serverName,
        Version: f.opts.version,
        ProductName: 'Jellyfin Server',
        OperatingSystem: 'Linux',
        Id: f.serverId,
        StartupWizardCompleted: true,
      }),
      extraPublicRoutes: (r: Router, f) => {
        // AudioController carries no [Authorize] attribute in source.
        r.get(['/Audio/:id/stream', '/Audio/:id/stream.:ext'], (req, res, next) => {
          const t = f.trackFor(String(req.params.id));
          if (!t) {
            next();
            return;
          }
          const q = new URLSearchParams(req.originalUrl.split('?')[1] ?? '');
          const isStatic = [...q].some(([k, v]) => k.toLowerCase() === 'static' && v.toLowerCase() === 'true');
          if (!isStatic) {
            res.status(400).type('text/plain').send('fake server: only static=true streams are supported');
            return;
          }
          sendAudio(res, t.audioFile);
        });
      },
      extraRoutes: (r: Router, f) => {
        r.get('/UserViews', (req, res) => {
          const q = new URLSearchParams(req.originalUrl.split('?')[1] ?? '');
          const uid = [...q].find(([k]) => k.toLowerCase() === 'userid')?.[1];
          if (uid !== undefined && uid.replace(/-/g, '').toLowerCase() !== f.userId) {
            res.status(404).type('text/plain').send('User not found');
            return;
          }
          const items = f.views().map((v) => ({ Name: v.name, ServerId: f.serverId, Id: v.id, Type: 'CollectionFolder', CollectionType: v.collectionType, IsFolder: true }));
          res.json(f.queryResult(items, items.length, 0));
        });
        r.post('/Playlists', (req, res) => {
          const body = (req.body ?? {}) as { Name?: string; Ids?: string[]; UserId?: string; MediaType?: string; IsPublic?: boolean };
          const q = new URLSearchParams(req.originalUrl.split('?')[1] ?? '');
          const qv = (k: string) => [...q].find(([key]) => key.toLowerCase() === k)?.[1];
          const name = body.Name ?? qv('name');
          const ids = Array.isArray(body.Ids) ? body.Ids : (qv('ids') ?? '').split(',').filter(Boolean);
          const userId = body.UserId ?? qv('userid');
          if (!name) {
            res.status(400).json({ title: 'Bad Request', status: 400, detail: 'Name is required' });
            return;
          }
          if (userId !== undefined && userId.replace(/-/g, '').toLowerCase() !== f.userId) {
            res.status(404).type('text/plain').send('User not found');
            return;
          }
          if (!f.checkBatch(res, ids.length)) return;
          const tracks = f.resolveTracks(res, ids);
          if (!tracks) return;
          const p = f.createPlaylist(name, tracks, body.IsPublic ?? true);
          res.json({ Id: p.id });
        });
        r.post('/Playlists/:pid/Items', (req, res) => {
          const p = f.playlistById(String(req.params.pid));
          if (!p) {
            res.status(404).type('text/plain').send('Playlist not found');
            return;
          }
          const q = new URLSearchParams(req.originalUrl.split('?')[1] ?? '');
          const ids = [...q].filter(([k]) => k.toLowerCase() === 'ids').flatMap(([, v]) => v.split(',')).filter(Boolean);
          if (!f.checkBatch(res, ids.length)) return;
          const tracks = f.resolveTracks(res, ids);
          if (!tracks) return;
          f.addEntries(p, tracks);
          res.status(204).end();
        });
      },
    },
    opts,
  );
  return fake;
}

export type { StartedFake };
export { MbType };
