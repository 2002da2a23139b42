/**
 * Item queries of the MediaBrowser fakes (mediabrowser.ts; media-server-apis.md §2-3): `/Items` and
 * `/Users/{uid}/Items` (Audio by view, album, playlist, ids or the whole library; filters IsPlayed, IsUnplayed,
 * IsFavorite; SearchTerm; SortBy/SortOrder over the sort names below; MusicAlbum, MusicArtist, Playlist and the
 * user's root views), the artist lists, and one item by id. A catalogue page (for `failAfterPages`) is an item query
 * whose IncludeItemTypes contains Audio.
 */
import type { Request, Response } from 'express';
import { pseudoRandomKey } from './common';
import type { MediaBrowserFake } from './mediabrowser';
import type { MediaBrowserPlaylists } from './mediabrowser-playlists';
import { MbType, type CiQuery, type MbPlaylist } from './mediabrowser-protocol';

type SortKey = (i: number) => number | string;

/** The item queries of one fake server and their sort cache (64 orders, oldest dropped first). */
export class MediaBrowserItems {
  private readonly sortCache = new Map<string, number[]>();

  constructor(
    private readonly fake: MediaBrowserFake,
    private readonly playlists: MediaBrowserPlaylists,
  ) {}

  private sortedTracks(indices: readonly number[], sortBy: string[], orders: string[], cacheKey: string): number[] {
    const hit = this.sortCache.get(cacheKey);
    if (hit) return hit;
    const cat = this.fake.catalogue;
    const keyFns: Array<{ fn: SortKey; desc: boolean }> = [];
    sortBy.forEach((s, n) => {
      const desc = (orders[n] ?? orders[0] ?? 'Ascending').toLowerCase() === 'descending';
      const k = s.toLowerCase();
      const fn: SortKey | undefined =
        k === 'sortname' || k === 'name'
          ? (i) => cat.trackAt(i).title.toLowerCase()
          : k === 'album'
            ? (i) => cat.trackAt(i).album.toLowerCase()
            : k === 'albumartist'
              ? (i) => cat.trackAt(i).albumArtist.toLowerCase()
              : k === 'artist'
                ? (i) => cat.trackAt(i).artist.toLowerCase()
                : k === 'playcount'
                  ? (i) => cat.trackAt(i).playCount
                  : k === 'dateplayed'
                    ? (i) => cat.trackAt(i).lastPlayed ?? ''
                    : k === 'datecreated'
                      ? (i) => cat.trackAt(i).addedAt
                      : k === 'runtime'
                        ? (i) => cat.trackAt(i).durationSeconds
                        : k === 'productionyear'
                          ? (i) => cat.trackAt(i).year ?? 0
                          : k === 'random'
                            ? (i) => pseudoRandomKey(i)
                            : undefined; // unknown sort names are ignored, as the enum binder drops them
      if (fn) keyFns.push({ fn, desc });
    });
    const out = [...indices];
    if (keyFns.length) {
      const keys = keyFns.map(({ fn }) => new Map(out.map((i) => [i, fn(i)])));
      out.sort((a, b) => {
        for (let n = 0; n < keyFns.length; n++) {
          const m = keys[n] as Map<number, number | string>;
          const ka = m.get(a) as number | string;
          const kb = m.get(b) as number | string;
          if (ka < kb) return keyFns[n]?.desc ? 1 : -1;
          if (ka > kb) return keyFns[n]?.desc ? -1 : 1;
        }
        return a - b;
      });
    }
    this.sortCache.set(cacheKey, out);
    if (this.sortCache.size > 64) this.sortCache.delete(this.sortCache.keys().next().value as string);
    return out;
  }

