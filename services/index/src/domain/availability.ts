import type { Logger } from '@polyphony/platform';
import type { Generation } from './generation';
import { AvailabilityMask } from './ivf/availability-mask';
import type { CataloguePort } from './ports';

/** Tunables of the availability cache. */
export interface AvailabilityOptions {
  /**
   * After an invalidation, a mask loaded less than this many ms ago is still served (and reloaded on
   * the first request after the interval), so a burst of mapping changes during an analysis costs at
   * most one reload per interval per server. Default 2000; 0 = always reload after an invalidation.
   */
  minReloadIntervalMs?: number;
  /**
   * Safety net if an invalidation event is lost: a mask older than this is revalidated with the catalogue's
   * cheap change counter (`GET /internal/availability/:serverId/version`) and reloaded only when it moved.
   * Default 30000 (the reference's mask cache lifetime).
   */
  maxAgeMs?: number;
}

interface Entry {
  generation: number;
  mask: AvailabilityMask;
  loadedAt: number;
  stale: boolean;
  /** The catalogue's change counter when the mask was loaded. */
  version: number;
}

/**
 * Availability masks per (server, index generation): bit `row` set when the canonical id of that row is
 * mapped on the server (spec "Shared index" 1). Loaded from the catalogue's
 * `GET /internal/availability/:serverId`, kept until the server's mappings change
 * (`catalogue.mapping.changed.v1` -> `invalidate`) or the generation changes. Concurrent loads of the
 * same mask are coalesced. Memory: size/8 bytes per server (125 KB at 1M songs).
 *
 * Serving a slightly stale mask is safe for the "never return an unavailable track" rule: every result
 * still goes through the catalogue's output mapping, which drops tracks no longer on the server.
 */
export class AvailabilityCache {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<AvailabilityMask>>();
  /** Bumped by every invalidation of a server, so a load that started before it is stored as stale. */
  private readonly epochs = new Map<string, number>();
  private readonly empty = new WeakMap<Generation, AvailabilityMask>();
  private readonly minReloadIntervalMs: number;
  private readonly maxAgeMs: number;
  /** Loads from the catalogue so far (for tests and metrics). */
  loads = 0;
  /** Version checks of aged masks so far. */
  revalidations = 0;

  constructor(
    private readonly catalogue: CataloguePort,
    private readonly logger: Logger,
    options: AvailabilityOptions = {},
  ) {
    this.minReloadIntervalMs = options.minReloadIntervalMs ?? 2000;
    this.maxAgeMs = options.maxAgeMs ?? 30_000;
  }

  /**
   * Mask of `serverId` over the rows of `gen`. Without a server (none configured) nothing is available.
   * @throws UpstreamUnavailableError (via the catalogue port) when the catalogue cannot be reached and no mask is cached
   */
  async maskFor(serverId: string | undefined, gen: Generation): Promise<AvailabilityMask> {
    if (serverId === undefined) {
      let m = this.empty.get(gen);
      if (!m) this.empty.set(gen, (m = AvailabilityMask.fromRows(gen.index.size, [])));
      return m;
    }
    const e = this.entries.get(serverId);
    const now = Date.now();
    if (e && e.generation === gen.generation) {
      const age = now - e.loadedAt;
      if (!e.stale && age < this.maxAgeMs) return e.mask;
      if (e.stale && age < this.minReloadIntervalMs) return e.mask;
      if (!e.stale && (await this.unchanged(serverId, e))) return e.mask;
    }
    return this.load(serverId, gen);
  }

  /** Drops the cached mask of one server, or of every server when `serverId` is undefined. */
  invalidate(serverId?: string): void {
    const targets = serverId === undefined ? [...new Set([...this.entries.keys(), ...this.epochs.keys()])] : [serverId];
    for (const s of targets) {
      this.epochs.set(s, (this.epochs.get(s) ?? 0) + 1);
      const e = this.entries.get(s);
      if (e) e.stale = true;
    }
  }

  /** Forgets masks of older generations (called on every generation swap). */
  retain(gen: Generation): void {
    for (const [s, e] of this.entries) if (e.generation !== gen.generation) this.entries.delete(s);
  }

  /** True (and the entry's age reset) when the catalogue's change counter still equals the entry's. */
  private async unchanged(serverId: string, e: Entry): Promise<boolean> {
    const epoch = this.epochs.get(serverId) ?? 0;
    try {
      const version = await this.catalogue.availabilityVersion(serverId);
      this.revalidations++;
      if (version !== e.version || (this.epochs.get(serverId) ?? 0) !== epoch) return false;
      e.loadedAt = Date.now();
      return true;
    } catch {
      return false;
    }
  }

  private load(serverId: string, gen: Generation): Promise<AvailabilityMask> {
    const key = `${serverId}\u0000${gen.generation}`;
    const running = this.loading.get(key);
    if (running) return running;
    const epoch = this.epochs.get(serverId) ?? 0;
    const p = (async () => {
      const started = Date.now();
      const res = await this.catalogue.availability(serverId);
      this.loads++;
      const mask = gen.index.maskFromIds(res.itemIds);
      const stale = (this.epochs.get(serverId) ?? 0) !== epoch;
      this.entries.set(serverId, { generation: gen.generation, mask, loadedAt: started, stale, version: res.version });
      this.logger.debug('availability mask loaded', { serverId, generation: gen.generation, available: mask.count, size: mask.size, version: res.version });
      return mask;
    })();
    this.loading.set(key, p);
    const clear = () => {
      if (this.loading.get(key) === p) this.loading.delete(key);
    };
    p.then(clear, clear);
    return p;
  }
}
