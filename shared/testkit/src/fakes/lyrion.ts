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
 *
 * Files: this one holds the server (ids, track payloads, dispatch, auth, app); lyrion-protocol.ts the command
 * words, the closed-socket failure and `file://` URLs; lyrion-browse.ts the library commands; lyrion-playlists.ts
 * the playlist and player-queue commands.
 */
import type { Express, Request, Response } from 'express';
import express from 'express';
import type { FakeCatalogue, FakeTrack } from './catalogue';
import { FakeCore, FileSizes, extOf, newApp, recordBody, sendAudio, type StartedFake } from './common';
import { BROWSE_COMMANDS, LyrionBrowse } from './lyrion-browse';
import { PLAYER_COMMANDS, PLAYLIST_COMMANDS, LyrionPlaylists } from './lyrion-playlists';
import { CloseSocket, fileUrl, parseCommand, startCount, type LyrionAnswer, type LyrionView } from './lyrion-protocol';

export { fileUrl } from './lyrion-protocol';

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
  /** What the command modules read of this server (live: knobs changed after construction apply). */
  private readonly view: LyrionView;
  private readonly browse: LyrionBrowse;
  private readonly playlistStore: LyrionPlaylists;

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
    const self = this;
    this.view = {
      catalogue: this.catalogue,
      core: this.core,
      virtualLibraries: this.virtualLibraries,
      get failMode() {
        return self.failMode;
      },
      get maxTrackIdsPerCommand() {
        return self.maxTrackIdsPerCommand;
      },
      hasPlayer: (player) => this.players.some((p) => p.playerid === player),
      n: (v) => this.n(v),
      trackFields: (i, tags) => this.trackFields(i, tags),
      artistNo: (id) => this.artistNo(id),
      libraryIdOf: (libraryId) => this.libraryIdOf(libraryId),
      indexByUrl: (url) => this.indexByUrl(url),
    };
    this.browse = new LyrionBrowse(this.view);
    this.playlistStore = new LyrionPlaylists(this.view);
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
  /** Saved playlists with their tracks as LMS ids, in order. */
  playlists(): Array<{ id: number; name: string; trackIds: number[] }> {
    return this.playlistStore.list();
  }
  /** A player's current queue as LMS track ids. */
  queueOf(playerid: string): number[] {
    return this.playlistStore.queueOf(playerid);
  }
  start(): Promise<StartedFake> {
    return this.core.listen(this.app);
  }

  // ---------- helpers ----------
  // ---------- helpers ----------
  /** File sizes (tag `f`, `filesize`), read once per file. */
  private readonly sizes = new FileSizes();
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

  // ---------- commands ----------
  /** Answers one `slim.request` command for `player` (library, playlist and player commands in their modules). */
  private execute(player: string, cmd: unknown[], res: Response): LyrionAnswer {
    const command = parseCommand(cmd);
    const { name, positional, tagged } = command;
    if (BROWSE_COMMANDS.has(name)) return this.browse.answer(command, res);
    if (PLAYLIST_COMMANDS.has(name)) return this.playlistStore.playlistsCommand(positional, tagged);
    if (PLAYER_COMMANDS.has(name)) return this.playlistStore.playerCommand(player, name, positional, tagged);
    const cat = this.catalogue;
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
      case 'players': {
        const [start, count] = startCount(positional);
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
      default:
        throw new CloseSocket();
    }
  }

  /** Catalogue index of a track URL (`file://…`, `db:track.id=<n>`, `lms://track/<n>`), or undefined. */
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

/** Builds a fake LMS over `opts.catalogue`. Call `start()` to listen on 127.0.0.1. */
export function createFakeLyrion(opts: FakeLyrionOptions): FakeLyrion {
  return new FakeLyrion(opts);
}