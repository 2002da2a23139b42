import type { Logger } from '@polyphony/platform';
import { AvailabilityMask, type IvfIndex } from '@polyphony/vector-engine';
import { ServerMap } from './server-map';

/** One mapping as the catalogue lists it: [serverId, providerId, itemId | null (removed)]. */
export type MappingTriple = readonly [string, string, string | null];

/** What the maps need from the catalogue (its internal API, shared/contracts/src/catalogue.ts). */
export interface MappingSource {
  /** GET /internal/mappings/rows: one keyset page of every mapping, with the log position read first. */
  mappingRows(after: string | null): Promise<{ seq: number; rows: Array<[string, string, string]>; next: string | null }>;
  /** GET /internal/mappings/changes: log entries after `after`, in commit order. */
  mappingChanges(after: number): Promise<{ reset: boolean; seq: number; more: boolean; changes: Array<[number, string, string, string | null]> }>;
}

/**
 * Provider <-> canonical maps and availability of every server over one index generation (issue 19,
 * spec "Selecting a server at runtime" 5-7 and "Shared index" 1), kept current from the catalogue's
 * mapping log: `seq` is the log position applied so far. Requests read it without any call out.
 */
export class GenerationMaps {
  private readonly servers = new Map<string, ServerMap>();
  private readonly emptyMask: AvailabilityMask;
  /** Mapping-log position applied (0 = none). */
  seq = 0;
  /** Time the maps were last known to be at the catalogue's head (ms since epoch; 0 = never). */
  currentAt = 0;

  constructor(readonly index: IvfIndex) {
    this.emptyMask = AvailabilityMask.fromWords(index.size, new Uint32Array(Math.ceil(index.size / 32)));
  }

  /** Applies one mapping (itemId null = removed); ids outside the generation drop the provider id. */
  apply(serverId: string, providerId: string, itemId: string | null): void {
    let m = this.servers.get(serverId);
    if (itemId === null) {
      m?.remove(providerId);
      return;
    }
    if (!m) this.servers.set(serverId, (m = new ServerMap(this.index.size)));
    m.set(providerId, this.index.rowOf(itemId));
  }

  /** Availability mask of the server (empty for an unknown server or none). */
  mask(serverId: string | undefined): AvailabilityMask {
    const m = serverId === undefined ? undefined : this.servers.get(serverId);
    return m ? m.mask() : this.emptyMask;
  }

  /** Row of a provider id of the server, or -1. */
  rowOfProvider(serverId: string | undefined, providerId: string): number {
    if (serverId === undefined) return -1;
    return this.servers.get(serverId)?.rowOf(providerId) ?? -1;
  }

  /** Provider id of a row on the server, or undefined when the row's song is not on it. */
  providerOf(serverId: string | undefined, row: number): string | undefined {
    if (serverId === undefined) return undefined;
    return this.servers.get(serverId)?.providerOf(row);
  }

  /** Takes over the state of `other` (same generation) in one step: a reload never shows a half-filled map. */
  replaceFrom(other: GenerationMaps): void {
    if (other.index !== this.index) throw new Error('maps of another generation');
    this.servers.clear();
    for (const [k, v] of other.servers) this.servers.set(k, v);
    this.seq = other.seq;
  }

  /**
   * The maps of `index`, a generation made from this one's by appending rows (the live library: same rows first):
   * every server's map copied over the larger size, same log position. This object is unchanged.
   * @throws RangeError when `index` has fewer rows
   */
  grownTo(index: IvfIndex): GenerationMaps {
    const out = new GenerationMaps(index);
    for (const [k, v] of this.servers) out.servers.set(k, v.grownTo(index.size));
    out.seq = this.seq;
    out.currentAt = this.currentAt;
    return out;
  }

