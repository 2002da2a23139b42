/**
 * Shared engine of the Jellyfin and Emby fakes. Both servers descend from MediaBrowser and serve
 * the same PascalCase `BaseItemDto`s; the flavour object carries every difference
 * (media-server-apis.md §2-3 and the §8 checklist). Jellyfin specifics live in jellyfin.ts,
 * Emby specifics in emby.ts.
 */
import { createHash } from 'node:crypto';
import express, { type Express, type Request, type Response, type Router } from 'express';
import type { FakeCatalogue, FakeTrack } from './catalogue';
import {
  FakeCore,
  FileSizes,
  dropNulls,
  extOf,
  newApp,
  pseudoRandomKey,
  recordBody,
  searchParams,
  sendAudio,
  type StartedFake,
} from './common';

import { CiQuery, MbType, TICKS_PER_SECOND, dotnetDate, type MbPlaylist, type MediaBrowserFlavour, type MediaBrowserOptions } from './mediabrowser-protocol';

export * from './mediabrowser-protocol';

type SortKey = (i: number) => number | string;

/** The fake server object for one flavour; see jellyfin.ts / emby.ts for the exported constructors. */
export class MediaBrowserFake {
  readonly core = new FakeCore();
  readonly app: Express;
  readonly catalogue: FakeCatalogue;
  readonly token: string;
  readonly userId: string;
  readonly userName: string;
  readonly serverId: string;
  readonly opts: Required<Omit<MediaBrowserOptions, 'catalogue' | 'userId' | 'maxIdsPerRequest'>> & { maxIdsPerRequest: number | null };
  private readonly playlistMap = new Map<number, MbPlaylist>();
  private nextPlaylist = 1;
  private nextEntry = 1;
  private readonly sortCache = new Map<string, number[]>();
  /** File sizes (`MediaSources[0].Size`), read once per file. */
  private readonly sizes = new FileSizes();

  constructor(readonly flavour: MediaBrowserFlavour, options: MediaBrowserOptions) {
    this.catalogue = options.catalogue;
    this.token = options.token ?? 'fake-token';
    this.userId = (options.userId ?? createHash('md5').update(`${flavour.kind}:user:1`).digest('hex')).replace(/-/g, '').toLowerCase();
    this.userName = options.userName ?? 'alice';
    this.serverId = `${flavour.kind === 'jellyfin' ? 'a1' : 'e1'}${'0'.repeat(28)}ff`;
    this.opts = {
      token: this.token,
      userName: this.userName,
      password: options.password ?? 'secret',
      admin: options.admin ?? true,
      allowDownload: options.allowDownload ?? true,
      canDelete: options.canDelete ?? true,
      serverName: options.serverName ?? (flavour.kind === 'jellyfin' ? 'Fake Jellyfin' : 'Fake Emby'),
      version: options.version ?? (flavour.kind === 'jellyfin' ? '10.10.7' : '4.8.11.0'),
      maxIdsPerRequest: options.maxIdsPerRequest === undefined ? 100 : options.maxIdsPerRequest,
      maxRequestLineBytes: options.maxRequestLineBytes ?? 8192,
      withMoviesView: options.withMoviesView ?? true,
    };
    this.app = this.build();
  }

