/**
 * Navidrome / (Open)Subsonic client, per media-server-apis.md §4 and reference-implementation.md §4.
 * Every call is `GET {url}/rest/{method}.view` with `u`, `t = md5(password + s)`, a fresh random
 * salt `s`, `v=1.16.1`, `c=polyphony`, `f=json`; the `subsonic-response` envelope is unwrapped and a
 * `status:"failed"` envelope (always HTTP 200) is mapped to a typed error. Servers that refuse token
 * auth (code 41, or code 10 from servers that only know `p`) get `p=enc:<hex>` instead. Creds
 * `{url, api_key}` use the OpenSubsonic `apiKeyAuthentication` extension instead: `apiKey=<key>`
 * and no `u` (error 43 if both are sent, 44 for a bad key; Navidrome itself lacks the extension).
 */
import { createHash, randomBytes } from 'node:crypto';
import { SAMPLE_TRACK_COUNT, chunk, type AddedAlbum, isoFromText, lyricsToPlain, mapPlaylists, num, positive, runConnectionTest, stars, str, timeBudget, librariesOrAll, recentAlbumTracks, tracksOfLibraries, withLibrary } from './common';
import { BadCredentialsError, MediaServerError, NotFoundError, PermissionDeniedError, ProtocolError } from './errors';
import type { DownloadResponse, HttpClient, Query } from './http';
import { CLIENT_NAME, DEFAULT_LYRICS_TIMEOUT_MS, providerHttp, type ClientOptions } from './options';
import type { ConnectionTestResult, LibraryInfo, LyricsHint, MediaServerClient, ProviderArtist, ProviderPlaylist, ProviderTrack, QueueResult, ServerConnection } from './types';

/** Subsonic API version sent as `v`. */
export const SUBSONIC_API_VERSION = '1.16.1';
/** Songs per `search3` page (AudioMuse-AI and media-server-apis.md §4.4 use 500). */
export const SUBSONIC_PAGE_SIZE = 500;
/** Song ids per `createPlaylist` / `updatePlaylist` request (AudioMuse-AI batches of 40). */
export const SUBSONIC_PLAYLIST_BATCH = 40;

/** Subsonic `t` parameter: lowercase hex md5 of `password + salt` (Subsonic API ≥ 1.13.0). */
export function subsonicToken(password: string, salt: string): string {
  return createHash('md5').update(password + salt, 'utf8').digest('hex');
}

/** Subsonic `Child` (song) as far as this package reads it. */
export interface SubsonicSong {
  id?: string | number;
  title?: string;
  artist?: string;
  artistId?: string | number;
  album?: string;
  albumId?: string | number;
  displayAlbumArtist?: string;
  albumArtists?: Array<{ id?: string; name?: string }>;
  year?: number;
  userRating?: number;
  duration?: number;
  path?: string;
  playCount?: number;
  played?: string;
  /** File size, bytes. */
  size?: number;
}

type Envelope = Record<string, unknown> & { status?: string; error?: { code?: number; message?: string } };

/** XML-to-JSON bridges turn one-element lists into objects; accept both. */
function asArray<T>(v: T | T[] | undefined | null): T[] {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v : [v];
}

/**
 * Maps a Subsonic `Child` to a {@link ProviderTrack}: duration in whole seconds, `userRating`
 * already 1-5, album artist from `displayAlbumArtist` or `albumArtists[0]` (there is no
 * `albumArtist` string), `lastPlayed` from OpenSubsonic `played`.
 * @throws ProtocolError when the song has no `id`.
 */
