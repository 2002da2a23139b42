import { AvailabilityMask } from '@polyphony/vector-engine';
import type { Generation } from './generation';

/**
 * Results limited to the libraries a user's own media-server account can see (issue 34, households).
 *
 * A signed-in user who linked their account on a server and turned on `limit_to_libraries` (registry
 * `PUT /api/me/servers/{id}/account/library-scope`) gets every index answer on that server computed over the songs
 * with at least one file in one of the libraries their account sees now: the server's availability mask intersected
 * with a per-(server, libraries) mask ({@link LibraryFilter}). Everyone else (no linked account, the setting off, the
 * API token, a Lyrion server) is answered over the server's libraries as before, with no call out.
 *
 * Where the facts come from: the registry answers which library ids the account sees (the provider's own call with
 * the account's credentials, cached there 60 s; a media server that does not answer is a 502 the request fails
 * with, never an unlimited answer); the catalogue answers which songs have a file in those libraries
 * (`track_server_map.library_id`, recorded from each provider's listing). Songs whose files have no recorded library
 * yet (before the next sweep or analysis of the server) are left out of a limited answer.
 */
export interface LibraryScopeSource {
  /** Registry `GET /internal/servers/:id/library-scope`. @throws AppError 502 when the media server does not answer. */
  libraryScope(serverId: string, userId: string): Promise<{ limited: boolean; libraries: string[] | null }>;
  /** Catalogue `POST /internal/availability/:serverId/libraries`. */
  libraryItems(serverId: string, libraryIds: readonly string[]): Promise<{ itemIds: string[]; unknownLibrary: number }>;
}

/** How long a user's scope (registry answer) and a library set's songs (catalogue answer) are reused, ms. */
export const LIBRARY_SCOPE_CACHE_MS = 15_000;

/**
 * How long a user's last "not limited" scope still answers when the registry cannot be asked (its database down: the
 * index keeps answering from memory, issue 36), ms. Only for users who had not asked for the limit: for them the answer
 * is the server's libraries, as it was. A user who asked for it is never answered unlimited: their request fails.
 */
export const UNLIMITED_STALE_MS = 600_000;

/**
 * The songs of some libraries of one server: canonical ids, turned into a row mask per index generation on first use
 * (O(songs) once per generation; a request then pays one word-wise AND of the server mask).
 */
export class LibraryFilter {
  private readonly masks = new WeakMap<Generation, AvailabilityMask>();
  /** Server mask snapshot -> its AND with this filter (a server's mask object is reused until its mappings change). */
  private readonly intersections = new WeakMap<AvailabilityMask, AvailabilityMask>();

  constructor(
    readonly serverId: string,
    /** Provider library ids, sorted. */
    readonly libraries: readonly string[],
    private readonly itemIds: readonly string[],
  ) {}

  /** Rows of `gen` whose song has a file in one of the libraries. */
  rowsOf(gen: Generation): AvailabilityMask {
    let m = this.masks.get(gen);
    if (!m) {
      const rows: number[] = [];
      for (const id of this.itemIds) {
        const row = gen.index.rowOf(id);
        if (row >= 0) rows.push(row);
      }
      m = AvailabilityMask.fromRows(gen.index.size, rows);
      this.masks.set(gen, m);
    }
    return m;
  }

  /** `server` AND the rows of `gen` in the libraries, kept per server mask snapshot (one AND per mapping change, not per request). */
  within(gen: Generation, server: AvailabilityMask): AvailabilityMask {
    let m = this.intersections.get(server);
    if (!m) {
      m = intersectMasks(server, this.rowsOf(gen));
      this.intersections.set(server, m);
    }
    return m;
  }
}

/** The intersection of two masks over the same rows (word-wise AND). */
export function intersectMasks(a: AvailabilityMask, b: AvailabilityMask): AvailabilityMask {
  if (a.size !== b.size) throw new RangeError(`masks over ${a.size} and ${b.size} rows`);
  const words = a.toWords().slice();
  for (let i = 0; i < words.length; i++) words[i]! &= b.wordAt(i);
  return AvailabilityMask.fromWords(a.size, words);
}

/**
 * Per-request library filters (see the file comment), with both answers cached {@link LIBRARY_SCOPE_CACHE_MS}: a
 * library shared or unshared on the media server, or a sweep that records libraries, shows within the two caches'
 * lifetimes (registry 60 s + this one).
 */
export class LibraryScopes {
  private readonly scopes = new Map<string, { at: number; value: Promise<{ limited: boolean; libraries: string[] | null }> }>();
  /** (user, server) -> when the registry last answered "not limited" (see {@link UNLIMITED_STALE_MS}). */
  private readonly unlimitedAt = new Map<string, number>();
  private readonly filters = new Map<string, { at: number; value: Promise<LibraryFilter> }>();

  constructor(
    private readonly source: LibraryScopeSource,
    private readonly ttlMs = LIBRARY_SCOPE_CACHE_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The filter of a request of `userId` (a signed-in user) on `serverId`, or undefined when the user's answers are not
   * limited there.
   * @throws AppError 502 (from the registry) when the user asked for the limit and the media server does not say which
   *   libraries the account sees
   */
  async filterFor(serverId: string, userId: string): Promise<LibraryFilter | undefined> {
    const key = `${userId}\u0000${serverId}`;
    let scope;
    try {
      scope = await this.cached(this.scopes, key, () => this.source.libraryScope(serverId, userId));
    } catch (err) {
      const at = this.unlimitedAt.get(key);
      if (at !== undefined && this.now() - at < UNLIMITED_STALE_MS) return undefined;
      throw err;
    }
    if (scope.limited && scope.libraries === null) return undefined; // the account sees the whole server: no filter
    if (!scope.limited || scope.libraries === null) {
      this.unlimitedAt.set(key, this.now());
      if (this.unlimitedAt.size > 10_000) this.unlimitedAt.delete(this.unlimitedAt.keys().next().value as string);
      return undefined;
    }
    this.unlimitedAt.delete(key);
    const libraries = [...scope.libraries].sort();
    return this.cached(this.filters, `${serverId}\u0000${libraries.join('\u0001')}`, async () => {
      const { itemIds } = await this.source.libraryItems(serverId, libraries);
      return new LibraryFilter(serverId, libraries, itemIds);
    });
  }

  /** A failed answer is not kept (the next request asks again). */
  private cached<T>(map: Map<string, { at: number; value: Promise<T> }>, key: string, load: () => Promise<T>): Promise<T> {
    const t = this.now();
    const hit = map.get(key);
    if (hit && t - hit.at < this.ttlMs) return hit.value;
    const value = load();
    map.set(key, { at: t, value });
    value.catch(() => {
      if (map.get(key)?.value === value) map.delete(key);
    });
    if (map.size > 10_000) map.delete(map.keys().next().value as string);
    return value;
  }
}
