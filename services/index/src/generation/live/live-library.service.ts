/**
 * The live library (issue 35; docs/architecture.md "Live library (incremental index)"): songs analysed after the live
 * generation was built are added to it in place, on every replica, without a rebuild.
 */
import type { IndexDeltaApplied, SnapshotTrackBytes } from '@polyphony/contracts';
import type { Logger } from '@polyphony/platform';
import type { AppendOptions } from '@polyphony/vector-engine';
import type { Generation, IndexState } from '../../core/generation';
import type { CataloguePort } from '../../core/ports';
import type { TrackMeta } from '../../core/track-records';
import { applyDelta, type DeltaTrack } from './delta-apply';
import type { DeltaStore } from './ports';
import { measureDrift, type DriftReport } from './drift';
import { DEFAULT_LIVE_LIBRARY, type LiveLibrarySettings } from './settings';

export { DEFAULT_LIVE_LIBRARY, type LiveLibrarySettings } from './settings';

/** Songs looked up in the catalogue at once. */
const FETCH_CONCURRENCY = 4;

/** What the live library needs around it. */
export interface LiveLibraryDeps {
  state: IndexState;
  store: DeltaStore;
  catalogue: Pick<CataloguePort, 'snapshotPage'>;
  /** The index's catalogue copy: new songs are written there (text search and metadata read it) and read back. */
  tracks: { upsertSnapshot(tracks: readonly SnapshotTrackBytes[], build: number): Promise<unknown>; metadata(ids: readonly string[]): Promise<Map<string, TrackMeta>> };
  /** Publishes index.delta.applied.v1 (every replica's queue). */
  publish(event: IndexDeltaApplied): Promise<void>;
  /** Requests a full rebuild (drift). */
  requestRebuild(reason: string): void;
  /** True while a full build runs or waits (no drift request then). */
  rebuildBusy(): boolean;
  logger: Logger;
  settings?: LiveLibrarySettings;
  /** Where appended quantised generations write their vector file. */
  storage?: AppendOptions;
}

/**
 * Adds analysed songs to the live generation and keeps every replica on the same rows:
 *  - `noteAdded(itemId)` (one replica: the shared queue `index.live-library`, fed by analysis.track.completed.v1):
 *    songs not in the live generation wait `debounceMs`, then `flush` looks each up in the catalogue (a snapshot page
 *    of one song), writes them to the catalogue copy (`index.tracks`), stores the batch (`index.deltas`: ids, vectors,
 *    mappings), applies it here (`catchUp`), announces it (index.delta.applied.v1) and measures drift (`measureDrift`:
 *    a full rebuild is requested when a threshold is crossed, never for one song);
 *  - `catchUp()` (every replica: on that event, after loading a generation, and on the mapping safety poll): applies the
 *    stored batches of the live generation after the one it serves (`applyDelta`, metadata read back from
 *    `index.tracks`), prepares the new revision (text-search table) and swaps it in. A replica that starts later or
 *    missed the event gets the same rows in the same order.
 * Flushes and catch-ups run one at a time. Errors are logged, never thrown out of the timers or handlers: a batch
 * that failed stays pending for the next flush; a catch-up that failed is retried by the next event or poll.
 */
export class LiveLibraryService {
  private readonly pending = new Set<string>();
  private timer?: NodeJS.Timeout;
  private chain: Promise<unknown> = Promise.resolve();
  private stopped = false;
  readonly settings: LiveLibrarySettings;
  /** The last drift measured after a flush (status, tests). */
  lastDrift?: DriftReport;
  /** Songs added to a generation by flushes of this process (status, tests). */
  added = 0;

  constructor(private readonly d: LiveLibraryDeps) {
    this.settings = d.settings ?? DEFAULT_LIVE_LIBRARY;
  }

