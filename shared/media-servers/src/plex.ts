/**
 * Plex Media Server client, per media-server-apis.md §6 and reference-implementation.md §4.
 * Headers `X-Plex-Token` and `Accept: application/json`; responses are `{"MediaContainer":{…}}`;
 * lists are paged with `X-Plex-Container-Start` / `X-Plex-Container-Size`.
 */
import { SAMPLE_TRACK_COUNT, chunk, type AddedAlbum, isoFromEpochSeconds, lyricsToPlain, mapPlaylists, num, pagesByOffset, positive, runConnectionTest, stars, str, timeBudget, recentAlbumTracks, tracksOfLibraries, withLibrary } from './common';
import { NotFoundError, ProtocolError } from './errors';
import type { HttpClient, Query } from './http';
import { CLIENT_NAME, CLIENT_VERSION, DEFAULT_LYRICS_TIMEOUT_MS, providerHttp, type ClientOptions } from './options';
import type { ConnectionTestResult, LibraryInfo, MediaServerClient, ProviderArtist, ProviderPlaylist, ProviderTrack, QueueResult, ServerConnection } from './types';

/** Items per container page (AudioMuse-AI uses 1000). */
export const PLEX_PAGE_SIZE = 1000;
/** Track ids per playlist `uri` (AudioMuse-AI `PLEX_PLAYLIST_BATCH_SIZE` = 100). */
export const PLEX_PLAYLIST_BATCH = 100;
/** Plex metadata type numbers: 8 artist, 9 album, 10 track. */
export const PLEX_TYPE = { artist: 8, album: 9, track: 10 } as const;
/** `streamType` of a lyrics stream in `Media[].Part[].Stream[]`. */
export const PLEX_LYRIC_STREAM_TYPE = 4;

/** A Plex track (`type:"track"`) as far as this package reads it. */
export interface PlexTrack {
  ratingKey?: string | number;
  title?: string;
  originalTitle?: string;
  grandparentTitle?: string;
  grandparentRatingKey?: string | number;
  parentTitle?: string;
  parentRatingKey?: string | number;
  parentYear?: number;
  year?: number;
  duration?: number;
  userRating?: number;
  viewCount?: number;
  lastViewedAt?: number;
  /** The section the track belongs to (on `/library/metadata/{id}` and most listings). */
  librarySectionID?: string | number;
  Media?: Array<{ Part?: Array<{ key?: string; file?: string; size?: number; Stream?: Array<{ streamType?: number; key?: string }> }> }>;
}

interface Container {
  size?: number;
  totalSize?: number;
  offset?: number;
  machineIdentifier?: string;
  version?: string;
  Metadata?: unknown[];
  Directory?: unknown[];
}

/**
 * Maps a Plex track: id = `ratingKey`; artist = `originalTitle` (track artist when it differs)
 * else `grandparentTitle` (artist id only in the latter case); year = `parentYear` else `year`;
 * duration ms → s; `userRating` 0-10 → /2 stars; `lastViewedAt` epoch s → ISO;
 * path = `Media[0].Part[0].file`.
 * @throws ProtocolError when the item has no `ratingKey`.
 */
export function mapPlexTrack(m: PlexTrack): ProviderTrack {
  const id = str(m.ratingKey);
  if (!id) throw new ProtocolError('plex: track without ratingKey');
  const original = str(m.originalTitle);
  const t: ProviderTrack = { id, title: m.title ?? '', artist: original ?? str(m.grandparentTitle) ?? '' };
  const artistId = str(m.grandparentRatingKey);
  if (!original && artistId) t.artistId = artistId;
  if (str(m.parentTitle)) t.album = m.parentTitle;
  const albumId = str(m.parentRatingKey);
  if (albumId) t.albumId = albumId;
  if (str(m.grandparentTitle)) t.albumArtist = m.grandparentTitle;
  const year = positive(m.parentYear) ?? positive(m.year);
  if (year) t.year = year;
  const rating = num(m.userRating);
  if (rating !== undefined) t.rating = stars(rating / 2);
  const ms = positive(m.duration);
  if (ms !== undefined) t.durationSeconds = ms / 1000;
  const file = m.Media?.[0]?.Part?.[0]?.file;
  if (str(file)) t.path = file;
  const plays = num(m.viewCount);
  if (plays !== undefined) t.playCount = plays;
  const last = isoFromEpochSeconds(m.lastViewedAt);
  if (last) t.lastPlayed = last;
  const section = str(m.librarySectionID);
  if (section) t.libraryId = section;
  const size = positive(m.Media?.[0]?.Part?.[0]?.size);
  if (size !== undefined) t.fileStamp = `size:${Math.round(size)}`;
  return t;
}

