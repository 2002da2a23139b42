/**
 * Routes both MediaBrowser flavours share (mediabrowser.ts; media-server-apis.md §2-3): the public ones
 * (`/System/Info/Public`, `/System/Ping`, `POST /Users/AuthenticateByName`) and, behind the token check, system and
 * user info, `/Library/VirtualFolders` (admin only), views, the item queries (`/Items`, `/Users/{uid}/Items`, one
 * item), media (`Download` 403 without `allowDownload`, `File`, `stream` only with `static=true`, `Lyrics`),
 * `/Artists` and `/Artists/AlbumArtists`, then the playlist routes (mediabrowser-playlists.ts).
 */
import type { Request, Response, Router } from 'express';
import { searchParams, sendAudio } from './common';
import type { MediaBrowserFake } from './mediabrowser';
import { playlistRoutes } from './mediabrowser-playlists';
import { CiQuery } from './mediabrowser-protocol';

/** Routes served without a token, then the flavour's own public routes. */
export function publicRoutes(fake: MediaBrowserFake, r: Router): void {
  r.get('/System/Info/Public', (req, res) => {
    res.json(fake.flavour.publicInfo(fake, req));
  });
  r.all('/System/Ping', (_req, res) => {
    res.json(fake.flavour.kind === 'jellyfin' ? 'Jellyfin Server' : 'Emby Server');
  });
  r.post('/Users/AuthenticateByName', (req, res) => {
    const body = (req.body ?? {}) as { Username?: string; Pw?: string };
    if (body.Username !== fake.userName || body.Pw !== fake.opts.password) {
      res.status(401).type('text/plain').send('Invalid username or password entered.');
      return;
    }
    res.json({
      User: { Name: fake.userName, ServerId: fake.serverId, Id: fake.userId, Policy: { IsAdministrator: fake.opts.admin } },
      SessionInfo: { UserId: fake.userId, UserName: fake.userName },
      AccessToken: fake.token,
      ServerId: fake.serverId,
    });
  });
  fake.flavour.extraPublicRoutes?.(r, fake);
}

/** Routes behind the token check that both flavours serve (after the flavour's `extraRoutes`). */
export function sharedRoutes(fake: MediaBrowserFake, r: Router): void {
  const q = (req: Request) => new CiQuery(searchParams(req));
  r.get('/System/Info', (req, res) => {
    res.json({ ...fake.flavour.publicInfo(fake, req), OperatingSystemDisplayName: 'Linux', HasPendingRestart: false, IsShuttingDown: false });
  });
  r.get('/Users', (_req, res) => {
    res.json([{ Name: fake.userName, ServerId: fake.serverId, Id: fake.userId, Policy: { IsAdministrator: fake.opts.admin } }]);
  });
  r.get('/Users/Me', (_req, res) => {
    res.json({ Name: fake.userName, ServerId: fake.serverId, Id: fake.userId, Policy: { IsAdministrator: fake.opts.admin } });
  });
  r.get('/Library/VirtualFolders', (_req, res) => {
    if (!fake.opts.admin) {
      res.status(403).type('text/plain').send('Forbidden');
      return;
    }
    res.json(fake.virtualFolders());
  });
  const views = (req: Request, res: Response, uid: string | undefined) => {
    if (uid !== undefined && uid.replace(/-/g, '').toLowerCase() !== fake.userId) {
      res.status(404).type('text/plain').send('User not found');
      return;
    }
    const items = fake.views().map((v) => ({ Name: v.name, ServerId: fake.serverId, Id: v.id, Type: 'CollectionFolder', CollectionType: v.collectionType, IsFolder: true }));
    res.json(fake.queryResult(items, items.length, 0));
  };
  r.get('/Users/:uid/Views', (req, res) => views(req, res, req.params.uid));
  r.get('/Items', (req, res) => fake.itemsQuery(req, res, q(req)));
  r.get('/Users/:uid/Items', (req, res) => fake.itemsQuery(req, res, q(req), req.params.uid));
  const oneItem = (req: Request, res: Response) => {
    const item = fake.itemById(String(req.params.id));
    if (!item) res.status(404).type('text/plain').send('Item not found');
    else res.json(item);
  };
  r.get('/Items/:id', oneItem);
  r.get('/Users/:uid/Items/:id', oneItem);
  r.get('/Items/:id/Download', (req, res) => {
    const t = fake.trackFor(String(req.params.id));
    if (!t) {
      res.status(404).type('text/plain').send('Item not found');
      return;
    }
    if (!fake.opts.allowDownload) {
      res.status(403).type('text/plain').send('Forbidden');
      return;
    }
    const file = t.audioFile.slice(t.audioFile.lastIndexOf('/') + 1);
    sendAudio(res, t.audioFile, { 'Content-Disposition': `attachment; filename="${file}"` });
  });
  r.get('/Items/:id/File', (req, res) => {
    const t = fake.trackFor(String(req.params.id));
    if (!t) res.status(404).type('text/plain').send('Item not found');
    else sendAudio(res, t.audioFile);
  });
  const stream = (req: Request, res: Response) => {
    const t = fake.trackFor(String(req.params.id));
    if (!t) {
      res.status(404).type('text/plain').send('Item not found');
      return;
    }
    if (!(q(req).bool('static') ?? false)) {
      // The fake cannot transcode: only the original (static=true) is served.
      res.status(400).type('text/plain').send('fake server: only static=true streams are supported');
      return;
    }
    sendAudio(res, t.audioFile);
  };
  r.get('/Audio/:id/stream', stream);
  r.get('/Audio/:id/stream.:ext', stream);
  // Jellyfin 10.9+ LyricDto; served by the Emby fake too (the brief's contract for both kinds).
  r.get('/Audio/:id/Lyrics', (req, res) => {
    const t = fake.trackFor(String(req.params.id));
    if (!t || !t.lyrics) {
      res.status(404).end();
      return;
    }
    res.json({ Metadata: { IsSynced: false }, Lyrics: t.lyrics.split('\n').map((Text) => ({ Text })) });
  });
  r.get(['/Artists', '/Artists/AlbumArtists'], (req, res) => {
    const cq = q(req);
    const start = Math.max(0, cq.int('StartIndex') ?? 0);
    const limit = cq.int('Limit');
    const all = fake.artistIndices(cq.get('ParentId'), req.path.toLowerCase().endsWith('/albumartists'));
    const items = all.slice(start, limit === undefined ? undefined : start + limit).map((k) => fake.artistDto(k));
    res.json(fake.queryResult(items, all.length, start));
  });
  playlistRoutes(fake, r);
}
