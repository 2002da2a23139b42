/**
 * Fake Lyrion Music Server (LMS 9.x JSON-RPC), per media-server-apis.md §5 and the §8 checklist.
 *
 * - One endpoint: `POST /jsonrpc.js` with `{"id","method":"slim.request","params":[player,[cmd,…]]}`
 *   (also `GET /jsonrpc.js?request=<same JSON>`, LMS 9.1+). The answer echoes `id`, `method`,
 *   `params` and adds `result`. Unknown commands, bad parameters, player commands without a
 *   connected player, and failing SQL close the socket without a response (what LMS does).
 * - Optional HTTP Basic auth (`user`/`password` set): everything, downloads included, needs it,
 *   otherwise 401 with `WWW-Authenticate: Basic`.
 * - Extended query format `[cmd, start, itemsPerResponse, "tag:value"…]` → `result.count` (total)
 *   plus `<name>_loop`. `tags:` decide which keys appear (tag table of §5.4: a s A S l e d u y R O
 *   t i o f D g; `w` lyrics on songinfo). `duration` is float seconds, `rating` 0-100 (stars×20,
 *   left out when unrated), `url` is a `file://` URL percent-encoded once; last-played is never exposed.
 * - Commands: serverstatus, version, musicfolder/mediafolder, libraries, titles/songs/tracks,
 *   artists, albums, songinfo, players, playlists (list, new, edit, delete, rename, tracks),
 *   and with a connected player: playlistcontrol (cmd:load, cmd:add track_id:…), playlist save/clear.
 * - `titles … sort:sql=tracks_persistent.playcount DESC` works only when tag R or O is asked for
 *   (the join exists only then); without it the SQL fails and the socket closes. Any other
 *   `sort` value than title/tracknum/albumtrack/sql is ignored (title order), e.g. `sort:popular`.
 * - Ids are integers: tracks 1…n, playlists share the tracks id space (n+1…), albums and artists
 *   have their own. Playlists: `playlists new` returns `playlist_id`, or `overwritten_playlist_id`
 *   for an existing name (nothing created); `playlists edit cmd:add` takes one url and skips
 *   tracks already present. `playlistcontrol cmd:add track_id:` takes at most
 *   `maxTrackIdsPerCommand` ids (default 50, the reference batch) → more closes the socket.
 * - Download: `GET /music/<id>/download` (original bytes).
 * - A catalogue page (for `failAfterPages`) is one `titles`/`songs`/`tracks` call.
 */
import type { Express, Request, Response } from 'express';
import express from 'express';
import type { FakeCatalogue, FakeTrack } from './catalogue';
import { FakeCore, FileSizes, extOf, newApp, recordBody, sendAudio, type StartedFake } from './common';

/** A connected player of the fake. */
export interface FakeLyrionPlayer {
  playerid: string;
  name: string;
}

/** Options of {@link createFakeLyrion}. */
export interface FakeLyrionOptions {
  catalogue: FakeCatalogue;
  /** With `user` and `password` set, HTTP Basic auth is required (LMS "Password protection"). */
  user?: string;
  password?: string;
  /** Connected players (default none: player commands close the socket). */
  players?: FakeLyrionPlayer[];
  /** Virtual libraries (`libraries` command, `library_id:`) mirroring the catalogue libraries. Default false. */
  virtualLibraries?: boolean;
  /** Send numeric values as strings (LMS does both; clients must parse leniently). Default false. */
  stringNumbers?: boolean;
  /** Max ids in one `playlistcontrol cmd:add track_id:` (default 50); null = no cap. */
  maxTrackIdsPerCommand?: number | null;
  /** How `failAfterPages` fails a page: HTTP 500 (default) or a closed socket. */
  failMode?: 'status500' | 'close';
  version?: string;
}

interface LmsPlaylist {
  id: number;
  name: string;
  tracks: number[];
}

class CloseSocket extends Error {}

/** Percent-encodes a path once, as LMS `file://` URLs are (`#` and `?` too). */
export function fileUrl(path: string): string {
  return `file://${encodeURI(path).replace(/#/g, '%23').replace(/\?/g, '%3F')}`;
}

