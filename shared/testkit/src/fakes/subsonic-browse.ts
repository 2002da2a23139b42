/**
 * Browse, search and media endpoints of the fake Navidrome (subsonic.ts; media-server-apis.md §4):
 * `getMusicFolders`, `search3` (an empty query, `""` or a trailing `*` returns everything in catalogue order),
 * `getAlbumList2` (`size` capped at 500), `getAlbum`, `getSong`, `getRandomSongs`, `getArtists`, `getArtist`,
 * `stream`/`download` (original bytes only; code 50 when downloads are disabled), `getLyricsBySongId`,
 * `getLyrics`, `scrobble`, and the empty `getStarred2`/`getTopSongs`. `musicFolderId` (repeatable) filters
 * `search3`, `getAlbumList2`, `getArtists` and `getRandomSongs`. A catalogue page (for `failAfterPages`) is a
 * `search3` call with `songCount > 0`, a `getAlbumList2` call, or a `getAlbum` call.
 */
import type { Response } from 'express';
import { extOf, sendAudio } from './common';
import { folderFilter, musicFolders } from './subsonic-auth';
import { fail500, ID_ALBUM, ID_ARTIST, intParam, requiredParam, resolveSongs, SUBSONIC_ERRORS, SubsonicError, type SubsonicAnswer, type SubsonicView } from './subsonic-protocol';

/** The browse/search methods answered by {@link browseMethod}. */
export const BROWSE_METHODS = new Set([
  'getMusicFolders',
  'search3',
  'getAlbumList2',
  'getAlbum',
  'getSong',
  'getRandomSongs',
  'getArtists',
  'getArtist',
  'stream',
  'download',
  'getLyricsBySongId',
  'getLyrics',
  'scrobble',
  'getStarred2',
  'getTopSongs',
]);