  // ---------- ids ----------
  trackId(index: number): string {
    return this.flavour.ids.encode(MbType.Track, index);
  }
  /** Provider id of a catalogue track. */
  idOf(track: FakeTrack | string): string {
    const id = typeof track === 'string' ? track : track.id;
    const i = this.catalogue.indexOfId(id);
    if (i === undefined) throw new Error(`unknown catalogue track ${id}`);
    return this.trackId(i);
  }
  /** Catalogue track behind a provider id, or undefined. */
  trackFor(providerId: string): FakeTrack | undefined {
    const i = this.trackIndex(providerId);
    return i === undefined ? undefined : this.catalogue.trackAt(i);
  }
  trackIndex(providerId: string): number | undefined {
    const d = this.flavour.ids.decode(providerId);
    return d && d.type === MbType.Track && d.n < this.catalogue.size ? d.n : undefined;
  }
  private albumIndex = new Map<string, number>();
  private artistIndex = new Map<string, number>();
  albumIdOf(catalogueAlbumId: string): string {
    if (this.albumIndex.size === 0) this.catalogue.albums().forEach((a, j) => this.albumIndex.set(a.id, j));
    return this.flavour.ids.encode(MbType.Album, this.albumIndex.get(catalogueAlbumId) ?? 0);
  }
  artistIdOf(catalogueArtistId: string): string {
    if (this.artistIndex.size === 0) this.catalogue.artists().forEach((a, k) => this.artistIndex.set(a.id, k));
    return this.flavour.ids.encode(MbType.Artist, this.artistIndex.get(catalogueArtistId) ?? 0);
  }
  /** View (library) id of a catalogue library; the Movies view is index = libraries.length. */
  viewIdOf(libraryId: string): string {
    const j = this.catalogue.libraries.findIndex((l) => l.id === libraryId);
    if (j < 0) throw new Error(`unknown library ${libraryId}`);
    return this.flavour.ids.encode(MbType.View, j);
  }
  get moviesViewId(): string {
    return this.flavour.ids.encode(MbType.View, this.catalogue.libraries.length);
  }

  // ---------- test knobs ----------
  /** See {@link FakeCore.failAfterPages}. A catalogue page = an item query whose IncludeItemTypes contains Audio. */
  failAfterPages(n: number | null): void {
    this.core.failAfterPages(n);
  }
  get requests() {
    return this.core.requests;
  }
  /** Current playlists with their tracks as provider ids, in order. */
  playlists(): Array<{ id: string; name: string; trackIds: string[]; entryIds: string[] }> {
    return [...this.playlistMap.values()].map((p) => ({
      id: p.id,
      name: p.name,
      trackIds: p.entries.map((e) => this.trackId(e.trackIndex)),
      entryIds: p.entries.map((e) => e.entryId),
    }));
  }
  start(): Promise<StartedFake> {
    return this.core.listen(this.app);
  }

  // ---------- DTOs ----------
  audioDto(i: number, fields: Set<string>, withUser: boolean): Record<string, unknown> {
    const t = this.catalogue.trackAt(i);
    const artistItem = { Name: t.artist, Id: this.artistIdOf(t.artistId) };
    const albumArtistItem = { Name: t.albumArtist, Id: this.artistIdOf(t.albumArtistId) };
    const dto: Record<string, unknown> = {
      Name: t.title,
      ServerId: this.serverId,
      Id: this.trackId(i),
      DateCreated: fields.has('datecreated') ? dotnetDate(t.addedAt) : undefined,
      SortName: fields.has('sortname') ? t.title.toLowerCase() : undefined,
      PremiereDate: t.year ? `${t.year}-01-01T00:00:00.0000000Z` : undefined,
      Container: extOf(t.audioFile),
      RunTimeTicks: Math.round(t.durationSeconds * TICKS_PER_SECOND),
      ProductionYear: t.year,
      IndexNumber: t.trackNumber,
      ParentIndexNumber: t.discNumber,
      IsFolder: false,
      Type: 'Audio',
      Path: fields.has('path') ? t.path : undefined,
      // One media source per audio item (the file itself): protocol, path, container, size in bytes, its audio stream.
      MediaSources: fields.has('mediasources')
        ? [
            {
              Protocol: 'File',
              Id: this.trackId(i),
              Path: t.path,
              Type: 'Default',
              Container: extOf(t.audioFile),
              Size: this.sizes.of(t.audioFile),
              Name: t.title,
              IsRemote: false,
              RunTimeTicks: Math.round(t.durationSeconds * TICKS_PER_SECOND),
              SupportsDirectStream: true,
              MediaStreams: [{ Codec: extOf(t.audioFile), Type: 'Audio', Index: 0, IsDefault: true }],
            },
          ]
        : undefined,
      ParentId: fields.has('parentid') ? this.albumIdOf(t.albumId) : undefined,
      Genres: fields.has('genres') ? (t.genre ? [t.genre] : []) : undefined,
      MediaType: 'Audio',
      Artists: [t.artist],
      ArtistItems: [artistItem],
      Album: t.album,
      AlbumId: this.albumIdOf(t.albumId),
      AlbumArtist: t.albumArtist,
      AlbumArtists: [albumArtistItem],
      UserData: withUser ? this.userData(i, t) : undefined,
    };
    return dropNulls(dto);
  }