/** A fake LMS; see the module doc. */
export class FakeLyrion {
  readonly core = new FakeCore();
  readonly app: Express;
  readonly catalogue: FakeCatalogue;
  players: FakeLyrionPlayer[];
  stringNumbers: boolean;
  maxTrackIdsPerCommand: number | null;
  failMode: 'status500' | 'close';
  private readonly user?: string;
  private readonly password?: string;
  private readonly virtualLibraries: boolean;
  private readonly version: string;
  private readonly playlistMap = new Map<number, LmsPlaylist>();
  private nextPlaylistNo = 1;
  private readonly queues = new Map<string, number[]>();
  private folderCache?: { byId: Map<number, FolderNode>; roots: FolderNode[]; version: number };

  constructor(opts: FakeLyrionOptions) {
    this.catalogue = opts.catalogue;
    this.user = opts.user;
    this.password = opts.password;
    this.players = opts.players ?? [];
    this.virtualLibraries = opts.virtualLibraries ?? false;
    this.stringNumbers = opts.stringNumbers ?? false;
    this.maxTrackIdsPerCommand = opts.maxTrackIdsPerCommand === undefined ? 50 : opts.maxTrackIdsPerCommand;
    this.failMode = opts.failMode ?? 'status500';
    this.version = opts.version ?? '9.0.2';
    this.app = this.build();
  }

  // ---------- ids and knobs ----------
  /** LMS track id (integer) of a catalogue track. */
  idOf(track: FakeTrack | string): number {
    const id = typeof track === 'string' ? track : track.id;
    const i = this.catalogue.indexOfId(id);
    if (i === undefined) throw new Error(`unknown catalogue track ${id}`);
    return i + 1;
  }
  trackFor(lmsId: number | string): FakeTrack | undefined {
    const i = Number(lmsId) - 1;
    return Number.isInteger(i) && i >= 0 && i < this.catalogue.size ? this.catalogue.trackAt(i) : undefined;
  }
  /** `file://` URL LMS reports for a catalogue track. */
  urlOf(track: FakeTrack): string {
    return fileUrl(track.path);
  }
  /** Virtual library id (8 hex) of a catalogue library (only meaningful with `virtualLibraries`). */
  libraryIdOf(libraryId: string): string {
    const j = this.catalogue.libraries.findIndex((l) => l.id === libraryId);
    if (j < 0) throw new Error(`unknown library ${libraryId}`);
    return (0x8c7ee510 + j).toString(16);
  }
  failAfterPages(n: number | null): void {
    this.core.failAfterPages(n);
  }
  get requests() {
    return this.core.requests;
  }
  /** The commands received (`params[1]` arrays), in order, with the player id. */
  commands(): Array<{ player: string; cmd: unknown[] }> {
    return this.core.requests
      .map((r) => r.body as { params?: [string, unknown[]] } | undefined)
      .filter((b): b is { params: [string, unknown[]] } => !!b && Array.isArray(b.params))
      .map((b) => ({ player: String(b.params[0] ?? ''), cmd: b.params[1] ?? [] }));
  }
  /** Saved playlists with their tracks as LMS ids, in order. */
  playlists(): Array<{ id: number; name: string; trackIds: number[] }> {
    return [...this.playlistMap.values()].map((p) => ({ id: p.id, name: p.name, trackIds: p.tracks.map((i) => i + 1) }));
  }
  /** A player's current queue as LMS track ids. */
  queueOf(playerid: string): number[] {
    return (this.queues.get(playerid) ?? []).map((i) => i + 1);
  }
  start(): Promise<StartedFake> {
    return this.core.listen(this.app);
  }