/** Plex client. Creds `{url, token}`; library filter = section keys. */
export class PlexClient implements MediaServerClient {
  readonly type = 'plex' as const;
  private readonly http: HttpClient;
  private readonly sectionFilter: string[];
  private readonly lyricsTimeoutMs: number;
  private machineId?: string;

  constructor(conn: ServerConnection, opts: ClientOptions = {}) {
    const token = conn.creds.token ?? '';
    this.sectionFilter = (conn.musicLibraries ?? []).filter((l) => l !== '');
    this.lyricsTimeoutMs = opts.lyricsTimeoutMs ?? DEFAULT_LYRICS_TIMEOUT_MS;
    this.http = providerHttp('plex', conn.creds.url ?? '', opts, {
      headers: {
        'X-Plex-Token': token,
        Accept: 'application/json',
        'X-Plex-Client-Identifier': opts.plexClientId ?? CLIENT_NAME,
        'X-Plex-Product': CLIENT_NAME,
        'X-Plex-Version': CLIENT_VERSION,
      },
      secrets: [token],
    });
  }

  private async container(method: string, path: string, opts: { query?: Query; headers?: Record<string, string>; idempotent?: boolean; timeoutMs?: number; retries?: number } = {}): Promise<Container> {
    const body = await this.http.requestJson<{ MediaContainer?: Container }>(method, path, opts);
    const c = body?.MediaContainer;
    if (!c || typeof c !== 'object') throw new ProtocolError(`plex: ${method} ${path} returned no MediaContainer`);
    return c;
  }

  /** `/identity` (no token needed): machine identifier, cached for playlist URIs. */
  private async identity(): Promise<Container> {
    const c = await this.container('GET', '/identity');
    const mid = str(c.machineIdentifier);
    if (mid) this.machineId = mid;
    return c;
  }

  /** `/identity`, `/library/sections` (checks the token), 50 tracks of the first music section. */
  testConnection(): Promise<ConnectionTestResult> {
    return runConnectionTest({
      probe: async () => {
        const c = await this.identity();
        const version = str(c.version);
        return version ? { serverName: 'Plex Media Server', version } : { serverName: 'Plex Media Server' };
      },
      libraries: () => this.listLibraries(),
      sample: async () => {
        const first = this.sectionFilter[0] ?? (await this.listLibraries())[0]?.id;
        if (!first) return [];
        const page = await this.page(first, { type: PLEX_TYPE.track }, 0, SAMPLE_TRACK_COUNT);
        return (page.Metadata ?? []).map((m) => mapPlexTrack(m as PlexTrack));
      },
      filterIds: this.sectionFilter,
    });
  }

  /** `/library/sections` with this client's token: a shared (managed or friend) user's token lists only the sections shared with them. Issue 34. */
  visibleLibraries(): Promise<LibraryInfo[] | null> {
    return this.listLibraries();
  }

  /** `/library/sections` entries with `type == "artist"`: id = `key`, path = first location. */
  async listLibraries(): Promise<LibraryInfo[]> {
    const c = await this.container('GET', '/library/sections');
    const dirs = (Array.isArray(c.Directory) ? c.Directory : []) as Array<{ key?: unknown; type?: string; title?: string; Location?: Array<{ path?: string }> }>;
    return dirs
      .filter((d) => d.type === 'artist' && str(d.key))
      .map((d) => {
        const lib: LibraryInfo = { id: str(d.key) as string, name: d.title ?? '' };
        const path = d.Location?.[0]?.path;
        if (path) lib.path = path;
        return lib;
      });
  }

  /**
   * `/library/sections`: the filtered music sections' `updatedAt` and `scannedAt` (seconds), which Plex moves when a
   * scan adds, changes or removes items.
   */
  async libraryChangeToken(): Promise<string> {
    const c = await this.container('GET', '/library/sections');
    const dirs = (Array.isArray(c.Directory) ? c.Directory : []) as Array<{ key?: unknown; type?: string; updatedAt?: unknown; scannedAt?: unknown }>;
    const wanted = new Set(this.sectionFilter);
    return dirs
      .filter((d) => d.type === 'artist' && str(d.key) && (wanted.size === 0 || wanted.has(str(d.key) as string)))
      .map((d) => `${str(d.key)}:${num(d.updatedAt) ?? ''}:${num(d.scannedAt) ?? ''}`)
      .sort()
      .join(',');
  }

  private async sectionKeys(): Promise<string[]> {
    return this.sectionFilter.length ? this.sectionFilter : (await this.listLibraries()).map((l) => l.id);
  }

  /** One container page of `/library/sections/{key}/all`, paging sent as headers and query. */
  private page(section: string, query: Query, start: number, size: number): Promise<Container> {
    const paging = { 'X-Plex-Container-Start': String(start), 'X-Plex-Container-Size': String(size) };
    return this.container('GET', `/library/sections/${encodeURIComponent(section)}/all`, {
      query: { ...query, ...paging },
      headers: paging,
    });
  }