  private userData(i: number, t: FakeTrack): Record<string, unknown> {
    return dropNulls({
      Rating: t.rating === undefined ? undefined : t.rating * 2,
      PlaybackPositionTicks: 0,
      PlayCount: t.playCount,
      IsFavorite: t.rating === 5,
      LastPlayedDate: t.lastPlayed ? dotnetDate(t.lastPlayed) : undefined,
      Played: t.playCount > 0,
      Key: this.trackId(i),
      ItemId: this.trackId(i),
    });
  }

  albumDto(j: number, fields: Set<string>): Record<string, unknown> {
    const a = this.catalogue.albums()[j];
    if (!a) return {};
    const first = this.catalogue.trackAt(a.trackIndices[0] ?? 0);
    return dropNulls({
      Name: a.name,
      ServerId: this.serverId,
      Id: this.flavour.ids.encode(MbType.Album, j),
      DateCreated: fields.has('datecreated') ? dotnetDate(first.addedAt) : undefined,
      ProductionYear: a.year,
      IsFolder: true,
      Type: 'MusicAlbum',
      ChildCount: fields.has('childcount') ? a.trackIndices.length : undefined,
      AlbumArtist: a.artist,
      AlbumArtists: [{ Name: a.artist, Id: this.artistIdOf(a.artistId) }],
      RunTimeTicks: Math.round(a.trackIndices.reduce((s, i) => s + this.catalogue.trackAt(i).durationSeconds, 0) * TICKS_PER_SECOND),
    });
  }

  artistDto(k: number): Record<string, unknown> {
    const a = this.catalogue.artists()[k];
    return { Name: a?.name, ServerId: this.serverId, Id: this.flavour.ids.encode(MbType.Artist, k), Type: 'MusicArtist', IsFolder: true };
  }

  playlistDto(p: MbPlaylist, fields: Set<string>): Record<string, unknown> {
    return dropNulls({
      Name: p.name,
      ServerId: this.serverId,
      Id: p.id,
      DateCreated: fields.has('datecreated') ? dotnetDate(p.createdAt) : undefined,
      ChildCount: fields.has('childcount') ? p.entries.length : undefined,
      IsFolder: true,
      Type: 'Playlist',
      MediaType: 'Audio',
      RunTimeTicks: Math.round(p.entries.reduce((s, e) => s + this.catalogue.trackAt(e.trackIndex).durationSeconds, 0) * TICKS_PER_SECOND),
    });
  }

  views(): Array<{ id: string; name: string; collectionType: string; locations: string[] }> {
    const v = this.catalogue.libraries.map((l) => ({ id: this.viewIdOf(l.id), name: l.name, collectionType: 'music', locations: [l.path] }));
    if (this.opts.withMoviesView) v.push({ id: this.moviesViewId, name: 'Movies', collectionType: 'movies', locations: ['/srv/movies'] });
    return v;
  }

  queryResult(items: unknown[], total: number, start: number): Record<string, unknown> {
    return this.flavour.startIndexInResult ? { Items: items, TotalRecordCount: total, StartIndex: start } : { Items: items, TotalRecordCount: total };
  }