  /**
   * The maps of `index`, another generation whose row `newRowOf[r]` holds the song of this one's row r (-1 = the song
   * is not in `index`; rows at or past `newRowOf.length` too): every server's map remapped (`ServerMap.remapped`, no id
   * hashed), same log position and `currentAt`. Synchronous, so the copy is the content of one log position: a
   * catch-up applies a page and sets `seq` without awaiting in between, and a reload is swapped in by `replaceFrom`.
   * This object is unchanged. @throws RangeError when `newRowOf` sends two mapped rows to one row or outside `index`
   */
  remapped(index: IvfIndex, newRowOf: Int32Array): GenerationMaps {
    const out = new GenerationMaps(index);
    for (const [k, v] of this.servers) out.servers.set(k, v.remapped(index.size, newRowOf));
    out.seq = this.seq;
    out.currentAt = this.currentAt;
    return out;
  }

  /** Drops the growth slack of every server's map after a bulk load (`ServerMap.trim`). */
  trim(): void {
    for (const m of this.servers.values()) m.trim();
  }

  /** Bytes held per server (memory accounting). */
  bytesPerServer(): Record<string, number> {
    return Object.fromEntries([...this.servers].map(([id, m]) => [id, m.memoryBytes]));
  }

  /** Per-server counts (status endpoint). */
  summary(): Array<{ serverId: string; available: number; mappings: number }> {
    return [...this.servers].map(([serverId, m]) => ({ serverId, available: m.available, mappings: m.mappings }));
  }
}

/**
 * Loads and follows the maps of each generation from the catalogue:
 *  - `load(index)`: every mapping page (`/internal/mappings/rows`), then the log after the first page's
 *    `seq` until none is left. A new generation is published only after this (no window where it is
 *    served with maps older than the live one's).
 *  - `catchUp(maps)`: applies the log after `maps.seq` (on every catalogue.mappings.logged.v1 nudge, on
 *    catalogue.mapping.changed.v1 and on a safety poll). Calls on one maps object are serialised and
 *    coalesced (a nudge during a catch-up causes exactly one more).
 *    A `reset` (the log was pruned past `maps.seq`) reloads every page into the same object.
 *  - `carry(from, index, ...)`: a delta build's maps from the serving generation's, without reloading every page.
 */
export class MapFollower {
  private readonly running = new WeakMap<GenerationMaps, { run: Promise<void>; again: boolean }>();
  /** Last catch-up failure (status; cleared by the next success). */
  lastError?: string;
  /** Log entries applied so far (metrics, tests). */
  applied = 0;

  /** @param loadTimeoutMs how long `load` retries an unreachable catalogue (default 120000) */
  constructor(
    private readonly source: MappingSource,
    private readonly logger: Logger,
    private readonly loadTimeoutMs = 120_000,
  ) {}

