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
 */
import { createHash } from 'node:crypto';
import express, { type Express, type Request, type Response } from 'express';
import type { FakeCatalogue, FakeTrack } from './catalogue';
import { FakeCore, FileSizes, HexIds, audioContentType, extOf, newApp, paramsToRecord, recordBody, searchParams, sendAudio, toXml, type StartedFake } from './common';

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

const API_VERSION = '1.16.1';
const ID_TRACK = 1;
const ID_ALBUM = 2;
const ID_ARTIST = 3;
const ID_PLAYLIST = 5;

/** Subsonic error codes used here (subsonic.org API, "Error handling"). */
export const SUBSONIC_ERRORS = {
  generic: 0,
  missingParameter: 10,
  wrongCredentials: 40,
  conflictingAuth: 43,
  invalidApiKey: 44,
  notAuthorized: 50,
  notFound: 70,
} as const;

class SubsonicError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

interface SubPlaylist {
  n: number;
  id: string;
  name: string;
  comment?: string;
  owner: string;
  public: boolean;
  tracks: number[];
  created: string;
  changed: string;
}

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
  private readonly playlistMap = new Map<number, SubPlaylist>();
  private nextPlaylist = 1;
  private readonly sizes = new FileSizes();
  private albumIndex?: Map<string, number>;
  private artistIndex?: Map<string, number>;

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
  /** Current playlists with their songs as provider ids, in order. */
  /** The saved play queue (`savePlayQueue`, Subsonic API 1.12): song ids in order and the current one; undefined until saved. */
  playQueue?: { trackIds: string[]; current?: string };

  playlists(): Array<{ id: string; name: string; public: boolean; trackIds: string[] }> {
    return [...this.playlistMap.values()].map((p) => ({ id: p.id, name: p.name, public: p.public, trackIds: p.tracks.map((i) => this.ids.encode(ID_TRACK, i)) }));
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

  private playlistEntry(p: SubPlaylist, withEntries: boolean): Record<string, unknown> {
    const duration = p.tracks.reduce((s, i) => s + Math.trunc(this.catalogue.trackAt(i).durationSeconds), 0);
    return omitEmpty({
      id: p.id,
      name: p.name,
      comment: p.comment,
      owner: p.owner,
      public: p.public,
      songCount: p.tracks.length,
      duration,
      created: p.created,
      changed: p.changed,
      entry: withEntries ? p.tracks.map((i) => this.song(i)) : undefined,
    }, ['public', 'songCount', 'duration']);
  }

  // ---------- request handling ----------
  private params(req: Request): URLSearchParams {
    const p = searchParams(req);
    if (typeof req.body === 'string' && req.body) for (const [k, v] of new URLSearchParams(req.body)) p.append(k, v);
    return p;
  }

  private send(req: Request, res: Response, params: URLSearchParams, payload: Record<string, unknown>, failed?: SubsonicError): void {
    const envelope: Record<string, unknown> = {
      status: failed ? 'failed' : 'ok',
      version: API_VERSION,
      type: 'navidrome',
      serverVersion: this.serverVersion,
      openSubsonic: true,
      ...(failed ? { error: { code: failed.code, message: failed.message } } : payload),
    };
    const f = params.get('f');
    if (f === 'json') {
      res.status(200).json({ 'subsonic-response': envelope });
    } else if (f === 'jsonp') {
      res.status(200).type('application/javascript').send(`${params.get('callback') ?? 'callback'}(${JSON.stringify({ 'subsonic-response': envelope })});`);
    } else {
      res.status(200).type('application/xml').send(`<?xml version="1.0" encoding="UTF-8"?>${toXml('subsonic-response', envelope, ' xmlns="http://subsonic.org/restapi"')}`);
    }
  }

  private authenticate(params: URLSearchParams): void {
    this.visibleLibraries = undefined;
    const key = params.get('apiKey');
    if (this.apiKey !== undefined && key !== null) {
      if (params.get('u') !== null) throw new SubsonicError(SUBSONIC_ERRORS.conflictingAuth, 'Multiple conflicting authentication mechanisms provided');
      if (!params.get('v') || !params.get('c')) throw new SubsonicError(SUBSONIC_ERRORS.missingParameter, 'Missing required parameter');
      if (key !== this.apiKey) throw new SubsonicError(SUBSONIC_ERRORS.invalidApiKey, 'Invalid API key');
      return;
    }
    const u = params.get('u');
    if (!u || !params.get('v') || !params.get('c')) throw new SubsonicError(SUBSONIC_ERRORS.missingParameter, 'Missing required parameter');
    const p = params.get('p');
    const t = params.get('t');
    const s = params.get('s');
    const other = u === this.user ? undefined : this.accounts.find((a) => a.user === u);
    const password = other ? other.password : this.password;
    let ok: boolean;
    if (p !== null) {
      let clear = p;
      if (p.startsWith('enc:')) clear = Buffer.from(p.slice(4), 'hex').toString('utf8');
      ok = clear === password;
    } else if (t !== null && s !== null) {
      ok = createHash('md5').update(password + s).digest('hex') === t.toLowerCase();
    } else {
      throw new SubsonicError(SUBSONIC_ERRORS.missingParameter, 'Missing required parameter');
    }
    if (!ok || (u !== this.user && !other)) throw new SubsonicError(SUBSONIC_ERRORS.wrongCredentials, 'Wrong username or password');
    if (other) this.visibleLibraries = [...other.libraries];
  }

  private folderFilter(params: URLSearchParams): string[] | undefined {
    const raw = params.getAll('musicFolderId').filter((v) => v !== '');
    if (!raw.length) return this.visibleLibraries;
    return raw.map((v) => {
      const lib = this.catalogue.libraries[Number(v) - 1];
      if (!lib || !/^\d+$/.test(v) || (this.visibleLibraries && !this.visibleLibraries.includes(lib.id))) {
        throw new SubsonicError(SUBSONIC_ERRORS.notFound, `Library ${v} not found or not accessible`);
      }
      return lib.id;
    });
  }

  private int(params: URLSearchParams, name: string, dflt: number): number {
    const v = params.get(name);
    if (v === null || v === '') return dflt;
    const n = Number.parseInt(v, 10);
    if (!Number.isFinite(n)) throw new SubsonicError(SUBSONIC_ERRORS.generic, `Invalid ${name}`);
    return n;
  }

  private required(params: URLSearchParams, name: string): string {
    const v = params.get(name);
    if (v === null || v === '') throw new SubsonicError(SUBSONIC_ERRORS.missingParameter, `required '${name}' parameter is missing`);
    return v;
  }

  private checkIds(count: number): void {
    if (this.maxIdsPerRequest !== null && count > this.maxIdsPerRequest) {
      throw new SubsonicError(SUBSONIC_ERRORS.generic, `Too many songs in one request: ${count} > ${this.maxIdsPerRequest}`);
    }
  }

  private resolveSongs(ids: string[]): number[] {
    return ids.map((id) => {
      const i = this.trackIndex(id);
      if (i === undefined) throw new SubsonicError(SUBSONIC_ERRORS.notFound, `Song ${id} not found`);
      return i;
    });
  }

  private playlistOf(id: string): SubPlaylist {
    const d = this.ids.decode(id);
    const p = d && d.type === ID_PLAYLIST ? this.playlistMap.get(d.n) : undefined;
    if (!p) throw new SubsonicError(SUBSONIC_ERRORS.notFound, 'Playlist not found');
    return p;
  }

  private albumIdx(id: string): number {
    const d = this.ids.decode(id);
    if (!d || d.type !== ID_ALBUM || d.n >= this.catalogue.albums().length) throw new SubsonicError(SUBSONIC_ERRORS.notFound, 'Album not found');
    return d.n;
  }

  /** One method call; returns the payload to wrap, or 'sent' when the response was already written. */
  private dispatch(method: string, params: URLSearchParams, req: Request, res: Response): Record<string, unknown> | 'sent' {
    const cat = this.catalogue;
    switch (method) {
      case 'ping':
        return {};
      case 'getLicense':
        return { license: { valid: true } };
      case 'getMusicFolders':
        return { musicFolders: { musicFolder: cat.libraries.map((l, j) => ({ id: j + 1, name: l.name, lib: l.id })).filter((f) => !this.visibleLibraries || this.visibleLibraries.includes(f.lib)).map(({ id, name }) => ({ id, name })) } };
      case 'search3': {
        let query = params.get('query') ?? '';
        if (query === '""') query = '';
        query = query.replace(/\*$/, '').toLowerCase();
        const songCount = this.int(params, 'songCount', 20);
        const songOffset = this.int(params, 'songOffset', 0);
        const albumCount = this.int(params, 'albumCount', 20);
        const albumOffset = this.int(params, 'albumOffset', 0);
        const artistCount = this.int(params, 'artistCount', 20);
        const artistOffset = this.int(params, 'artistOffset', 0);
        const libs = this.folderFilter(params);
        if (songCount > 0 && this.core.pageShouldFail()) return this.fail500(res);
        const indices = cat.indicesIn(libs);
        const matches = (i: number) => {
          if (!query) return true;
          const t = cat.trackAt(i);
          return t.title.toLowerCase().includes(query) || t.artist.toLowerCase().includes(query) || t.album.toLowerCase().includes(query);
        };
        const songs: number[] = [];
        if (songCount > 0) {
          let skipped = 0;
          for (const i of indices) {
            if (!matches(i)) continue;
            if (skipped < songOffset) {
              skipped++;
              continue;
            }
            songs.push(i);
            if (songs.length >= songCount) break;
          }
        }
        const libSet = libs ? new Set(libs) : undefined;
        const albums = cat.albums().map((a, j) => ({ a, j })).filter(({ a }) => (!libSet || libSet.has(a.library)) && (!query || a.name.toLowerCase().includes(query)));
        const artists = cat.artists().map((a, k) => ({ a, k })).filter(({ a }) => !query || a.name.toLowerCase().includes(query));
        const result: Record<string, unknown> = {};
        const ar = artists.slice(artistOffset, artistOffset + Math.max(0, artistCount));
        const al = albums.slice(albumOffset, albumOffset + Math.max(0, albumCount));
        if (ar.length) result.artist = ar.map(({ a, k }) => ({ id: this.ids.encode(ID_ARTIST, k), name: a.name }));
        if (al.length) result.album = al.map(({ j }) => this.albumEntry(j));
        if (songs.length) result.song = songs.map((i) => this.song(i));
        return { searchResult3: result };
      }
      case 'getAlbumList2': {
        const type = this.required(params, 'type');
        const size = Math.min(500, Math.max(0, this.int(params, 'size', 10)));
        const offset = Math.max(0, this.int(params, 'offset', 0));
        const libs = this.folderFilter(params);
        if (this.core.pageShouldFail()) return this.fail500(res);
        const libSet = libs ? new Set(libs) : undefined;
        let albums = cat.albums().map((a, j) => ({ a, j, e: this.albumEntry(j) })).filter(({ a }) => !libSet || libSet.has(a.library));
        const num = (x: unknown) => (typeof x === 'number' ? x : 0);
        const txt = (x: unknown) => (typeof x === 'string' ? x : '');
        switch (type) {
          case 'newest':
            albums.sort((x, y) => txt(y.e.created).localeCompare(txt(x.e.created)) || x.j - y.j);
            break;
          case 'alphabeticalByName':
            albums.sort((x, y) => x.a.name.localeCompare(y.a.name) || x.j - y.j);
            break;
          case 'alphabeticalByArtist':
            albums.sort((x, y) => x.a.artist.localeCompare(y.a.artist) || x.a.name.localeCompare(y.a.name) || x.j - y.j);
            break;
          case 'frequent':
            albums = albums.filter((x) => num(x.e.playCount) > 0).sort((x, y) => num(y.e.playCount) - num(x.e.playCount) || x.j - y.j);
            break;
          case 'recent':
            albums = albums.filter((x) => x.e.played).sort((x, y) => txt(y.e.played).localeCompare(txt(x.e.played)) || x.j - y.j);
            break;
          case 'random':
          case 'highest':
          case 'starred':
            if (type !== 'random') albums = [];
            break;
          case 'byYear': {
            const from = this.int(params, 'fromYear', 0);
            const to = this.int(params, 'toYear', 9999);
            const lo = Math.min(from, to);
            const hi = Math.max(from, to);
            albums = albums.filter((x) => (x.a.year ?? 0) >= lo && (x.a.year ?? 0) <= hi).sort((x, y) => ((x.a.year ?? 0) - (y.a.year ?? 0)) * (from <= to ? 1 : -1));
            break;
          }
          case 'byGenre': {
            const genre = this.required(params, 'genre');
            albums = albums.filter((x) => x.e.genre === genre);
            break;
          }
          default:
            throw new SubsonicError(SUBSONIC_ERRORS.generic, `Type '${type}' not implemented`);
        }
        const page = albums.slice(offset, offset + size).map((x) => x.e);
        return { albumList2: page.length ? { album: page } : {} };
      }
      case 'getAlbum': {
        const j = this.albumIdx(this.required(params, 'id'));
        if (this.core.pageShouldFail()) return this.fail500(res);
        const a = cat.albums()[j];
        return { album: { ...this.albumEntry(j), song: (a?.trackIndices ?? []).map((i) => this.song(i)) } };
      }
      case 'getSong': {
        const i = this.trackIndex(this.required(params, 'id'));
        if (i === undefined) throw new SubsonicError(SUBSONIC_ERRORS.notFound, 'Song not found');
        return { song: this.song(i) };
      }
      case 'getRandomSongs': {
        const size = Math.min(500, this.int(params, 'size', 10));
        const indices = cat.indicesIn(this.folderFilter(params));
        return { randomSongs: { song: indices.slice(0, size).map((i) => this.song(i)) } };
      }
      case 'getArtists': {
        const libs = this.folderFilter(params);
        const libSet = libs ? new Set(libs) : undefined;
        const counts = new Map<string, number>();
        for (const a of cat.albums()) if (!libSet || libSet.has(a.library)) counts.set(a.artistId, (counts.get(a.artistId) ?? 0) + 1);
        const used = new Set<string>();
        for (const i of cat.indicesIn(libs)) used.add(cat.trackAt(i).artistId);
        const byLetter = new Map<string, Array<Record<string, unknown>>>();
        cat.artists().forEach((a, k) => {
          if (!counts.has(a.id) && !used.has(a.id)) return;
          const letter = a.name.replace(/^(The|El|La) /i, '').charAt(0).toUpperCase() || '#';
          const list = byLetter.get(letter) ?? [];
          list.push({ id: this.ids.encode(ID_ARTIST, k), name: a.name, albumCount: counts.get(a.id) ?? 0, coverArt: `ar-${this.ids.encode(ID_ARTIST, k)}` });
          byLetter.set(letter, list);
        });
        const index = [...byLetter.entries()].sort(([x], [y]) => x.localeCompare(y)).map(([name, artist]) => ({ name, artist }));
        return { artists: { ignoredArticles: 'The El La', index } };
      }
      case 'getArtist': {
        const d = this.ids.decode(this.required(params, 'id'));
        const a = d && d.type === ID_ARTIST ? cat.artists()[d.n] : undefined;
        if (!a || !d) throw new SubsonicError(SUBSONIC_ERRORS.notFound, 'Artist not found');
        const albums = cat.albums().map((al, j) => ({ al, j })).filter(({ al }) => al.artistId === a.id).map(({ j }) => this.albumEntry(j));
        return { artist: { id: this.ids.encode(ID_ARTIST, d.n), name: a.name, albumCount: albums.length, album: albums } };
      }
      case 'stream':
      case 'download': {
        const i = this.trackIndex(this.required(params, 'id'));
        if (i === undefined) throw new SubsonicError(SUBSONIC_ERRORS.notFound, 'Song not found');
        if (method === 'download' && !this.enableDownloads) throw new SubsonicError(SUBSONIC_ERRORS.notAuthorized, 'downloads are disabled');
        const format = params.get('format');
        if (format && format !== 'raw' && format !== extOf(cat.trackAt(i).audioFile)) {
          throw new SubsonicError(SUBSONIC_ERRORS.generic, `fake server cannot transcode to '${format}'`);
        }
        const t = cat.trackAt(i);
        sendAudio(res, t.audioFile, method === 'download' ? { 'Content-Disposition': `attachment; filename="${t.audioFile.slice(t.audioFile.lastIndexOf('/') + 1)}"` } : {});
        return 'sent';
      }
      case 'getPlaylists': {
        const list = [...this.playlistMap.values()].filter((p) => p.owner === this.user || p.public);
        return { playlists: list.length ? { playlist: list.map((p) => this.playlistEntry(p, false)) } : {} };
      }
      case 'getPlaylist':
        return { playlist: this.playlistEntry(this.playlistOf(this.required(params, 'id')), true) };
      case 'createPlaylist': {
        const songIds = params.getAll('songId');
        this.checkIds(songIds.length);
        const playlistId = params.get('playlistId');
        const name = params.get('name');
        const tracks = this.resolveSongs(songIds);
        const now = new Date().toISOString();
        let p: SubPlaylist;
        if (playlistId) {
          p = this.playlistOf(playlistId);
          p.tracks = tracks;
          if (name) p.name = name;
          p.changed = now;
        } else if (name) {
          const n = this.nextPlaylist++;
          p = { n, id: this.ids.encode(ID_PLAYLIST, n), name, owner: this.user, public: false, tracks, created: now, changed: now };
          this.playlistMap.set(n, p);
        } else {
          throw new SubsonicError(SUBSONIC_ERRORS.missingParameter, "required 'name' or 'playlistId' parameter is missing");
        }
        return { playlist: this.playlistEntry(p, true) };
      }
      case 'updatePlaylist': {
        const p = this.playlistOf(this.required(params, 'playlistId'));
        const add = params.getAll('songIdToAdd');
        this.checkIds(add.length);
        const addTracks = this.resolveSongs(add);
        const remove = new Set(params.getAll('songIndexToRemove').map((v) => Number.parseInt(v, 10)));
        const name = params.get('name');
        const comment = params.get('comment');
        const pub = params.get('public');
        if (name) p.name = name;
        if (comment !== null) p.comment = comment;
        if (pub !== null) p.public = pub === 'true';
        p.tracks = p.tracks.filter((_, idx) => !remove.has(idx)).concat(addTracks);
        p.changed = new Date().toISOString();
        return {};
      }
      case 'savePlayQueue': {
        const songIds = params.getAll('id');
        const tracks = this.resolveSongs(songIds);
        this.playQueue = { trackIds: tracks.map((i) => this.ids.encode(ID_TRACK, i)), current: params.get('current') ?? undefined };
        return {};
      }
      case 'deletePlaylist': {
        const p = this.playlistOf(this.required(params, 'id'));
        this.playlistMap.delete(p.n);
        return {};
      }
      case 'getLyricsBySongId': {
        const i = this.trackIndex(this.required(params, 'id'));
        if (i === undefined) throw new SubsonicError(SUBSONIC_ERRORS.notFound, 'Song not found');
        const t = cat.trackAt(i);
        const structuredLyrics = t.lyrics
          ? [{ displayArtist: t.artist, displayTitle: t.title, lang: 'xxx', offset: 0, synced: false, line: t.lyrics.split('\n').map((value) => ({ value })) }]
          : [];
        return { lyricsList: { structuredLyrics } };
      }
      case 'getLyrics': {
        const artist = (params.get('artist') ?? '').toLowerCase();
        const title = (params.get('title') ?? '').toLowerCase();
        for (const t of cat) {
          if (t.lyrics && t.title.toLowerCase() === title && (!artist || t.artist.toLowerCase() === artist)) {
            return { lyrics: { artist: t.artist, title: t.title, value: t.lyrics } };
          }
        }
        return { lyrics: {} };
      }
      case 'scrobble': {
        const ids = params.getAll('id');
        const tracks = this.resolveSongs(ids);
        if ((params.get('submission') ?? 'true') !== 'false') {
          const timeMs = Number(params.get('time') ?? Date.now());
          for (const i of tracks) {
            const t = cat.trackAt(i);
            cat.update(t.id, { playCount: t.playCount + 1, lastPlayed: new Date(timeMs).toISOString() });
          }
        }
        return {};
      }
      case 'getStarred2':
        return { starred2: {} };
      case 'getTopSongs':
        return { topSongs: {} };
      default:
        res.status(404).type('text/plain').send('404 page not found');
        return 'sent';
    }
  }

  private fail500(res: Response): 'sent' {
    res.status(500).type('text/plain').send('Internal Server Error (injected by fake)');
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
    const removed = new Set(['search', 'getChatMessages', 'addChatMessage', 'getVideos', 'getVideoInfo', 'getCaptions']);
    app.all('/rest/:method', (req, res) => {
      const method = String(req.params.method).replace(/\.view$/, '');
      const params = this.params(req);
      if (typeof req.body === 'string' && req.body) recordBody(res, paramsToRecord(new URLSearchParams(req.body)));
      if (req.method !== 'GET' && req.method !== 'POST') {
        res.status(405).end();
        return;
      }
      if (removed.has(method)) {
        res.status(410).type('text/plain').send('This endpoint has been removed');
        return;
      }
      try {
        if (method === 'getOpenSubsonicExtensions') {
          this.send(req, res, params, {
            openSubsonicExtensions: [
              { name: 'formPost', versions: [1] },
              { name: 'songLyrics', versions: [1] },
              ...(this.apiKey === undefined ? [] : [{ name: 'apiKeyAuthentication', versions: [1] }]),
            ],
          });
          return;
        }
        this.authenticate(params);
        const payload = this.dispatch(method, params, req, res);
        if (payload !== 'sent') this.send(req, res, params, payload);
      } catch (err) {
        if (err instanceof SubsonicError) this.send(req, res, params, {}, err);
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

/** Drops undefined/null, 0, '' and false values (Go `omitempty`), except the keys in `keep`. */
function omitEmpty(o: Record<string, unknown>, keep: string[] = ['isDir']): Record<string, unknown> {
  for (const [k, v] of Object.entries(o)) {
    if (keep.includes(k)) continue;
    if (v === undefined || v === null || v === 0 || v === '' || v === false) delete o[k];
  }
  return o;
}

/** Builds a fake Navidrome over `opts.catalogue`. Call `start()` to listen on 127.0.0.1. */
export function createFakeSubsonic(opts: FakeSubsonicOptions): FakeSubsonic {
  return new FakeSubsonic(opts);
}
