/**
 * Lyrion Music Server (LMS) client, per media-server-apis.md §5 and reference-implementation.md §4.
 * Every query is a JSON-RPC `slim.request` POSTed to `/jsonrpc.js`; HTTP Basic auth when the
 * server has password protection. Paths come from `file://` URLs (percent-decoded once) and the
 * library filter is a list of path prefixes.
 */
import { SAMPLE_TRACK_COUNT, chunk, fileUrlToPath, lyricsToPlain, normalisePrefix, num, positive, runConnectionTest, stars, str, underAnyPrefix } from './common';
import { ProtocolError } from './errors';
import { basicAuthHeader, type HttpClient } from './http';
import { DEFAULT_LYRICS_TIMEOUT_MS, providerHttp, type ClientOptions } from './options';
import type { ConnectionTestResult, LibraryInfo, MediaServerClient, ProviderArtist, ProviderPlaylist, ProviderTrack, ServerConnection } from './types';

/** Tracks asked of one album (`titles ... album_id:`); larger than any real album. */
export const LYRION_ALBUM_TRACKS_MAX = 10_000;
/** Items per `titles` / `artists` page. */
export const LYRION_PAGE_SIZE = 500;
/** Track ids per `playlistcontrol cmd:add` (AudioMuse-AI batches of 50). */
export const LYRION_PLAYLIST_BATCH = 50;
/**
 * Tags asked of `titles`: a artist, s artist_id, l album, e album_id, d duration (float s),
 * u url, y year, R rating (0-100), O playcount, A per-role names (gives `albumartist`), f filesize (bytes: the
 * file stamp `size:<bytes>` that shows a file changed in place, issue 35).
 */
export const LYRION_TRACK_TAGS = 'tags:asleduyROAf';
/** Playlist-save name collisions: `playlists new` is retried once after deleting the old list. */
const MAX_NEW_ATTEMPTS = 2;

/** One `titles_loop` entry as far as this package reads it (values may be numbers or strings). */
export interface LmsTitle {
  id?: number | string;
  title?: string;
  artist?: string;
  artist_id?: number | string;
  trackartist?: string;
  albumartist?: string;
  album?: string;
  album_id?: number | string;
  duration?: number | string;
  url?: string;
  year?: number | string;
  rating?: number | string;
  playcount?: number | string;
  /** Tag `f`: the file's size in bytes. */
  filesize?: number | string;
}

type RpcResult = Record<string, unknown>;

/**
 * Maps an LMS `titles_loop` entry: id stringified, duration float seconds, rating 0-100 → /20
 * stars, path decoded from the `file://` url, `filesize` → fileStamp `size:<bytes>`. Returns undefined for non-local tracks (no
 * `file://` url: streaming services, radio), which cannot be downloaded.
 * @throws ProtocolError when the entry has no id.
 */
export function mapLyrionTitle(t: LmsTitle): ProviderTrack | undefined {
  const id = str(t.id);
  if (!id) throw new ProtocolError('lyrion: titles entry without id');
  const path = fileUrlToPath(t.url);
  if (t.url !== undefined && path === undefined) return undefined;
  const track: ProviderTrack = {
    id,
    title: str(t.title) ?? '',
    artist: str(t.artist) ?? str(t.trackartist) ?? str(t.albumartist) ?? '',
  };
  const artistId = str(t.artist_id)?.split(',')[0]?.trim();
  if (artistId) track.artistId = artistId;
  if (str(t.album)) track.album = str(t.album);
  const albumId = str(t.album_id);
  if (albumId) track.albumId = albumId;
  if (str(t.albumartist)) track.albumArtist = str(t.albumartist);
  const year = positive(t.year);
  if (year) track.year = year;
  const rating = positive(t.rating);
  if (rating !== undefined) track.rating = stars(rating / 20);
  const duration = positive(t.duration);
  if (duration !== undefined) track.durationSeconds = duration;
  if (path) track.path = path;
  const plays = num(t.playcount);
  if (plays !== undefined) track.playCount = plays;
  const size = positive(t.filesize);
  if (size !== undefined) track.fileStamp = `size:${Math.round(size)}`;
  return track;
}

