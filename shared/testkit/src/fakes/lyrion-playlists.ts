/**
 * Playlist and player-queue commands of the fake Lyrion (lyrion.ts; media-server-apis.md §5): `playlists`
 * (list, new, edit, delete, rename, tracks) and, with a connected player, `playlistcontrol` (cmd:load, cmd:add
 * track_id:…) and `playlist save`/`clear`. Playlist ids share the track id space (catalogue size + 1…).
 */
import { CloseSocket, fileUrl, type LyrionView } from './lyrion-protocol';

/** One saved playlist: tracks as catalogue indices, in order. */
interface LmsPlaylist {
  id: number;
  name: string;
  tracks: number[];
}

/** The playlist commands answered by {@link LyrionPlaylists.playlistsCommand}. */
export const PLAYLIST_COMMANDS = new Set(['playlists']);
/** The player commands answered by {@link LyrionPlaylists.playerCommand}. */
export const PLAYER_COMMANDS = new Set(['playlistcontrol', 'playlist']);

/** The saved playlists and player queues of one fake server; see the module doc. */
export class LyrionPlaylists {
  private readonly playlistMap = new Map<number, LmsPlaylist>();
  private nextPlaylistNo = 1;
  private readonly queues = new Map<string, number[]>();

  constructor(private readonly view: LyrionView) {}

  /** Saved playlists with their tracks as LMS ids, in order. */
  list(): Array<{ id: number; name: string; trackIds: number[] }> {
    return [...this.playlistMap.values()].map((p) => ({ id: p.id, name: p.name, trackIds: p.tracks.map((i) => i + 1) }));
  }

  /** A player's current queue as LMS track ids. */
  queueOf(playerid: string): number[] {
    return (this.queues.get(playerid) ?? []).map((i) => i + 1);
  }

  /**
   * The `playlists` command: `new name:` (an existing name answers `overwritten_playlist_id`, nothing created),
   * `edit playlist_id: cmd:add url:` (skips a track already present) / `cmd:delete|up|down|move index: [toindex:]`,
   * `delete`, `rename newname: [dry_run:1]`, `tracks <start> <count> [tags:]`, and the list
   * `<start> <count> [tags:u] [search:]`. @throws CloseSocket for an unknown playlist or bad parameters
   */
  playlistsCommand(positional: string[], tagged: Map<string, string>): Record<string, unknown> {
    const sub = positional[0];
    const cat = this.view.catalogue;
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
        const i = this.view.indexByUrl(url);
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
      const loop = p.tracks.slice(s, s + c).map((i, k) => ({ 'playlist index': s + k, ...this.view.trackFields(i, tags) }));
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

  /**
   * The player commands `playlistcontrol cmd:load playlist_id:` / `cmd:add|insert|delete track_id:<ids>` (at most
   * `maxTrackIdsPerCommand` ids) and `playlist save <name>` / `playlist clear` on `player`'s queue.
   * @throws CloseSocket when `player` is not connected, or for bad parameters
   */
  playerCommand(player: string, name: string, positional: string[], tagged: Map<string, string>): Record<string, unknown> {
    if (!this.view.hasPlayer(player)) throw new CloseSocket();
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
        if (ids.length === 0 || ids.some((i) => !Number.isInteger(i) || i < 0 || i >= this.view.catalogue.size)) throw new CloseSocket();
        if (this.view.maxTrackIdsPerCommand !== null && ids.length > this.view.maxTrackIdsPerCommand) throw new CloseSocket();
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
        p = { id: this.view.catalogue.size + this.nextPlaylistNo++, name: title, tracks: [] };
        this.playlistMap.set(p.id, p);
      }
      p.tracks = [...queue];
      return { __playlist_id: p.id };
    }
    throw new CloseSocket();
  }
}
