import type { TrackRowDto } from '@polyphony/contracts';
import { UpstreamUnavailableError } from '@polyphony/platform';
import type { TrackMeta, TrackRepository } from '../store/track.repository';
import type { AvailabilityCache } from './availability';
import type { Generation } from './generation';
import type { AvailabilityMask } from './ivf/availability-mask';
import type { CataloguePort } from './ports';

/** Largest id list per catalogue call (the contract's `.max(50_000)`). */
export const MAX_IDS_PER_CALL = 50_000;

/** Shared collaborators of every request scope. */
export interface ScopeDeps {
  catalogue: CataloguePort;
  availability: AvailabilityCache;
  tracks: TrackRepository;
}

/** A ranked candidate: a row of the scope's generation and its distance. */
export interface RankedRow {
  row: number;
  distance: number;
}

/**
 * One request's view of the index (spec "Selecting a server at runtime" 5-7): the generation snapshot
 * taken when the request started, the selected server (resolved by the gateway; undefined when no server
 * is configured), its availability mask, and the two id translations, each one batched catalogue call:
 *  input  provider id of the server -> canonical id (canonical and unknown ids pass through);
 *  output canonical id -> provider id of the server (absent = not on the server: the row is dropped).
 * Output never contains a canonical id or another server's id: rows are emitted only under the id
 * the catalogue returned for this server.
 */
export class RequestScope {
  private maskPromise?: Promise<AvailabilityMask>;
  /** Per-request caches filled by `describe` (null = known to be absent). */
  private readonly metaCache = new Map<string, TrackMeta | null>();
  private readonly mapCache = new Map<string, string | null>();

  constructor(
    readonly gen: Generation,
    readonly serverId: string | undefined,
    private readonly deps: ScopeDeps,
  ) {}

  /** The selected server's availability mask over this generation (loaded once per request). */
  mask(): Promise<AvailabilityMask> {
    this.maskPromise ??= this.deps.availability.maskFor(this.serverId, this.gen);
    return this.maskPromise;
  }

  /** Canonical ids of the given input ids (same order), one catalogue call. */
  async resolveInput(ids: readonly string[]): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < ids.length; i += MAX_IDS_PER_CALL) {
      const chunk = ids.slice(i, i + MAX_IDS_PER_CALL);
      const resolved = await this.deps.catalogue.resolveInput(this.serverId, chunk);
      if (resolved.length !== chunk.length) throw new UpstreamUnavailableError(`resolve-input answered ${resolved.length} ids for ${chunk.length}`, 502);
      out.push(...resolved);
    }
    return out;
  }

  /** Rows of the given input ids in this generation (-1 when unknown), via resolveInput. */
  async rowsOfInput(ids: readonly string[]): Promise<number[]> {
    const canonical = await this.resolveInput(ids);
    return canonical.map((id) => this.gen.index.rowOf(id));
  }

  /** Provider ids on the selected server of the given canonical ids; absent = not available there. */
  async mapOutput(canonicalIds: readonly string[]): Promise<Map<string, string>> {
    if (this.serverId === undefined || canonicalIds.length === 0) return new Map();
    const unique = [...new Set(canonicalIds)];
    const out = new Map<string, string>();
    // The internal API takes at most MAX_IDS_PER_CALL ids per call.
    for (let i = 0; i < unique.length; i += MAX_IDS_PER_CALL) {
      const chunk = unique.slice(i, i + MAX_IDS_PER_CALL);
      const map = await this.deps.catalogue.mapOutput(this.serverId, chunk);
      for (const id of chunk) {
        const p = map[id];
        if (typeof p === 'string' && p.length > 0) out.set(id, p);
      }
    }
    return out;
  }

  /** Display metadata of canonical ids. */
  metadata(canonicalIds: readonly string[]): Promise<Map<string, TrackMeta>> {
    return this.deps.tracks.metadata(canonicalIds);
  }

  /** Canonical id of a row. */
  idOf(row: number): string {
    return this.gen.index.idOf(row);
  }

  /**
   * Fetches, for the ids not seen yet in this request, their metadata (database) and their provider ids
   * on the selected server (catalogue) concurrently, and keeps both for the rest of the request, so a
   * request costs one metadata query and one output-mapping call per batch of new candidates.
   */
  async describe(canonicalIds: readonly string[]): Promise<void> {
    const needMeta = [...new Set(canonicalIds.filter((id) => !this.metaCache.has(id)))];
    const needMap = [...new Set(canonicalIds.filter((id) => !this.mapCache.has(id)))];
    const [meta, mapped] = await Promise.all([
      needMeta.length ? this.metadata(needMeta) : Promise.resolve(new Map<string, TrackMeta>()),
      needMap.length ? this.mapOutput(needMap) : Promise.resolve(new Map<string, string>()),
    ]);
    for (const id of needMeta) this.metaCache.set(id, meta.get(id) ?? null);
    for (const id of needMap) this.mapCache.set(id, mapped.get(id) ?? null);
  }

  /** Metadata of an id fetched by `describe` (undefined when unknown or not fetched). */
  metaOf(canonicalId: string): TrackMeta | undefined {
    return this.metaCache.get(canonicalId) ?? undefined;
  }

  /** Provider id on the selected server of an id fetched by `describe` (undefined when not on it or not fetched). */
  providerOf(canonicalId: string): string | undefined {
    return this.mapCache.get(canonicalId) ?? undefined;
  }

  /**
   * Result rows for ranked rows, in the given order: metadata from the catalogue copy, ids mapped to the
   * selected server; rows without a provider id there (or without metadata) are dropped.
   */
  async present(ranked: readonly RankedRow[]): Promise<TrackRowDto[]> {
    return (await this.presentRanked(ranked)).map((p) => p.dto);
  }

  /** Like `present`, keeping each surviving row's index row next to its DTO. At most one metadata and one mapping call. */
  async presentRanked(ranked: readonly RankedRow[]): Promise<Array<{ row: number; dto: TrackRowDto }>> {
    const ids = ranked.map((r) => this.idOf(r.row));
    await this.describe(ids);
    const out: Array<{ row: number; dto: TrackRowDto }> = [];
    ranked.forEach((r, i) => {
      const id = ids[i]!;
      const provider = this.providerOf(id);
      const m = this.metaOf(id);
      if (!provider || !m) return;
      out.push({ row: r.row, dto: toRow(provider, m, r.distance) });
    });
    return out;
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