  /**
   * Pages a section listing until `start >= totalSize` (or, without `totalSize`, a short page);
   * stops on an empty page. Errors propagate.
   */
  private pageSection(section: string, query: Query): AsyncIterable<unknown[]> {
    return pagesByOffset(PLEX_PAGE_SIZE, async (start, limit) => {
      const c = await this.page(section, query, start, limit);
      return { items: Array.isArray(c.Metadata) ? c.Metadata : [], total: num(c.totalSize) };
    });
  }

  /** All tracks (`type=10`) of each filtered (or every music) section, 1000 per page. */
  iterateTracks(): AsyncIterable<ProviderTrack[]> {
    const self = this;
    // A ratingKey belongs to one section: de-duplicating across sections drops nothing (it guards a filter that repeats a key).
    async function* all(): AsyncIterable<ProviderTrack[]> {
      yield* tracksOfLibraries(await self.sectionKeys(), async function* (key) {
        for await (const items of self.pageSection(key, { type: PLEX_TYPE.track })) yield items.map((m) => withLibrary(mapPlexTrack(m as PlexTrack), key));
      });
    }
    return all();
  }

  /**
   * Tracks of the `albums` newest albums: albums (`type=9&sort=addedAt:desc`) of each filtered (or
   * every music) section, merged by `addedAt`, then `/library/metadata/{id}/children` per album
   * (reference `get_recent_albums` + `get_tracks_from_album`).
   */
  iterateRecentAlbumTracks(albums: number): AsyncIterable<ProviderTrack[]> {
    const self = this;
    const listAlbums = async (key: string): Promise<AddedAlbum[]> => {
      const list: AddedAlbum[] = [];
      for (let start = 0; list.length < albums; ) {
        const size = Math.min(PLEX_PAGE_SIZE, albums - list.length);
        const c = await this.page(key, { type: PLEX_TYPE.album, sort: 'addedAt:desc' }, start, size);
        const items = (Array.isArray(c.Metadata) ? c.Metadata : []) as Array<{ ratingKey?: unknown; addedAt?: unknown }>;
        for (const a of items) {
          const id = str(a.ratingKey);
          if (id) list.push({ id, added: str(a.addedAt) });
        }
        start += items.length;
        if (items.length < size) break;
      }
      return list;
    };
    return recentAlbumTracks(() => this.sectionKeys(), albums, listAlbums, async function* (id) {
      const c = await self.container('GET', `/library/metadata/${encodeURIComponent(id)}/children`);
      const items = Array.isArray(c.Metadata) ? c.Metadata : [];
      if (items.length) yield items.map((m) => mapPlexTrack(m as PlexTrack));
    });
  }

  /** Artists (`type=8`) of each filtered (or every music) section. */
  async listArtists(): Promise<ProviderArtist[]> {
    const out = new Map<string, ProviderArtist>();
    for (const key of await this.sectionKeys()) {
      for await (const items of this.pageSection(key, { type: PLEX_TYPE.artist })) {
        for (const a of items as Array<{ ratingKey?: unknown; title?: string }>) {
          const id = str(a.ratingKey);
          if (id && !out.has(id)) out.set(id, { id, name: a.title ?? '' });
        }
      }
    }
    return [...out.values()];
  }

  private async trackMetadata(trackId: string, timeoutMs?: number, retries?: number): Promise<PlexTrack> {
    const c = await this.container('GET', `/library/metadata/${encodeURIComponent(trackId)}`, { timeoutMs, retries });
    const m = (Array.isArray(c.Metadata) ? c.Metadata[0] : undefined) as PlexTrack | undefined;
    if (!m) throw new NotFoundError(`plex: track ${trackId} not found`);
    return m;
  }

  /** Reads the part key from `/library/metadata/{id}`, then streams `{Part.key}?download=1`. */
  async downloadTrack(trackId: string, destPath: string, signal?: AbortSignal): Promise<number> {
    const m = await this.trackMetadata(trackId);
    const key = m.Media?.[0]?.Part?.[0]?.key;
    if (!key) throw new ProtocolError(`plex: track ${trackId} has no media part`);
    return this.http.download(key, destPath, { query: { download: 1 }, signal });
  }

  private async machineIdentifier(): Promise<string> {
    if (this.machineId) return this.machineId;
    await this.identity();
    if (!this.machineId) throw new ProtocolError('plex: /identity returned no machineIdentifier');
    return this.machineId;
  }