  // ---------- helpers ----------
  private sortCache = new Map<string, number[]>();
  /** File sizes (tag `f`, `filesize`), read once per file. */
  private readonly sizes = new FileSizes();
  /**
   * `list` in the order a `titles` sort asks for (title by default; tracknum, albumtrack,
   * sql=tracks_persistent.playcount|lastplayed [ASC|DESC]); cached per filter + catalogue version.
   */
  private sorted(list: number[], sort: string, filterKey: string): number[] {
    const cat = this.catalogue;
    const key = `${cat.version}|${sort}|${filterKey}`;
    const hit = this.sortCache.get(key);
    if (hit) return hit;
    const tracks = new Map(list.map((i) => [i, cat.trackAt(i)]));
    const t = (i: number) => tracks.get(i) as FakeTrack;
    const titles = new Map(list.map((i) => [i, t(i).title.toLowerCase()]));
    const byTitle = (a: number, b: number) => {
      const x = titles.get(a) as string;
      const y = titles.get(b) as string;
      return x < y ? -1 : x > y ? 1 : a - b;
    };
    const out = [...list];
    const m = /^sql=tracks_persistent\.(playcount|lastplayed)\s*(asc|desc)?$/i.exec(sort);
    if (m) {
      const desc = (m[2] ?? 'asc').toLowerCase() === 'desc';
      const byPlays = m[1]?.toLowerCase() === 'playcount';
      const k = (i: number) => (byPlays ? t(i).playCount : Date.parse(t(i).lastPlayed ?? '1970-01-01'));
      out.sort((a, b) => (k(a) - k(b)) * (desc ? -1 : 1) || a - b);
    } else if (sort === 'tracknum') {
      out.sort((a, b) => (t(a).trackNumber ?? 0) - (t(b).trackNumber ?? 0) || byTitle(a, b));
    } else if (sort === 'albumtrack') {
      out.sort((a, b) => t(a).album.localeCompare(t(b).album) || (t(a).discNumber ?? 1) - (t(b).discNumber ?? 1) || (t(a).trackNumber ?? 0) - (t(b).trackNumber ?? 0) || a - b);
    } else {
      out.sort(byTitle);
    }
    this.sortCache.set(key, out);
    if (this.sortCache.size > 32) this.sortCache.delete(this.sortCache.keys().next().value as string);
    return out;
  }

  private artistNos?: { src: readonly unknown[]; map: Map<string, number> };
  private albumNos?: { src: readonly unknown[]; map: Map<string, number> };
  /** 1-based LMS artist id of a catalogue artist id (cached per artists() array). */
  private artistNo(id: string): number {
    const src = this.catalogue.artists();
    if (this.artistNos?.src !== src) this.artistNos = { src, map: new Map(src.map((a, k) => [a.id, k + 1])) };
    return this.artistNos.map.get(id) ?? 0;
  }
  /** 1-based LMS album id of a catalogue album id. */
  private albumNo(id: string): number {
    const src = this.catalogue.albums();
    if (this.albumNos?.src !== src) this.albumNos = { src, map: new Map(src.map((a, k) => [a.id, k + 1])) };
    return this.albumNos.map.get(id) ?? 0;
  }
  private n(v: number | undefined): number | string | undefined {
    if (v === undefined) return undefined;
    return this.stringNumbers ? String(v) : v;
  }

  /** The key/value pairs tags select for one track (§5.4 tag table). */
  private trackFields(i: number, tags: string): Record<string, unknown> {
    const t = this.catalogue.trackAt(i);
    const artistNo = (id: string) => this.artistNo(id);
    const out: Record<string, unknown> = { id: i + 1, title: t.title };
    const has = (c: string) => tags.includes(c);
    if (has('a')) out.artist = t.artist;
    if (has('s')) out.artist_id = this.n(artistNo(t.artistId));
    if (has('A')) {
      out.artist = t.artist;
      out.albumartist = t.albumArtist;
      out.trackartist = t.artist;
    }
    if (has('S')) {
      out.artist_ids = String(artistNo(t.artistId));
      out.albumartist_ids = String(artistNo(t.albumArtistId));
      out.trackartist_ids = String(artistNo(t.artistId));
    }
    if (has('l')) out.album = t.album;
    if (has('e')) out.album_id = this.n(this.albumNo(t.albumId));
    if (has('d')) out.duration = this.stringNumbers ? String(t.durationSeconds) : t.durationSeconds;
    if (has('u')) out.url = fileUrl(t.path);
    if (has('y') && t.year) out.year = this.n(t.year);
    if (has('R') && t.rating) out.rating = this.n(t.rating * 20);
    if (has('O')) out.playcount = this.n(t.playCount);
    if (has('t') && t.trackNumber) out.tracknum = this.n(t.trackNumber);
    if (has('i') && t.discNumber) out.disc = this.n(t.discNumber);
    if (has('o')) out.type = extOf(t.audioFile);
    if (has('f')) out.filesize = this.n(this.sizes.of(t.audioFile));
    if (has('D')) out.addedTime = this.n(Math.floor(Date.parse(t.addedAt) / 1000));
    if (has('g') && t.genre) out.genre = t.genre;
    return out;
  }

