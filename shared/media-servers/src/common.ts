/**
 * Normalisation helpers shared by the provider clients: lenient number/string reads, time and
 * rating conversion, path checks, file:// decoding, LRC stripping, batching, de-duplication,
 * and the common shape of `testConnection`.
 */
import { MediaServerError, type MediaServerErrorKind } from './errors';
import type { ConnectionTestResult, LibraryInfo, ProviderPlaylist, ProviderTrack } from './types';

/** Number of tracks `testConnection` reads to prove credentials and inspect paths. */
export const SAMPLE_TRACK_COUNT = 50;

/**
 * Share of sampled paths that must be absolute for `pathsLookAbsolute` (0.8, the "absolute"
 * threshold of AudioMuse-AI `tasks/mediaserver/helper.py: detect_path_format`).
 */
export const ABSOLUTE_PATH_RATIO = 0.8;

/** A finite number from a number or numeric string (LMS sends both); otherwise undefined. */
export function num(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string' && value.trim() !== '') {
    const n = Number(value);
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

/** A positive number, or undefined for 0 / missing (servers use 0 for "unknown"). */
export function positive(value: unknown): number | undefined {
  const n = num(value);
  return n !== undefined && n > 0 ? n : undefined;
}

/** Ids and names as strings: numbers are stringified, empty strings become undefined. */
export function str(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/** ISO-8601 text (any precision, e.g. Jellyfin's 7 fraction digits) -> `YYYY-MM-DDTHH:mm:ss.sssZ`. */
export function isoFromText(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  // Date.parse accepts at most millisecond precision reliably; trim longer fractions first.
  const trimmed = value.replace(/(\.\d{3})\d+/, '$1');
  const ms = Date.parse(trimmed);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

/** Epoch seconds (Plex `lastViewedAt`) -> ISO-8601 UTC; 0 / missing -> undefined. */
export function isoFromEpochSeconds(value: unknown): string | undefined {
  const n = positive(value);
  return n === undefined ? undefined : new Date(n * 1000).toISOString();
}

/** Clamps a rating already expressed in stars to [0, 5]; undefined stays undefined. */
export function stars(value: number | undefined): number | undefined {
  if (value === undefined || !Number.isFinite(value)) return undefined;
  return Math.min(5, Math.max(0, value));
}

/**
 * True for absolute paths: POSIX `/…`, UNC/backslash `\…`, `file://` URLs and Windows drive
 * paths `C:\…` / `C:/…` (same rules as AudioMuse-AI `detect_path_format`).
 */
export function isAbsolutePath(path: string | undefined): boolean {
  if (!path) return false;
  return path.startsWith('/') || path.startsWith('\\') || /^file:\/\//i.test(path) || /^[A-Za-z]:[\\/]/.test(path);
}

/** True when at least {@link ABSOLUTE_PATH_RATIO} of the non-empty paths are absolute; false when none. */
export function pathsLookAbsolute(paths: ReadonlyArray<string | undefined>): boolean {
  const present = paths.filter((p): p is string => !!p);
  if (present.length === 0) return false;
  return present.filter(isAbsolutePath).length / present.length >= ABSOLUTE_PATH_RATIO;
}

/**
 * Decodes a `file://` URL (LMS `url`, percent-encoded once) to a file-system path.
 * `file:///C:/Music/x.flac` gives `C:/Music/x.flac`. Non-file URLs give undefined. A malformed
 * percent sequence leaves the raw pathname.
 */
export function fileUrlToPath(url: string | undefined): string | undefined {
  if (!url || !/^file:\/\//i.test(url)) return undefined;
  let pathname: string;
  let host = '';
  try {
    const u = new URL(url);
    pathname = u.pathname;
    host = u.hostname;
  } catch {
    pathname = url.replace(/^file:\/\/[^/]*/i, '');
  }
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    decoded = pathname;
  }
  if (/^\/[A-Za-z]:[\\/]/.test(decoded)) decoded = decoded.slice(1);
  if (host && host !== 'localhost') decoded = `//${host}${decoded}`;
  return decoded;
}

/**
 * Normalises a path prefix for prefix matching: accepts a path or a `file://` URL, removes a
 * trailing separator (except for the root).
 */
export function normalisePrefix(prefix: string): string {
  const p = fileUrlToPath(prefix) ?? prefix;
  return p.length > 1 ? p.replace(/[\\/]+$/, '') : p;
}

/** True when `path` equals a prefix or lies below it (separator boundary, so `/music2` ≠ `/music`). */
export function underAnyPrefix(path: string | undefined, prefixes: ReadonlyArray<string>): boolean {
  if (!path) return false;
  return prefixes.some((pre) => path === pre || path.startsWith(pre.endsWith('/') ? pre : `${pre}/`) || path.startsWith(`${pre}\\`));
}

/**
 * Plain text from lyrics that may be LRC: drops `[mm:ss.xx]` time tags and `[ar:…]`-style
 * header lines, trims, and returns undefined when nothing is left.
 */
export function lyricsToPlain(text: string | undefined | null): string | undefined {
  if (!text) return undefined;
  const lines = text
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .filter((line) => !/^\s*\[[a-z]+:[^\]]*\]\s*$/i.test(line))
    .map((line) => line.replace(/\[\d{1,3}:\d{1,2}(?:[.:]\d{1,3})?\]/g, '').replace(/<\d{1,3}:\d{1,2}(?:[.:]\d{1,3})?>/g, '').trimEnd());
  const out = lines.join('\n').trim();
  return out === '' ? undefined : out;
}

/**
 * A time budget shared by the requests of one operation (e.g. a lyrics lookup that needs two
 * calls): returns a function giving the milliseconds left, at least 1 (so a late call still gets
 * a tiny timeout and fails as a timeout instead of running unbounded).
 */
export function timeBudget(totalMs: number): () => number {
  const end = Date.now() + totalMs;
  return () => Math.max(1, end - Date.now());
}

/**
 * Normalises provider playlist records: `id` (string or number) and `name` read through the
 * given keys, `trackCount` when the count key holds a number. Records without an id are dropped.
 */
export function mapPlaylists(items: ReadonlyArray<Record<string, unknown>>, keys: { id: string; name: string; count: string }): ProviderPlaylist[] {
  const out: ProviderPlaylist[] = [];
  for (const p of items) {
    const id = str(p[keys.id]);
    if (!id) continue;
    const pl: ProviderPlaylist = { id, name: typeof p[keys.name] === 'string' ? (p[keys.name] as string) : '' };
    const count = num(p[keys.count]);
    if (count !== undefined) pl.trackCount = count;
    out.push(pl);
  }
  return out;
}

/** Splits `items` into consecutive slices of at most `size`. */
export function chunk<T>(items: ReadonlyArray<T>, size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * Offset paging (Jellyfin/Emby `StartIndex`/`Limit`, Plex `X-Plex-Container-Start`/`-Size`): asks
 * `fetchPage(start, pageSize)` for the page at `start` (0, then the number of items seen so far) and
 * yields its items. Stops on an empty page; after a page, stops once `start >= total` when the page
 * reported a total, else when the page was short (fewer than `pageSize` items). Errors propagate.
 */
export async function* pagesByOffset<T>(pageSize: number, fetchPage: (start: number, limit: number) => Promise<{ items: T[]; total: number | undefined }>): AsyncIterable<T[]> {
  for (let start = 0; ; ) {
    const { items, total } = await fetchPage(start, pageSize);
    if (items.length === 0) return;
    yield items;
    start += items.length;
    if (total !== undefined ? start >= total : items.length < pageSize) return;
  }
}

/**
 * Drops tracks already yielded (by id) when several libraries are enumerated one after the other
 * and may overlap. Holds one string per track id (about 10 MB per 100k ids).
 */
export async function* dedupeTracks(pages: AsyncIterable<ProviderTrack[]>, enabled: boolean): AsyncIterable<ProviderTrack[]> {
  if (!enabled) {
    yield* pages;
    return;
  }
  const seen = new Set<string>();
  for await (const page of pages) {
    const fresh = page.filter((t) => {
      if (seen.has(t.id)) return false;
      seen.add(t.id);
      return true;
    });
    if (fresh.length) yield fresh;
  }
}

/** An album as a recent-albums listing gives it: id and when it was added (ISO-8601 or epoch seconds as text). */
export interface AddedAlbum {
  id: string;
  /** Added/created time; undefined when the server does not say (sorts as oldest). */
  added?: string;
}

/**
 * The `limit` most recently added albums over several listings (one per library), each already newest
 * first: merged by `added` (newest first; ties and undated albums keep their listing order),
 * de-duplicated by id. Used by every `iterateRecentAlbumTracks` (reference NUM_RECENT_ALBUMS is per
 * server, not per library).
 */
export function newestAlbums(listings: ReadonlyArray<ReadonlyArray<AddedAlbum>>, limit: number): AddedAlbum[] {
  const time = (a: AddedAlbum) => {
    if (a.added === undefined) return -Infinity;
    const t = /^\d+$/.test(a.added) ? Number(a.added) * 1000 : Date.parse(a.added);
    return Number.isFinite(t) ? t : -Infinity;
  };
  const all = listings.flatMap((list, l) => list.map((a, i) => ({ a, t: time(a), l, i })));
  all.sort((x, y) => y.t - x.t || x.i - y.i || x.l - y.l);
  const seen = new Set<string>();
  const out: AddedAlbum[] = [];
  for (const { a } of all) {
    if (out.length >= limit) break;
    if (seen.has(a.id)) continue;
    seen.add(a.id);
    out.push(a);
  }
  return out;
}

/** The libraries (sections, folders) to enumerate one after the other: the filter, or the whole server (undefined). */
/** `track` with `libraryId` set to `library` (unchanged when `library` is undefined). Issue 34. */
export function withLibrary(track: ProviderTrack, library: string | undefined): ProviderTrack {
  if (library !== undefined) track.libraryId = library;
  return track;
}

export function librariesOrAll(filter: ReadonlyArray<string>): Array<string | undefined> {
  return filter.length ? [...filter] : [undefined];
}

/**
 * Every track of several libraries enumerated one after the other (`pages(library)` pages one), with the
 * tracks several libraries share yielded once ({@link dedupeTracks}, only when there are several).
 */
export function tracksOfLibraries<L>(libraries: ReadonlyArray<L>, pages: (library: L) => AsyncIterable<ProviderTrack[]>): AsyncIterable<ProviderTrack[]> {
  async function* all(): AsyncIterable<ProviderTrack[]> {
    for (const library of libraries) yield* pages(library);
  }
  return dedupeTracks(all(), libraries.length > 1);
}

/**
 * Tracks of the `albums` newest albums over several libraries (reference NUM_RECENT_ALBUMS is per
 * server): each library's listing (`listAlbums(library)`, newest first, at most `albums`), merged by
 * {@link newestAlbums}, then `albumTracks(id)` of each, de-duplicated by track id.
 */
export function recentAlbumTracks<L>(
  libraries: ReadonlyArray<L> | (() => Promise<ReadonlyArray<L>>),
  albums: number,
  listAlbums: (library: L) => Promise<AddedAlbum[]>,
  albumTracks: (albumId: string) => AsyncIterable<ProviderTrack[]>,
): AsyncIterable<ProviderTrack[]> {
  async function* all(): AsyncIterable<ProviderTrack[]> {
    const listings: AddedAlbum[][] = [];
    for (const library of typeof libraries === 'function' ? await libraries() : libraries) listings.push(await listAlbums(library));
    for (const album of newestAlbums(listings, albums)) yield* albumTracks(album.id);
  }
  return dedupeTracks(all(), true);
}

/** Steps of a connection test, run in order: probe, libraries, sample. */
export interface ConnectionTestSteps {
  /** Reachability / identity (server name and version where the kind exposes them). */
  probe(): Promise<{ serverName?: string; version?: string }>;
  /** Library list (proves credentials on most kinds). */
  libraries(): Promise<LibraryInfo[]>;
  /** A few tracks, library filter applied where cheap. */
  sample(): Promise<ProviderTrack[]>;
  /** Configured filter ids to check against the library list (omit for path-prefix filters). */
  filterIds?: ReadonlyArray<string>;
}

/**
 * Runs a connection test and folds the outcome into a {@link ConnectionTestResult}. Typed
 * media-server errors become `ok:false` with `errorKind` and a message; any other error is
 * rethrown (it is a bug, not a server condition).
 */
export async function runConnectionTest(steps: ConnectionTestSteps): Promise<ConnectionTestResult> {
  let identity: { serverName?: string; version?: string } = {};
  let libraries: LibraryInfo[] = [];
  try {
    identity = await steps.probe();
    libraries = await steps.libraries();
    const sample = await steps.sample();
    const result: ConnectionTestResult = {
      ok: true,
      ...identity,
      sampleTrackCount: sample.length,
      libraries,
      pathsLookAbsolute: pathsLookAbsolute(sample.map((t) => t.path)),
    };
    const known = new Set(libraries.map((l) => l.id));
    const unknown = (steps.filterIds ?? []).filter((id) => !known.has(id));
    if (unknown.length) {
      result.ok = false;
      result.errorKind = 'not_found';
      result.message = `library filter names libraries the server does not list: ${unknown.join(', ')}`;
    } else if (sample.length === 0) {
      result.message = 'connected, but no tracks were found (check the library filter)';
    }
    return result;
  } catch (err) {
    if (!(err instanceof MediaServerError)) throw err;
    const kind: MediaServerErrorKind = err.kind;
    return {
      ok: false,
      ...identity,
      sampleTrackCount: 0,
      libraries,
      pathsLookAbsolute: false,
      errorKind: kind,
      message: err.message,
    };
  }
}