/** Lyrion client. Creds `{url, user?, password?}`; library filter = path prefixes (or file:// URLs). */
export class LyrionClient implements MediaServerClient {
  readonly type = 'lyrion' as const;
  private readonly http: HttpClient;
  private readonly prefixes: string[];
  private readonly lyricsTimeoutMs: number;
  private readonly playlistMode: 'player' | 'edit';
  private rpcId = 0;

  constructor(conn: ServerConnection, opts: ClientOptions = {}) {
    const { user, password } = conn.creds;
    const headers: Record<string, string> = {};
    if (user || password) headers.Authorization = basicAuthHeader(user ?? '', password ?? '');
    this.prefixes = (conn.musicLibraries ?? []).filter((l) => l !== '').map(normalisePrefix);
    this.lyricsTimeoutMs = opts.lyricsTimeoutMs ?? DEFAULT_LYRICS_TIMEOUT_MS;
    this.playlistMode = opts.lyrionPlaylistMode ?? 'edit';
    this.http = providerHttp('lyrion', conn.creds.url ?? '', opts, { headers, secrets: [password] });
  }

  /**
   * One JSON-RPC `slim.request`: `{"id","method":"slim.request","params":[player,[cmd…]]}`.
   * Queries are idempotent (retried); writes pass `idempotent:false`. A reply with `error` or
   * without `result` is a ProtocolError; LMS signals bad commands by closing the connection,
   * which surfaces as UnreachableError.
   */
  async rpc(cmd: Array<string | number>, opts: { player?: string; idempotent?: boolean; timeoutMs?: number; retries?: number } = {}): Promise<RpcResult> {
    const id = ++this.rpcId;
    const body = await this.http.requestJson<{ result?: unknown; error?: unknown }>('POST', '/jsonrpc.js', {
      json: { id, method: 'slim.request', params: [opts.player ?? '', cmd] },
      idempotent: opts.idempotent ?? true,
      timeoutMs: opts.timeoutMs,
      retries: opts.retries,
    });
    const name = String(cmd[0]);
    if (!body || typeof body !== 'object') throw new ProtocolError(`lyrion: ${name} returned an empty reply`);
    if (body.error) {
      const msg = typeof body.error === 'object' ? str((body.error as { message?: unknown }).message) : str(body.error);
      throw new ProtocolError(`lyrion: ${name} failed${msg ? `: ${this.http.scrub(msg)}` : ''}`);
    }
    if (body.result === undefined || body.result === null) return {};
    if (typeof body.result !== 'object') throw new ProtocolError(`lyrion: ${name} returned a non-object result`);
    return body.result as RpcResult;
  }

  /**
   * `serverstatus 0 0`: `lastscan` (seconds), the song count (`info total songs`) and whether a rescan is running
   * (`rescan`), so a scan in progress, its end and a changed song count each give a new token.
   */
  async libraryChangeToken(): Promise<string> {
    const r = await this.rpc(['serverstatus', 0, 0]);
    const songs = num(r['info total songs']);
    const lastscan = str(r.lastscan) ?? '';
    if (songs === undefined && !lastscan) throw new ProtocolError('lyrion: serverstatus returned neither lastscan nor a song count');
    return `${lastscan}:${songs ?? ''}${r.rescan ? ':scanning' : ''}`;
  }

  /** `serverstatus 0 0` (version), music folders, then up to 50 tracks under the filter. */
  testConnection(): Promise<ConnectionTestResult> {
    return runConnectionTest({
      probe: async () => {
        const r = await this.rpc(['serverstatus', 0, 0]);
        const version = str(r.version);
        return version ? { serverName: 'Lyrion Music Server', version } : { serverName: 'Lyrion Music Server' };
      },
      libraries: () => this.listLibraries(),
      sample: async () => {
        const sample: ProviderTrack[] = [];
        for await (const page of this.iterateTracks(SAMPLE_TRACK_COUNT * 2)) {
          sample.push(...page.slice(0, SAMPLE_TRACK_COUNT - sample.length));
          if (sample.length >= SAMPLE_TRACK_COUNT) break;
        }
        return sample;
      },
    });
  }

