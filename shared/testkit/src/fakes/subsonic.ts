/**
 * Fake Subsonic server, Navidrome flavour (OpenSubsonic, API 1.16.1), per media-server-apis.md §4
 * and the §8 checklist.
 *
 * - `/rest/<method>` and `/rest/<method>.view`, GET query or POST form (`formPost`).
 * - Auth: `u` plus `t = md5(password + s)` with `s`, or `p` (clear or `enc:<hex>`). Missing
 *   `u`/`v`/`c` or missing credentials → code 10; wrong → code 40. By default `apiKey` is not
 *   implemented (Navidrome), so it only helps if `u` and a password are sent too. With the
 *   `apiKey` option the fake is an OpenSubsonic server with the `apiKeyAuthentication` extension:
 *   `apiKey=<key>` without `u` authenticates as the user, `u` together with `apiKey` → code 43, an
 *   unknown key → code 44 (OpenSubsonic spec, media-server-apis.md §4.1). Errors are HTTP 200 with
 *   `status:"failed"` and `error{code,message}`; `getOpenSubsonicExtensions` needs no auth.
 * - Output: JSON with `f=json`, JSONP with `f=jsonp`, otherwise XML (the Subsonic default).
 * - Zero/empty values are left out (`omitempty`); `duration` is whole seconds (truncated);
 *   `played` only when `playCount > 0`; no `albumArtist` string (use `displayAlbumArtist` /
 *   `albumArtists`); `path` is Navidrome's fake relative path unless `reportRealPath`.
 * - `musicFolder.id` is an int; `musicFolderId` (repeatable) filters `search3`, `getAlbumList2`,
 *   `getArtists`, `getRandomSongs`; an unknown folder → code 70.
 * - Other users (`accounts`, Navidrome 0.58 multi-library: an admin gives each user some libraries): such a user's
 *   `getMusicFolders` lists only their libraries, `search3` without `musicFolderId` returns only their songs, and a
 *   folder they were not given → code 70 "not found or not accessible", as for an unknown one. The main user sees all.
 * - `search3` with an empty query (also `""` or a trailing `*`) returns everything in catalogue
 *   order; `getAlbumList2` caps `size` at 500.
 * - A catalogue page (for `failAfterPages`) is a `search3` call with `songCount > 0`, a
 *   `getAlbumList2` call, or a `getAlbum` call.
 * - Play queue: `savePlayQueue` (repeated `id`, `current`), kept in `playQueue`.
 * - Playlists: `createPlaylist` (repeated `songId`, returns the playlist since 1.14),
 *   `updatePlaylist` (repeated `songIdToAdd`, `songIndexToRemove`), `getPlaylists`, `getPlaylist`,
 *   `deletePlaylist`. More than `maxIdsPerRequest` ids (default 40) in one request → code 0; a
 *   request target over 1 MiB → HTTP 431 (Go `http.DefaultMaxHeaderBytes`).
 * - `stream` (raw only: the fake cannot transcode) and `download` (code 50 when downloads are
 *   disabled) send the original bytes; errors come back as envelopes.
 * - Lyrics: `getLyricsBySongId` (OpenSubsonic `songLyrics`) and `getLyrics?artist=&title=`.
 * - Unknown methods → HTTP 404 text; removed ones (`search`, chat, video) → HTTP 410 text.
 *
 * Files: this one holds the server (ids, payloads, routing); subsonic-protocol.ts the envelope, error codes and
 * parameters; subsonic-auth.ts authentication and accounts; subsonic-browse.ts the browse, search and media
 * endpoints; subsonic-playlists.ts the playlist and play-queue endpoints.
 */import express, { type Express, type Response } from 'express';
import type { FakeCatalogue, FakeTrack } from './catalogue';
import { FakeCore, FileSizes, HexIds, audioContentType, extOf, newApp, paramsToRecord, recordBody, type StartedFake } from './common';
import { SubsonicAuth } from './subsonic-auth';
import { BROWSE_METHODS, browseMethod } from './subsonic-browse';
import { PLAYLIST_METHODS, SubsonicPlaylists } from './subsonic-playlists';
import { ID_ALBUM, ID_ARTIST, ID_TRACK, omitEmpty, requestParams, sendEnvelope, SubsonicError, type SubsonicAnswer, type SubsonicView } from './subsonic-protocol';

export { SUBSONIC_ERRORS } from './subsonic-protocol';

