/**
 * Shared engine of the Jellyfin and Emby fakes. Both servers descend from MediaBrowser and serve
 * the same PascalCase `BaseItemDto`s; the flavour object carries every difference
 * (media-server-apis.md §2-3 and the §8 checklist). Jellyfin specifics live in jellyfin.ts,
 * Emby specifics in emby.ts.
 *
 * Files: this one holds the server (ids, knobs, DTOs, app); mediabrowser-protocol.ts the wire vocabulary;
 * mediabrowser-routes.ts the routes both flavours share; mediabrowser-items.ts the item queries;
 * mediabrowser-playlists.ts the playlist store and routes.
 */
import { createHash } from 'node:crypto';
import express, { type Express, type Request, type Response } from 'express';
import type { FakeCatalogue, FakeTrack } from './catalogue';
import { FakeCore, FileSizes, dropNulls, extOf, newApp, recordBody, searchParams, type StartedFake } from './common';
import { MediaBrowserItems } from './mediabrowser-items';
import { MediaBrowserPlaylists } from './mediabrowser-playlists';
import { publicRoutes, sharedRoutes } from './mediabrowser-routes';
import { CiQuery, MbType, TICKS_PER_SECOND, dotnetDate, type MbPlaylist, type MediaBrowserFlavour, type MediaBrowserOptions } from './mediabrowser-protocol';

export * from './mediabrowser-protocol';

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
  /** Playlists (mediabrowser-playlists.ts). */
  private readonly playlistStore: MediaBrowserPlaylists;
  /** Item queries (mediabrowser-items.ts). */
  private readonly items: MediaBrowserItems;
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
    this.playlistStore = new MediaBrowserPlaylists(flavour.ids, this.userId);
    this.items = new MediaBrowserItems(this, this.playlistStore);
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
    return this.playlistStore.all().map((p) => ({
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

  // ---------- item queries (mediabrowser-items.ts) ----------
  /** Handles `/Items` and `/Users/{uid}/Items`. */
  itemsQuery(req: Request, res: Response, q: CiQuery, pathUserId?: string): void {
    this.items.itemsQuery(req, res, q, pathUserId);
  }

  /**
   * Artist indices, optionally limited to one view: track and album artists (`/Artists`,
   * `IncludeItemTypes=MusicArtist`) or album artists only (`/Artists/AlbumArtists`).
   */
  artistIndices(parentId: string | undefined, albumArtistsOnly = false): number[] {
    return this.items.artistIndices(parentId, albumArtistsOnly);
  }

  /** One item by id (track, album, playlist, view). Returns undefined when unknown. */
  itemById(id: string): Record<string, unknown> | undefined {
    return this.items.itemById(id);
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

  /** A new playlist of the fake user holding `trackIndices` (catalogue indices). */
  createPlaylist(name: string, trackIndices: number[], isPublic: boolean): MbPlaylist {
    return this.playlistStore.create(name, trackIndices, isPublic);
  }

  /** Appends one entry per track to `p`. */
  addEntries(p: MbPlaylist, trackIndices: number[]): void {
    this.playlistStore.addEntries(p, trackIndices);
  }

  /** The playlist a provider id names, or undefined. */
  playlistById(id: string): MbPlaylist | undefined {
    return this.playlistStore.byId(id);
  }

  deletePlaylist(p: MbPlaylist): void {
    this.playlistStore.delete(p);
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
    publicRoutes(this, router);
    router.use((req, res, next) => {
      const token = this.flavour.tokenOf(req, new CiQuery(searchParams(req)));
      if (token !== this.token) {
        res.status(401).type('text/plain').send('Unauthorized');
        return;
      }
      next();
    });
    this.flavour.extraRoutes?.(router, this);
    sharedRoutes(this, router);
    for (const m of this.flavour.mounts) app.use(m || '/', router);
    app.use((_req, res) => {
      res.status(404).type('text/plain').send('Not found');
    });
    return app;
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