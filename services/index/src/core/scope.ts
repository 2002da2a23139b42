import type { TrackRowDto } from '@polyphony/contracts';
import type { TrackMeta, TrackReader } from './ports';
import type { Generation } from './generation';
import type { AvailabilityMask } from '@polyphony/vector-engine';
import type { Request } from 'express';
import type { TrackTitleArtist } from '../maps/track-meta-store';
import type { LibraryFilter, LibraryScopes } from './library-scope';

/** Shared collaborators of every request scope. */
export interface ScopeDeps {
  tracks: TrackReader;
  /** Per-user library limits (issue 34); absent = never limited (tests, tools). */
  libraries?: LibraryScopes;
}

/**
 * The scope of one HTTP request over `gen`: the server the gateway resolved, the signed-in user as `viewer` when
 * `withViewer` (households: private playlists), and, for a signed-in user who asked for it, the limit to the libraries
 * their own account on the server sees (core/library-scope.ts).
 * @throws AppError 502 when that limit was asked for and the media server does not say which libraries the account sees
 */
export async function requestScope(gen: Generation, req: Request, deps: ScopeDeps, withViewer = false): Promise<RequestScope> {
  const id = req.identity;
  const user = id?.via === 'cookie' ? id.sub : undefined;
  const filter = user && id?.serverId && deps.libraries ? await deps.libraries.filterFor(id.serverId, user) : undefined;
  return new RequestScope(gen, id?.serverId, deps, withViewer ? user : undefined, filter);
}

/** A ranked candidate: a row of the scope's generation and its distance. */
export interface RankedRow {
  row: number;
  distance: number;
}

/**
 * One request's view of the index (spec "Selecting a server at runtime" 5-7): the generation snapshot
 * taken when the request started, the selected server (resolved by the gateway; undefined when no server
 * is configured), its availability mask, and the two id translations, all answered from the generation's
 * in-memory maps (`gen.maps`, kept current from the catalogue's mapping log; issue 19), so a request makes
 * no call to the catalogue:
 *  input  provider id of the server -> canonical id (canonical and unknown ids pass through);
 *  output canonical id -> provider id of the server (absent = not on the server: the row is dropped).
 * Output never contains a canonical id or another server's id: rows are emitted only under the id the
 * maps hold for this server. The display metadata of result rows comes from the generation's in-memory
 * store (`gen.meta`), so a similar-songs request by item id does no I/O.
 */
export class RequestScope {
  /** Per-request cache filled by `metaOf` / `metaAt`, by row (null = known to be absent). */
  private readonly metaCache = new Map<number, TrackMeta | null>();
  private maskSnapshot?: AvailabilityMask;

  constructor(
    readonly gen: Generation,
    readonly serverId: string | undefined,
    private readonly deps: ScopeDeps,
    /** The signed-in user the request acts for (households: their private playlists are theirs alone); absent for others. */
    readonly viewer?: string,
    /** The libraries the answer is limited to (issue 34: the user's own account's libraries); absent = the server's. */
    readonly libraryFilter?: LibraryFilter,
  ) {}

  /** Rows of the library filter over this generation (undefined when not limited). */
  private libraryRows?: AvailabilityMask;

  /** False for a row outside the request's library filter (always true when not limited). */
  inLibraries(row: number): boolean {
    if (!this.libraryFilter) return true;
    this.libraryRows ??= this.libraryFilter.rowsOf(this.gen);
    return this.libraryRows.has(row);
  }

  /**
   * The selected server's availability mask over this generation, taken once per request (a mapping
   * change during the request does not change the rows it ranks over). Async for the callers' convenience.
   */
  mask(): Promise<AvailabilityMask> {
    return Promise.resolve(this.maskNow());
  }

  /** Synchronous form of `mask`. */
  maskNow(): AvailabilityMask {
    if (!this.maskSnapshot) {
      const server = this.gen.maps.mask(this.serverId);
      if (this.libraryFilter) {
        this.maskSnapshot = this.libraryFilter.within(this.gen, server);
      } else {
        this.maskSnapshot = server;
      }
    }
    return this.maskSnapshot;
  }

  /** Canonical ids of the given input ids (same order): provider ids of the server are translated, others pass through. */
  async resolveInput(ids: readonly string[]): Promise<string[]> {
    return ids.map((id) => {
      const row = this.gen.maps.rowOfProvider(this.serverId, id);
      return row >= 0 ? this.gen.index.idOf(row) : id;
    });
  }

  /** Rows of the given input ids in this generation (-1 when unknown). */
  async rowsOfInput(ids: readonly string[]): Promise<number[]> {
    return ids.map((id) => this.rowOfInput(id));
  }

  /** Synchronous `rowsOfInput` of one id: a provider id of the server, else a canonical id; -1 when unknown. */
  rowOfInput(id: string): number {
    const row = this.gen.maps.rowOfProvider(this.serverId, id);
    return row >= 0 ? row : this.gen.index.rowOf(id);
  }