/** Options of {@link createFakeSubsonic}. */
export interface FakeSubsonicOptions {
  catalogue: FakeCatalogue;
  user?: string;
  /** Default `sesame` (the API docs' worked example). */
  password?: string;
  serverVersion?: string;
  /** Report real absolute paths (Navidrome "Report real path" player setting). Default false. */
  reportRealPath?: boolean;
  /** Navidrome `EnableDownloads`. Default true. */
  enableDownloads?: boolean;
  /** Song ids accepted per createPlaylist/updatePlaylist request (default 40, the reference batch); null = no cap. */
  maxIdsPerRequest?: number | null;
  /** Request-target byte limit → HTTP 431 (default 1 MiB, Go's DefaultMaxHeaderBytes). */
  maxRequestBytes?: number;
  /** Accept this OpenSubsonic API key (`apiKeyAuthentication` extension). Default: none (Navidrome). */
  apiKey?: string;
  /** Other (non-admin) users, each given some catalogue libraries (by catalogue library id). */
  accounts?: Array<{ user: string; password: string; libraries: string[] }>;
}

/** Methods Navidrome removed: HTTP 410 text. */
const REMOVED_METHODS = new Set(['search', 'getChatMessages', 'addChatMessage', 'getVideos', 'getVideoInfo', 'getCaptions']);

/** A fake Navidrome; see the module doc. */
export class FakeSubsonic {
  readonly core = new FakeCore();
  readonly app: Express;
  readonly catalogue: FakeCatalogue;
  readonly user: string;
  readonly password: string;
  readonly serverVersion: string;
  reportRealPath: boolean;
  enableDownloads: boolean;
  maxIdsPerRequest: number | null;
  /** The accepted OpenSubsonic API key, if the fake offers `apiKeyAuthentication`. */
  readonly apiKey?: string;
  private readonly maxRequestBytes: number;
  /** Other users and the catalogue libraries each was given. */
  readonly accounts: ReadonlyArray<{ user: string; password: string; libraries: string[] }>;
  /** Libraries of the user of the request being answered (undefined = all: the main user or an API key). */
  private visibleLibraries?: string[];
  private readonly ids = new HexIds('navidrome');
  private readonly sizes = new FileSizes();
  private albumIndex?: Map<string, number>;
  private artistIndex?: Map<string, number>;
  private readonly auth: SubsonicAuth;
  /** What the endpoint modules read of this server (live: knobs changed after construction apply). */
  private readonly view: SubsonicView;
  private readonly playlistStore: SubsonicPlaylists;

  constructor(opts: FakeSubsonicOptions) {
    this.catalogue = opts.catalogue;
    this.user = opts.user ?? 'alice';
    this.password = opts.password ?? 'sesame';
    this.serverVersion = opts.serverVersion ?? '0.58.0 (fake)';
    this.reportRealPath = opts.reportRealPath ?? false;
    this.enableDownloads = opts.enableDownloads ?? true;
    this.maxIdsPerRequest = opts.maxIdsPerRequest === undefined ? 40 : opts.maxIdsPerRequest;
    this.maxRequestBytes = opts.maxRequestBytes ?? 1024 * 1024;
    if (opts.apiKey) this.apiKey = opts.apiKey;
    this.accounts = opts.accounts ?? [];
    this.auth = new SubsonicAuth(this.user, this.password, this.apiKey, this.accounts);
    const self = this;
    this.view = {
      catalogue: this.catalogue,
      core: this.core,
      ids: this.ids,
      user: this.user,
      get enableDownloads() {
        return self.enableDownloads;
      },
      get maxIdsPerRequest() {
        return self.maxIdsPerRequest;
      },
      get visibleLibraries() {
        return self.visibleLibraries;
      },
      song: (i) => this.song(i),
      albumEntry: (j) => this.albumEntry(j),
      trackIndex: (id) => this.trackIndex(id),
    };
    this.playlistStore = new SubsonicPlaylists(this.view, (queue) => {
      this.playQueue = queue;
    });
    this.app = this.build();
  }