  // ---------- item queries ----------
  private sortedTracks(indices: readonly number[], sortBy: string[], orders: string[], cacheKey: string): number[] {
    const hit = this.sortCache.get(cacheKey);
    if (hit) return hit;
    const cat = this.catalogue;
    const keyFns: Array<{ fn: SortKey; desc: boolean }> = [];
    sortBy.forEach((s, n) => {
      const desc = (orders[n] ?? orders[0] ?? 'Ascending').toLowerCase() === 'descending';
      const k = s.toLowerCase();
      const fn: SortKey | undefined =
        k === 'sortname' || k === 'name'
          ? (i) => cat.trackAt(i).title.toLowerCase()
          : k === 'album'
            ? (i) => cat.trackAt(i).album.toLowerCase()
            : k === 'albumartist'
              ? (i) => cat.trackAt(i).albumArtist.toLowerCase()
              : k === 'artist'
                ? (i) => cat.trackAt(i).artist.toLowerCase()
                : k === 'playcount'
                  ? (i) => cat.trackAt(i).playCount
                  : k === 'dateplayed'
                    ? (i) => cat.trackAt(i).lastPlayed ?? ''
                    : k === 'datecreated'
                      ? (i) => cat.trackAt(i).addedAt
                      : k === 'runtime'
                        ? (i) => cat.trackAt(i).durationSeconds
                        : k === 'productionyear'
                          ? (i) => cat.trackAt(i).year ?? 0
                          : k === 'random'
                            ? (i) => pseudoRandomKey(i)
                            : undefined; // unknown sort names are ignored, as the enum binder drops them
      if (fn) keyFns.push({ fn, desc });
    });
    const out = [...indices];
    if (keyFns.length) {
      const keys = keyFns.map(({ fn }) => new Map(out.map((i) => [i, fn(i)])));
      out.sort((a, b) => {
        for (let n = 0; n < keyFns.length; n++) {
          const m = keys[n] as Map<number, number | string>;
          const ka = m.get(a) as number | string;
          const kb = m.get(b) as number | string;
          if (ka < kb) return keyFns[n]?.desc ? 1 : -1;
          if (ka > kb) return keyFns[n]?.desc ? -1 : 1;
        }
        return a - b;
      });
    }
    this.sortCache.set(cacheKey, out);
    if (this.sortCache.size > 64) this.sortCache.delete(this.sortCache.keys().next().value as string);
    return out;
  }

