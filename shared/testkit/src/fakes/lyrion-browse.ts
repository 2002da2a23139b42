/**
 * Library commands of the fake Lyrion (lyrion.ts; media-server-apis.md §5): `musicfolder`/`mediafolder` (the folder
 * tree of each catalogue library, `folder_id:` or `url:`; a single root is opened directly), `libraries` (virtual
 * libraries, with `virtualLibraries`), `titles`/`songs`/`tracks` (filters `library_id`, `album_id`, `artist_id`,
 * `track_id` list, `year`, `search`; `sort:` title, tracknum, albumtrack, or `sql=tracks_persistent.playcount|lastplayed`
 * which needs tag R or O; `CC` = count only), `artists`, `albums` (`sort:` album, new, playcount, recentlyplayed) and
 * `songinfo` (`track_id:` or `url:`; tag `w` adds lyrics). A catalogue page (for `failAfterPages`) is one
 * `titles`/`songs`/`tracks` call: HTTP 500 or a closed socket per `failMode`.
 */
import type { Response } from 'express';
import type { FakeTrack } from './catalogue';
import { CloseSocket, fileUrl, startCount, type LyrionAnswer, type LyrionCommand, type LyrionView } from './lyrion-protocol';

/** A directory of a library as `musicfolder` lists it: sub-folders first, then tracks (catalogue indices). */
interface FolderNode {
  id: number;
  path: string;
  name: string;
  dirs: FolderNode[];
  tracks: number[];
}

/** The library commands answered by {@link LyrionBrowse.answer}. */
export const BROWSE_COMMANDS = new Set(['musicfolder', 'mediafolder', 'libraries', 'titles', 'songs', 'tracks', 'artists', 'albums', 'songinfo']);

/** The library commands of one fake server and their caches (sort orders, folder tree); see the module doc. */
export class LyrionBrowse {
  private readonly sortCache = new Map<string, number[]>();
  private folderCache?: { byId: Map<number, FolderNode>; roots: FolderNode[]; version: number };

  constructor(private readonly view: LyrionView) {}

  /** Answers one of {@link BROWSE_COMMANDS}. @throws CloseSocket for bad parameters (LMS closes the socket) */
  answer(command: LyrionCommand, res: Response): LyrionAnswer {
    const { name, positional, tagged } = command;
    const view = this.view;
    const cat = view.catalogue;
    const libFilter = (): string | undefined => {
      const lid = tagged.get('library_id');
      if (!lid) return undefined;
      const lib = cat.libraries.find((l) => view.libraryIdOf(l.id) === lid);
      if (!lib || !view.virtualLibraries) return '\u0000none';
      return lib.id;
    };
    switch (name) {
      case 'musicfolder':
      case 'mediafolder': {
        const [start, count] = startCount(positional);
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
        if (!view.virtualLibraries) return {};
        return { folder_loop: cat.libraries.map((l) => ({ id: view.libraryIdOf(l.id), name: l.name })) };
      case 'titles':
      case 'songs':
      case 'tracks': {
        const [start, count] = startCount(positional);
        const tags = tagged.get('tags') ?? 'gald';
        const sort = tagged.get('sort') ?? 'title';
        if (sort.startsWith('sql=') && /tracks_persistent/i.test(sort) && !/[RO]/.test(tags)) throw new CloseSocket();
        if (view.core.pageShouldFail()) {
          if (view.failMode === 'close') throw new CloseSocket();
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
        const loop = list.slice(start, start + count).map((i) => view.trackFields(i, tags));
        return { count: list.length, ...(loop.length ? { titles_loop: loop } : {}) };
      }
      case 'artists': {
        const [start, count] = startCount(positional);
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
        const [start, count] = startCount(positional);
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
          if (tags.includes('y') && a.year) o.year = view.n(a.year);
          if (tags.includes('S')) o.artist_id = view.n(view.artistNo(a.artistId));
          return o;
        });
        return { count: all.length, ...(loop.length ? { albums_loop: loop } : {}) };
      }
      case 'songinfo': {
        const [start, count] = startCount(positional);
        const tags = tagged.get('tags') ?? '';
        const tid = tagged.get('track_id');
        const url = tagged.get('url');
        let i: number | undefined;
        if (tid) i = Number(tid) - 1;
        else if (url) i = view.indexByUrl(url);
        if (i === undefined || !Number.isInteger(i) || i < 0 || i >= cat.size) return {};
        const fields = Object.entries(view.trackFields(i, tags));
        const t = cat.trackAt(i);
        if (tags.includes('w') && t.lyrics) fields.push(['lyrics', t.lyrics]);
        const loop = fields.slice(start, start + count).map(([k, v]) => ({ [k]: v }));
        return { count: fields.length, songinfo_loop: loop };
      }
      default:
        throw new CloseSocket();
    }
  }

  /**
   * `list` in the order a `titles` sort asks for (title by default; tracknum, albumtrack,
   * sql=tracks_persistent.playcount|lastplayed [ASC|DESC]); cached per filter + catalogue version.
   */
  private sorted(list: number[], sort: string, filterKey: string): number[] {
    const cat = this.view.catalogue;
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

  /** The folder tree of every catalogue library (folder ids from 10,000,001), rebuilt when the catalogue changes. */
  private folders(): { byId: Map<number, FolderNode>; roots: FolderNode[] } {
    if (this.folderCache && this.folderCache.version === this.view.catalogue.version) return this.folderCache;
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
    const roots = this.view.catalogue.libraries.map((l) => node(l.path));
    for (let i = 0; i < this.view.catalogue.size; i++) {
      const t = this.view.catalogue.trackAt(i);
      const lib = this.view.catalogue.libraries.find((l) => l.id === t.library);
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
    this.folderCache = { byId, roots, version: this.view.catalogue.version };
    return this.folderCache;
  }
}