  // ---------- ids and knobs ----------
  /** Provider (song) id of a catalogue track. */
  idOf(track: FakeTrack | string): string {
    const id = typeof track === 'string' ? track : track.id;
    const i = this.catalogue.indexOfId(id);
    if (i === undefined) throw new Error(`unknown catalogue track ${id}`);
    return this.ids.encode(ID_TRACK, i);
  }
  trackFor(providerId: string): FakeTrack | undefined {
    const i = this.trackIndex(providerId);
    return i === undefined ? undefined : this.catalogue.trackAt(i);
  }
  private trackIndex(id: string): number | undefined {
    const d = this.ids.decode(id);
    return d && d.type === ID_TRACK && d.n < this.catalogue.size ? d.n : undefined;
  }
  /** `musicFolder.id` (int) of a catalogue library. */
  folderIdOf(libraryId: string): number {
    const j = this.catalogue.libraries.findIndex((l) => l.id === libraryId);
    if (j < 0) throw new Error(`unknown library ${libraryId}`);
    return j + 1;
  }
  albumIdOf(catalogueAlbumId: string): string {
    if (!this.albumIndex) this.albumIndex = new Map(this.catalogue.albums().map((a, j) => [a.id, j]));
    return this.ids.encode(ID_ALBUM, this.albumIndex.get(catalogueAlbumId) ?? 0);
  }
  artistIdOf(catalogueArtistId: string): string {
    if (!this.artistIndex) this.artistIndex = new Map(this.catalogue.artists().map((a, k) => [a.id, k]));
    return this.ids.encode(ID_ARTIST, this.artistIndex.get(catalogueArtistId) ?? 0);
  }
  /** See {@link FakeCore.failAfterPages}; pages are listed in the module doc. */
  failAfterPages(n: number | null): void {
    this.core.failAfterPages(n);
  }
  get requests() {
    return this.core.requests;
  }
  /** The saved play queue (`savePlayQueue`, Subsonic API 1.12): song ids in order and the current one; undefined until saved. */
  playQueue?: { trackIds: string[]; current?: string };

  /** Current playlists with their songs as provider ids, in order. */
  playlists(): Array<{ id: string; name: string; public: boolean; trackIds: string[] }> {
    return this.playlistStore.list();
  }
  start(): Promise<StartedFake> {
    return this.core.listen(this.app);
  }

  /** Navidrome's fake path: `<AlbumArtist>/<Album>/[DD-]NN - <Title>.<suffix>`. */
  fakePath(t: FakeTrack): string {
    const multiDisc = this.multiDiscAlbums().has(t.albumId);
    const nn = String(t.trackNumber ?? 0).padStart(2, '0');
    const disc = multiDisc ? `${String(t.discNumber ?? 1).padStart(2, '0')}-` : '';
    const clean = (s: string) => s.replace(/[/\\]/g, '_');
    return `${clean(t.albumArtist)}/${clean(t.album)}/${disc}${nn} - ${clean(t.title)}.${extOf(t.audioFile)}`;
  }

  private multiDisc?: { version: number; ids: Set<string> };
  /** Catalogue album ids whose tracks span more than one disc (cached per catalogue version). */
  private multiDiscAlbums(): Set<string> {
    if (!this.multiDisc || this.multiDisc.version !== this.catalogue.version) {
      const ids = new Set<string>();
      for (const a of this.catalogue.albums()) {
        if (new Set(a.trackIndices.map((i) => this.catalogue.trackAt(i).discNumber ?? 1)).size > 1) ids.add(a.id);
      }
      this.multiDisc = { version: this.catalogue.version, ids };
    }
    return this.multiDisc.ids;
  }

  // ---------- payload builders ----------
  /** The `song` (child) payload of catalogue track `i`, as Navidrome sends it (omitempty). */
  song(i: number): Record<string, unknown> {
    const t = this.catalogue.trackAt(i);
    const size = this.sizes.of(t.audioFile);
    const artistId = this.artistIdOf(t.artistId);
    const albumArtistId = this.artistIdOf(t.albumArtistId);
    const albumId = this.albumIdOf(t.albumId);
    const out: Record<string, unknown> = {
      id: this.ids.encode(ID_TRACK, i),
      parent: albumId,
      isDir: false,
      title: t.title,
      album: t.album,
      artist: t.artist,
      track: t.trackNumber,
      year: t.year,
      genre: t.genre,
      coverArt: `mf-${this.ids.encode(ID_TRACK, i)}`,
      size,
      contentType: audioContentType(t.audioFile),
      suffix: extOf(t.audioFile),
      duration: Math.trunc(t.durationSeconds),
      bitRate: t.durationSeconds > 0 ? Math.round((size * 8) / t.durationSeconds / 1000) : 0,
      path: this.reportRealPath ? t.path : this.fakePath(t),
      playCount: t.playCount,
      played: t.playCount > 0 ? t.lastPlayed : undefined,
      userRating: t.rating,
      discNumber: t.discNumber,
      created: t.addedAt,
      albumId,
      artistId,
      type: 'music',
      mediaType: 'song',
      artists: [{ id: artistId, name: t.artist }],
      displayArtist: t.artist,
      albumArtists: [{ id: albumArtistId, name: t.albumArtist }],
      displayAlbumArtist: t.albumArtist,
      genres: t.genre ? [{ name: t.genre }] : undefined,
    };
    return omitEmpty(out);
  }