  private folders(): { byId: Map<number, FolderNode>; roots: FolderNode[] } {
    if (this.folderCache && this.folderCache.version === this.catalogue.version) return this.folderCache;
    const byId = new Map<number, FolderNode>();
    const byPath = new Map<string, FolderNode>();
    let next = 10_000_001;
    const node = (path: string): FolderNode => {
      let f = byPath.get(path);
      if (!f) {
        f = { id: next++, path, name: path.slice(path.lastIndexOf('/') + 1), dirs: [], tracks: [] };
        byPath.set(path, f);
        byId.set(f.id, f);
      }
      return f;
    };
    const roots = this.catalogue.libraries.map((l) => node(l.path));
    for (let i = 0; i < this.catalogue.size; i++) {
      const t = this.catalogue.trackAt(i);
      const lib = this.catalogue.libraries.find((l) => l.id === t.library);
      if (!lib || !t.path.startsWith(`${lib.path}/`)) continue;
      const rel = t.path.slice(lib.path.length + 1).split('/');
      let cur = node(lib.path);
      let acc = lib.path;
      for (const part of rel.slice(0, -1)) {
        acc = `${acc}/${part}`;
        const child = node(acc);
        if (!cur.dirs.includes(child)) cur.dirs.push(child);
        cur = child;
      }
      cur.tracks.push(i);
    }
    this.folderCache = { byId, roots, version: this.catalogue.version };
    return this.folderCache;
  }