  /** Notes an analysed song; ignored when it is already in the live generation or the live library is off. */
  noteAdded(itemId: string): void {
    if (!this.settings.enabled || this.stopped) return;
    if (this.d.state.current().index.rowOf(itemId) >= 0) return;
    this.pending.add(itemId);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush().catch(() => undefined);
    }, this.settings.debounceMs);
  }

  /** Songs waiting for the next flush. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** Adds the pending songs now (see the class comment); resolves when they are served here. */
  flush(): Promise<void> {
    return this.serial(async () => {
      const gen = this.d.state.current();
      const ids = [...this.pending].filter((id) => gen.index.rowOf(id) < 0);
      if (ids.length === 0 || gen.generation === 0) return;
      try {
        const found = (await mapLimit(ids, FETCH_CONCURRENCY, (id) => this.fetch(id))).filter((t): t is SnapshotTrackBytes => t !== undefined);
        const dim = gen.index.dim;
        const usable = found.filter((t) => vectorOf(t.vector, dim) !== undefined);
        // Songs the catalogue does not have (yet) or without a usable vector are dropped: a later event notes them again.
        const usableIds = new Set(usable.map((t) => t.itemId));
        for (const id of ids) if (!usableIds.has(id)) this.pending.delete(id);
        if (usable.length === 0) return;
        await this.d.tracks.upsertSnapshot(usable, gen.generation);
        const vectors = new Float32Array(usable.length * dim);
        usable.forEach((t, i) => vectors.set(vectorOf(t.vector, dim)!, i * dim));
        const mappings = usable.map((t) => t.mappings.map((m) => [m.serverId, m.providerId] as [string, string]));
        const seq = await this.d.store.append(gen.generation, usable.map((t) => t.itemId), vectors, mappings);
        for (const id of usableIds) this.pending.delete(id);
        await this.catchUpNow();
        this.added += usable.length;
        await this.d.publish({ generation: gen.generation, seq, items: usable.length }).catch((err: unknown) => this.d.logger.warn('delta event not published (replicas catch up on their poll)', { err: (err as Error).message }));
        const current = this.d.state.current();
        if (current.generation === gen.generation) {
          const drift = measureDrift(current.index, current.builtRows ?? current.index.size, this.settings.drift);
          this.lastDrift = drift;
          this.d.logger.info('live library: songs added without a rebuild', { generation: gen.generation, seq, songs: usable.length, items: current.index.size, cellImbalance: Number(drift.cellImbalance.toFixed(2)), probeRecall: drift.probeRecall, growth: drift.growth });
          if (drift.reasons.length && !this.d.rebuildBusy()) this.d.requestRebuild(`live library drift: ${drift.reasons.join('; ')}`);
        }
      } catch (err) {
        this.d.logger.warn('live library batch failed; its songs stay pending', { songs: ids.length, err: (err as Error).message });
        throw err;
      }
    });
  }

  /** Applies the stored batches after the one this replica serves (see the class comment). */
  catchUp(): Promise<void> {
    if (!this.settings.enabled) return Promise.resolve();
    return this.serial(() => this.catchUpNow()).catch((err: unknown) => {
      this.d.logger.warn('live library catch-up failed', { err: (err as Error).message });
    });
  }

  /** Stops the debounce timer; later notes are ignored. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async catchUpNow(): Promise<void> {
    const gen = this.d.state.current();
    if (gen.generation === 0) return;
    const records = await this.d.store.after(gen.generation, gen.deltaSeq ?? 0);
    if (records.length === 0) return;
    let next: Generation = gen;
    for (const r of records) {
      const metas = await this.d.tracks.metadata(r.itemIds);
      const dim = gen.index.dim;
      const tracks: DeltaTrack[] = r.itemIds.map((itemId, i) => ({
        itemId,
        vector: r.vectors.subarray(i * dim, (i + 1) * dim),
        meta: metas.get(itemId),
        mappings: (r.mappings[i] ?? []).map(([serverId, providerId]) => ({ serverId, providerId })),
      }));
      const out = applyDelta(next, { seq: r.seq, tracks }, this.d.storage);
      if (out.refused.length) this.d.logger.warn('live library: songs refused', { seq: r.seq, refused: out.refused.slice(0, 10) });
      next = out.gen;
    }
    await this.d.state.prepare(next, (err) => this.d.logger.warn('live library: a table was not prepared; built on first use', { err: (err as Error).message }));
    // A full build swapped in meanwhile: its snapshot decides; these batches belong to the older generation.
    if (this.d.state.current() !== gen) return;
    this.d.state.swap(next);
    this.d.logger.info('live library: batches applied', { generation: gen.generation, revision: next.revision, seq: next.deltaSeq, items: next.index.size });
  }

  /** The catalogue's snapshot row of one song: a page of one after the largest key below its id (ids are ASCII, byte order). */
  private async fetch(itemId: string): Promise<SnapshotTrackBytes | undefined> {
    const page = await this.d.catalogue.snapshotPage(keyBefore(itemId), 4);
    return page.tracks.find((t) => t.itemId === itemId);
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.chain.then(f, f);
    this.chain = run.catch(() => undefined);
    return run;
  }
}

/** The snapshot row's embedding (little-endian float32 bytes) when it has `dim` finite values, not all zero; else undefined. */
function vectorOf(bytes: Uint8Array, dim: number): Float32Array | undefined {
  if (bytes.byteLength !== dim * 4) return undefined;
  const v = new Float32Array(dim);
  new Uint8Array(v.buffer).set(bytes);
  let nonZero = false;
  for (let i = 0; i < dim; i++) {
    if (!Number.isFinite(v[i]!)) return undefined;
    if (v[i] !== 0) nonZero = true;
  }
  return nonZero ? v : undefined;
}

/**
 * A key just below `id` in byte order (C collation), for a keyset page whose first row is `id`: the id with its last
 * character lowered by one and followed by U+10FFFF (any id between the two would have to start with that character).
 */
export function keyBefore(id: string): string {
  const last = id.charCodeAt(id.length - 1);
  return `${id.slice(0, -1)}${String.fromCharCode(Math.max(0, last - 1))}\u{10FFFF}`;
}

async function mapLimit<T, R>(items: readonly T[], limit: number, f: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await f(items[i]!);
      }
    }),
  );
  return out;
}