  /**
   * Always `null`: Lyrion has one optional server password and no user accounts, so there are no per-account
   * libraries (its virtual libraries belong to players and plugins, not accounts). Issue 34.
   */
  visibleLibraries(): Promise<LibraryInfo[] | null> {
    return Promise.resolve(null);
  }

  /**
   * `musicfolder 0 999 tags:u`: the configured media folders (or, with exactly one, its
   * children). id = the decoded folder path, which is what the path-prefix filter stores.
   */
  async listLibraries(): Promise<LibraryInfo[]> {
    const r = await this.rpc(['musicfolder', 0, 999, 'tags:u']);
    const loop = Array.isArray(r.folder_loop) ? (r.folder_loop as Array<{ filename?: unknown; type?: unknown; url?: string }>) : [];
    const out: LibraryInfo[] = [];
    for (const f of loop) {
      if (f.type !== undefined && f.type !== 'folder') continue;
      const path = fileUrlToPath(f.url);
      if (!path) continue;
      out.push({ id: path, name: str(f.filename) ?? path, path });
    }
    return out;
  }

  /**
   * All local tracks via `titles <start> 500 tags:…` until `start >= count`; tracks whose decoded
   * path is outside every filter prefix (separator boundary) are dropped. Tracks without a
   * `file://` url (remote services) are skipped.
   */
  iterateTracks(pageSize = LYRION_PAGE_SIZE): AsyncIterable<ProviderTrack[]> {
    const self = this;
    return (async function* pages(): AsyncIterable<ProviderTrack[]> {
      for (let start = 0; ; ) {
        const r = await self.rpc(['titles', start, pageSize, LYRION_TRACK_TAGS]);
        const count = num(r.count);
        const loop = Array.isArray(r.titles_loop) ? (r.titles_loop as LmsTitle[]) : [];
        if (count === undefined && r.titles_loop === undefined) throw new ProtocolError('lyrion: titles returned neither count nor titles_loop');
        const tracks: ProviderTrack[] = [];
        for (const raw of loop) {
          const t = mapLyrionTitle(raw);
          if (t && (self.prefixes.length === 0 || underAnyPrefix(t.path, self.prefixes))) tracks.push(t);
        }
        if (tracks.length) yield tracks;
        start += loop.length;
        if (loop.length === 0 || start >= (count ?? 0)) return;
      }
    })();
  }

  /**
   * Tracks of the `albums` newest albums: `albums <start> 500 sort:new` (newest first), then
   * `titles 0 <max> album_id:<id>` per album. With a path-prefix filter, an album counts only when
   * some of its tracks lie under a prefix (albums outside the filter are passed over, not counted).
   */
  iterateRecentAlbumTracks(albums: number): AsyncIterable<ProviderTrack[]> {
    const self = this;
    return (async function* pages(): AsyncIterable<ProviderTrack[]> {
      let taken = 0;
      for (let start = 0; taken < albums; ) {
        const r = await self.rpc(['albums', start, LYRION_PAGE_SIZE, 'sort:new']);
        const loop = Array.isArray(r.albums_loop) ? (r.albums_loop as Array<{ id?: unknown }>) : [];
        if (num(r.count) === undefined && r.albums_loop === undefined) throw new ProtocolError('lyrion: albums returned neither count nor albums_loop');
        for (const a of loop) {
          const id = str(a.id);
          if (!id || taken >= albums) continue;
          const t = await self.rpc(['titles', 0, LYRION_ALBUM_TRACKS_MAX, `album_id:${id}`, LYRION_TRACK_TAGS]);
          const tracks: ProviderTrack[] = [];
          for (const raw of (Array.isArray(t.titles_loop) ? t.titles_loop : []) as LmsTitle[]) {
            const track = mapLyrionTitle(raw);
            if (track && (self.prefixes.length === 0 || underAnyPrefix(track.path, self.prefixes))) tracks.push(track);
          }
          if (tracks.length) {
            taken++;
            yield tracks;
          }
        }
        start += loop.length;
        if (loop.length === 0 || start >= (num(r.count) ?? 0)) return;
      }
    })();
  }

