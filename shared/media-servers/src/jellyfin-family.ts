/**
 * Shared logic of the Jellyfin and Emby clients: both serve the same PascalCase DTOs
 * (`Items`/`TotalRecordCount` query results, `RunTimeTicks`, `UserData`), differing only in URL
 * prefix, auth header, a few endpoint shapes and playlist writes (media-server-apis.md §2-3).
 */
import { SAMPLE_TRACK_COUNT, chunk, type AddedAlbum, isoFromText, lyricsToPlain, mapPlaylists, num, pagesByOffset, positive, runConnectionTest, stars, str, librariesOrAll, recentAlbumTracks, tracksOfLibraries, withLibrary } from './common';
import { NotFoundError, PermissionDeniedError, ProtocolError } from './errors';
import type { HttpClient, Query } from './http';
import { DEFAULT_LYRICS_TIMEOUT_MS, providerHttp, type ClientOptions } from './options';
import type { ConnectionTestResult, LibraryInfo, MediaServerClient, ProviderArtist, ProviderPlaylist, ProviderTrack, QueueResult, ServerConnection, ServerType } from './types';

/** Items per `/Items` page (AudioMuse-AI and media-server-apis.md §2.5 use 500). */
export const JELLYFIN_PAGE_SIZE = 500;
/** Track ids per playlist create/add request (AudioMuse-AI `JELLYFIN_PLAYLIST_BATCH_SIZE` = 100). */
export const JELLYFIN_PLAYLIST_BATCH = 100;
/** Jellyfin/Emby durations are in ticks of 100 ns. */
export const TICKS_PER_SECOND = 10_000_000;

/** One `BaseItemDto` as far as this package reads it. */
export interface JfItem {
  Id?: string;
  Name?: string;
  Type?: string;
  RunTimeTicks?: number;
  ProductionYear?: number;
  Album?: string;
  AlbumId?: string;
  AlbumArtist?: string;
  AlbumArtists?: Array<{ Name?: string; Id?: string }>;
  Artists?: string[];
  ArtistItems?: Array<{ Name?: string; Id?: string }>;
  Path?: string;
  /** Only with `Fields=MediaSources`: the file's sources; `Size` in bytes. */
  MediaSources?: Array<{ Size?: number; Path?: string }>;
  ChildCount?: number;
  CollectionType?: string;
  UserData?: { PlayCount?: number; LastPlayedDate?: string; Rating?: number | null; IsFavorite?: boolean };
}

interface JfQueryResult {
  Items?: JfItem[];
  TotalRecordCount?: number;
}

interface JfVirtualFolder {
  Name?: string;
  ItemId?: string;
  Id?: string;
  CollectionType?: string;
  Locations?: string[];
}

/**
 * Maps a Jellyfin/Emby `Audio` item to a {@link ProviderTrack}.
 * - artist: first `ArtistItems` entry (with its id), else `Artists[0]`, else `AlbumArtist`
 *   (AudioMuse-AI `select_best_artist`).
 * - durationSeconds = `RunTimeTicks` / 10 000 000.
 * - rating = `UserData.Rating` (a 0-10 user rating) / 2, clamped to 0-5.
 * - fileStamp = `size:<bytes>` of `MediaSources[0].Size` (asked with `Fields=MediaSources`; issue 35: a file changed
 *   in place under the same item id shows a different size).
 * @throws ProtocolError when the item has no `Id`.
 */
export function mapJellyfinTrack(it: JfItem): ProviderTrack {
  const id = str(it.Id);
  if (!id) throw new ProtocolError('item without Id in an Items page');
  const first = it.ArtistItems?.[0];
  let artist = '';
  let artistId: string | undefined;
  if (first && str(first.Name)) {
    artist = first.Name as string;
    artistId = str(first.Id);
  } else if (str(it.Artists?.[0])) {
    artist = it.Artists?.[0] as string;
  } else if (str(it.AlbumArtist)) {
    artist = it.AlbumArtist as string;
  }
  const ticks = num(it.RunTimeTicks);
  const rating = num(it.UserData?.Rating ?? undefined);
  const t: ProviderTrack = { id, title: it.Name ?? '', artist };
  if (artistId) t.artistId = artistId;
  if (str(it.Album)) t.album = it.Album;
  if (str(it.AlbumId)) t.albumId = it.AlbumId;
  const albumArtist = str(it.AlbumArtist) ?? str(it.AlbumArtists?.[0]?.Name);
  if (albumArtist) t.albumArtist = albumArtist;
  const year = positive(it.ProductionYear);
  if (year) t.year = year;
  if (rating !== undefined) t.rating = stars(rating / 2);
  if (ticks !== undefined && ticks > 0) t.durationSeconds = ticks / TICKS_PER_SECOND;
  if (str(it.Path)) t.path = it.Path;
  const plays = num(it.UserData?.PlayCount);
  if (plays !== undefined) t.playCount = plays;
  const last = isoFromText(it.UserData?.LastPlayedDate);
  if (last) t.lastPlayed = last;
  const size = positive(it.MediaSources?.[0]?.Size);
  if (size !== undefined) t.fileStamp = `size:${Math.round(size)}`;
  return t;
}