export function mapSubsonicSong(s: SubsonicSong): ProviderTrack {
  const id = str(s.id);
  if (!id) throw new ProtocolError('navidrome: song without id');
  const t: ProviderTrack = { id, title: s.title ?? '', artist: s.artist ?? '' };
  const artistId = str(s.artistId);
  if (artistId) t.artistId = artistId;
  if (str(s.album)) t.album = s.album;
  const albumId = str(s.albumId);
  if (albumId) t.albumId = albumId;
  const albumArtist = str(s.displayAlbumArtist) ?? str(s.albumArtists?.[0]?.name);
  if (albumArtist) t.albumArtist = albumArtist;
  const year = positive(s.year);
  if (year) t.year = year;
  const rating = positive(s.userRating);
  if (rating !== undefined) t.rating = stars(rating);
  const duration = positive(s.duration);
  if (duration !== undefined) t.durationSeconds = duration;
  if (str(s.path)) t.path = s.path;
  const plays = num(s.playCount);
  if (plays !== undefined) t.playCount = plays;
  const last = isoFromText(s.played);
  if (last) t.lastPlayed = last;
  const size = positive(s.size);
  if (size !== undefined) t.fileStamp = `size:${Math.round(size)}`;
  return t;
}

/**
 * Typed error for a failed Subsonic envelope: 40-44 (wrong credentials, token auth unsupported,
 * mechanism unsupported/conflicting, bad API key) → BadCredentialsError; 50 → PermissionDenied;
 * 70 → NotFound; anything else → ProtocolError.
 */
export function subsonicError(method: string, code: number | undefined, message: string | undefined): MediaServerError {
  const text = `navidrome: ${method} failed with Subsonic error ${code ?? '?'}${message ? ` (${message})` : ''}`;
  if (code !== undefined && code >= 40 && code <= 44) return new BadCredentialsError(text, { code });
  if (code === 50) return new PermissionDeniedError(text, { code });
  if (code === 70) return new NotFoundError(text, { code });
  return new ProtocolError(text, code === undefined ? {} : { code });
}

/** Navidrome / OpenSubsonic client. Creds `{url, user, password}` (or `{url, api_key}`). */
export class NavidromeClient implements MediaServerClient {
  readonly type = 'navidrome' as const;
  private readonly http: HttpClient;
  private readonly user: string;
  private readonly password: string;
  private readonly apiKey?: string;
  /** True once the server has refused token auth and accepted `p=enc:`. */
  private passwordAuth = false;
  private readonly folders: string[];
  private readonly lyricsTimeoutMs: number;
  /** False once the server has shown it lacks `getLyricsBySongId`. */
  private lyricsBySongId = true;

  constructor(conn: ServerConnection, opts: ClientOptions = {}) {
    this.user = conn.creds.user ?? '';
    this.password = conn.creds.password ?? '';
    if (!this.user && conn.creds.api_key) this.apiKey = conn.creds.api_key;
    this.folders = (conn.musicLibraries ?? []).filter((l) => l !== '');
    this.lyricsTimeoutMs = opts.lyricsTimeoutMs ?? DEFAULT_LYRICS_TIMEOUT_MS;
    this.http = providerHttp('navidrome', conn.creds.url ?? '', opts, { secrets: [this.password, this.apiKey] });
  }

  /**
   * Common parameters: `u,t,s,v,c,f` with a fresh salt (or `apiKey,v,c,f`); after a server has
   * refused token auth, `u,p=enc:<hex(utf-8 password)>,v,c,f` (see {@link withAuthFallback}).
   */
  private authQuery(): Query {
    const base = { v: SUBSONIC_API_VERSION, c: CLIENT_NAME, f: 'json' };
    if (this.apiKey) return { apiKey: this.apiKey, ...base };
    if (this.passwordAuth) return { u: this.user, p: `enc:${Buffer.from(this.password, 'utf8').toString('hex')}`, ...base };
    const salt = randomBytes(6).toString('hex');
    return { u: this.user, t: subsonicToken(this.password, salt), s: salt, ...base };
  }

