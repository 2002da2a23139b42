import type { MapQuery, MapResponse } from '@polyphony/contracts';
import type { Generation } from '../core/generation';
import type { AvailabilityMask } from '@polyphony/vector-engine';
import { hashString32 } from '@polyphony/vectors';
import type { RequestScope } from '../core/scope';

/** Seed of the hash that picks the 25/50/75 % subsets (fixed, so a subset is stable per generation). */
const MAP_SUBSET_SEED = 0x6d61_7070;
/** Responses kept in memory (per server, generation and subset): the four percent buckets of four servers. */
const CACHE_ENTRIES = 16;
/** The percent buckets the reference caches and `rebuild` recomputes. */
export const MAP_BUCKETS = [25, 50, 75, 100] as const;

interface CacheEntry {
  gen: Generation;
  mask: AvailabilityMask;
  response: MapResponse;
  /** Size of the response as JSON (bytes), for the cache status. */
  jsonBytes: number;
}

/** Cached map answers of one server by percent bucket: `{count, json_bytes, projection}`. */
export type MapBuckets = Record<string, { count: number; json_bytes: number; projection: string }>;

/**
 * The 2-D map (reference `/api/map`): the coordinates computed once per generation at build time (UMAP,
 * umap-projection.ts, from UMAP_MIN_SAMPLES songs on; PCA, projection.ts, below; persisted in `index.map_projections`), restricted to the songs available on the selected
 * server and shown under its ids. `percent` (25/50/75/100, default 100) keeps the songs whose seeded id
 * hash falls in the first `percent` of 100 buckets; `n` keeps the n available songs with the smallest hash.
 * Whole responses are cached per (server, generation, subset) and recomputed when the server's
 * availability mask changes.
 */
export class MapService {
  private readonly cache = new Map<string, CacheEntry>();

  /**
   * The percent buckets cached for the scope's server and still current (same generation and mask), keyed
   * '25'/'50'/'75'/'100' (reference `map_cache_status`); `?percent=` absent counts as 100.
   */
  async status(scope: RequestScope): Promise<MapBuckets> {
    const mask = await scope.mask();
    const out: MapBuckets = {};
    for (const p of MAP_BUCKETS) {
      const hit = this.cache.get(bucketKey(scope.serverId, p)) ?? (p === 100 ? this.cache.get(`${scope.serverId ?? ''}||`) : undefined);
      if (hit && hit.gen === scope.gen && hit.mask === mask) out[String(p)] = { count: hit.response.items.length, json_bytes: hit.jsonBytes, projection: hit.response.projection };
    }
    return out;
  }

  /** Drops the scope's server's cached answers and computes the four percent buckets again (reference `rebuild_map_cache`). */
  async rebuild(scope: RequestScope): Promise<MapBuckets> {
    const prefix = `${scope.serverId ?? ''}|`;
    for (const key of [...this.cache.keys()]) if (key.startsWith(prefix)) this.cache.delete(key);
    for (const p of MAP_BUCKETS) await this.map(scope, { percent: p });
    return this.status(scope);
  }

  async map(scope: RequestScope, q: MapQuery): Promise<MapResponse> {
    const gen = scope.gen;
    const mask = await scope.mask();
    const key = `${scope.serverId ?? ''}|${q.percent ?? ''}|${q.n ?? ''}`;
    const hit = this.cache.get(key);
    if (hit && hit.gen === gen && hit.mask === mask) return hit.response;
    let rows: number[] = [];
    if (q.n !== undefined) {
      const keyed: Array<{ row: number; h: number }> = [];
      mask.forEachRow((row) => keyed.push({ row, h: hashString32(gen.index.idOf(row), MAP_SUBSET_SEED) }));
      keyed.sort((a, b) => a.h - b.h || a.row - b.row);
      rows = keyed.slice(0, q.n).map((k) => k.row);
    } else {
      const percent = q.percent ?? 100;
      mask.forEachRow((row) => {
        if (percent >= 100 || hashString32(gen.index.idOf(row), MAP_SUBSET_SEED) % 100 < percent) rows.push(row);
      });
    }
    const ids = rows.map((r) => gen.index.idOf(r));
    const [meta, mapped] = await Promise.all([scope.metadata(ids), scope.mapOutput(ids)]);
    const items: MapResponse['items'] = [];
    rows.forEach((row, i) => {
      const id = ids[i]!;
      const p = mapped.get(id);
      const m = meta.get(id);
      if (!p || !m || gen.coords.length < 2 * (row + 1)) return;
      items.push({
        item_id: p,
        title: m.title,
        author: m.artist,
        embedding_2d: [round4(gen.coords[2 * row]!), round4(gen.coords[2 * row + 1]!)],
        mood_vector: m.moodVector,
        other_features: m.otherFeatures,
        tempo: m.tempo ?? null,
        energy: m.energy ?? null,
      });
    });
    const response: MapResponse = { items, projection: gen.mapMethod };
    this.cache.delete(key);
    this.cache.set(key, { gen, mask, response, jsonBytes: Buffer.byteLength(JSON.stringify(response)) });
    while (this.cache.size > CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
    return response;
  }
}

/** Cache key of a percent bucket (what `map` uses for `?percent=p`). */
function bucketKey(serverId: string | undefined, percent: number): string {
  return `${serverId ?? ''}|${percent}|`;
}

function round4(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}