  // ---------- commands ----------
  private execute(player: string, cmd: unknown[], res: Response): Record<string, unknown> | 'sent' {
    const words = cmd.map((c) => String(c));
    const name = words[0] ?? '';
    const positional: string[] = [];
    const tagged = new Map<string, string>();
    for (const w of words.slice(1)) {
      const colon = w.indexOf(':');
      if (colon > 0 && /^[A-Za-z_]+$/.test(w.slice(0, colon))) tagged.set(w.slice(0, colon), w.slice(colon + 1));
      else positional.push(w);
    }
    const startCount = (offset = 0): [number, number] => {
      const s = Number(positional[offset] ?? 0);
      const c = Number(positional[offset + 1] ?? 0);
      if (!Number.isInteger(s) || !Number.isInteger(c) || s < 0 || c < 0) throw new CloseSocket();
      return [s, c];
    };
    const cat = this.catalogue;
    const libFilter = (): string | undefined => {
      const lid = tagged.get('library_id');
      if (!lid) return undefined;
      const lib = cat.libraries.find((l) => this.libraryIdOf(l.id) === lid);
      if (!lib || !this.virtualLibraries) return '\u0000none';
      return lib.id;
    };

    switch (name) {
      case 'serverstatus':
        return {
          lastscan: this.stringNumbers ? '1723456789' : 1723456789,
          version: this.version,
          uuid: '5c1a0000-fake-4000-8000-000000000000',
          mac: '00:11:22:33:44:55',
          ip: '127.0.0.1',
          httpport: '9000',
          'info total albums': cat.albums().length,
          'info total artists': cat.artists().length,
          'info total genres': new Set([...cat].map((t) => t.genre)).size,
          'info total songs': cat.size,
          'info total duration': [...cat].reduce((s, t) => s + t.durationSeconds, 0),
          'player count': this.players.length,
          'other player count': 0,
        };
      case 'version':
        return { _version: this.version };
      case 'musicfolder':
      case 'mediafolder': {
        const [start, count] = startCount();
        const tags = tagged.get('tags') ?? '';
        const { byId, roots } = this.folders();
        let entries: Array<{ kind: 'folder'; f: FolderNode } | { kind: 'track'; i: number }>;
        const fid = tagged.get('folder_id');
        const url = tagged.get('url');
        let folder: FolderNode | undefined;
        if (fid) folder = byId.get(Number(fid));
        else if (url) folder = [...byId.values()].find((f) => fileUrl(f.path) === url);
        if ((fid || url) && !folder) throw new CloseSocket();
        if (!folder && roots.length === 1) folder = roots[0];
        if (folder) entries = [...folder.dirs.map((f) => ({ kind: 'folder' as const, f })), ...folder.tracks.map((i) => ({ kind: 'track' as const, i }))];
        else entries = roots.map((f) => ({ kind: 'folder' as const, f }));
        const loop = entries.slice(start, start + count).map((e) => {
          if (e.kind === 'folder') {
            const o: Record<string, unknown> = { id: e.f.id, filename: e.f.name, type: 'folder' };
            if (tags.includes('u')) o.url = fileUrl(e.f.path);
            return o;
          }
          const t = cat.trackAt(e.i);
          const o: Record<string, unknown> = { id: e.i + 1, filename: t.path.slice(t.path.lastIndexOf('/') + 1), type: 'track' };
          if (tags.includes('u')) o.url = fileUrl(t.path);
          if (tags.includes('d')) o.duration = t.durationSeconds;
          if (tags.includes('t')) o.title = t.title;
          return o;
        });
        return { count: entries.length, ...(loop.length ? { folder_loop: loop } : {}) };
      }
      case 'libraries':
        if (!this.virtualLibraries) return {};
        return { folder_loop: cat.libraries.map((l) => ({ id: this.libraryIdOf(l.id), name: l.name })) };
      case 'titles':
      case 'songs':
      case 'tracks': {
        const [start, count] = startCount();
        const tags = tagged.get('tags') ?? 'gald';
        const sort = tagged.get('sort') ?? 'title';
        if (sort.startsWith('sql=') && /tracks_persistent/i.test(sort) && !/[RO]/.test(tags)) throw new CloseSocket();
        if (this.core.pageShouldFail()) {
          if (this.failMode === 'close') throw new CloseSocket();
          res.status(500).type('text/plain').send('Internal Server Error');
          return 'sent';
        }
        const lib = libFilter();
        let list = [...cat.indicesIn(lib ? [lib] : undefined)];
        const albumId = tagged.get('album_id');
        const artistId = tagged.get('artist_id');
        const trackIds = tagged.get('track_id');
        const year = tagged.get('year');
        const search = tagged.get('search')?.toLowerCase();
        if (albumId) {
          const a = cat.albums()[Number(albumId) - 1];
          list = a ? list.filter((i) => cat.trackAt(i).albumId === a.id) : [];
        }
        if (artistId) {
          const a = cat.artists()[Number(artistId) - 1];
          list = a ? list.filter((i) => cat.trackAt(i).artistId === a.id || cat.trackAt(i).albumArtistId === a.id) : [];
        }
        if (trackIds) {
          const wanted = new Set(trackIds.split(',').map((x) => Number(x) - 1));
          list = list.filter((i) => wanted.has(i));
        }
        if (year) list = list.filter((i) => String(cat.trackAt(i).year ?? '') === year);
        if (search) list = list.filter((i) => cat.trackAt(i).title.toLowerCase().includes(search));
        list = this.sorted(list, sort, `${lib ?? ''}|${albumId ?? ''}|${artistId ?? ''}|${trackIds ?? ''}|${year ?? ''}|${search ?? ''}`);
        if (tagged.has('CC')) return { count: list.length };
        const loop = list.slice(start, start + count).map((i) => this.trackFields(i, tags));
        return { count: list.length, ...(loop.length ? { titles_loop: loop } : {}) };
      }
      case 'artists': {
        const [start, count] = startCount();
        const lib = libFilter();
        const search = tagged.get('search')?.toLowerCase();
        let used: Set<string> | undefined;
        if (lib) {
          used = new Set();
          for (const i of cat.indicesIn([lib])) {
            used.add(cat.trackAt(i).artistId);
            used.add(cat.trackAt(i).albumArtistId);
          }
        }
        const all = cat
          .artists()
          .map((a, k) => ({ id: k + 1, artist: a.name, cid: a.id }))
          .filter((a) => (!used || used.has(a.cid)) && (!search || a.artist.toLowerCase().includes(search)))
          .sort((x, y) => x.artist.localeCompare(y.artist));
        const loop = all.slice(start, start + count).map(({ id, artist }) => ({ id, artist }));
        return { count: all.length, ...(loop.length ? { artists_loop: loop } : {}) };
      }
      case 'albums': {
        const [start, count] = startCount();
        const tags = tagged.get('tags') ?? 'l';
        const lib = libFilter();
        const sort = tagged.get('sort') ?? 'album';
        let all = cat.albums().map((a, j) => ({ a, j })).filter(({ a }) => !lib || a.library === lib);
        const artistId = tagged.get('artist_id');
        if (artistId) {
          const ar = cat.artists()[Number(artistId) - 1];
          all = ar ? all.filter(({ a }) => a.artistId === ar.id) : [];
        }
        const plays = (j: number) => (cat.albums()[j]?.trackIndices ?? []).reduce((s, i) => s + cat.trackAt(i).playCount, 0);
        const last = (j: number) => Math.max(0, ...(cat.albums()[j]?.trackIndices ?? []).map((i) => Date.parse(cat.trackAt(i).lastPlayed ?? '1970-01-01')));
        if (sort === 'playcount') all = all.filter(({ j }) => plays(j) > 0).sort((x, y) => plays(y.j) - plays(x.j) || x.j - y.j);
        else if (sort === 'recentlyplayed') all = all.filter(({ j }) => last(j) > 0).sort((x, y) => last(y.j) - last(x.j) || x.j - y.j);
        else if (sort === 'new') all.sort((x, y) => y.j - x.j);
        else all.sort((x, y) => x.a.name.localeCompare(y.a.name) || x.j - y.j);
        const loop = all.slice(start, start + count).map(({ a, j }) => {
          const o: Record<string, unknown> = { id: j + 1 };
          if (tags.includes('l')) o.album = a.name;
          if (tags.includes('a')) o.artist = a.artist;
          if (tags.includes('y') && a.year) o.year = this.n(a.year);
          if (tags.includes('S')) o.artist_id = this.n(this.artistNo(a.artistId));
          return o;
        });
        return { count: all.length, ...(loop.length ? { albums_loop: loop } : {}) };
      }
      case 'songinfo': {
        const [start, count] = startCount();
        const tags = tagged.get('tags') ?? '';
        const tid = tagged.get('track_id');
        const url = tagged.get('url');
        let i: number | undefined;
        if (tid) i = Number(tid) - 1;
        else if (url) i = this.indexByUrl(url);
        if (i === undefined || !Number.isInteger(i) || i < 0 || i >= cat.size) return {};
        const fields = Object.entries(this.trackFields(i, tags));
        const t = cat.trackAt(i);
        if (tags.includes('w') && t.lyrics) fields.push(['lyrics', t.lyrics]);
        const loop = fields.slice(start, start + count).map(([k, v]) => ({ [k]: v }));
        return { count: fields.length, songinfo_loop: loop };
      }
      case 'players': {
        const [start, count] = startCount();
        const loop = this.players.slice(start, start + count).map((p, idx) => ({
          playerindex: String(start + idx),
          playerid: p.playerid,
          uuid: null,
          ip: '127.0.0.1:3483',
          name: p.name,
          seq_no: 0,
          model: 'squeezelite',
          modelname: 'SqueezeLite',
          power: 1,
          isplaying: 0,
          displaytype: 'none',
          isplayer: 1,
          canpoweroff: 1,
          connected: 1,
          firmware: 'v1.9',
        }));
        return { count: this.players.length, ...(loop.length ? { players_loop: loop } : {}) };
      }
      case 'playlists':
        return this.playlistsCommand(positional, tagged);
      case 'playlistcontrol':
      case 'playlist':
        return this.playerCommand(player, name, positional, tagged);
      default:
        throw new CloseSocket();
    }
  }