  /**
   * Maps of `index`, loaded in full and caught up with the log. A failing catalogue is retried with
   * backoff (0.2 s doubling to 5 s) for `loadTimeoutMs`.
   * @throws the last error when the catalogue stayed unreachable
   */
  async load(index: IvfIndex): Promise<GenerationMaps> {
    const deadline = Date.now() + this.loadTimeoutMs;
    for (let delay = 200; ; delay = Math.min(5000, delay * 2)) {
      try {
        const maps = new GenerationMaps(index);
        await this.fill(maps);
        await this.catchUp(maps);
        return maps;
      } catch (err) {
        if (Date.now() + delay > deadline) throw err;
        this.logger.warn('mapping load failed; retrying', { generation: index.generation, err: (err as Error).message, retryInMs: delay });
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  /**
   * The maps of `index`, a delta build's generation (generation/delta-snapshot.ts), carried from `from` (the serving
   * generation's maps) instead of loaded: `from` remapped (`GenerationMaps.remapped`, taken synchronously), the
   * incoming rows' mappings applied, then the log followed from X = min(`since`, `from.seq`) (`catchUp`; a `reset`
   * there reloads every mapping into it, as `load` would; a failed catch-up, or a row map `remapped` refuses, falls
   * back to `load`).
   * Why this equals `load(index)`: positions only grow, so the copy is `from` exact at some position S >= X for every
   * provider id pointing at a row it holds. Every row of `index` is either a kept row of `from`'s generation (the same
   * song, its ids moved with it) or an incoming snapshot row, read after `since` was taken; the old row of every song
   * not kept is dropped, so its ids come back only from the incoming rows (or the log). The log after X is then
   * applied in commit order, and each entry sets a provider id's whole mapping (`apply`). So per provider id p: with a
   * log entry after X the last one decides, as in a full load; without one, p's mapping did not change from X to the
   * head, and both the copy (at S >= X) and an incoming row (read after X) hold the head's mapping (a song not in
   * `index` holds none in either). X, not S: `from` follows the log during the build, so S is usually later than the
   * incoming rows' read, and an entry between the two (a provider id moved off a changed song) would be undone by the
   * stale incoming row and never applied again. The entries in (X, S], already in the copy, are applied again (harmless).
   * @param newRowOf per row of `from`'s generation: its row in `index`, or -1 (sized to that generation, see remapped)
   * @param incoming [serverId, providerId, itemId] of every incoming row's mappings (each item a row of `index`)
   * @param since `from`'s log position read before the incoming rows were read
   * @throws the last error when the catalogue stayed unreachable (the fallback `load`)
   */
  async carry(from: GenerationMaps, index: IvfIndex, newRowOf: Int32Array, incoming: Iterable<MappingTriple>, since: number): Promise<GenerationMaps> {
    let replayFrom = since;
    try {
      const maps = from.remapped(index, newRowOf);
      replayFrom = maps.seq = Math.min(since, maps.seq);
      let applied = 0;
      for (const [s, p, i] of incoming) {
        maps.apply(s, p, i);
        applied++;
      }
      await this.catchUp(maps);
      this.logger.debug('mappings carried', { generation: index.generation, from: from.index.generation, incoming: applied, since: replayFrom, seq: maps.seq });
      return maps;
    } catch (err) {
      this.logger.warn('maps not carried; loading them in full', { generation: index.generation, since: replayFrom, err: (err as Error).message });
      return this.load(index);
    }
  }

  /** Applies every log entry after `maps.seq` (see the class comment). */
  catchUp(maps: GenerationMaps): Promise<void> {
    const cur = this.running.get(maps);
    if (cur) {
      cur.again = true;
      return cur.run;
    }
    const state = { run: Promise.resolve(), again: false };
    state.run = (async () => {
      try {
        do {
          state.again = false;
          await this.drain(maps);
        } while (state.again);
        this.lastError = undefined;
      } catch (err) {
        this.lastError = (err as Error).message;
        throw err;
      } finally {
        this.running.delete(maps);
      }
    })();
    this.running.set(maps, state);
    return state.run;
  }

  private async fill(maps: GenerationMaps): Promise<void> {
    let after: string | null = null;
    let first = true;
    let rows = 0;
    do {
      const page = await this.source.mappingRows(after);
      if (first) maps.seq = page.seq;
      first = false;
      for (const [s, p, i] of page.rows) maps.apply(s, p, i);
      rows += page.rows.length;
      after = page.next;
    } while (after);
    maps.trim();
    this.logger.debug('mapping rows loaded', { generation: maps.index.generation, rows, seq: maps.seq });
  }

  /**
   * Applies the log after `maps.seq` page by page. A `reset` reloads every mapping once; a second reset in the same
   * drain means the full set's own position is already behind the log's retention (a catalogue whose head ignored
   * its pruning mark did that, and reloading again would spin for ever): it throws instead, so `load` backs off and
   * retries, and `catchUp` reports it in `lastError`.
   * @throws Error on a reset right after a full reload, or the source's error
   */
  private async drain(maps: GenerationMaps): Promise<void> {
    let reloaded = false;
    for (;;) {
      const page = await this.source.mappingChanges(maps.seq);
      if (page.reset) {
        if (reloaded) throw new Error(`mapping log reset again right after a full reload at seq ${maps.seq}: the catalogue's full mapping set is older than its log retention`);
        reloaded = true;
        this.logger.warn('mapping log pruned past this replica; reloading every mapping', { seq: maps.seq });
        const fresh = new GenerationMaps(maps.index);
        await this.fill(fresh);
        maps.replaceFrom(fresh);
        continue;
      }
      for (const [, s, p, i] of page.changes) maps.apply(s, p, i);
      this.applied += page.changes.length;
      maps.seq = page.seq;
      if (!page.more) break;
    }
    maps.currentAt = Date.now();
  }
}