  /** Handles `/Items` and `/Users/{uid}/Items`. */
  itemsQuery(req: Request, res: Response, q: CiQuery, pathUserId?: string): void {
    const userId = pathUserId ?? q.get('userId');
    if (userId !== undefined && userId.replace(/-/g, '').toLowerCase() !== this.userId) {
      res.status(404).type('text/plain').send('User not found');
      return;
    }
    const withUser = true; // the token is a user token: Jellyfin/Emby fall back to the token's user
    const types = q.list('IncludeItemTypes').map((s) => s.toLowerCase());
    const fields = new Set(q.list('Fields').map((f) => f.toLowerCase()));
    const start = Math.max(0, q.int('StartIndex') ?? 0);
    const limit = q.int('Limit');
    const recursive = q.bool('Recursive') ?? false;
    const parentId = q.get('ParentId');
    const filters = new Set(q.list('Filters').map((f) => f.toLowerCase()));
    const ids = q.list('Ids');
    const search = q.get('SearchTerm')?.toLowerCase();
    const enableTotal = q.bool('EnableTotalRecordCount') ?? true;

    const page = (all: unknown[] | number[], render: (x: never) => unknown): void => {
      const slice = (all as unknown[]).slice(start, limit === undefined ? undefined : start + limit);
      const items = slice.map((x) => render(x as never));
      res.json(this.queryResult(items, enableTotal ? all.length : items.length, start));
    };

    if (types.includes('audio') || (types.length === 0 && (ids.length > 0 || parentId))) {
      const isAudioQuery = types.includes('audio');
      if (isAudioQuery && this.core.pageShouldFail()) {
        res.status(500).type('text/plain').send('Internal server error (injected by fake)');
        return;
      }
      let indices: readonly number[];
      let scope = 'all';
      const parent = parentId ? this.flavour.ids.decode(parentId) : undefined;
      if (parentId && !parent) {
        res.status(404).type('text/plain').send('Item not found');
        return;
      }
      if (ids.length) {
        indices = ids.map((id) => this.trackIndex(id)).filter((i): i is number => i !== undefined);
        scope = `ids:${ids.join(',')}`;
      } else if (parent?.type === MbType.View) {
        const lib = this.catalogue.libraries[parent.n];
        // Audio sits below artist/album folders: a non-recursive query of a view has no Audio children.
        indices = lib && recursive ? this.catalogue.indicesIn([lib.id]) : [];
        scope = `view:${parent.n}:${recursive}`;
      } else if (parent?.type === MbType.Album) {
        indices = this.catalogue.albums()[parent.n]?.trackIndices ?? [];
        scope = `album:${parent.n}`;
      } else if (parent?.type === MbType.Playlist) {
        indices = this.playlistMap.get(parent.n)?.entries.map((e) => e.trackIndex) ?? [];
        scope = `pl:${parent.n}:${this.nextEntry}`;
      } else if (parent) {
        indices = [];
      } else {
        indices = recursive || ids.length ? this.catalogue.indicesIn() : [];
        scope = `root:${recursive}`;
      }
      let list = [...indices];
      if (filters.has('isplayed')) list = list.filter((i) => this.catalogue.trackAt(i).playCount > 0);
      if (filters.has('isunplayed')) list = list.filter((i) => this.catalogue.trackAt(i).playCount === 0);
      if (filters.has('isfavorite') || filters.has('isfavoriteorlikes')) list = list.filter((i) => this.catalogue.trackAt(i).rating === 5);
      if (search) list = list.filter((i) => this.catalogue.trackAt(i).title.toLowerCase().includes(search));
      const sortBy = q.list('SortBy');
      const orders = q.list('SortOrder');
      const key = `${scope}|${[...filters].sort().join(',')}|${search ?? ''}|${sortBy.join(',')}|${orders.join(',')}|${this.catalogue.version}`;
      const sorted = sortBy.length ? this.sortedTracks(list, sortBy, orders, key) : list;
      page(sorted, (i: number) => this.audioDto(i, fields, withUser));
      return;
    }
    if (types.includes('musicalbum')) {
      const parent = parentId ? this.flavour.ids.decode(parentId) : undefined;
      const lib = parent?.type === MbType.View ? this.catalogue.libraries[parent.n]?.id : undefined;
      let albums = this.catalogue.albums().map((_, j) => j);
      if (parent) albums = lib ? albums.filter((j) => this.catalogue.albums()[j]?.library === lib) : [];
      if (q.list('SortBy').some((s) => s.toLowerCase() === 'datecreated')) {
        const desc = (q.get('SortOrder') ?? '').toLowerCase() === 'descending';
        const firstAdded = (j: number) => this.catalogue.trackAt(this.catalogue.albums()[j]?.trackIndices[0] ?? 0).addedAt;
        albums.sort((a, b) => (firstAdded(a) < firstAdded(b) ? -1 : firstAdded(a) > firstAdded(b) ? 1 : a - b) * (desc ? -1 : 1));
      }
      page(albums, (j: number) => this.albumDto(j, fields));
      return;
    }
    if (types.includes('musicartist')) {
      page(this.artistIndices(parentId), (k: number) => this.artistDto(k));
      return;
    }
    if (types.includes('playlist')) {
      page([...this.playlistMap.values()], (p: MbPlaylist) => this.playlistDto(p, fields));
      return;
    }
    if (types.length === 0 && !parentId) {
      // The user's root folder: the views.
      page(this.views(), (v: ReturnType<MediaBrowserFake['views']>[number]) => ({
        Name: v.name, ServerId: this.serverId, Id: v.id, Type: 'CollectionFolder', CollectionType: v.collectionType, IsFolder: true,
      }));
      return;
    }
    res.json(this.queryResult([], 0, start));
  }