  private playlistsCommand(positional: string[], tagged: Map<string, string>): Record<string, unknown> {
    const sub = positional[0];
    const cat = this.catalogue;
    const byId = (): LmsPlaylist => {
      const p = this.playlistMap.get(Number(tagged.get('playlist_id')));
      if (!p) throw new CloseSocket();
      return p;
    };
    if (sub === 'new') {
      const name = tagged.get('name');
      if (!name) throw new CloseSocket();
      const existing = [...this.playlistMap.values()].find((p) => p.name === name);
      if (existing) return { overwritten_playlist_id: existing.id };
      const p: LmsPlaylist = { id: cat.size + this.nextPlaylistNo++, name, tracks: [] };
      this.playlistMap.set(p.id, p);
      return { playlist_id: p.id };
    }
    if (sub === 'edit') {
      const p = byId();
      const cmd = tagged.get('cmd');
      if (cmd === 'add') {
        const url = tagged.get('url');
        if (!url) throw new CloseSocket();
        const i = this.indexByUrl(url);
        if (i === undefined) throw new CloseSocket();
        if (!p.tracks.includes(i)) p.tracks.push(i);
        return {};
      }
      const index = Number(tagged.get('index'));
      if (!Number.isInteger(index) || index < 0 || index >= p.tracks.length) throw new CloseSocket();
      if (cmd === 'delete') p.tracks.splice(index, 1);
      else if (cmd === 'up' && index > 0) p.tracks.splice(index - 1, 0, ...p.tracks.splice(index, 1));
      else if (cmd === 'down' && index < p.tracks.length - 1) p.tracks.splice(index + 1, 0, ...p.tracks.splice(index, 1));
      else if (cmd === 'move') {
        const to = Number(tagged.get('toindex'));
        if (!Number.isInteger(to) || to < 0 || to >= p.tracks.length) throw new CloseSocket();
        p.tracks.splice(to, 0, ...p.tracks.splice(index, 1));
      } else if (cmd !== 'up' && cmd !== 'down') throw new CloseSocket();
      return {};
    }
    if (sub === 'delete') {
      this.playlistMap.delete(byId().id);
      return {};
    }
    if (sub === 'rename') {
      const p = byId();
      const newname = tagged.get('newname');
      if (!newname) throw new CloseSocket();
      const clash = [...this.playlistMap.values()].find((x) => x.name === newname && x.id !== p.id);
      if (tagged.get('dry_run') === '1') return clash ? { overwritten_playlist_id: clash.id } : {};
      if (clash) this.playlistMap.delete(clash.id);
      p.name = newname;
      return {};
    }
    if (sub === 'tracks') {
      const s = Number(positional[1] ?? 0);
      const c = Number(positional[2] ?? 0);
      const p = byId();
      const tags = tagged.get('tags') ?? 'gald';
      const loop = p.tracks.slice(s, s + c).map((i, k) => ({ 'playlist index': s + k, ...this.trackFields(i, tags) }));
      return { count: p.tracks.length, __playlistTitle: p.name, ...(loop.length ? { playlisttracks_loop: loop } : {}) };
    }
    // List: ["playlists", start, count, tags…]
    const s = Number(sub ?? 0);
    const c = Number(positional[1] ?? 0);
    if (!Number.isInteger(s) || !Number.isInteger(c)) throw new CloseSocket();
    const tags = tagged.get('tags') ?? '';
    const search = tagged.get('search')?.toLowerCase();
    const all = [...this.playlistMap.values()].filter((p) => !search || p.name.toLowerCase().includes(search)).sort((x, y) => x.name.localeCompare(y.name));
    const loop = all.slice(s, s + c).map((p) => {
      const o: Record<string, unknown> = { id: p.id, playlist: p.name };
      if (tags.includes('u')) o.url = fileUrl(`/srv/playlists/${p.name}.m3u`);
      return o;
    });
    return { count: all.length, ...(loop.length ? { playlists_loop: loop } : {}) };
  }