  /**
   * Runs `fn` with token auth; when the server refuses token auth (code 41, "token authentication
   * not supported", or code 10 because it only knows `p`, as supysonic 0.7 does) it retries once
   * with `p=enc:` and, if that is accepted, keeps password auth for this client. Navidrome accepts
   * tokens, so it never falls back.
   */
  private async withAuthFallback<T>(fn: () => Promise<T>): Promise<T> {
    if (this.passwordAuth || this.apiKey) return fn();
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof MediaServerError) || (err.code !== 41 && err.code !== 10)) throw err;
      this.passwordAuth = true;
      try {
        return await fn();
      } catch (retryErr) {
        if (retryErr instanceof MediaServerError && (retryErr.code === 41 || retryErr.code === 10)) this.passwordAuth = false;
        throw retryErr;
      }
    }
  }

  private path(method: string): string {
    return `/rest/${method}.view`;
  }

  /** Unwraps `subsonic-response`; throws the mapped error for `status:"failed"`. */
  private unwrap(method: string, body: unknown): Envelope {
    const env = (body as Record<string, unknown> | undefined)?.['subsonic-response'] as Envelope | undefined;
    if (!env || typeof env !== 'object') throw new ProtocolError(`navidrome: ${method} returned no subsonic-response envelope`);
    if (env.status === 'ok') return env;
    if (env.status === 'failed') {
      const message = env.error?.message;
      throw subsonicError(method, num(env.error?.code), message === undefined ? undefined : this.http.scrub(String(message)));
    }
    throw new ProtocolError(`navidrome: ${method} returned status ${String(env.status)}`);
  }

  /** Calls one Subsonic method and returns the unwrapped envelope. */
  async call(method: string, params: Query = {}, opts: { idempotent?: boolean; timeoutMs?: number; retries?: number } = {}): Promise<Envelope> {
    return this.withAuthFallback(async () => {
      const body = await this.http.requestJson('GET', this.path(method), {
        query: { ...this.authQuery(), ...params },
        idempotent: opts.idempotent ?? true,
        timeoutMs: opts.timeoutMs,
        retries: opts.retries,
      });
      return this.unwrap(method, body);
    });
  }

  /** `ping` (credentials), `getMusicFolders`, then a `search3` sample of 50 songs. */
  testConnection(): Promise<ConnectionTestResult> {
    return runConnectionTest({
      probe: async () => {
        const env = await this.call('ping');
        const out: { serverName?: string; version?: string } = { serverName: str(env.type) ?? 'subsonic' };
        const version = str(env.serverVersion) ?? str(env.version);
        if (version) out.version = version;
        return out;
      },
      libraries: () => this.listLibraries(),
      sample: async () => (await this.searchPage(this.folders[0], 0, SAMPLE_TRACK_COUNT)).map(mapSubsonicSong),
      filterIds: this.folders,
    });
  }

  /** `getMusicFolders` → `{id: String(id), name}`. */
  async listLibraries(): Promise<LibraryInfo[]> {
    const env = await this.call('getMusicFolders');
    const folders = asArray((env.musicFolders as { musicFolder?: unknown } | undefined)?.musicFolder) as Array<{ id?: unknown; name?: string }>;
    return folders.filter((f) => str(f.id)).map((f) => ({ id: str(f.id) as string, name: f.name ?? '' }));
  }

  private async searchPage(folder: string | undefined, offset: number, count: number): Promise<SubsonicSong[]> {
    const env = await this.call('search3', {
      query: '', songCount: count, songOffset: offset, artistCount: 0, albumCount: 0, musicFolderId: folder,
    });
    const result = env.searchResult3 as { song?: SubsonicSong | SubsonicSong[] } | undefined;
    if (result === undefined) throw new ProtocolError('navidrome: search3 returned no searchResult3');
    return asArray(result.song);
  }

  /**
   * All songs via `search3` with an empty query, 500 per page (`songOffset += 500`) until a page is
   * short; once per filtered music folder (`musicFolderId`), de-duplicated across folders.
   */
  iterateTracks(): AsyncIterable<ProviderTrack[]> {
    const self = this;
    async function* all(): AsyncIterable<ProviderTrack[]> {
      yield* tracksOfLibraries(await self.listedFolders(), async function* (folder) {
        for (let offset = 0; ; offset += SUBSONIC_PAGE_SIZE) {
          const songs = await self.searchPage(folder, offset, SUBSONIC_PAGE_SIZE);
          if (songs.length) yield songs.map((s) => withLibrary(mapSubsonicSong(s), folder));
          if (songs.length < SUBSONIC_PAGE_SIZE) break;
        }
      });
    }
    return all();
  }

  /**
   * The music folders a catalogue walk lists one after the other, so each song carries its `musicFolderId` as its
   * library (issue 34; a Subsonic song record has no folder field): the filter, else every folder of
   * `getMusicFolders`; a server that lists no folder is walked whole (library unknown). A server that ignores
   * `musicFolderId` in `search3` (supysonic 0.7 does) would tag every song with the first folder: when the server has
   * several folders the first song of each is probed first (one `search3` of one song per folder), and when two
   * folders answer the same song the server is walked whole with no library recorded (never a guess; the filter
   * had no effect on such a server anyway).
   */
  private async listedFolders(): Promise<Array<string | undefined>> {
    const all = (await this.listLibraries()).map((l) => l.id);
    const folders = this.folders.length ? [...this.folders] : all;
    if (folders.length === 0) return [undefined];
    if (all.length < 2) return folders;
    const firsts = new Set<string>();
    for (const folder of all) {
      const id = str((await this.searchPage(folder, 0, 1))[0]?.id);
      if (id === undefined) continue;
      if (firsts.has(id)) return [undefined];
      firsts.add(id);
    }
    return folders;
  }

  /** `getMusicFolders` as this client's user (Navidrome answers the folders the user may read). Issue 34. */
  visibleLibraries(): Promise<LibraryInfo[] | null> {
    return this.listLibraries();
  }

  /**
   * Tracks of the `albums` newest albums: `getAlbumList2?type=newest` (500 per page, `offset`) per
   * filtered music folder, merged by the albums' `created` time, then `getAlbum` for each (reference
   * `get_recent_albums` + `get_tracks_from_album`).
   */
  iterateRecentAlbumTracks(albums: number): AsyncIterable<ProviderTrack[]> {
    const self = this;
    const listAlbums = async (folder: string | undefined): Promise<AddedAlbum[]> => {
      const list: AddedAlbum[] = [];
      for (let offset = 0; list.length < albums; offset += SUBSONIC_PAGE_SIZE) {
        const size = Math.min(SUBSONIC_PAGE_SIZE, albums - list.length);
        const env = await this.call('getAlbumList2', { type: 'newest', size, offset, musicFolderId: folder });
        const page = asArray((env.albumList2 as { album?: unknown } | undefined)?.album) as Array<{ id?: unknown; created?: string }>;
        for (const a of page) {
          const id = str(a.id);
          if (id) list.push({ id, added: a.created });
        }
        if (page.length < size) break;
      }
      return list;
    };
    return recentAlbumTracks(librariesOrAll(this.folders), albums, listAlbums, async function* (id) {
      const env = await self.call('getAlbum', { id });
      const songs = asArray((env.album as { song?: unknown } | undefined)?.song) as SubsonicSong[];
      if (songs.length) yield songs.map(mapSubsonicSong);
    });
  }

  /**
   * `getIndexes?ifModifiedSince=<previous + 1>`: its `lastModified` (ms, the library's last scan). Asking past the
   * previous value makes an unchanged library answer without its artist index (a few hundred bytes).
   */
  async libraryChangeToken(previous?: string): Promise<string> {
    const since = previous !== undefined && /^\d+$/.test(previous) ? String(Number(previous) + 1) : undefined;
    const env = await this.call('getIndexes', { ifModifiedSince: since });
    const last = num((env.indexes as { lastModified?: unknown } | undefined)?.lastModified);
    if (last === undefined) throw new ProtocolError('navidrome: getIndexes returned no lastModified');
    return String(Math.trunc(last));
  }

  /** `getArtists` (per filtered folder) flattened from its alphabetical index, de-duplicated. */
  async listArtists(): Promise<ProviderArtist[]> {
    const folders = librariesOrAll(this.folders);
    const byId = new Map<string, ProviderArtist>();
    for (const folder of folders) {
      const env = await this.call('getArtists', { musicFolderId: folder });
      const index = asArray((env.artists as { index?: unknown } | undefined)?.index) as Array<{ artist?: unknown }>;
      for (const entry of index) {
        for (const a of asArray(entry.artist) as Array<{ id?: unknown; name?: string }>) {
          const id = str(a.id);
          if (id && !byId.has(id)) byId.set(id, { id, name: a.name ?? '' });
        }
      }
    }
    return [...byId.values()];
  }

  /** Rejects a JSON/XML error document served instead of audio bytes. */
  private async rejectEnvelope(method: string, res: DownloadResponse): Promise<void> {
    const type = res.contentType;
    if (!/json|xml/i.test(type)) return;
    const text = await res.text();
    if (/json/i.test(type)) {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (err) {
        throw new ProtocolError(`navidrome: ${method} returned unparsable JSON instead of audio`, { cause: err });
      }
      this.unwrap(method, body);
    } else {
      const code = /code="(\d+)"/.exec(text)?.[1];
      const message = /message="([^"]*)"/.exec(text)?.[1];
      throw subsonicError(method, code === undefined ? undefined : Number(code), message === undefined ? undefined : this.http.scrub(message));
    }
    throw new ProtocolError(`navidrome: ${method} returned a document instead of audio`);
  }

  /**
   * Original bytes via `download?id=`; when downloads are disabled (error 50) falls back to
   * `stream?id=&format=raw` (also the original). Error documents are never written as audio.
   */
  async downloadTrack(trackId: string, destPath: string, signal?: AbortSignal): Promise<number> {
    try {
      return await this.withAuthFallback(() =>
        this.http.download(this.path('download'), destPath, {
          query: { ...this.authQuery(), id: trackId },
          signal,
          validate: (res) => this.rejectEnvelope('download', res),
        }),
      );
    } catch (err) {
      if (!(err instanceof PermissionDeniedError)) throw err;
      return this.withAuthFallback(() =>
        this.http.download(this.path('stream'), destPath, {
          query: { ...this.authQuery(), id: trackId, format: 'raw' },
          signal,
          validate: (res) => this.rejectEnvelope('stream', res),
        }),
      );
    }
  }

  /** `savePlayQueue?id=…&current=<first>`: replaces the account's saved play queue (Subsonic API 1.12). */
  async addToQueue(trackIds: string[]): Promise<QueueResult> {
    if (trackIds.length === 0) throw new RangeError('navidrome: a play queue needs at least one track');
    await this.call('savePlayQueue', { id: trackIds, current: trackIds[0] as string }, { idempotent: false });
    return { method: 'savePlayQueue' };
  }

  /**
   * `createPlaylist?name=&songId=…` with the first 40 ids, then `updatePlaylist?songIdToAdd=…` 40 at
   * a time. Servers older than 1.14 return no playlist; the id is then looked up by name. If an
   * append fails the half-filled playlist is deleted (best effort) and the error rethrown.
   */
  async createPlaylist(name: string, trackIds: string[]): Promise<ProviderPlaylist> {
    const batches = chunk(trackIds, SUBSONIC_PLAYLIST_BATCH);
    const env = await this.call('createPlaylist', { name, songId: batches[0] ?? [] }, { idempotent: false });
    let id = str((env.playlist as { id?: unknown } | undefined)?.id);
    if (!id) {
      const candidates = (await this.listPlaylists()).filter((p) => p.name === name);
      id = candidates[candidates.length - 1]?.id;
      if (!id) throw new ProtocolError('navidrome: createPlaylist returned no playlist and none was found by name');
    }
    try {
      for (const batch of batches.slice(1)) {
        await this.call('updatePlaylist', { playlistId: id, songIdToAdd: batch }, { idempotent: false });
      }
    } catch (err) {
      await this.deletePlaylist(id).catch(() => undefined);
      throw err;
    }
    return { id, name, trackCount: trackIds.length };
  }

  /** `getPlaylists` → `{id, name, trackCount: songCount}`. */
  async listPlaylists(): Promise<ProviderPlaylist[]> {
    const env = await this.call('getPlaylists');
    const list = asArray((env.playlists as { playlist?: unknown } | undefined)?.playlist) as Array<Record<string, unknown>>;
    return mapPlaylists(list, { id: 'id', name: 'name', count: 'songCount' });
  }

  async deletePlaylist(playlistId: string): Promise<void> {
    await this.call('deletePlaylist', { id: playlistId });
  }

  /**
   * Recently played songs, newest first. Subsonic has no per-song history call: reads
   * `getAlbumList2?type=recent` (size = ⌈limit/3⌉+10, the reference's album budget) per filtered
   * folder, then each album's songs (`getAlbum`) in album-recency order, keeping songs with a play
   * date. It stops early once `limit` songs are at least as recent as the next album's `played`.
   */
  async getListeningHistory(limit: number): Promise<ProviderTrack[]> {
    if (limit <= 0) return [];
    const size = Math.min(500, Math.ceil(limit / 3) + 10);
    const folders = librariesOrAll(this.folders);
    const albums: Array<{ id: string; played?: string }> = [];
    for (const folder of folders) {
      const env = await this.call('getAlbumList2', { type: 'recent', size, musicFolderId: folder });
      for (const a of asArray((env.albumList2 as { album?: unknown } | undefined)?.album) as Array<{ id?: unknown; played?: string }>) {
        const id = str(a.id);
        if (id) albums.push({ id, played: isoFromText(a.played) });
      }
    }
    albums.sort((a, b) => (b.played ?? '').localeCompare(a.played ?? ''));
    const songs = new Map<string, ProviderTrack>();
    for (const album of albums) {
      if (album.played) {
        const atLeast = [...songs.values()].filter((s) => (s.lastPlayed ?? '') >= (album.played as string)).length;
        if (atLeast >= limit) break;
      }
      const env = await this.call('getAlbum', { id: album.id });
      for (const s of asArray((env.album as { song?: unknown } | undefined)?.song) as SubsonicSong[]) {
        const t = mapSubsonicSong(s);
        if (t.lastPlayed || (t.playCount ?? 0) > 0) songs.set(t.id, t);
      }
    }
    return [...songs.values()].sort((a, b) => (b.lastPlayed ?? '').localeCompare(a.lastPlayed ?? '')).slice(0, limit);
  }

  /**
   * Lyrics in the order the reference uses: OpenSubsonic `getLyricsBySongId` (songLyrics
   * extension; the first unsynced structured entry, else the first, lines joined); when the server
   * lacks that call (HTTP 404/410/501, as supysonic and pre-OpenSubsonic servers answer), the
   * Subsonic `getLyrics?artist=&title=` (artist and title from `hint`, else from `getSong`), and
   * this client remembers to go straight there next time. A song unknown to the server (error 70)
   * or without lyrics → undefined. The whole lookup shares one lyrics timeout, without retries.
   */
  async getLyrics(trackId: string, hint: LyricsHint = {}): Promise<string | undefined> {
    const left = timeBudget(this.lyricsTimeoutMs);
    const quick = (): { timeoutMs: number; retries: number } => ({ timeoutMs: left(), retries: 0 });
    try {
      if (this.lyricsBySongId) {
        try {
          const env = await this.call('getLyricsBySongId', { id: trackId }, quick());
          const list = asArray((env.lyricsList as { structuredLyrics?: unknown } | undefined)?.structuredLyrics) as Array<{
            synced?: boolean;
            line?: Array<{ value?: string }> | { value?: string };
          }>;
          const entry = list.find((l) => !l.synced) ?? list[0];
          return entry ? lyricsToPlain(asArray(entry.line).map((l) => l.value ?? '').join('\n')) : undefined;
        } catch (err) {
          if (!isMissingMethod(err)) throw err;
          this.lyricsBySongId = false;
        }
      }
      let { artist, title } = hint;
      if (!artist || !title) {
        const song = (await this.call('getSong', { id: trackId }, quick())).song as SubsonicSong | undefined;
        artist ||= str(song?.artist);
        title ||= str(song?.title);
      }
      if (!artist || !title) return undefined;
      const env = await this.call('getLyrics', { artist, title }, quick());
      return lyricsToPlain(str((env.lyrics as { value?: unknown } | undefined)?.value));
    } catch (err) {
      if (err instanceof NotFoundError && err.code === 70) return undefined;
      if (isMissingMethod(err)) return undefined;
      throw err;
    }
  }
}

/** A Subsonic method the server does not implement: HTTP 404 (supysonic), 410 or 501 (Navidrome). */
function isMissingMethod(err: unknown): boolean {
  return err instanceof MediaServerError && err.code === undefined && (err.status === 404 || err.status === 410 || err.status === 501);
}
