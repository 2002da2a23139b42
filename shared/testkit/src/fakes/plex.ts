/**
 * Fake Plex Media Server, per media-server-apis.md §6 and the §8 checklist.
 *
 * - Auth: `X-Plex-Token` header or query; missing/bad → 401 with an HTML body (no JSON error
 *   envelope). `/identity` needs no token.
 * - JSON (`{"MediaContainer":{…}}`) when `Accept` contains `application/json`, otherwise XML
 *   (`<MediaContainer …><Track …/></MediaContainer>`). `ratingKey`/`key` are strings; times are
 *   epoch seconds; `duration` is milliseconds.
 * - Paging: `X-Plex-Container-Start` / `X-Plex-Container-Size` as headers or query; the container
 *   reports `size`, `offset` and `totalSize`.
 * - Sections: `/library/sections` lists one `type:"artist"` section per catalogue library (keys
 *   "1", "2", …) plus a movie section. Tracks: `/library/sections/{key}/all?type=10` (9 albums,
 *   8 artists) with `sort=field:asc|desc` and filters `field=`, `field!=`, `field>>=`, `field<<=`
 *   (viewCount, lastViewedAt, addedAt, userRating, parentYear, title). A catalogue page (for
 *   `failAfterPages`) is one `type=10` listing.
 * - Track fields: ratingKey, title, grandparentTitle (album artist), grandparentRatingKey,
 *   parentTitle, parentRatingKey, originalTitle (track artist, only when it differs), parentYear,
 *   index, parentIndex, duration (ms), userRating (0-10, only when rated), viewCount (absent when 0),
 *   lastViewedAt, addedAt, librarySectionID, `Media[0].Part[0].{key,file,size,container}`.
 *   `/library/metadata/{id}` adds `Part.Stream[]`, with a `streamType:4` lyric stream whose `key`
 *   (`/library/streams/{id}`) returns the lyrics as text.
 * - Download: `GET {Part.key}` (`?download=1` adds `Content-Disposition: attachment`).
 * - Playlists: `POST /playlists?type=audio&title=&smart=0&uri=server://{machineIdentifier}/
 *   com.plexapp.plugins.library/library/metadata/{ids}`; `PUT /playlists/{id}/items?uri=`;
 *   `GET /playlists?playlistType=audio`; `GET /playlists/{id}/items` (with `playlistItemID`);
 *   `DELETE /playlists/{id}/items/{playlistItemID}`; `DELETE /playlists/{id}`. A wrong machine id or
 *   a malformed uri → 400; more than `maxIdsPerRequest` ids in one uri (default 100) → 400.
 * - Playlist import: `POST /playlists/upload?sectionID=&path=` reads the M3U/M3U8 file at `path` on the
 *   server's own filesystem (here: this process's), matches each entry (absolute, or relative to the file's
 *   folder; `#` lines skipped) to a track of that music section by its file path (`Part.file`), and creates a
 *   playlist titled after the file name without extension; unmatched entries are skipped; answers 200 with an
 *   empty body (400 for a missing/non-music section or an unreadable file, as the real server refuses them).
 * - Play queues: `POST /playQueues?type=audio&uri=server://…/library/metadata/{ids}` answers `playQueueID`.
 * - History: `/status/sessions/history/all` (one entry per played track at its last play).
 */
import { readFileSync } from 'node:fs';
import { basename, dirname, extname, isAbsolute, join } from 'node:path';
import type { Express, Request, Response } from 'express';
import type { FakeCatalogue, FakeTrack } from './catalogue';
import { FakeCore, FileSizes, extOf, newApp, sendAudio, toXml, type StartedFake } from './common';

/** Options of {@link createFakePlex}. */
export interface FakePlexOptions {
  catalogue: FakeCatalogue;
  /** Accepted `X-Plex-Token`. Default `plex-token`. */
  token?: string;
  machineIdentifier?: string;
  version?: string;
  friendlyName?: string;
  /** Ids per playlist `uri` (default 100, the reference batch); null = no cap. */
  maxIdsPerRequest?: number | null;
  /** Add a movie section (type movie) so clients must filter on `type == "artist"`. Default true. */
  withMovieSection?: boolean;
}

const BLOCK = 10_000_000;
const T_TRACK = 1;
const T_ALBUM = 2;
const T_ARTIST = 3;
const T_PLAYLIST = 4;
const T_PART = 5;
const T_STREAM = 6;
const T_ITEM = 7;