/** Answers one of {@link BROWSE_METHODS}; throws a {@link SubsonicError} for a Subsonic failure. */
export function browseMethod(view: SubsonicView, method: string, params: URLSearchParams, res: Response): SubsonicAnswer {
  const cat = view.catalogue;
  const folders = () => folderFilter(cat, view.visibleLibraries, params);
  switch (method) {
    case 'getMusicFolders':
      return musicFolders(cat, view.visibleLibraries);
    case 'search3':
      return search3(view, params, res, folders);
    case 'getAlbumList2':
      return albumList2(view, params, res, folders);
    case 'getAlbum': {
      const j = albumIdx(view, requiredParam(params, 'id'));
      if (view.core.pageShouldFail()) return fail500(res);
      const a = cat.albums()[j];
      return { album: { ...view.albumEntry(j), song: (a?.trackIndices ?? []).map((i) => view.song(i)) } };
    }
    case 'getSong':
      return { song: view.song(songIdx(view, requiredParam(params, 'id'))) };
    case 'getRandomSongs': {
      const size = Math.min(500, intParam(params, 'size', 10));
      const indices = cat.indicesIn(folders());
      return { randomSongs: { song: indices.slice(0, size).map((i) => view.song(i)) } };
    }
    case 'getArtists':
      return artists(view, folders());
    case 'getArtist': {
      const d = view.ids.decode(requiredParam(params, 'id'));
      const a = d && d.type === ID_ARTIST ? cat.artists()[d.n] : undefined;
      if (!a || !d) throw new SubsonicError(SUBSONIC_ERRORS.notFound, 'Artist not found');
      const albums = cat.albums().map((al, j) => ({ al, j })).filter(({ al }) => al.artistId === a.id).map(({ j }) => view.albumEntry(j));
      return { artist: { id: view.ids.encode(ID_ARTIST, d.n), name: a.name, albumCount: albums.length, album: albums } };
    }
    case 'stream':
    case 'download': {
      const i = songIdx(view, requiredParam(params, 'id'));
      if (method === 'download' && !view.enableDownloads) throw new SubsonicError(SUBSONIC_ERRORS.notAuthorized, 'downloads are disabled');
      const format = params.get('format');
      if (format && format !== 'raw' && format !== extOf(cat.trackAt(i).audioFile)) {
        throw new SubsonicError(SUBSONIC_ERRORS.generic, `fake server cannot transcode to '${format}'`);
      }
      const t = cat.trackAt(i);
      sendAudio(res, t.audioFile, method === 'download' ? { 'Content-Disposition': `attachment; filename="${t.audioFile.slice(t.audioFile.lastIndexOf('/') + 1)}"` } : {});
      return 'sent';
    }
    case 'getLyricsBySongId': {
      const t = cat.trackAt(songIdx(view, requiredParam(params, 'id')));
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
      const tracks = resolveSongs(view, params.getAll('id'));
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
      throw new Error(`not a browse method: ${method}`);
  }
}

/** Catalogue index of a song id; not a song → code 70 "Song not found". */
function songIdx(view: SubsonicView, id: string): number {
  const i = view.trackIndex(id);
  if (i === undefined) throw new SubsonicError(SUBSONIC_ERRORS.notFound, 'Song not found');
  return i;
}

/** Catalogue index of an album id; not an album → code 70. */
function albumIdx(view: SubsonicView, id: string): number {
  const d = view.ids.decode(id);
  if (!d || d.type !== ID_ALBUM || d.n >= view.catalogue.albums().length) throw new SubsonicError(SUBSONIC_ERRORS.notFound, 'Album not found');
  return d.n;
}

/** `search3`: title/artist/album substring match (case-insensitive), songs, albums and artists each paged. */
function search3(view: SubsonicView, params: URLSearchParams, res: Response, folders: () => string[] | undefined): SubsonicAnswer {
  const cat = view.catalogue;
  let query = params.get('query') ?? '';
  if (query === '""') query = '';
  query = query.replace(/\*$/, '').toLowerCase();
  const songCount = intParam(params, 'songCount', 20);
  const songOffset = intParam(params, 'songOffset', 0);
  const albumCount = intParam(params, 'albumCount', 20);
  const albumOffset = intParam(params, 'albumOffset', 0);
  const artistCount = intParam(params, 'artistCount', 20);
  const artistOffset = intParam(params, 'artistOffset', 0);
  const libs = folders();
  if (songCount > 0 && view.core.pageShouldFail()) return fail500(res);
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
  if (ar.length) result.artist = ar.map(({ a, k }) => ({ id: view.ids.encode(ID_ARTIST, k), name: a.name }));
  if (al.length) result.album = al.map(({ j }) => view.albumEntry(j));
  if (songs.length) result.song = songs.map((i) => view.song(i));
  return { searchResult3: result };
}

/** `getAlbumList2` by `type` (newest, alphabetical, frequent, recent, random, byYear, byGenre; highest/starred empty). */
function albumList2(view: SubsonicView, params: URLSearchParams, res: Response, folders: () => string[] | undefined): SubsonicAnswer {
  const type = requiredParam(params, 'type');
  const size = Math.min(500, Math.max(0, intParam(params, 'size', 10)));
  const offset = Math.max(0, intParam(params, 'offset', 0));
  const libs = folders();
  if (view.core.pageShouldFail()) return fail500(res);
  const libSet = libs ? new Set(libs) : undefined;
  let albums = view.catalogue.albums().map((a, j) => ({ a, j, e: view.albumEntry(j) })).filter(({ a }) => !libSet || libSet.has(a.library));
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
      const from = intParam(params, 'fromYear', 0);
      const to = intParam(params, 'toYear', 9999);
      const lo = Math.min(from, to);
      const hi = Math.max(from, to);
      albums = albums.filter((x) => (x.a.year ?? 0) >= lo && (x.a.year ?? 0) <= hi).sort((x, y) => ((x.a.year ?? 0) - (y.a.year ?? 0)) * (from <= to ? 1 : -1));
      break;
    }
    case 'byGenre': {
      const genre = requiredParam(params, 'genre');
      albums = albums.filter((x) => x.e.genre === genre);
      break;
    }
    default:
      throw new SubsonicError(SUBSONIC_ERRORS.generic, `Type '${type}' not implemented`);
  }
  const page = albums.slice(offset, offset + size).map((x) => x.e);
  return { albumList2: page.length ? { album: page } : {} };
}

/** `getArtists`: the artists with an album or a song in `libs`, indexed by first letter (articles The/El/La ignored). */
function artists(view: SubsonicView, libs: string[] | undefined): SubsonicAnswer {
  const cat = view.catalogue;
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
    list.push({ id: view.ids.encode(ID_ARTIST, k), name: a.name, albumCount: counts.get(a.id) ?? 0, coverArt: `ar-${view.ids.encode(ID_ARTIST, k)}` });
    byLetter.set(letter, list);
  });
  const index = [...byLetter.entries()].sort(([x], [y]) => x.localeCompare(y)).map(([name, artist]) => ({ name, artist }));
  return { artists: { ignoredArticles: 'The El La', index } };
}
