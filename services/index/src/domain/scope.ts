import type { TrackRowDto } from '@polyphony/contracts';
import type { TrackMeta, TrackRepository } from '../store/track.repository';
import type { Generation } from './generation';
import type { AvailabilityMask } from './ivf/availability-mask';

/** Shared collaborators of every request scope. */
export interface ScopeDeps {
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
 * is configured), its availability mask, and the two id translations, all answered from the generation's
 * in-memory maps (`gen.maps`, kept current from the catalogue's mapping log; issue 19), so a request makes
 * no call to the catalogue:
 *  input  provider id of the server -> canonical id (canonical and unknown ids pass through);
 *  output canonical id -> provider id of the server (absent = not on the server: the row is dropped).
 * Output never contains a canonical id or another server's id: rows are emitted only under the id the
 * maps hold for this server. The one remaining I/O is the display metadata of the result rows: one
 * batched query per request (`describe`).
 */
export class RequestScope {
  /** Per-request cache filled by `describe` (null = known to be absent). */
  private readonly metaCache = new Map<string, TrackMeta | null>();
  private maskSnapshot?: AvailabilityMask;

  constructor(
    readonly gen: Generation,
    readonly serverId: string | undefined,
    private readonly deps: ScopeDeps,
  ) {}

  /**
   * The selected server's availability mask over this generation, taken once per request (a mapping
   * change during the request does not change the rows it ranks over). Async for the callers' convenience.
   */
  mask(): Promise<AvailabilityMask> {
    return Promise.resolve(this.maskNow());
  }

  /** Synchronous form of `mask`. */
  maskNow(): AvailabilityMask {
    this.maskSnapshot ??= this.gen.maps.mask(this.serverId);
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
    return ids.map((id) => {
      const row = this.gen.maps.rowOfProvider(this.serverId, id);
      return row >= 0 ? row : this.gen.index.rowOf(id);
    });
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

  /** Display metadata of canonical ids (one query). */
  metadata(canonicalIds: readonly string[]): Promise<Map<string, TrackMeta>> {
    return this.deps.tracks.metadata(canonicalIds);
  }

  /** Canonical id of a row. */
  idOf(row: number): string {
    return this.gen.index.idOf(row);
  }

  /** Fetches the metadata of the ids not seen yet in this request (one batched query) and keeps it for the request. */
  async describe(canonicalIds: readonly string[]): Promise<void> {
    const needMeta = [...new Set(canonicalIds.filter((id) => !this.metaCache.has(id)))];
    if (needMeta.length === 0) return;
    const meta = await this.metadata(needMeta);
    for (const id of needMeta) this.metaCache.set(id, meta.get(id) ?? null);
  }

  /** Metadata of an id fetched by `describe` (undefined when unknown or not fetched). */
  metaOf(canonicalId: string): TrackMeta | undefined {
    return this.metaCache.get(canonicalId) ?? undefined;
  }

  /** Provider id on the selected server of a canonical id (undefined when not on it or not in the generation). */
  providerOf(canonicalId: string): string | undefined {
    const row = this.gen.index.rowOf(canonicalId);
    return row < 0 ? undefined : this.gen.maps.providerOf(this.serverId, row);
  }

  /**
   * Result rows for ranked rows, in the given order: metadata from the catalogue copy, ids mapped to the
   * selected server; rows without a provider id there (or without metadata) are dropped.
   */
  async present(ranked: readonly RankedRow[]): Promise<TrackRowDto[]> {
    return (await this.presentRanked(ranked)).map((p) => p.dto);
  }

  /** Like `present`, keeping each surviving row's index row next to its DTO. At most one metadata query. */
  async presentRanked(ranked: readonly RankedRow[]): Promise<Array<{ row: number; dto: TrackRowDto }>> {
    const ids = ranked.map((r) => this.idOf(r.row));
    await this.describe(ids);
    const out: Array<{ row: number; dto: TrackRowDto }> = [];
    ranked.forEach((r, i) => {
      const id = ids[i]!;
      const provider = this.gen.maps.providerOf(this.serverId, r.row);
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