  private indexByUrl(url: string): number | undefined {
    const m = /^(?:db:track\.id=|lms:\/\/track\/)(\d+)$/.exec(url);
    if (m) {
      const i = Number(m[1]) - 1;
      return i >= 0 && i < this.catalogue.size ? i : undefined;
    }
    if (!this.urlIndex || this.urlIndex.version !== this.catalogue.version) {
      const map = new Map<string, number>();
      for (let i = 0; i < this.catalogue.size; i++) map.set(fileUrl(this.catalogue.trackAt(i).path), i);
      this.urlIndex = { version: this.catalogue.version, map };
    }
    return this.urlIndex.map.get(url);
  }
  private urlIndex?: { version: number; map: Map<string, number> };

  private playerCommand(player: string, name: string, positional: string[], tagged: Map<string, string>): Record<string, unknown> {
    if (!this.players.some((p) => p.playerid === player)) throw new CloseSocket();
    const queue = this.queues.get(player) ?? [];
    if (name === 'playlistcontrol') {
      const cmd = tagged.get('cmd');
      if (cmd === 'load') {
        const p = this.playlistMap.get(Number(tagged.get('playlist_id')));
        if (!p) throw new CloseSocket();
        this.queues.set(player, [...p.tracks]);
        return { count: p.tracks.length };
      }
      if (cmd === 'add' || cmd === 'insert') {
        const ids = (tagged.get('track_id') ?? '').split(',').filter(Boolean).map((x) => Number(x) - 1);
        if (ids.length === 0 || ids.some((i) => !Number.isInteger(i) || i < 0 || i >= this.catalogue.size)) throw new CloseSocket();
        if (this.maxTrackIdsPerCommand !== null && ids.length > this.maxTrackIdsPerCommand) throw new CloseSocket();
        this.queues.set(player, cmd === 'add' ? [...queue, ...ids] : [...ids, ...queue]);
        return { count: ids.length };
      }
      if (cmd === 'delete') {
        const ids = new Set((tagged.get('track_id') ?? '').split(',').map((x) => Number(x) - 1));
        this.queues.set(player, queue.filter((i) => !ids.has(i)));
        return {};
      }
      throw new CloseSocket();
    }
    // "playlist" player command: save <name> | clear
    const sub = positional[0];
    if (sub === 'clear') {
      this.queues.set(player, []);
      return {};
    }
    if (sub === 'save') {
      const title = positional[1];
      if (!title) throw new CloseSocket();
      let p = [...this.playlistMap.values()].find((x) => x.name === title);
      if (!p) {
        p = { id: this.catalogue.size + this.nextPlaylistNo++, name: title, tracks: [] };
        this.playlistMap.set(p.id, p);
      }
      p.tracks = [...queue];
      return { __playlist_id: p.id };
    }
    throw new CloseSocket();
  }