interface PlexPlaylist {
  n: number;
  title: string;
  items: Array<{ itemId: number; trackIndex: number }>;
  addedAt: number;
  updatedAt: number;
}

const UNAUTHORIZED_HTML = '<html><head><title>Unauthorized</title></head><body><h1>401 Unauthorized</h1></body></html>';

/** A fake Plex Media Server; see the module doc. */
export class FakePlex {
  readonly core = new FakeCore();
  readonly app: Express;
  readonly catalogue: FakeCatalogue;
  readonly token: string;
  readonly machineIdentifier: string;
  readonly version: string;
  readonly friendlyName: string;
  maxIdsPerRequest: number | null;
  private readonly withMovieSection: boolean;
  private readonly playlistMap = new Map<number, PlexPlaylist>();
  /** Play queues made with `POST /playQueues` (tracks as ratingKeys, in order), by playQueueID. */
  readonly playQueues = new Map<string, string[]>();
  private nextPlaylist = 1;
  private nextItem = 1;
  private readonly sizes = new FileSizes();
  private albumNos?: { src: readonly unknown[]; map: Map<string, number> };
  private artistNos?: { src: readonly unknown[]; map: Map<string, number> };

  constructor(opts: FakePlexOptions) {
    this.catalogue = opts.catalogue;
    this.token = opts.token ?? 'plex-token';
    this.machineIdentifier = opts.machineIdentifier ?? 'a1b2c3d4e5f60718293a4b5c6d7e8f9001122334';
    this.version = opts.version ?? '1.41.3.9314-a0bfb8370';
    this.friendlyName = opts.friendlyName ?? 'Fake Plex';
    this.maxIdsPerRequest = opts.maxIdsPerRequest === undefined ? 100 : opts.maxIdsPerRequest;
    this.withMovieSection = opts.withMovieSection ?? true;
    this.app = this.build();
  }

  // ---------- ids and knobs ----------
  private rk(type: number, n: number): string {
    return String(type * BLOCK + n);
  }
  private parse(id: string | undefined, type: number): number | undefined {
    if (!id || !/^\d+$/.test(id)) return undefined;
    const v = Number(id);
    return Math.floor(v / BLOCK) === type ? v % BLOCK : undefined;
  }
  /** `ratingKey` of a catalogue track. */
  idOf(track: FakeTrack | string): string {
    const id = typeof track === 'string' ? track : track.id;
    const i = this.catalogue.indexOfId(id);
    if (i === undefined) throw new Error(`unknown catalogue track ${id}`);
    return this.rk(T_TRACK, i);
  }
  trackFor(ratingKey: string): FakeTrack | undefined {
    const i = this.trackIndex(ratingKey);
    return i === undefined ? undefined : this.catalogue.trackAt(i);
  }
  private trackIndex(ratingKey: string): number | undefined {
    const i = this.parse(ratingKey, T_TRACK);
    return i !== undefined && i < this.catalogue.size ? i : undefined;
  }
  /** Section key of a catalogue library. */
  sectionKeyOf(libraryId: string): string {
    const j = this.catalogue.libraries.findIndex((l) => l.id === libraryId);
    if (j < 0) throw new Error(`unknown library ${libraryId}`);
    return String(j + 1);
  }
  get movieSectionKey(): string {
    return String(this.catalogue.libraries.length + 1);
  }
  failAfterPages(n: number | null): void {
    this.core.failAfterPages(n);
  }
  get requests() {
    return this.core.requests;
  }
  /** Current playlists with their tracks as ratingKeys, in order. */
  playlists(): Array<{ id: string; title: string; trackIds: string[] }> {
    return [...this.playlistMap.values()].map((p) => ({ id: this.rk(T_PLAYLIST, p.n), title: p.title, trackIds: p.items.map((it) => this.rk(T_TRACK, it.trackIndex)) }));
  }
  start(): Promise<StartedFake> {
    return this.core.listen(this.app);
  }

  private albumNo(id: string): number {
    const src = this.catalogue.albums();
    if (this.albumNos?.src !== src) this.albumNos = { src, map: new Map(src.map((a, j) => [a.id, j])) };
    return this.albumNos.map.get(id) ?? 0;
  }
  private artistNo(id: string): number {
    const src = this.catalogue.artists();
    if (this.artistNos?.src !== src) this.artistNos = { src, map: new Map(src.map((a, k) => [a.id, k])) };
    return this.artistNos.map.get(id) ?? 0;
  }
  // ---------- metadata ----------
  private epoch(iso: string | undefined): number | undefined {
    return iso ? Math.floor(Date.parse(iso) / 1000) : undefined;
  }

