/**
 * Playlist and play-queue endpoints of the fake Navidrome (subsonic.ts; media-server-apis.md §4):
 * `createPlaylist` (repeated `songId`, returns the playlist since API 1.14; with `playlistId` it replaces that
 * playlist's songs), `updatePlaylist` (repeated `songIdToAdd`, `songIndexToRemove`, `name`, `comment`, `public`),
 * `getPlaylists` (the user's own and public ones), `getPlaylist`, `deletePlaylist`, and `savePlayQueue` (repeated
 * `id`, `current`; API 1.12). More than `maxIdsPerRequest` ids in one request → code 0; an unknown song or
 * playlist → code 70.
 */
import { ID_PLAYLIST, ID_TRACK, omitEmpty, requiredParam, resolveSongs, SUBSONIC_ERRORS, SubsonicError, type SubsonicAnswer, type SubsonicView } from './subsonic-protocol';

/** One playlist as the fake keeps it: songs as catalogue indices, times as ISO 8601 strings. */
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

/** The saved play queue: song ids in order and the current one. */
export interface SubsonicPlayQueue {
  trackIds: string[];
  current?: string;
}

/** The playlist methods answered by {@link SubsonicPlaylists.answer}. */
export const PLAYLIST_METHODS = new Set(['getPlaylists', 'getPlaylist', 'createPlaylist', 'updatePlaylist', 'deletePlaylist', 'savePlayQueue']);

/** The playlists of one fake server and the methods that read and change them; see the module doc. */
export class SubsonicPlaylists {
  private readonly byNumber = new Map<number, SubPlaylist>();
  private next = 1;

  /** `onPlayQueue` receives each saved play queue (the fake keeps it in its `playQueue` field). */
  constructor(private readonly view: SubsonicView, private readonly onPlayQueue: (queue: SubsonicPlayQueue) => void) {}

  /** Current playlists with their songs as provider ids, in order. */
  list(): Array<{ id: string; name: string; public: boolean; trackIds: string[] }> {
    return [...this.byNumber.values()].map((p) => ({ id: p.id, name: p.name, public: p.public, trackIds: p.tracks.map((i) => this.view.ids.encode(ID_TRACK, i)) }));
  }

  /** Answers one of {@link PLAYLIST_METHODS}; throws a {@link SubsonicError} for a Subsonic failure. */
  answer(method: string, params: URLSearchParams): SubsonicAnswer {
    const view = this.view;
    switch (method) {
      case 'getPlaylists': {
        const list = [...this.byNumber.values()].filter((p) => p.owner === view.user || p.public);
        return { playlists: list.length ? { playlist: list.map((p) => this.entry(p, false)) } : {} };
      }
      case 'getPlaylist':
        return { playlist: this.entry(this.playlistOf(requiredParam(params, 'id')), true) };
      case 'createPlaylist': {
        const songIds = params.getAll('songId');
        this.checkIds(songIds.length);
        const playlistId = params.get('playlistId');
        const name = params.get('name');
        const tracks = resolveSongs(view, songIds);
        const now = new Date().toISOString();
        let p: SubPlaylist;
        if (playlistId) {
          p = this.playlistOf(playlistId);
          p.tracks = tracks;
          if (name) p.name = name;
          p.changed = now;
        } else if (name) {
          const n = this.next++;
          p = { n, id: view.ids.encode(ID_PLAYLIST, n), name, owner: view.user, public: false, tracks, created: now, changed: now };
          this.byNumber.set(n, p);
        } else {
          throw new SubsonicError(SUBSONIC_ERRORS.missingParameter, "required 'name' or 'playlistId' parameter is missing");
        }
        return { playlist: this.entry(p, true) };
      }
      case 'updatePlaylist': {
        const p = this.playlistOf(requiredParam(params, 'playlistId'));
        const add = params.getAll('songIdToAdd');
        this.checkIds(add.length);
        const addTracks = resolveSongs(view, add);
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
        const tracks = resolveSongs(view, params.getAll('id'));
        this.onPlayQueue({ trackIds: tracks.map((i) => view.ids.encode(ID_TRACK, i)), current: params.get('current') ?? undefined });
        return {};
      }
      case 'deletePlaylist': {
        const p = this.playlistOf(requiredParam(params, 'id'));
        this.byNumber.delete(p.n);
        return {};
      }
      default:
        throw new Error(`not a playlist method: ${method}`);
    }
  }

  /** Playlist payload; `withEntries` adds its songs (`entry`). `public`, `songCount` and `duration` are always sent. */
  private entry(p: SubPlaylist, withEntries: boolean): Record<string, unknown> {
    const duration = p.tracks.reduce((s, i) => s + Math.trunc(this.view.catalogue.trackAt(i).durationSeconds), 0);
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
      entry: withEntries ? p.tracks.map((i) => this.view.song(i)) : undefined,
    }, ['public', 'songCount', 'duration']);
  }

  private playlistOf(id: string): SubPlaylist {
    const d = this.view.ids.decode(id);
    const p = d && d.type === ID_PLAYLIST ? this.byNumber.get(d.n) : undefined;
    if (!p) throw new SubsonicError(SUBSONIC_ERRORS.notFound, 'Playlist not found');
    return p;
  }

  /** More than maxIdsPerRequest song ids in one request → code 0 (the reference sends batches of 40). */
  private checkIds(count: number): void {
    const max = this.view.maxIdsPerRequest;
    if (max !== null && count > max) throw new SubsonicError(SUBSONIC_ERRORS.generic, `Too many songs in one request: ${count} > ${max}`);
  }
}