  private albumEntry(j: number): Record<string, unknown> {
    const a = this.catalogue.albums()[j];
    if (!a) return {};
    let duration = 0;
    let plays = 0;
    let played: string | undefined;
    for (const i of a.trackIndices) {
      const t = this.catalogue.trackAt(i);
      duration += t.durationSeconds;
      plays += t.playCount;
      if (t.lastPlayed && (!played || t.lastPlayed > played)) played = t.lastPlayed;
    }
    const first = this.catalogue.trackAt(a.trackIndices[0] ?? 0);
    return omitEmpty({
      id: this.ids.encode(ID_ALBUM, j),
      name: a.name,
      artist: a.artist,
      artistId: this.artistIdOf(a.artistId),
      coverArt: `al-${this.ids.encode(ID_ALBUM, j)}`,
      songCount: a.trackIndices.length,
      duration: Math.trunc(duration),
      playCount: plays,
      played: plays > 0 ? played : undefined,
      created: first.addedAt,
      year: a.year,
      genre: first.genre,
      isDir: true,
      displayArtist: a.artist,
    });
  }

  // ---------- request handling ----------
  /** One authenticated method call; returns the payload to wrap, or 'sent' when the response was already written. */
  private dispatch(method: string, params: URLSearchParams, res: Response): SubsonicAnswer {
    if (method === 'ping') return {};
    if (method === 'getLicense') return { license: { valid: true } };
    if (BROWSE_METHODS.has(method)) return browseMethod(this.view, method, params, res);
    if (PLAYLIST_METHODS.has(method)) return this.playlistStore.answer(method, params);
    res.status(404).type('text/plain').send('404 page not found');
    return 'sent';
  }

  private build(): Express {
    const app = newApp(this.core);
    app.use((req, res, next) => {
      if (Buffer.byteLength(req.originalUrl) > this.maxRequestBytes) {
        res.status(431).type('text/plain').send('431 Request Header Fields Too Large');
        return;
      }
      next();
    });
    app.use(express.text({ type: 'application/x-www-form-urlencoded', limit: '10mb' }));
    app.all('/rest/:method', (req, res) => {
      const method = String(req.params.method).replace(/\.view$/, '');
      const params = requestParams(req);
      if (typeof req.body === 'string' && req.body) recordBody(res, paramsToRecord(new URLSearchParams(req.body)));
      if (req.method !== 'GET' && req.method !== 'POST') {
        res.status(405).end();
        return;
      }
      if (REMOVED_METHODS.has(method)) {
        res.status(410).type('text/plain').send('This endpoint has been removed');
        return;
      }
      try {
        if (method === 'getOpenSubsonicExtensions') {
          sendEnvelope(res, params, this.serverVersion, {
            openSubsonicExtensions: [
              { name: 'formPost', versions: [1] },
              { name: 'songLyrics', versions: [1] },
              ...(this.apiKey === undefined ? [] : [{ name: 'apiKeyAuthentication', versions: [1] }]),
            ],
          });
          return;
        }
        this.visibleLibraries = undefined;
        this.visibleLibraries = this.auth.authenticate(params);
        const payload = this.dispatch(method, params, res);
        if (payload !== 'sent') sendEnvelope(res, params, this.serverVersion, payload);
      } catch (err) {
        if (err instanceof SubsonicError) sendEnvelope(res, params, this.serverVersion, {}, err);
        else {
          res.status(500).type('text/plain').send(String(err));
        }
      }
    });
    app.use((_req, res) => {
      res.status(404).type('text/plain').send('404 page not found');
    });
    return app;
  }
}

/** Builds a fake Navidrome over `opts.catalogue`. Call `start()` to listen on 127.0.0.1. */
export function createFakeSubsonic(opts: FakeSubsonicOptions): FakeSubsonic {
  return new FakeSubsonic(opts);
}