  /**
   * Artist indices, optionally limited to one view: track and album artists (`/Artists`,
   * `IncludeItemTypes=MusicArtist`) or album artists only (`/Artists/AlbumArtists`).
   */
  artistIndices(parentId: string | undefined, albumArtistsOnly = false): number[] {
    const parent = parentId ? this.flavour.ids.decode(parentId) : undefined;
    const artists = this.catalogue.artists();
    let lib: string | undefined;
    if (parent) {
      lib = parent.type === MbType.View ? this.catalogue.libraries[parent.n]?.id : undefined;
      if (!lib) return [];
    } else if (!albumArtistsOnly) {
      return artists.map((_, k) => k);
    }
    const used = new Set<string>();
    for (const i of this.catalogue.indicesIn(lib ? [lib] : undefined)) {
      const t = this.catalogue.trackAt(i);
      if (!albumArtistsOnly) used.add(t.artistId);
      used.add(t.albumArtistId);
    }
    return artists.map((a, k) => (used.has(a.id) ? k : -1)).filter((k) => k >= 0);
  }

  /** One item by id (track, album, playlist, view). Returns undefined when unknown. */
  itemById(id: string): Record<string, unknown> | undefined {
    const d = this.flavour.ids.decode(id);
    if (!d) return undefined;
    const all = new Set(['path', 'datecreated', 'genres', 'parentid', 'sortname', 'childcount']);
    if (d.type === MbType.Track && d.n < this.catalogue.size) return this.audioDto(d.n, all, true);
    if (d.type === MbType.Album && d.n < this.catalogue.albums().length) return this.albumDto(d.n, all);
    if (d.type === MbType.Artist && d.n < this.catalogue.artists().length) return this.artistDto(d.n);
    if (d.type === MbType.Playlist) {
      const p = this.playlistMap.get(d.n);
      return p ? this.playlistDto(p, all) : undefined;
    }
    if (d.type === MbType.View) {
      const v = this.views()[d.n];
      return v ? { Name: v.name, Id: v.id, Type: 'CollectionFolder', CollectionType: v.collectionType, IsFolder: true } : undefined;
    }
    return undefined;
  }

  // ---------- playlists ----------
  /** Validates the id count; answers 400 and returns false when over the cap. */
  checkBatch(res: Response, count: number): boolean {
    const cap = this.opts.maxIdsPerRequest;
    if (cap !== null && count > cap) {
      res.status(400).json({ type: 'https://tools.ietf.org/html/rfc9110#section-15.5.1', title: 'Bad Request', status: 400, detail: `Too many ids in one request: ${count} > ${cap}` });
      return false;
    }
    return true;
  }

  /** Resolves provider ids to catalogue indices; undefined (after a 400/404 answer) when one is unknown. */
  resolveTracks(res: Response, ids: string[]): number[] | undefined {
    const out: number[] = [];
    for (const id of ids) {
      const i = this.trackIndex(id);
      if (i === undefined) {
        res.status(404).type('text/plain').send(`Item not found: ${id}`);
        return undefined;
      }
      out.push(i);
    }
    return out;
  }

  createPlaylist(name: string, trackIndices: number[], isPublic: boolean): MbPlaylist {
    const n = this.nextPlaylist++;
    const p: MbPlaylist = {
      n,
      id: this.flavour.ids.encode(MbType.Playlist, n),
      name,
      ownerId: this.userId,
      isPublic,
      entries: [],
      createdAt: new Date().toISOString(),
    };
    this.playlistMap.set(n, p);
    this.addEntries(p, trackIndices);
    return p;
  }

  addEntries(p: MbPlaylist, trackIndices: number[]): void {
    for (const trackIndex of trackIndices) {
      p.entries.push({ entryId: this.flavour.ids.encode(MbType.Entry, this.nextEntry++), trackIndex });
    }
  }