  /** `artists <start> 500 tags:s` paged until `start >= count`. */
  async listArtists(): Promise<ProviderArtist[]> {
    const out: ProviderArtist[] = [];
    for (let start = 0; ; ) {
      const r = await this.rpc(['artists', start, LYRION_PAGE_SIZE, 'tags:s']);
      const loop = Array.isArray(r.artists_loop) ? (r.artists_loop as Array<{ id?: unknown; artist?: unknown }>) : [];
      for (const a of loop) {
        const id = str(a.id);
        if (id) out.push({ id, name: str(a.artist) ?? '' });
      }
      start += loop.length;
      if (loop.length === 0 || start >= (num(r.count) ?? 0)) return out;
    }
  }

  /** `GET /music/{id}/download` (original file; Basic auth when enabled). */
  downloadTrack(trackId: string, destPath: string, signal?: AbortSignal): Promise<number> {
    return this.http.download(`/music/${encodeURIComponent(trackId)}/download`, destPath, { signal });
  }

  /** `playlists new name:` → new id; an existing name is deleted first (reference behaviour). */
  private async newPlaylist(name: string): Promise<string> {
    for (let attempt = 0; attempt < MAX_NEW_ATTEMPTS; attempt++) {
      const r = await this.rpc(['playlists', 'new', `name:${name}`], { idempotent: false });
      const id = str(r.playlist_id);
      if (id) return id;
      const old = str(r.overwritten_playlist_id);
      if (!old) break;
      await this.deletePlaylist(old);
    }
    throw new ProtocolError('lyrion: playlists new returned no playlist_id (is a playlist folder configured?)');
  }

  /** First connected player id, or undefined. */
  private async firstPlayer(): Promise<string | undefined> {
    const r = await this.rpc(['players', 0, 1]);
    const loop = Array.isArray(r.players_loop) ? (r.players_loop as Array<{ playerid?: unknown }>) : [];
    return str(loop[0]?.playerid);
  }

  /**
   * Creates a saved playlist (reference behaviour): `playlists new name:` (deleting a same-named
   * list first), then, with a connected player, `playlistcontrol cmd:load` of the new list,
   * `playlistcontrol cmd:add track_id:…` 50 ids at a time, `playlists delete` of the placeholder
   * and `playlist save <name> silent:1` (id from `__playlist_id`). Loading REPLACES that player's
   * queue. Without a player (or with `lyrionPlaylistMode:'edit'`) each track's url is looked up
   * (`titles track_id:…`, 50 ids per call) and added with `playlists edit cmd:add`. On failure the
   * new playlist is deleted (best effort) and the error rethrown.
   */
  async createPlaylist(name: string, trackIds: string[]): Promise<ProviderPlaylist> {
    const id = await this.newPlaylist(name);
    if (trackIds.length === 0) return { id, name, trackCount: 0 };
    let finalId = id;
    let added = trackIds.length;
    try {
      const player = this.playlistMode === 'player' ? await this.firstPlayer() : undefined;
      if (player) {
        await this.rpc(['playlistcontrol', 'cmd:load', `playlist_id:${id}`], { player, idempotent: false });
        for (const batch of chunk(trackIds, LYRION_PLAYLIST_BATCH)) {
          await this.rpc(['playlistcontrol', 'cmd:add', `track_id:${batch.join(',')}`], { player, idempotent: false });
        }
        await this.rpc(['playlists', 'delete', `playlist_id:${id}`], { idempotent: false });
        const saved = await this.rpc(['playlist', 'save', name, 'silent:1'], { player, idempotent: false });
        const savedId = str(saved.__playlist_id);
        if (!savedId) throw new ProtocolError('lyrion: playlist save returned no __playlist_id');
        finalId = savedId;
      } else {
        added = 0;
        for (const batch of chunk(trackIds, LYRION_PLAYLIST_BATCH)) {
          const r = await this.rpc(['titles', 0, batch.length, `track_id:${batch.join(',')}`, 'tags:u']);
          const urls = new Map<string, string>();
          for (const t of (Array.isArray(r.titles_loop) ? r.titles_loop : []) as LmsTitle[]) {
            const tid = str(t.id);
            if (tid && t.url) urls.set(tid, t.url);
          }
          for (const tid of batch) {
            const url = urls.get(tid);
            if (!url) continue;
            await this.rpc(['playlists', 'edit', 'cmd:add', `playlist_id:${id}`, `url:${url}`], { idempotent: false });
            added++;
          }
        }
      }
    } catch (err) {
      await this.deletePlaylist(finalId).catch(() => undefined);
      throw err;
    }
    return { id: finalId, name, trackCount: added };
  }