  // ---------- app ----------
  private authorised(req: Request): boolean {
    if (this.user === undefined || this.password === undefined) return true;
    const h = req.header('authorization') ?? '';
    const m = /^Basic\s+(\S+)$/i.exec(h);
    if (!m) return false;
    const decoded = Buffer.from(m[1] ?? '', 'base64').toString('utf8');
    return decoded === `${this.user}:${this.password}`;
  }

  private build(): Express {
    const app = newApp(this.core);
    app.use((req, res, next) => {
      if (!this.authorised(req)) {
        res.status(401).set('WWW-Authenticate', 'Basic realm="Lyrion Music Server"').type('text/html').send('<html><body><h1>401 Authorization Required</h1></body></html>');
        return;
      }
      next();
    });
    app.use(express.json({ type: () => true, limit: '10mb' }));
    const handle = (req: Request, res: Response, body: unknown): void => {
      recordBody(res, body);
      const b = body as { id?: unknown; method?: unknown; params?: unknown };
      if (!b || b.method !== 'slim.request' || !Array.isArray(b.params) || !Array.isArray(b.params[1])) {
        req.socket.destroy();
        return;
      }
      const player = String(b.params[0] ?? '');
      try {
        const result = this.execute(player, b.params[1] as unknown[], res);
        if (result === 'sent') return;
        res.json({ id: b.id, method: b.method, params: b.params, result });
      } catch (err) {
        if (err instanceof CloseSocket) req.socket.destroy();
        else throw err;
      }
    };
    app.post('/jsonrpc.js', (req, res) => handle(req, res, req.body));
    app.get('/jsonrpc.js', (req, res) => {
      const raw = new URLSearchParams(req.originalUrl.split('?')[1] ?? '').get('request');
      let body: unknown;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        body = undefined;
      }
      handle(req, res, body);
    });
    app.use((err: unknown, req: Request, _res: Response, _next: (e?: unknown) => void) => {
      // Malformed JSON: LMS drops the connection.
      void err;
      req.socket.destroy();
    });
    app.get('/music/:id/download', (req, res) => {
      const t = this.trackFor(String(req.params.id));
      if (!t) {
        res.status(404).type('text/plain').send('Not found');
        return;
      }
      sendAudio(res, t.audioFile, { 'Content-Disposition': `attachment; filename="${t.audioFile.slice(t.audioFile.lastIndexOf('/') + 1)}"` });
    });
    app.use((_req, res) => {
      res.status(404).type('text/plain').send('Not found');
    });
    return app;
  }
}

interface FolderNode {
  id: number;
  path: string;
  name: string;
  dirs: FolderNode[];
  tracks: number[];
}

/** Builds a fake LMS over `opts.catalogue`. Call `start()` to listen on 127.0.0.1. */
export function createFakeLyrion(opts: FakeLyrionOptions): FakeLyrion {
  return new FakeLyrion(opts);
}