  /** `POST /playQueues?type=audio&uri=server://…/library/metadata/{ids}`: a new audio play queue (its `playQueueID`). */
  async addToQueue(trackIds: string[]): Promise<QueueResult> {
    if (trackIds.length === 0) throw new RangeError('plex: a play queue needs at least one track');
    const mid = await this.machineIdentifier();
    const c = await this.container('POST', '/playQueues', { query: { type: 'audio', uri: this.metadataUri(mid, trackIds), shuffle: 0, repeat: 0 }, idempotent: false });
    const id = str((c as Record<string, unknown>).playQueueID);
    if (!id) throw new ProtocolError('plex: POST /playQueues returned no playQueueID');
    return { method: 'play_queues', queueId: id };
  }

  /** `server://{machineIdentifier}/com.plexapp.plugins.library/library/metadata/{id1,id2,…}`. */
  private metadataUri(machineId: string, ids: string[]): string {
    return `server://${machineId}/com.plexapp.plugins.library/library/metadata/${ids.join(',')}`;
  }

  /**
   * `POST /playlists?type=audio&title=&smart=0&uri=…` with the first 100 ids, then
   * `PUT /playlists/{id}/items?uri=…` 100 at a time. On failure the playlist is deleted (best
   * effort) and the error rethrown.
   * @throws RangeError for an empty `trackIds` (Plex cannot create an empty regular playlist).
   */
  async createPlaylist(name: string, trackIds: string[]): Promise<ProviderPlaylist> {
    if (trackIds.length === 0) throw new RangeError('plex: a playlist needs at least one track');
    const mid = await this.machineIdentifier();
    const [first = [], ...rest] = chunk(trackIds, PLEX_PLAYLIST_BATCH);
    const c = await this.container('POST', '/playlists', {
      query: { type: 'audio', title: name, smart: 0, uri: this.metadataUri(mid, first) },
    });
    const created = (Array.isArray(c.Metadata) ? c.Metadata[0] : undefined) as { ratingKey?: unknown } | undefined;
    const id = str(created?.ratingKey);
    if (!id) throw new ProtocolError('plex: POST /playlists returned no ratingKey');
    try {
      for (const batch of rest) {
        await this.http.send('PUT', `/playlists/${encodeURIComponent(id)}/items`, {
          query: { uri: this.metadataUri(mid, batch) },
          idempotent: false,
        });
      }
    } catch (err) {
      await this.deletePlaylist(id).catch(() => undefined);
      throw err;
    }
    return { id, name, trackCount: trackIds.length };
  }

  /** `GET /playlists?playlistType=audio` → `{id: ratingKey, name: title, trackCount: leafCount}`. */
  async listPlaylists(): Promise<ProviderPlaylist[]> {
    const c = await this.container('GET', '/playlists', { query: { playlistType: 'audio' } });
    const items = (Array.isArray(c.Metadata) ? c.Metadata : []) as Array<Record<string, unknown>>;
    return mapPlaylists(items, { id: 'ratingKey', name: 'title', count: 'leafCount' });
  }

  async deletePlaylist(playlistId: string): Promise<void> {
    await this.http.send('DELETE', `/playlists/${encodeURIComponent(playlistId)}`);
  }

  /**
   * Played tracks, most recently played first: per section
   * `all?type=10&sort=lastViewedAt:desc&viewCount>>=0` with container size `limit`, merged.
   */
  async getListeningHistory(limit: number): Promise<ProviderTrack[]> {
    if (limit <= 0) return [];
    const byId = new Map<string, ProviderTrack>();
    for (const key of await this.sectionKeys()) {
      const c = await this.page(key, { type: PLEX_TYPE.track, sort: 'lastViewedAt:desc', 'viewCount>>': 0 }, 0, limit);
      for (const m of Array.isArray(c.Metadata) ? c.Metadata : []) {
        const t = mapPlexTrack(m as PlexTrack);
        if (t.lastPlayed || (t.playCount ?? 0) > 0) byId.set(t.id, t);
      }
    }
    return [...byId.values()].sort((a, b) => (b.lastPlayed ?? '').localeCompare(a.lastPlayed ?? '')).slice(0, limit);
  }

  /**
   * Lyrics: the `streamType == 4` stream of the track's parts (from `/library/metadata/{id}`),
   * fetched by its `key`; LRC time tags are stripped. Undefined when there is none.
   */
  async getLyrics(trackId: string): Promise<string | undefined> {
    const left = timeBudget(this.lyricsTimeoutMs);
    let m: PlexTrack;
    try {
      m = await this.trackMetadata(trackId, left(), 0);
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
    let key: string | undefined;
    for (const media of m.Media ?? []) {
      for (const part of media.Part ?? []) {
        key ??= part.Stream?.find((s) => s.streamType === PLEX_LYRIC_STREAM_TYPE && s.key)?.key;
      }
    }
    if (!key) return undefined;
    try {
      const text = await this.http.requestText('GET', key, { timeoutMs: left(), retries: 0, headers: { Accept: '*/*' } });
      return lyricsToPlain(text);
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
  }
}