  /** Handles `/Items` and `/Users/{uid}/Items`. */
  itemsQuery(req: Request, res: Response, q: CiQuery, pathUserId?: string): void {
    const userId = pathUserId ?? q.get('userId');
    if (userId !== undefined && userId.replace(/-/g, '').toLowerCase() !== this.fake.userId) {
      res.status(404).type('text/plain').send('User not found');
      return;
    }
    const withUser = true; // the token is a user token: Jellyfin/Emby fall back to the token's user
    const types = q.list('IncludeItemTypes').map((s) => s.toLowerCase());
    const fields = new Set(q.list('Fields').map((f) => f.toLowerCase()));
    const start = Math.max(0, q.int('StartIndex') ?? 0);
    const limit = q.int('Limit');
    const recursive = q.bool('Recursive') ?? false;
    const parentId = q.get('ParentId');
    const filters = new Set(q.list('Filters').map((f) => f.toLowerCase()));
    const ids = q.list('Ids');
    const search = q.get('SearchTerm')?.toLowerCase();
    const enableTotal = q.bool('EnableTotalRecordCount') ?? true;

    const page = (all: unknown[] | number[], render: (x: never) => unknown): void => {
      const slice = (all as unknown[]).slice(start, limit === undefined ? undefined : start + limit);
      const items = slice.map((x) => render(x as never));
      res.json(this.fake.queryResult(items, enableTotal ? all.length : items.length, start));
    };

    if (types.includes('audio') || (types.length === 0 && (ids.length > 0 || parentId))) {
      const isAudioQuery = types.includes('audio');
      if (isAudioQuery && this.fake.core.pageShouldFail()) {
        res.status(500).type('text/plain').send('Internal server error (injected by fake)');
        return;
      }
      let indices: readonly number[];
      let scope = 'all';
      const parent = parentId ? this.fake.flavour.ids.decode(parentId) : undefined;
      if (parentId && !parent) {
        res.status(404).type('text/plain').send('Item not found');
        return;
      }
      if (ids.length) {
        indices = ids.map((id) => this.fake.trackIndex(id)).filter((i): i is number => i !== undefined);
        scope = `ids:${ids.join(',')}`;
      } else if (parent?.type === MbType.View) {
        const lib = this.fake.catalogue.libraries[parent.n];
        // Audio sits below artist/album folders: a non-recursive query of a view has no Audio children.
        indices = lib && recursive ? this.fake.catalogue.indicesIn([lib.id]) : [];
        scope = `view:${parent.n}:${recursive}`;
      } else if (parent?.type === MbType.Album) {
        indices = this.fake.catalogue.albums()[parent.n]?.trackIndices ?? [];
        scope = `album:${parent.n}`;
      } else if (parent?.type === MbType.Playlist) {
        indices = this.playlists.get(parent.n)?.entries.map((e) => e.trackIndex) ?? [];
        scope = `pl:${parent.n}:${this.playlists.entryCounter}`;
      } else if (parent) {
        indices = [];
      } else {
        indices = recursive || ids.length ? this.fake.catalogue.indicesIn() : [];
        scope = `root:${recursive}`;
      }
      let list = [...indices];
      if (filters.has('isplayed')) list = list.filter((i) => this.fake.catalogue.trackAt(i).playCount > 0);
      if (filters.has('isunplayed')) list = list.filter((i) => this.fake.catalogue.trackAt(i).playCount === 0);
      if (filters.has('isfavorite') || filters.has('isfavoriteorlikes')) list = list.filter((i) => this.fake.catalogue.trackAt(i).rating === 5);
      if (search) list = list.filter((i) => this.fake.catalogue.trackAt(i).title.toLowerCase().includes(search));
      const sortBy = q.list('SortBy');
      const orders = q.list('SortOrder');
      const key = `${scope}|${[...filters].sort().join(',')}|${search ?? ''}|${sortBy.join(',')}|${orders.join(',')}|${this.fake.catalogue.version}`;
      const sorted = sortBy.length ? this.sortedTracks(list, sortBy, orders, key) : list;
      page(sorted, (i: number) => this.fake.audioDto(i, fields, withUser));
      return;
    }
    if (types.includes('musicalbum')) {
      const parent = parentId ? this.fake.flavour.ids.decode(parentId) : undefined;
      const lib = parent?.type === MbType.View ? this.fake.catalogue.libraries[parent.n]?.id : undefined;
      let albums = this.fake.catalogue.albums().map((_, j) => j);
      if (parent) albums = lib ? albums.filter((j) => this.fake.catalogue.albums()[j]?.library === lib) : [];
      if (q.list('SortBy').some((s) => s.toLowerCase() === 'datecreated')) {
        const desc = (q.get('SortOrder') ?? '').toLowerCase() === 'descending';
        const firstAdded = (j: number) => this.fake.catalogue.trackAt(this.fake.catalogue.albums()[j]?.trackIndices[0] ?? 0).addedAt;
        albums.sort((a, b) => (firstAdded(a) < firstAdded(b) ? -1 : firstAdded(a) > firstAdded(b) ? 1 : a - b) * (desc ? -1 : 1));
      }
      page(albums, (j: number) => this.fake.albumDto(j, fields));
      return;
    }
    if (types.includes('musicartist')) {
      page(this.artistIndices(parentId), (k: number) => this.fake.artistDto(k));
      return;
    }
    if (types.includes('playlist')) {
      page(this.playlists.all(), (p: MbPlaylist) => this.fake.playlistDto(p, fields));
      return;
    }
    if (types.length === 0 && !parentId) {
      // The user's root folder: the views.
      page(this.fake.views(), (v: ReturnType<MediaBrowserFake['views']>[number]) => ({
        Name: v.name, ServerId: this.fake.serverId, Id: v.id, Type: 'CollectionFolder', CollectionType: v.collectionType, IsFolder: true,
      }));
      return;
    }
    res.json(this.fake.queryResult([], 0, start));
  }

