import type { CoverageCounts, CoverageStore } from './ports';

/** How long probe counts are reused (ms). */
export const PROBE_CACHE_MS = 5_000;

/**
 * Song counts behind the feature probes (all songs, with learned tags, with lyrics), over the catalogue or one server,
 * reused for PROBE_CACHE_MS so a burst of client start-ups costs one scan (a failed count is not kept).
 */
export class CoverageService {
  private readonly cache = new Map<string, { at: number; value: Promise<CoverageCounts> }>();

  constructor(
    private readonly store: CoverageStore,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts over the whole catalogue, or over the songs mapped on `serverId`. */
  counts(serverId?: string): Promise<CoverageCounts> {
    const key = serverId ?? '';
    const hit = this.cache.get(key);
    if (hit && this.now() - hit.at < PROBE_CACHE_MS) return hit.value;
    const value = serverId === undefined ? this.store.global() : this.store.forServer(serverId);
    value.catch(() => this.cache.delete(key));
    if (this.cache.size > 100) this.cache.clear();
    this.cache.set(key, { at: this.now(), value });
    return value;
  }
}