  track(i: number, detail: boolean): Record<string, unknown> {
    const t = this.catalogue.trackAt(i);
    const rk = this.rk(T_TRACK, i);
    const albumRk = this.rk(T_ALBUM, this.albumNo(t.albumId));
    const artistRk = this.rk(T_ARTIST, this.artistNo(t.albumArtistId));
    const sectionNo = this.catalogue.libraries.findIndex((l) => l.id === t.library) + 1;
    const addedAt = this.epoch(t.addedAt) ?? 0;
    const ext = extOf(t.audioFile);
    const durationMs = Math.round(t.durationSeconds * 1000);
    const size = this.sizes.of(t.audioFile);
    const part: Record<string, unknown> = {
      id: Number(this.rk(T_PART, i)),
      key: `/library/parts/${this.rk(T_PART, i)}/${addedAt}/file.${ext}`,
      duration: durationMs,
      file: t.path,
      size,
      container: ext,
    };
    if (detail) {
      const streams: Array<Record<string, unknown>> = [
        { id: Number(this.rk(T_STREAM, i * 2)), streamType: 2, selected: true, codec: 'vorbis', index: 0, channels: 2, bitrate: durationMs ? Math.round((size * 8) / durationMs) : 0, samplingRate: 44100, displayTitle: 'VORBIS (Stereo)' },
      ];
      if (t.lyrics) {
        const sid = this.rk(T_STREAM, i * 2 + 1);
        streams.push({ id: Number(sid), key: `/library/streams/${sid}`, streamType: 4, codec: 'txt', format: 'txt', minLines: '1', provider: 'com.plexapp.agents.localmedia', displayTitle: 'Lyrics (TXT)' });
      }
      part.Stream = streams;
    }
    const m: Record<string, unknown> = {
      ratingKey: rk,
      key: `/library/metadata/${rk}`,
      parentRatingKey: albumRk,
      grandparentRatingKey: artistRk,
      guid: `plex://track/fake${rk}`,
      type: 'track',
      title: t.title,
      grandparentKey: `/library/metadata/${artistRk}`,
      parentKey: `/library/metadata/${albumRk}`,
      librarySectionTitle: this.catalogue.libraries[sectionNo - 1]?.name,
      librarySectionID: sectionNo,
      librarySectionKey: `/library/sections/${sectionNo}`,
      grandparentTitle: t.albumArtist,
      parentTitle: t.album,
      originalTitle: t.artist !== t.albumArtist ? t.artist : undefined,
      summary: '',
      index: t.trackNumber,
      parentIndex: t.discNumber ?? 1,
      userRating: t.rating === undefined ? undefined : t.rating * 2,
      viewCount: t.playCount > 0 ? t.playCount : undefined,
      lastViewedAt: t.playCount > 0 ? this.epoch(t.lastPlayed) : undefined,
      parentYear: t.year,
      duration: durationMs,
      addedAt,
      updatedAt: addedAt,
      Media: [{ id: Number(this.rk(T_PART, i)), duration: durationMs, bitrate: durationMs ? Math.round((size * 8) / durationMs) : 0, audioChannels: 2, audioCodec: 'vorbis', container: ext, Part: [part] }],
    };
    for (const k of Object.keys(m)) if (m[k] === undefined) delete m[k];
    return m;
  }

  private album(j: number): Record<string, unknown> {
    const a = this.catalogue.albums()[j];
    const rk = this.rk(T_ALBUM, j);
    const artistRk = this.rk(T_ARTIST, this.artistNo(a?.artistId ?? ''));
    const sectionNo = this.catalogue.libraries.findIndex((l) => l.id === a?.library) + 1;
    const first = this.catalogue.trackAt(a?.trackIndices[0] ?? 0);
    const out: Record<string, unknown> = {
      ratingKey: rk,
      key: `/library/metadata/${rk}/children`,
      parentRatingKey: artistRk,
      type: 'album',
      title: a?.name,
      parentTitle: a?.artist,
      parentKey: `/library/metadata/${artistRk}`,
      librarySectionID: sectionNo,
      year: a?.year,
      leafCount: a?.trackIndices.length ?? 0,
      addedAt: this.epoch(first.addedAt),
    };
    for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
    return out;
  }

  private artist(k: number): Record<string, unknown> {
    const a = this.catalogue.artists()[k];
    const rk = this.rk(T_ARTIST, k);
    return { ratingKey: rk, key: `/library/metadata/${rk}/children`, type: 'artist', title: a?.name ?? '' };
  }