  /**
   * Artist indices, optionally limited to one view: track and album artists (`/Artists`,
   * `IncludeItemTypes=MusicArtist`) or album artists only (`/Artists/AlbumArtists`).
   */
  artistIndices(parentId: string | undefined, albumArtistsOnly = false): number[] {
    const parent = parentId ? this.fake.flavour.ids.decode(parentId) : undefined;
    const artists = this.fake.catalogue.artists();
    let lib: string | undefined;
    if (parent) {
      lib = parent.type === MbType.View ? this.fake.catalogue.libraries[parent.n]?.id : undefined;
      if (!lib) return [];
    } else if (!albumArtistsOnly) {
      return artists.map((_, k) => k);
    }
    const used = new Set<string>();
    for (const i of this.fake.catalogue.indicesIn(lib ? [lib] : undefined)) {
      const t = this.fake.catalogue.trackAt(i);
      if (!albumArtistsOnly) used.add(t.artistId);
      used.add(t.albumArtistId);
    }
    return artists.map((a, k) => (used.has(a.id) ? k : -1)).filter((k) => k >= 0);
  }

  /** One item by id (track, album, playlist, view). Returns undefined when unknown. */
  itemById(id: string): Record<string, unknown> | undefined {
    const d = this.fake.flavour.ids.decode(id);
    if (!d) return undefined;
    const all = new Set(['path', 'datecreated', 'genres', 'parentid', 'sortname', 'childcount']);
    if (d.type === MbType.Track && d.n < this.fake.catalogue.size) return this.fake.audioDto(d.n, all, true);
    if (d.type === MbType.Album && d.n < this.fake.catalogue.albums().length) return this.fake.albumDto(d.n, all);
    if (d.type === MbType.Artist && d.n < this.fake.catalogue.artists().length) return this.fake.artistDto(d.n);
    if (d.type === MbType.Playlist) {
      const p = this.playlists.get(d.n);
      return p ? this.fake.playlistDto(p, all) : undefined;
    }
    if (d.type === MbType.View) {
      const v = this.fake.views()[d.n];
      return v ? { Name: v.name, Id: v.id, Type: 'CollectionFolder', CollectionType: v.collectionType, IsFolder: true } : undefined;
    }
    return undefined;
  }
}