  /** `playlists 0 999999 tags:u` → `{id, name: playlist}` (LMS reports no track count here). */
  async listPlaylists(): Promise<ProviderPlaylist[]> {
    const r = await this.rpc(['playlists', 0, 999999, 'tags:u']);
    const loop = Array.isArray(r.playlists_loop) ? (r.playlists_loop as Array<{ id?: unknown; playlist?: unknown }>) : [];
    return loop.filter((p) => str(p.id)).map((p) => ({ id: str(p.id) as string, name: str(p.playlist) ?? '' }));
  }

  async deletePlaylist(playlistId: string): Promise<void> {
    await this.rpc(['playlists', 'delete', `playlist_id:${playlistId}`]);
  }

  /**
   * Most played tracks (LMS exposes no last-played time, so `lastPlayed` is never set and the
   * order is by play count). Without a library filter it asks
   * `titles 0 <limit> sort:sql=tracks_persistent.playcount DESC` and trusts the answer only when
   * its play counts are non-increasing and the ASC query starts with a different track (LMS
   * silently ignores sorts it does not support, answering in title order); otherwise, or with a
   * filter, it scans the catalogue keeping the top `limit`.
   */
  async getListeningHistory(limit: number): Promise<ProviderTrack[]> {
    if (limit <= 0) return [];
    if (this.prefixes.length === 0) {
      const r = await this.rpc(['titles', 0, limit, LYRION_TRACK_TAGS, 'sort:sql=tracks_persistent.playcount DESC']);
      const loop = Array.isArray(r.titles_loop) ? (r.titles_loop as LmsTitle[]) : [];
      const tracks = loop.map(mapLyrionTitle).filter((t): t is ProviderTrack => t !== undefined);
      const counts = tracks.map((t) => t.playCount ?? 0);
      const monotonic = counts.every((c, i) => i === 0 || c <= (counts[i - 1] ?? 0));
      if (monotonic && tracks.length > 0) {
        // An ignored sort gives title order for both directions; an honoured one puts different
        // tracks first (unless every count is equal, where the scan below is also right).
        const asc = await this.rpc(['titles', 0, 1, 'tags:O', 'sort:sql=tracks_persistent.playcount ASC']);
        const firstAsc = Array.isArray(asc.titles_loop) ? str((asc.titles_loop as LmsTitle[])[0]?.id) : undefined;
        if (firstAsc !== undefined && firstAsc !== tracks[0]?.id) return tracks.filter((t) => (t.playCount ?? 0) > 0);
      }
    }
    const top: ProviderTrack[] = [];
    for await (const page of this.iterateTracks()) {
      for (const t of page) {
        if ((t.playCount ?? 0) <= 0) continue;
        if (top.length >= limit && (t.playCount ?? 0) <= (top[top.length - 1]?.playCount ?? 0)) continue;
        top.push(t);
        top.sort((a, b) => (b.playCount ?? 0) - (a.playCount ?? 0));
        if (top.length > limit) top.pop();
      }
    }
    return top;
  }

  /** `songinfo 0 100 track_id:<id> tags:w` → the `lyrics` entry of `songinfo_loop`. */
  async getLyrics(trackId: string): Promise<string | undefined> {
    const r = await this.rpc(['songinfo', 0, 100, `track_id:${trackId}`, 'tags:w'], { timeoutMs: this.lyricsTimeoutMs, retries: 0 });
    const loop = Array.isArray(r.songinfo_loop) ? (r.songinfo_loop as Array<Record<string, unknown>>) : [];
    for (const entry of loop) {
      if (typeof entry.lyrics === 'string') return lyricsToPlain(entry.lyrics);
    }
    return undefined;
  }
}