  private playlistMeta(p: PlexPlaylist): Record<string, unknown> {
    const rk = this.rk(T_PLAYLIST, p.n);
    return {
      ratingKey: rk,
      key: `/playlists/${rk}/items`,
      guid: `com.plexapp.agents.none://fake-${rk}`,
      type: 'playlist',
      title: p.title,
      summary: '',
      smart: false,
      playlistType: 'audio',
      leafCount: p.items.length,
      duration: p.items.reduce((s, it) => s + Math.round(this.catalogue.trackAt(it.trackIndex).durationSeconds * 1000), 0),
      addedAt: p.addedAt,
      updatedAt: p.updatedAt,
    };
  }

  // ---------- response helpers ----------
  private send(req: Request, res: Response, container: Record<string, unknown>, status = 200): void {
    const accept = req.header('accept') ?? '';
    if (accept.includes('application/json')) {
      res.status(status).json({ MediaContainer: container });
      return;
    }
    const { Metadata, ...rest } = container as { Metadata?: Array<Record<string, unknown>> };
    const tagFor = (m: Record<string, unknown>) => ({ track: 'Track', playlist: 'Playlist' } as Record<string, string>)[String(m.type)] ?? 'Directory';
    const inner = (Metadata ?? []).map((m) => toXml(tagFor(m), m)).join('');
    const head = toXml('MediaContainer', rest);
    const xml = inner ? head.replace(/\/>$|<\/MediaContainer>$/, (m0) => (m0 === '/>' ? `>${inner}</MediaContainer>` : `${inner}</MediaContainer>`)) : head;
    res.status(status).type('application/xml').send(`<?xml version="1.0" encoding="UTF-8"?>\n${xml}`);
  }

  private paging(req: Request): { start: number; size: number | undefined } {
    const q = new URLSearchParams(req.originalUrl.split('?')[1] ?? '');
    const startRaw = req.header('x-plex-container-start') ?? q.get('X-Plex-Container-Start') ?? '0';
    const sizeRaw = req.header('x-plex-container-size') ?? q.get('X-Plex-Container-Size');
    const start = Math.max(0, Number.parseInt(startRaw, 10) || 0);
    const size = sizeRaw === null || sizeRaw === undefined ? undefined : Math.max(0, Number.parseInt(sizeRaw, 10) || 0);
    return { start, size };
  }

  private page<T>(req: Request, all: T[]): { slice: T[]; offset: number; totalSize: number } {
    const { start, size } = this.paging(req);
    return { slice: all.slice(start, size === undefined ? undefined : start + size), offset: start, totalSize: all.length };
  }

  /** Parses `server://<mid>/com.plexapp.plugins.library/library/metadata/<ids>`; answers 400 and returns undefined when wrong. */
  private parseUri(res: Response, uri: string | null): number[] | undefined {
    const m = uri ? /^server:\/\/([^/]+)\/com\.plexapp\.plugins\.library\/library\/metadata\/([\d,]+)$/.exec(uri) : null;
    if (!m || m[1] !== this.machineIdentifier) {
      res.status(400).type('text/html').send('<html><head><title>Bad Request</title></head><body><h1>400 Bad Request</h1></body></html>');
      return undefined;
    }
    const ids = (m[2] ?? '').split(',').filter(Boolean);
    if (this.maxIdsPerRequest !== null && ids.length > this.maxIdsPerRequest) {
      res.status(400).type('text/html').send('<html><head><title>Bad Request</title></head><body><h1>400 Bad Request</h1></body></html>');
      return undefined;
    }
    const out: number[] = [];
    for (const id of ids) {
      const i = this.trackIndex(id);
      if (i === undefined) {
        res.status(400).type('text/html').send('<html><head><title>Bad Request</title></head><body><h1>400 Bad Request</h1></body></html>');
        return undefined;
      }
      out.push(i);
    }
    return out;
  }