  /** Provider ids on the selected server of the given canonical ids; absent = not available there. */
  async mapOutput(canonicalIds: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const id of canonicalIds) {
      const p = this.providerOf(id);
      if (p !== undefined) out.set(id, p);
    }
    return out;
  }

  /**
   * Display metadata of canonical ids, from the generation's in-memory store (`gen.meta`, issue 19): no
   * database query. Ids outside the generation are absent. Async for the callers' convenience.
   */
  metadata(canonicalIds: readonly string[]): Promise<Map<string, TrackMeta>> {
    const out = new Map<string, TrackMeta>();
    for (const id of canonicalIds) {
      const m = this.metaOfRow(this.gen.index.rowOf(id), id);
      if (m) out.set(id, m);
    }
    return Promise.resolve(out);
  }

  /** Metadata of a row of this generation (undefined when it holds none). */
  metaOfRow(row: number, canonicalId: string): TrackMeta | undefined {
    return row < 0 ? undefined : this.gen.meta.get(row, canonicalId);
  }

  /** Canonical id of a row. */
  idOf(row: number): string {
    return this.gen.index.idOf(row);
  }

  /**
   * Metadata of an id (undefined when unknown), read from the generation's store on first use and kept for
   * the request, so one request sees one value per song even if a catalogue change lands meanwhile.
   */
  metaOf(canonicalId: string): TrackMeta | undefined {
    const row = this.gen.index.rowOf(canonicalId);
    return row < 0 ? undefined : this.metaAt(row, canonicalId);
  }

  /**
   * `metaOf` for a row of this generation (same per-request cache), without the id -> row hash look-up of
   * `metaOf(idOf(row))`; the canonical id is decoded only on the row's first read. `canonicalId`, when the
   * caller has it, must be the row's (`idOf(row)`).
   */
  metaAt(row: number, canonicalId?: string): TrackMeta | undefined {
    let m = this.metaCache.get(row);
    if (m === undefined) {
      m = this.metaOfRow(row, canonicalId ?? this.idOf(row)) ?? null;
      this.metaCache.set(row, m);
    }
    return m ?? undefined;
  }

  /**
   * Title and artist of a row (undefined when it holds no metadata), for the similar-songs filters: the full
   * record already read for this request when there is one, else the store's title/artist-only read (no
   * album, mood or canonical-id decoding; most filtered candidates are rejected, issue 19). Not cached: a row is
   * compared once per pool, and the rows kept are read in full by `present` in the same synchronous step.
   */
  titleArtistAt(row: number): TrackTitleArtist | undefined {
    const m = this.metaCache.get(row);
    if (m !== undefined) return m ?? undefined;
    return this.gen.meta.titleArtist(row);
  }

  /** Provider id on the selected server of a canonical id (undefined when not on it, outside the request's libraries, or not in the generation). */
  providerOf(canonicalId: string): string | undefined {
    const row = this.gen.index.rowOf(canonicalId);
    return row < 0 || !this.inLibraries(row) ? undefined : this.gen.maps.providerOf(this.serverId, row);
  }

  /**
   * Result rows for ranked rows, in the given order: metadata from the catalogue copy, ids mapped to the
   * selected server; rows without a provider id there (or without metadata) are dropped.
   */
  async present(ranked: readonly RankedRow[]): Promise<TrackRowDto[]> {
    return this.presentNow(ranked);
  }

  /** Synchronous `present` (no I/O): for a caller already in its own async step, one promise less per request. */
  presentNow(ranked: readonly RankedRow[]): TrackRowDto[] {
    const out: TrackRowDto[] = [];
    for (const r of ranked) {
      const provider = this.gen.maps.providerOf(this.serverId, r.row);
      if (!provider || !this.inLibraries(r.row)) continue;
      const m = this.metaAt(r.row);
      if (!m) continue;
      out.push(toRow(provider, m, r.distance));
    }
    return out;
  }

  /** Like `present`, keeping each surviving row's index row next to its DTO. No I/O. */
  async presentRanked(ranked: readonly RankedRow[]): Promise<Array<{ row: number; dto: TrackRowDto }>> {
    const out: Array<{ row: number; dto: TrackRowDto }> = [];
    for (const r of ranked) {
      const provider = this.gen.maps.providerOf(this.serverId, r.row);
      if (!provider || !this.inLibraries(r.row)) continue;
      const m = this.metaAt(r.row);
      if (!m) continue;
      out.push({ row: r.row, dto: toRow(provider, m, r.distance) });
    }
    return Promise.resolve(out);
  }
}

/** The plugin row shape (`author` = track artist) with the reference's mood fields; distance rounded to 6 decimals, never null. */
export function toRow(providerId: string, m: TrackMeta, distance: number): TrackRowDto {
  return {
    item_id: providerId,
    title: m.title,
    author: m.artist,
    album: m.album,
    album_artist: m.albumArtist,
    distance: roundDistance(distance),
    mood_vector: m.moodVector,
    other_features: m.otherFeatures,
  };
}

/** Distances are reported with 6 decimals (float32 vectors carry about 7 significant digits). */
export function roundDistance(d: number): number {
  if (!Number.isFinite(d)) return 2;
  return Math.max(0, Math.round(d * 1e6) / 1e6);
}