  playlistById(id: string): MbPlaylist | undefined {
    const d = this.flavour.ids.decode(id);
    return d && d.type === MbType.Playlist ? this.playlistMap.get(d.n) : undefined;
  }

  deletePlaylist(p: MbPlaylist): void {
    this.playlistMap.delete(p.n);
  }

  // ---------- app ----------
  private build(): Express {
    const app = newApp(this.core);
    app.use((req, res, next) => {
      // Kestrel rejects request lines over MaxRequestLineSize with 414.
      const lineBytes = req.method.length + 1 + Buffer.byteLength(req.originalUrl) + ' HTTP/1.1'.length;
      if (lineBytes > this.opts.maxRequestLineBytes) {
        res.status(414).end();
        return;
      }
      next();
    });
    app.use(express.json({ limit: '30mb', type: ['application/json', 'text/json', 'application/*+json'] }));
    app.use((req, res, next) => {
      if (req.body && typeof req.body === 'object' && Object.keys(req.body as object).length) recordBody(res, req.body);
      next();
    });
    const router = express.Router({ caseSensitive: false });
    this.publicRoutes(router);
    router.use((req, res, next) => {
      const token = this.flavour.tokenOf(req, new CiQuery(searchParams(req)));
      if (token !== this.token) {
        res.status(401).type('text/plain').send('Unauthorized');
        return;
      }
      next();
    });
    this.flavour.extraRoutes?.(router, this);
    this.sharedRoutes(router);
    for (const m of this.flavour.mounts) app.use(m || '/', router);
    app.use((_req, res) => {
      res.status(404).type('text/plain').send('Not found');
    });
    return app;
  }

  private publicRoutes(r: Router): void {
    r.get('/System/Info/Public', (req, res) => {
      res.json(this.flavour.publicInfo(this, req));
    });
    r.all('/System/Ping', (_req, res) => {
      res.json(this.flavour.kind === 'jellyfin' ? 'Jellyfin Server' : 'Emby Server');
    });
    r.post('/Users/AuthenticateByName', (req, res) => {
      const body = (req.body ?? {}) as { Username?: string; Pw?: string };
      if (body.Username !== this.userName || body.Pw !== this.opts.password) {
        res.status(401).type('text/plain').send('Invalid username or password entered.');
        return;
      }
      res.json({
        User: { Name: this.userName, ServerId: this.serverId, Id: this.userId, Policy: { IsAdministrator: this.opts.admin } },
        SessionInfo: { UserId: this.userId, UserName: this.userName },
        AccessToken: this.token,
        ServerId: this.serverId,
      });
    });
    this.flavour.extraPublicRoutes?.(r, this);
  }