  // ---------- app ----------
  private build(): Express {
    const app = newApp(this.core);
    const query = (req: Request) => new URLSearchParams(req.originalUrl.split('?')[1] ?? '');

    app.get('/identity', (req, res) => {
      this.send(req, res, { size: 0, claimed: true, machineIdentifier: this.machineIdentifier, version: this.version });
    });
    app.use((req, res, next) => {
      const token = req.header('x-plex-token') ?? query(req).get('X-Plex-Token');
      if (token !== this.token) {
        res.status(401).type('text/html').send(UNAUTHORIZED_HTML);
        return;
      }
      next();
    });
    app.get('/', (req, res) => {
      this.send(req, res, { size: 0, friendlyName: this.friendlyName, machineIdentifier: this.machineIdentifier, version: this.version, myPlex: true, platform: 'Linux' });
    });
    app.get('/library/sections', (req, res) => {
      const dirs: Array<Record<string, unknown>> = this.catalogue.libraries.map((l, j) => ({
        allowSync: true,
        key: String(j + 1),
        type: 'artist',
        title: l.name,
        agent: 'tv.plex.agents.music',
        scanner: 'Plex Music',
        language: 'en',
        uuid: `4fa1${String(j).padStart(4, '0')}-0000-4000-8000-000000000000`,
        Location: [{ id: j + 1, path: l.path }],
      }));
      if (this.withMovieSection) {
        dirs.push({ allowSync: true, key: this.movieSectionKey, type: 'movie', title: 'Movies', agent: 'tv.plex.agents.movie', scanner: 'Plex Movie', language: 'en', uuid: 'movie000-0000-4000-8000-000000000000', Location: [{ id: 99, path: '/srv/movies' }] });
      }
      this.send(req, res, { size: dirs.length, allowSync: false, title1: 'Plex Library', Directory: dirs });
    });
    app.get('/library/sections/:key/all', (req, res) => {
      const key = String(req.params.key);
      const j = Number(key) - 1;
      const q = query(req);
      const type = q.get('type') ?? '8';
      const lib = this.catalogue.libraries[j];
      if (!lib && key !== this.movieSectionKey) {
        res.status(404).type('text/html').send('<html><head><title>Not Found</title></head><body><h1>404 Not Found</h1></body></html>');
        return;
      }
      if (type === '10' && this.core.pageShouldFail()) {
        res.status(500).type('text/html').send('<html><head><title>Internal Server Error</title></head><body><h1>500 Internal Server Error</h1></body></html>');
        return;
      }
      const base = { allowSync: true, identifier: 'com.plexapp.plugins.library', librarySectionID: j + 1, librarySectionTitle: lib?.name ?? 'Movies', mediaTagPrefix: '/system/bundle/media/flags/' };
      if (!lib) {
        this.send(req, res, { ...base, size: 0, totalSize: 0, offset: 0 });
        return;
      }
      if (type === '10') {
        const indices = this.filterAndSortTracks([...this.catalogue.indicesIn([lib.id])], q);
        const { slice, offset, totalSize } = this.page(req, indices);
        this.send(req, res, { ...base, size: slice.length, totalSize, offset, viewGroup: 'track', Metadata: slice.map((i) => this.track(i, false)) });
        return;
      }
      if (type === '9') {
        let albums = this.catalogue.albums().map((a, n) => ({ a, n })).filter(({ a }) => a.library === lib.id);
        const sort = q.get('sort');
        if (sort?.startsWith('addedAt')) {
          const desc = sort.endsWith(':desc');
          const added = (n: number) => this.catalogue.trackAt(this.catalogue.albums()[n]?.trackIndices[0] ?? 0).addedAt;
          albums = albums.sort((x, y) => (added(x.n) < added(y.n) ? -1 : added(x.n) > added(y.n) ? 1 : x.n - y.n) * (desc ? -1 : 1));
        }
        const title = q.get('title')?.toLowerCase();
        if (title) albums = albums.filter(({ a }) => a.name.toLowerCase().includes(title));
        const { slice, offset, totalSize } = this.page(req, albums);
        this.send(req, res, { ...base, size: slice.length, totalSize, offset, viewGroup: 'album', Metadata: slice.map(({ n }) => this.album(n)) });
        return;
      }
      if (type === '8') {
        const used = new Set<string>();
        for (const i of this.catalogue.indicesIn([lib.id])) used.add(this.catalogue.trackAt(i).albumArtistId);
        const artists = this.catalogue.artists().map((a, k) => ({ a, k })).filter(({ a }) => used.has(a.id));
        const { slice, offset, totalSize } = this.page(req, artists);
        this.send(req, res, { ...base, size: slice.length, totalSize, offset, viewGroup: 'artist', Metadata: slice.map(({ k }) => this.artist(k)) });
        return;
      }
      this.send(req, res, { ...base, size: 0, totalSize: 0, offset: 0 });
    });
    app.get('/library/metadata/:ids', (req, res) => {
      const items: Array<Record<string, unknown>> = [];
      for (const id of String(req.params.ids).split(',')) {
        const ti = this.trackIndex(id);
        const ai = this.parse(id, T_ALBUM);
        const ri = this.parse(id, T_ARTIST);
        if (ti !== undefined) items.push(this.track(ti, true));
        else if (ai !== undefined && ai < this.catalogue.albums().length) items.push(this.album(ai));
        else if (ri !== undefined && ri < this.catalogue.artists().length) items.push(this.artist(ri));
      }
      if (!items.length) {
        res.status(404).type('text/html').send('<html><head><title>Not Found</title></head><body><h1>404 Not Found</h1></body></html>');
        return;
      }
      this.send(req, res, { size: items.length, Metadata: items });
    });
    app.get('/library/metadata/:id/children', (req, res) => {
      const id = String(req.params.id);
      const ai = this.parse(id, T_ALBUM);
      const ri = this.parse(id, T_ARTIST);
      let items: Array<Record<string, unknown>>;
      if (ai !== undefined && this.catalogue.albums()[ai]) items = (this.catalogue.albums()[ai]?.trackIndices ?? []).map((i) => this.track(i, false));
      else if (ri !== undefined && this.catalogue.artists()[ri]) {
        const artistId = this.catalogue.artists()[ri]?.id;
        items = this.catalogue.albums().map((a, n) => ({ a, n })).filter(({ a }) => a.artistId === artistId).map(({ n }) => this.album(n));
      } else {
        res.status(404).type('text/html').send('<html><head><title>Not Found</title></head><body><h1>404 Not Found</h1></body></html>');
        return;
      }
      const { slice, offset, totalSize } = this.page(req, items);
      this.send(req, res, { size: slice.length, totalSize, offset, Metadata: slice });
    });
    app.get('/library/parts/:partId/:ts/:file', (req, res) => {
      const i = this.parse(String(req.params.partId), T_PART);
      if (i === undefined || i >= this.catalogue.size) {
        res.status(404).type('text/html').send('<html><head><title>Not Found</title></head><body><h1>404 Not Found</h1></body></html>');
        return;
      }
      const t = this.catalogue.trackAt(i);
      const headers: Record<string, string> = {};
      if (query(req).get('download') === '1') headers['Content-Disposition'] = `attachment; filename="${t.path.slice(t.path.lastIndexOf('/') + 1)}"`;
      sendAudio(res, t.audioFile, headers);
    });
    app.get('/library/streams/:id', (req, res) => {
      const sid = this.parse(String(req.params.id), T_STREAM);
      const i = sid !== undefined && sid % 2 === 1 ? (sid - 1) / 2 : undefined;
      const t = i !== undefined && i < this.catalogue.size ? this.catalogue.trackAt(i) : undefined;
      if (!t?.lyrics) {
        res.status(404).type('text/html').send('<html><head><title>Not Found</title></head><body><h1>404 Not Found</h1></body></html>');
        return;
      }
      res.status(200).type('text/plain; charset=utf-8').send(t.lyrics);
    });
    app.get('/playlists', (req, res) => {
      const type = query(req).get('playlistType');
      const all = type && type !== 'audio' ? [] : [...this.playlistMap.values()];
      const { slice, offset, totalSize } = this.page(req, all);
      this.send(req, res, { size: slice.length, totalSize, offset, Metadata: slice.map((p) => this.playlistMeta(p)) });
    });
    app.post('/playlists', (req, res) => {
      const q = query(req);
      const title = q.get('title');
      if (!title || q.get('type') !== 'audio' || (q.get('smart') ?? '0') !== '0') {
        res.status(400).type('text/html').send('<html><head><title>Bad Request</title></head><body><h1>400 Bad Request</h1></body></html>');
        return;
      }
      const tracks = this.parseUri(res, q.get('uri'));
      if (!tracks) return;
      const now = Math.floor(Date.now() / 1000);
      const n = this.nextPlaylist++;
      const p: PlexPlaylist = { n, title, items: tracks.map((trackIndex) => ({ itemId: this.nextItem++, trackIndex })), addedAt: now, updatedAt: now };
      this.playlistMap.set(n, p);
      this.send(req, res, { size: 1, Metadata: [this.playlistMeta(p)] });
    });
    const playlistOf = (req: Request, res: Response): PlexPlaylist | undefined => {
      const n = this.parse(String(req.params.id), T_PLAYLIST);
      const p = n === undefined ? undefined : this.playlistMap.get(n);
      if (!p) res.status(404).type('text/html').send('<html><head><title>Not Found</title></head><body><h1>404 Not Found</h1></body></html>');
      return p;
    };
    app.get('/playlists/:id', (req, res) => {
      const p = playlistOf(req, res);
      if (p) this.send(req, res, { size: 1, Metadata: [this.playlistMeta(p)] });
    });
    app.get('/playlists/:id/items', (req, res) => {
      const p = playlistOf(req, res);
      if (!p) return;
      const { slice, offset, totalSize } = this.page(req, p.items);
      this.send(req, res, {
        size: slice.length,
        totalSize,
        offset,
        ratingKey: this.rk(T_PLAYLIST, p.n),
        title: p.title,
        playlistType: 'audio',
        leafCount: p.items.length,
        Metadata: slice.map((it) => ({ ...this.track(it.trackIndex, false), playlistItemID: Number(this.rk(T_ITEM, it.itemId)) })),
      });
    });
    app.put('/playlists/:id/items', (req, res) => {
      const p = playlistOf(req, res);
      if (!p) return;
      const tracks = this.parseUri(res, query(req).get('uri'));
      if (!tracks) return;
      for (const trackIndex of tracks) p.items.push({ itemId: this.nextItem++, trackIndex });
      p.updatedAt = Math.floor(Date.now() / 1000);
      this.send(req, res, { size: 1, leafCountAdded: tracks.length, leafCountRequested: tracks.length, Metadata: [this.playlistMeta(p)] });
    });
    app.delete('/playlists/:id/items/:itemId', (req, res) => {
      const p = playlistOf(req, res);
      if (!p) return;
      const itemNo = this.parse(String(req.params.itemId), T_ITEM);
      const before = p.items.length;
      p.items = p.items.filter((it) => it.itemId !== itemNo);
      if (p.items.length === before) {
        res.status(404).type('text/html').send('<html><head><title>Not Found</title></head><body><h1>404 Not Found</h1></body></html>');
        return;
      }
      this.send(req, res, { size: 1, Metadata: [this.playlistMeta(p)] });
    });
    app.post('/playQueues', (req, res) => {
      const q = query(req);
      if (q.get('type') !== 'audio') {
        res.status(400).type('text/html').send('<html><head><title>Bad Request</title></head><body><h1>400 Bad Request</h1></body></html>');
        return;
      }
      const tracks = this.parseUri(res, q.get('uri'));
      if (!tracks) return;
      const id = String(this.playQueues.size + 1);
      this.playQueues.set(id, tracks.map((i) => this.rk(T_TRACK, i)));
      this.send(req, res, { size: tracks.length, playQueueID: Number(id), playQueueSelectedItemOffset: 0, playQueueTotalCount: tracks.length, Metadata: tracks.map((i) => this.track(i, false)) });
    });
    app.post('/playlists/upload', (req, res) => {
      const q = query(req);
      const section = q.get('sectionID');
      const library = section && /^\d+$/.test(section) ? this.catalogue.libraries[Number(section) - 1] : undefined;
      const file = q.get('path');
      let text: string | undefined;
      try {
        text = file ? readFileSync(file, 'utf8') : undefined;
      } catch {
        text = undefined;
      }
      if (!library || !file || text === undefined) {
        res.status(400).type('text/html').send('<html><head><title>Bad Request</title></head><body><h1>400 Bad Request</h1></body></html>');
        return;
      }
      const byPath = new Map<string, number>();
      for (const i of this.catalogue.indicesIn([library.id])) byPath.set(this.catalogue.trackAt(i).path, i);
      const tracks: number[] = [];
      for (const raw of text.replace(/^\uFEFF/, '').split(/\r?\n/)) {
        const line = raw.trim();
        if (!line || line.startsWith('#')) continue;
        const i = byPath.get(isAbsolute(line) ? line : join(dirname(file), line));
        if (i !== undefined) tracks.push(i);
      }
      const now = Math.floor(Date.now() / 1000);
      const n = this.nextPlaylist++;
      this.playlistMap.set(n, { n, title: basename(file, extname(file)), items: tracks.map((trackIndex) => ({ itemId: this.nextItem++, trackIndex })), addedAt: now, updatedAt: now });
      res.status(200).end();
    });
    app.delete('/playlists/:id', (req, res) => {
      const p = playlistOf(req, res);
      if (!p) return;
      this.playlistMap.delete(p.n);
      res.status(204).end();
    });
    app.get('/status/sessions/history/all', (req, res) => {
      const q = query(req);
      const section = q.get('librarySectionID');
      const since = q.get('viewedAt>');
      let played = [...this.catalogue.indicesIn(section ? [this.catalogue.libraries[Number(section) - 1]?.id ?? '\u0000'] : undefined)].filter((i) => this.catalogue.trackAt(i).playCount > 0 && this.catalogue.trackAt(i).lastPlayed);
      if (since) played = played.filter((i) => (this.epoch(this.catalogue.trackAt(i).lastPlayed) ?? 0) >= Number(since));
      const viewed = (i: number) => this.epoch(this.catalogue.trackAt(i).lastPlayed) ?? 0;
      const asc = (q.get('sort') ?? 'viewedAt:desc') === 'viewedAt:asc' || q.get('sort') === 'viewedAt';
      played.sort((a, b) => (viewed(a) - viewed(b)) * (asc ? 1 : -1) || a - b);
      const { slice, offset, totalSize } = this.page(req, played);
      this.send(req, res, {
        size: slice.length,
        totalSize,
        offset,
        Metadata: slice.map((i, n) => {
          const t = this.track(i, false);
          return {
            historyKey: `/status/sessions/history/${offset + n + 1}`,
            key: t.key,
            ratingKey: t.ratingKey,
            librarySectionID: String(t.librarySectionID),
            parentKey: t.parentKey,
            grandparentKey: t.grandparentKey,
            title: t.title,
            grandparentTitle: t.grandparentTitle,
            parentTitle: t.parentTitle,
            type: 'track',
            viewedAt: viewed(i),
            accountID: 1,
            deviceID: 1,
          };
        }),
      });
    });
    app.use((_req, res) => {
      res.status(404).type('text/html').send('<html><head><title>Not Found</title></head><body><h1>404 Not Found</h1></body></html>');
    });
    return app;
  }