/** Endpoint differences between the two kinds. */
export interface JellyfinFamilyDialect {
  type: Extract<ServerType, 'jellyfin' | 'emby'>;
  /** Prefix added to every path (`''` for Jellyfin, `/emby` for Emby). */
  prefix: string;
  /** Headers carrying the token. */
  authHeaders(token: string): Record<string, string>;
}

/** Base client for Jellyfin and Emby. Subclasses supply the endpoints that differ. */
export abstract class JellyfinFamilyClient implements MediaServerClient {
  readonly type: Extract<ServerType, 'jellyfin' | 'emby'>;
  protected readonly http: HttpClient;
  protected readonly userId: string;
  protected readonly libraryFilter: string[];
  protected readonly lyricsTimeoutMs: number;

  protected constructor(conn: ServerConnection, opts: ClientOptions, dialect: JellyfinFamilyDialect) {
    const url = conn.creds.url ?? '';
    const token = conn.creds.token ?? '';
    this.type = dialect.type;
    this.userId = conn.creds.user_id ?? '';
    this.libraryFilter = (conn.musicLibraries ?? []).filter((l) => l !== '');
    this.lyricsTimeoutMs = opts.lyricsTimeoutMs ?? DEFAULT_LYRICS_TIMEOUT_MS;
    this.http = providerHttp(dialect.type, url.replace(/\/+$/, '') + dialect.prefix, opts, {
      headers: { Accept: 'application/json', ...dialect.authHeaders(token) },
      secrets: [token],
    });
  }

  /** GET the user's item query endpoint (`/Items?userId=` or `/Users/{uid}/Items`). */
  protected abstract queryItems(query: Query, signal?: AbortSignal): Promise<JfQueryResult>;
  /** Music libraries when `/Library/VirtualFolders` is refused or missing. */
  protected abstract listUserViews(): Promise<LibraryInfo[]>;
  /** Artist listing endpoint path (without prefix) and the key of its user parameter. */
  protected abstract readonly artistsPath: string;
  /** Creates the playlist holding `firstBatch`; returns its id. */
  protected abstract createPlaylistRequest(name: string, firstBatch: string[]): Promise<string>;
  /** Appends `ids` to playlist `playlistId`. */
  protected abstract addToPlaylistRequest(playlistId: string, ids: string[]): Promise<void>;
  /** Deletes an item (playlist). */
  protected abstract deleteItemRequest(id: string): Promise<void>;