  private sharedRoutes(r: Router): void {
    const q = (req: Request) => new CiQuery(searchParams(req));
    r.get('/System/Info', (req, res) => {
      res.json({ ...this.flavour.publicInfo(this, req), OperatingSystemDisplayName: 'Linux', HasPendingRestart: false, IsShuttingDown: false });
    });
    r.get('/Users', (_req, res) => {
      res.json([{ Name: this.userName, ServerId: this.serverId, Id: this.userId, Policy: { IsAdministrator: this.opts.admin } }]);
    });
    r.get('/Users/Me', (_req, res) => {
      res.json({ Name: this.userName, ServerId: this.serverId, Id: this.userId, Policy: { IsAdministrator: this.opts.admin } });
    });
    r.get('/Library/VirtualFolders', (_req, res) => {
      if (!this.opts.admin) {
        res.status(403).type('text/plain').send('Forbidden');
        return;
      }
      res.json(this.virtualFolders());
    });
    const views = (req: Request, res: Response, uid: string | undefined) => {
      if (uid !== undefined && uid.replace(/-/g, '').toLowerCase() !== this.userId) {
        res.status(404).type('text/plain').send('User not found');
        return;
      }
      const items = this.views().map((v) => ({ Name: v.name, ServerId: this.serverId, Id: v.id, Type: 'CollectionFolder', CollectionType: v.collectionType, IsFolder: true }));
      res.json(this.queryResult(items, items.length, 0));
    };
    r.get('/Users/:uid/Views', (req, res) => views(req, res, req.params.uid));
    r.get('/Items', (req, res) => this.itemsQuery(req, res, q(req)));
    r.get('/Users/:uid/Items', (req, res) => this.itemsQuery(req, res, q(req), req.params.uid));
    const oneItem = (req: Request, res: Response) => {
      const item = this.itemById(String(req.params.id));
      if (!item) res.status(404).type('text/plain').send('Item not found');
      else res.json(item);
    };
    r.get('/Items/:id', oneItem);
    r.get('/Users/:uid/Items/:id', oneItem);
    r.get('/Items/:id/Download', (req, res) => {
      const t = this.trackFor(String(req.params.id));
      if (!t) {
        res.status(404).type('text/plain').send('Item not found');
        return;
      }
      if (!this.opts.allowDownload) {
        res.status(403).type('text/plain').send('Forbidden');
        return;
      }
      const file = t.audioFile.slice(t.audioFile.lastIndexOf('/') + 1);
      sendAudio(res, t.audioFile, { 'Content-Disposition': `attachment; filename="${file}"` });
    });
    r.get('/Items/:id/File', (req, res) => {
      const t = this.trackFor(String(req.params.id));
      if (!t) res.status(404).type('text/plain').send('Item not found');
      else sendAudio(res, t.audioFile);
    });
    const stream = (req: Request, res: Response) => {
      const t = this.trackFor(String(req.params.id));
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
      const t = this.trackFor(String(req.params.id));
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
      const all = this.artistIndices(cq.get('ParentId'), req.path.toLowerCase().endsWith('/albumartists'));
      const items = all.slice(start, limit === undefined ? undefined : start + limit).map((k) => this.artistDto(k));
      res.json(this.queryResult(items, all.length, start));
    });
    r.get('/Playlists/:pid/Items', (req, res) => {
      const p = this.playlistById(String(req.params.pid));
      if (!p) {
        res.status(404).type('text/plain').send('Playlist not found');
        return;
      }
      const cq = q(req);
      const start = Math.max(0, cq.int('StartIndex') ?? 0);
      const limit = cq.int('Limit');
      const fields = new Set(cq.list('Fields').map((f) => f.toLowerCase()));
      const items = p.entries
        .slice(start, limit === undefined ? undefined : start + limit)
        .map((e) => ({ ...this.audioDto(e.trackIndex, fields, true), PlaylistItemId: e.entryId }));
      res.json(this.queryResult(items, p.entries.length, start));
    });
    r.delete('/Playlists/:pid/Items', (req, res) => {
      const p = this.playlistById(String(req.params.pid));
      if (!p) {
        res.status(404).type('text/plain').send('Playlist not found');
        return;
      }
      const entryIds = new Set(q(req).list('EntryIds'));
      p.entries = p.entries.filter((e) => !entryIds.has(e.entryId));
      res.status(204).end();
    });
    r.delete('/Items/:id', (req, res) => {
      const p = this.playlistById(String(req.params.id));
      if (!p) {
        res.status(404).type('text/plain').send('Item not found');
        return;
      }
      if (!this.opts.canDelete) {
        res.status(401).type('text/plain').send('Unauthorized access');
        return;
      }
      this.deletePlaylist(p);
      res.status(204).end();
    });
  }

  virtualFolders(): Array<Record<string, unknown>> {
    return this.views().map((v) =>
      dropNulls({
        Name: v.name,
        Locations: v.locations,
        CollectionType: v.collectionType,
        ItemId: v.id,
        Id: this.flavour.kind === 'emby' ? v.id : undefined,
        Guid: this.flavour.kind === 'emby' ? `${v.id.padStart(8, '0').slice(-8)}-0000-4000-8000-000000000000` : undefined,
        PrimaryImageItemId: v.id,
        RefreshStatus: 'Idle',
        LibraryOptions: {},
      }),
    );
  }
}