  /** Applies Plex filter params (`field=`, `field!=`, `field>>=`, `field<<=`) and `sort=field:dir`. */
  private filterAndSortTracks(indices: number[], q: URLSearchParams): number[] {
    const cat = this.catalogue;
    const value = (i: number, field: string): number | string | undefined => {
      const t = cat.trackAt(i);
      switch (field) {
        case 'viewCount':
          return t.playCount;
        case 'lastViewedAt':
          return t.playCount > 0 ? (this.epoch(t.lastPlayed) ?? 0) : 0;
        case 'addedAt':
          return this.epoch(t.addedAt) ?? 0;
        case 'userRating':
          return t.rating === undefined ? 0 : t.rating * 2;
        case 'parentYear':
        case 'year':
          return t.year ?? 0;
        case 'duration':
          return Math.round(t.durationSeconds * 1000);
        case 'title':
        case 'titleSort':
          return t.title.toLowerCase();
        default:
          return undefined;
      }
    };
    let out = indices;
    for (const [rawKey, rawVal] of q) {
      const m = /^([A-Za-z]+)(>>|<<|!)?$/.exec(rawKey);
      if (!m || ['type', 'sort', 'includeGuids', 'download'].includes(m[1] ?? '') || (m[1] ?? '').startsWith('X')) continue;
      const field = m[1] as string;
      const op = m[2];
      if (value(0, field) === undefined && cat.size > 0) continue;
      out = out.filter((i) => {
        const v = value(i, field);
        if (typeof v === 'string') return op === '!' ? !v.includes(rawVal.toLowerCase()) : v.includes(rawVal.toLowerCase());
        const n = Number(rawVal);
        if (op === '>>') return (v ?? 0) > n;
        if (op === '<<') return (v ?? 0) < n;
        if (op === '!') return v !== n;
        return v === n;
      });
    }
    const sort = q.get('sort');
    if (sort) {
      const [field = '', dir = 'asc'] = sort.split(':');
      if (cat.size === 0 || value(0, field) !== undefined) {
        const keys = new Map(out.map((i) => [i, value(i, field) as number | string]));
        const desc = dir === 'desc';
        out = [...out].sort((a, b) => {
          const x = keys.get(a) as number | string;
          const y = keys.get(b) as number | string;
          return (x < y ? -1 : x > y ? 1 : 0) * (desc ? -1 : 1) || a - b;
        });
      }
    }
    return out;
  }
}

/** Builds a fake Plex Media Server over `opts.catalogue`. Call `start()` to listen on 127.0.0.1. */
export function createFakePlex(opts: FakePlexOptions): FakePlex {
  return new FakePlex(opts);
}