  /**
   * `GET /Audio/{id}/Lyrics` (Jellyfin 10.9+; under `/emby` for Emby) → `Lyrics[].Text` joined by
   * newlines, LRC tags removed. 404 (no lyrics, or a server without the endpoint) → undefined.
   * One attempt within the lyrics timeout.
   */
  async getLyrics(trackId: string): Promise<string | undefined> {
    try {
      const res = await this.http.getJson<{ Lyrics?: Array<{ Text?: string }> }>(`/Audio/${encodeURIComponent(trackId)}/Lyrics`, {
        timeoutMs: this.lyricsTimeoutMs,
        retries: 0,
      });
      const lines = (Array.isArray(res?.Lyrics) ? res.Lyrics : []).map((l) => l?.Text ?? '').filter((t) => t !== '');
      return lyricsToPlain(lines.join('\n'));
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
  }

  /** Identity probe: server name and version from `/System/Info/Public`. */
  protected async probe(): Promise<{ serverName?: string; version?: string }> {
    const info = await this.http.getJson<{ ServerName?: string; Version?: string }>('/System/Info/Public');
    const out: { serverName?: string; version?: string } = {};
    if (str(info?.ServerName)) out.serverName = info?.ServerName;
    if (str(info?.Version)) out.version = info?.Version;
    return out;
  }

  /**
   * Reachable (`/System/Info/Public`), token accepted (library list), a sample of
   * {@link SAMPLE_TRACK_COUNT} tracks from the first filtered library (or all), path check.
   */
  testConnection(): Promise<ConnectionTestResult> {
    return runConnectionTest({
      probe: () => this.probe(),
      libraries: () => this.listLibraries(),
      sample: async () => {
        const res = await this.queryItems(this.trackQuery(this.libraryFilter[0], 0, SAMPLE_TRACK_COUNT));
        return this.itemsOf(res).map(mapJellyfinTrack);
      },
      filterIds: this.libraryFilter,
    });
  }

  /**
   * Music libraries: `/Library/VirtualFolders` entries with `CollectionType == "music"` (id =
   * `ItemId`, path = first location); falls back to the user's views when the endpoint is
   * admin-only (403) or absent (404).
   */
  async listLibraries(): Promise<LibraryInfo[]> {
    let folders: JfVirtualFolder[];
    try {
      folders = await this.listVirtualFolders();
    } catch (err) {
      if (err instanceof PermissionDeniedError || err instanceof NotFoundError) return this.listUserViews();
      throw err;
    }
    return folders
      .filter((f) => f.CollectionType === 'music' && str(f.ItemId ?? f.Id))
      .map((f) => {
        const lib: LibraryInfo = { id: str(f.ItemId ?? f.Id) as string, name: f.Name ?? '' };
        const loc = f.Locations?.[0];
        if (loc) lib.path = loc;
        return lib;
      });
  }

  /** `/Library/VirtualFolders` as a bare array (both kinds). */
  protected async listVirtualFolders(): Promise<JfVirtualFolder[]> {
    const res = await this.http.getJson<unknown>('/Library/VirtualFolders');
    if (!Array.isArray(res)) throw new ProtocolError(`${this.type}: /Library/VirtualFolders did not return an array`);
    return res as JfVirtualFolder[];
  }

  /**
   * Per filtered library (or the whole server): the audio item count and the newest item's id, from one
   * `/Items?IncludeItemTypes=Audio&SortBy=DateCreated&SortOrder=Descending&Limit=1` each. An added song changes the
   * newest id, a removed one the count.
   */
  async libraryChangeToken(): Promise<string> {
    const parts: string[] = [];
    for (const parent of librariesOrAll(this.libraryFilter)) {
      const res = await this.queryItems({ IncludeItemTypes: 'Audio', Recursive: true, ParentId: parent, StartIndex: 0, Limit: 1, SortBy: 'DateCreated', SortOrder: 'Descending', EnableUserData: false });
      const items = this.itemsOf(res);
      parts.push(`${num(res.TotalRecordCount) ?? items.length}:${items[0]?.Id ?? ''}`);
    }
    return parts.join(',');
  }

  /** The `/Items` query for one page of audio tracks (sorted by SortName for stable pages; `MediaSources` for the file size, the file stamp). */
  protected trackQuery(parentId: string | undefined, start: number, limit: number): Query {
    return {
      IncludeItemTypes: 'Audio',
      Recursive: true,
      ParentId: parentId,
      Fields: 'Path,DateCreated,MediaSources',
      StartIndex: start,
      Limit: limit,
      SortBy: 'SortName',
      SortOrder: 'Ascending',
      EnableUserData: true,
    };
  }

  protected itemsOf(res: JfQueryResult | undefined): JfItem[] {
    if (!res || !Array.isArray(res.Items)) throw new ProtocolError(`${this.type}: item query returned no Items array`);
    return res.Items;
  }

  /**
   * Pages an item query with `StartIndex`/`Limit`. Continues while `StartIndex < TotalRecordCount`
   * (or, without a total, while pages are full); stops on an empty page. Errors propagate.
   */
  protected pageItems(base: (start: number, limit: number) => Query, pageSize = JELLYFIN_PAGE_SIZE): AsyncIterable<JfItem[]> {
    return pagesByOffset(pageSize, async (start, limit) => {
      const res = await this.queryItems(base(start, limit));
      return { items: this.itemsOf(res), total: num(res?.TotalRecordCount) };
    });
  }

  /** All audio tracks, per filtered library (`ParentId`) or the whole server; 500 per page. */
  iterateTracks(): AsyncIterable<ProviderTrack[]> {
    const self = this;
    async function* all(): AsyncIterable<ProviderTrack[]> {
      yield* tracksOfLibraries(await self.listedLibraries(), async function* (parent) {
        for await (const items of self.pageItems((s, l) => self.trackQuery(parent, s, l))) yield items.map((it) => withLibrary(mapJellyfinTrack(it), parent));
      });
    }
    return all();
  }

  /**
   * The libraries a catalogue walk lists one after the other (`ParentId` = the library), so each track carries its
   * library (issue 34; an audio item names its album as parent, not its library): the filter, else every music
   * library of {@link listLibraries}; a server that lists none is walked whole (library unknown).
   */
  protected async listedLibraries(): Promise<Array<string | undefined>> {
    if (this.libraryFilter.length) return [...this.libraryFilter];
    const all = (await this.listLibraries()).map((l) => l.id);
    return all.length ? all : [undefined];
  }

  /** The user's own music views (`listUserViews`), whatever the account's rights on `/Library/VirtualFolders`. Issue 34. */
  visibleLibraries(): Promise<LibraryInfo[] | null> {
    return this.listUserViews();
  }

  /**
   * Tracks of the `albums` newest albums: `/Items?IncludeItemTypes=MusicAlbum&SortBy=DateCreated`
   * descending per filtered library (`ParentId`), merged by `DateCreated`, then each album's audio
   * items (`ParentId` = the album; reference `get_recent_albums` + `get_tracks_from_album`).
   */
  iterateRecentAlbumTracks(albums: number): AsyncIterable<ProviderTrack[]> {
    const self = this;
    const listAlbums = async (parent: string | undefined): Promise<AddedAlbum[]> => {
      const list: AddedAlbum[] = [];
      const albumQuery = (start: number, limit: number): Query => ({
        IncludeItemTypes: 'MusicAlbum',
        Recursive: true,
        ParentId: parent,
        Fields: 'DateCreated',
        StartIndex: start,
        Limit: Math.min(limit, albums - start),
        SortBy: 'DateCreated,SortName',
        SortOrder: 'Descending',
      });
      for await (const items of this.pageItems(albumQuery)) {
        for (const a of items) {
          const id = str(a.Id);
          if (id) list.push({ id, added: str((a as { DateCreated?: unknown }).DateCreated) });
        }
        if (list.length >= albums) break;
      }
      return list;
    };
    return recentAlbumTracks(librariesOrAll(this.libraryFilter), albums, listAlbums, async function* (albumId) {
      for await (const items of self.pageItems((st, l) => self.trackQuery(albumId, st, l))) yield items.map(mapJellyfinTrack);
    });
  }

  /** Artists (per filtered library via `ParentId`), paged by 500, de-duplicated by id. */
  async listArtists(): Promise<ProviderArtist[]> {
    const parents = librariesOrAll(this.libraryFilter);
    const byId = new Map<string, ProviderArtist>();
    for (const parent of parents) {
      const pages = pagesByOffset(JELLYFIN_PAGE_SIZE, async (start, limit) => {
        const res = await this.http.getJson<JfQueryResult>(this.artistsPath, {
          query: { ...this.userParam(), ParentId: parent, StartIndex: start, Limit: limit, SortBy: 'SortName', SortOrder: 'Ascending' },
        });
        return { items: this.itemsOf(res), total: num(res?.TotalRecordCount) };
      });
      for await (const items of pages) {
        for (const a of items) {
          const id = str(a.Id);
          if (id && !byId.has(id)) byId.set(id, { id, name: a.Name ?? '' });
        }
      }
    }
    return [...byId.values()];
  }

  /** The user-id query parameter of endpoints outside `/Users/{uid}/…`. */
  protected abstract userParam(): Query;

  /**
   * Streams the original file from `/Items/{id}/Download`; when the user lacks the download
   * permission (403) it uses `/Items/{id}/File`, which any authenticated user may read.
   */
  async downloadTrack(trackId: string, destPath: string, signal?: AbortSignal): Promise<number> {
    const id = encodeURIComponent(trackId);
    try {
      return await this.http.download(`/Items/${id}/Download`, destPath, { signal });
    } catch (err) {
      if (!(err instanceof PermissionDeniedError)) throw err;
      return this.http.download(`/Items/${id}/File`, destPath, { signal });
    }
  }

  /**
   * Creates the playlist with the first 100 ids, then appends the rest 100 at a time. If an
   * append fails, the half-filled playlist is deleted (best effort) and the error rethrown.
   */
  async createPlaylist(name: string, trackIds: string[]): Promise<ProviderPlaylist> {
    const batches = chunk(trackIds, JELLYFIN_PLAYLIST_BATCH);
    const id = await this.createPlaylistRequest(name, batches[0] ?? []);
    try {
      for (const batch of batches.slice(1)) await this.addToPlaylistRequest(id, batch);
    } catch (err) {
      await this.deleteItemRequest(id).catch(() => undefined);
      throw err;
    }
    return { id, name, trackCount: trackIds.length };
  }

  /**
   * `GET /Sessions?ControllableByUserId=` (the user's sessions a remote may control), then
   * `POST /Sessions/{id}/Playing?ItemIds=…&PlayCommand=PlayNow` on `sessionId` or the most recently active one.
   * @throws NotFoundError when the user has no controllable session (or not `sessionId`).
   */
  async addToQueue(trackIds: string[], opts: { sessionId?: string } = {}): Promise<QueueResult> {
    if (trackIds.length === 0) throw new RangeError(`${this.type}: a play queue needs at least one track`);
    const sessions = await this.http.requestJson<Array<{ Id?: unknown; LastActivityDate?: unknown; SupportsRemoteControl?: unknown }>>('GET', '/Sessions', {
      query: { ControllableByUserId: this.userId },
    });
    const usable = (Array.isArray(sessions) ? sessions : []).filter((x) => str(x.Id) && x.SupportsRemoteControl !== false);
    usable.sort((a, b) => String(b.LastActivityDate ?? '').localeCompare(String(a.LastActivityDate ?? '')));
    const target = opts.sessionId ? usable.find((x) => str(x.Id) === opts.sessionId) : usable[0];
    const id = target ? str(target.Id) : undefined;
    if (!id) throw new NotFoundError(`${this.type}: no controllable session of this user${opts.sessionId ? ' with that id' : ''}`);
    await this.http.request('POST', `/Sessions/${encodeURIComponent(id)}/Playing`, { query: { ItemIds: trackIds.join(','), PlayCommand: 'PlayNow' }, idempotent: false });
    return { method: 'sessions_playing', queueId: id };
  }

  /** The user's playlists (`IncludeItemTypes=Playlist`, `ChildCount` as track count). */
  async listPlaylists(): Promise<ProviderPlaylist[]> {
    const out: ProviderPlaylist[] = [];
    const pages = this.pageItems((s, l) => ({ IncludeItemTypes: 'Playlist', Recursive: true, Fields: 'ChildCount', StartIndex: s, Limit: l }));
    for await (const items of pages) {
      out.push(...mapPlaylists(items as Array<Record<string, unknown>>, { id: 'Id', name: 'Name', count: 'ChildCount' }));
    }
    return out;
  }

  deletePlaylist(playlistId: string): Promise<void> {
    return this.deleteItemRequest(playlistId);
  }

  /**
   * Played tracks, most recently played first (`SortBy=DatePlayed`, `Filters=IsPlayed`), per
   * filtered library and merged; `lastPlayed` from `UserData.LastPlayedDate`.
   */
  async getListeningHistory(limit: number): Promise<ProviderTrack[]> {
    if (limit <= 0) return [];
    const parents = librariesOrAll(this.libraryFilter);
    const byId = new Map<string, ProviderTrack>();
    for (const parent of parents) {
      const res = await this.queryItems({
        IncludeItemTypes: 'Audio', Recursive: true, ParentId: parent, SortBy: 'DatePlayed', SortOrder: 'Descending',
        Filters: 'IsPlayed', Limit: limit, Fields: 'Path', EnableUserData: true,
      });
      for (const t of this.itemsOf(res).map(mapJellyfinTrack)) byId.set(t.id, t);
    }
    return [...byId.values()]
      .sort((a, b) => (b.lastPlayed ?? '').localeCompare(a.lastPlayed ?? ''))
      .slice(0, limit);
  }
}
