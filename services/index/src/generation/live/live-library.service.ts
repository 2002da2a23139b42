/**
 * The live library (issue 35; docs/architecture.md "Live library (incremental index)"): songs analysed after the live
 * generation was built are added to it in place, on every replica, without a rebuild.
 */
import type { IndexDeltaApplied, SnapshotTrackBytes } from '@polyphony/contracts';
import type { Logger } from '@polyphony/platform';
import { CooperativeScheduler, type AppendOptions } from '@polyphony/vector-engine';
import type { Generation, IndexState } from '../../core/generation';
import type { GenerationMaps } from '../../maps/generation-maps';
import type { CataloguePort } from '../../core/ports';
import type { TrackMeta } from '../../core/track-records';
import { applyDelta, type DeltaTrack } from './delta-apply';
import type { DeltaStore } from './ports';
import { LIVE_DRIFT_REASON, measureDrift, type DriftReport } from './drift';
import { DEFAULT_LIVE_LIBRARY, type LiveLibrarySettings } from './settings';

export { DEFAULT_LIVE_LIBRARY, type LiveLibrarySettings } from './settings';

/** Catalogue look-ups in flight at once. */
const FETCH_CONCURRENCY = 4;
/** Songs per catalogue look-up (the route takes up to 1000). */
const LOOKUP_BATCH = 500;

/** What the live library needs around it. */
export interface LiveLibraryDeps {
  state: IndexState;
  store: DeltaStore;
  catalogue: Pick<CataloguePort, 'tracksByIds'>;
  /** The index's catalogue copy: new songs are written there (text search and metadata read it) and read back. */
  tracks: { upsertSnapshot(tracks: readonly SnapshotTrackBytes[], build: number): Promise<unknown>; metadata(ids: readonly string[]): Promise<Map<string, TrackMeta>> };
  /** Publishes index.delta.applied.v1 (every replica's queue). */
  publish(event: IndexDeltaApplied): Promise<void>;
  /**
   * Requests a full rebuild (drift, or the first songs of an empty index). `since`: the arrival of the newest song the
   * request is about; a build that started at or after it covers the request (RebuildService.request).
   */
  requestRebuild(reason: string, since?: Date): void;
  /** True while a full build runs or waits (no drift request then). */
  rebuildBusy(): boolean;
  /** True while a full build runs or waits here or on another replica (RebuildService.busyAnywhere). Default: rebuildBusy. */
  rebuildBusyAnywhere?(): Promise<boolean>;
  /**
   * True while a full analysis run is live (the analysis worker's GET /internal/analysis/run): its end-of-run rebuild
   * covers songs of an empty index, so none is requested for them. Absent = no run is ever live. A failed call counts
   * as live (asked again later: never a build on a guess).
   */
  analysisRunLive?(): Promise<boolean>;
  /**
   * Replays the mapping log after `maps.seq` into `maps` (MapFollower.catchUp): run on a caught-up generation's maps
   * before it is swapped in. Absent: the serving maps' follow does it after the swap.
   */
  followMaps?(maps: GenerationMaps): Promise<void>;
  logger: Logger;
  settings?: LiveLibrarySettings;
  /** Where appended quantised generations write their vector file. */
  storage?: AppendOptions;
}

/**
 * Adds analysed songs to the live generation and keeps every replica on the same rows:
 *  - `noteAdded(itemId)` (one replica: the shared queue `index.live-library`, fed by analysis.track.completed.v1):
 *    songs not in the live generation wait `debounceMs`, then `flush` looks them up in the catalogue (POST
 *    /internal/snapshot/tracks/by-ids: the snapshot rows by content id), writes them to the catalogue copy (`index.tracks`), stores the batch (`index.deltas`: ids, vectors,
 *    mappings), applies it here (`catchUp`), announces it (index.delta.applied.v1) and measures drift (`measureDrift`:
 *    a full rebuild is requested when a threshold is crossed, never for one song);
 *  - `catchUp()` (every replica: on that event, after loading a generation, and on the mapping safety poll): applies the
 *    stored batches of the live generation after the one it serves (`applyDelta`, metadata read back from
 *    `index.tracks`), prepares the new revision (text-search table) and swaps it in. A replica that starts later or
 *    missed the event gets the same rows in the same order.
 *  - an EMPTY index (no generation yet, or one built from no songs: no cells to append to) cannot take appended songs:
 *    after the debounce the flush requests ONE full build (its snapshot reads the songs) unless a build already runs
 *    here or on another replica, or a full analysis run is live (its end-of-run rebuild covers them, so a first run
 *    still builds once, at its end). The songs stay pending and are looked at again every `recheckMs` until a
 *    generation holds them (or can take them: then they are appended as above).
 * Flushes and catch-ups run one at a time. Errors are logged, never thrown out of the timers or handlers: a batch
 * that failed stays pending and is tried again after `recheckMs`; a catch-up that failed is retried by the next event
 * or poll. Batches stored for an older generation whose songs the next build's snapshot missed are carried into
 * that build's generation at its activation (`carryDeltas`, in the activation transaction) and applied by catchUp.
 */
export class LiveLibraryService {
  private readonly pending = new Set<string>();
  /** When the newest pending song arrived (this process's clock; compared with the build's start in PostgreSQL). */
  private lastArrival?: Date;
  private timer?: NodeJS.Timeout;
  private chain: Promise<unknown> = Promise.resolve();
  private stopped = false;
  readonly settings: LiveLibrarySettings;
  /** The last drift measured after a flush (status, tests). */
  lastDrift?: DriftReport;
  /** The last probe recall measured, with the generation and row count it was measured on. */
  private lastProbe?: { generation: number; size: number; probeRecall: number; probes: number };
  /** Songs added to a generation by flushes of this process (status, tests). */
  added = 0;
  /** Full builds this process requested for the first songs of an empty index (status, tests). */
  firstBuildsRequested = 0;

  constructor(private readonly d: LiveLibraryDeps) {
    this.settings = d.settings ?? DEFAULT_LIVE_LIBRARY;
  }

  /** Notes an analysed song; ignored when it is already in the live generation or the live library is off. */
  noteAdded(itemId: string): void {
    if (!this.settings.enabled || this.stopped) return;
    if (this.d.state.current().index.rowOf(itemId) >= 0) return;
    this.pending.add(itemId);
    this.lastArrival = new Date();
    this.schedule(this.settings.debounceMs);
  }

  /** Runs a flush after `ms` unless one is already scheduled (the debounce, and the recheck of songs still pending). */
  private schedule(ms: number): void {
    if (this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush().catch(() => undefined);
    }, ms);
    this.timer.unref?.();
  }

  /** Songs waiting for the next flush. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** Adds the pending songs now (see the class comment); resolves when they are served here. */
  flush(): Promise<void> {
    return this.serial(async () => {
      const gen = this.d.state.current();
      // Songs a generation holds by now (a build read them, or another batch added them) are done.
      for (const id of this.pending) if (gen.index.rowOf(id) >= 0) this.pending.delete(id);
      const ids = [...this.pending];
      if (ids.length === 0) return;
      if (!canAppend(gen)) {
        await this.awaitFirstBuild(gen.generation, ids.length);
        return;
      }
      try {
        // The log position before the songs' mappings are read: every replica replays the log after it over them.
        const mappingSeq = gen.maps.seq;
        const found = await this.lookup(ids);
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
        const seq = await this.d.store.append(gen.generation, usable.map((t) => t.itemId), vectors, mappings, mappingSeq);
        for (const id of usableIds) this.pending.delete(id);
        await this.catchUpNow();
        this.added += usable.length;
        await this.d.publish({ generation: gen.generation, seq, items: usable.length }).catch((err: unknown) => this.d.logger.warn('delta event not published (replicas catch up on their poll)', { err: (err as Error).message }));
        const current = this.d.state.current();
        if (current.generation === gen.generation) {
          // The probe recall once per `probeEvery` of growth (DriftSettings), cooperatively (10 ms slices: the scan shares
          // the event loop with queries); cell imbalance and growth every batch.
          const built = current.builtRows ?? current.index.size;
          const last = this.lastProbe?.generation === current.generation ? this.lastProbe : undefined;
          const due = !last || current.index.size - last.size >= Math.max(1, this.settings.drift.probeEvery * built);
          const drift = await measureDrift(current.index, built, this.settings.drift, new CooperativeScheduler(10), due ? undefined : last);
          if (drift.probed) this.lastProbe = { generation: current.generation, size: current.index.size, probeRecall: drift.probeRecall, probes: drift.probes };
          this.lastDrift = drift;
          this.d.logger.info('live library: songs added without a rebuild', { generation: gen.generation, seq, songs: usable.length, items: current.index.size, cellImbalance: Number(drift.cellImbalance.toFixed(2)), probeRecall: drift.probeRecall, probed: drift.probed, growth: drift.growth });
          if (drift.reasons.length && !this.d.rebuildBusy()) this.d.requestRebuild(`${LIVE_DRIFT_REASON}: ${drift.reasons.join('; ')}`);
        }
      } catch (err) {
        this.d.logger.warn('live library batch failed; its songs stay pending', { songs: ids.length, err: (err as Error).message });
        this.schedule(this.settings.recheckMs);
        throw err;
      }
    });
  }

  /**
   * Pending songs and an index with nothing to append to: one full build is requested unless one runs anywhere or a
   * full analysis run is live (its end-of-run rebuild reads them); either way the songs are looked at again after
   * `recheckMs` (then they are in the new generation, or appended to it).
   */
  private async awaitFirstBuild(generation: number, songs: number): Promise<void> {
    try {
      const busy = this.d.rebuildBusyAnywhere ? await this.d.rebuildBusyAnywhere() : this.d.rebuildBusy();
      if (busy) return;
      const runLive = this.d.analysisRunLive
        ? await this.d.analysisRunLive().catch((err: unknown) => {
            this.d.logger.warn('live library: the analysis run state could not be read; asking again later', { err: (err as Error).message });
            return true;
          })
        : false;
      if (runLive) return;
      // Asked again after the probe: another replica may have started (or finished) the build while it was in flight;
      // without this second look both replicas built (CI: 3 generations for one burst of songs).
      if (this.d.state.current().generation !== generation) return;
      if (this.d.rebuildBusyAnywhere ? await this.d.rebuildBusyAnywhere() : this.d.rebuildBusy()) return;
      this.firstBuildsRequested++;
      this.d.logger.info('live library: the index is empty; requesting its first full build for the songs that arrived', { generation, songs });
      // Counted from the last song's arrival, not from now: a build another replica started after that (and activated
      // after this replica's checks above) read these songs, so this request is covered and builds nothing. Counted
      // from now, both replicas built (issue 29).
      this.d.requestRebuild('live library: first songs of an empty index', this.lastArrival);
    } finally {
      this.schedule(this.settings.recheckMs);
    }
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
      const out = applyDelta(next, { seq: r.seq, tracks, mappingSeq: r.mappingSeq }, this.d.storage);
      if (out.refused.length) this.d.logger.warn('live library: songs refused', { seq: r.seq, refused: out.refused.slice(0, 10) });
      next = out.gen;
    }
    // The log after the batches' reads, replayed over their mappings before the swap (applyDelta lowered the maps'
    // position). A failure here is logged: the serving maps' own follow (events, safety poll) replays it later.
    if (this.d.followMaps && next.maps !== gen.maps) {
      await this.d.followMaps(next.maps).catch((err: unknown) => this.d.logger.warn('live library: mapping log not replayed over the batches yet; the follow does it', { err: (err as Error).message }));
    }
    await this.d.state.prepare(next, (err) => this.d.logger.warn('live library: a table was not prepared; built on first use', { err: (err as Error).message }));
    // A full build swapped in meanwhile: its snapshot decides; these batches belong to the older generation.
    if (this.d.state.current() !== gen) return;
    this.d.state.swap(next);
    this.d.logger.info('live library: batches applied', { generation: gen.generation, revision: next.revision, seq: next.deltaSeq, items: next.index.size });
  }

  /** The catalogue's snapshot rows of `ids` (POST /internal/snapshot/tracks/by-ids, LOOKUP_BATCH ids a call, FETCH_CONCURRENCY calls at once). */
  private async lookup(ids: readonly string[]): Promise<SnapshotTrackBytes[]> {
    const chunks: string[][] = [];
    for (let i = 0; i < ids.length; i += LOOKUP_BATCH) chunks.push(ids.slice(i, i + LOOKUP_BATCH));
    return (await mapLimit(chunks, FETCH_CONCURRENCY, (c) => this.d.catalogue.tracksByIds(c))).flat();
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.chain.then(f, f);
    this.chain = run.catch(() => undefined);
    return run;
  }
}

/** Whether songs can be appended to `gen`: it was built (generation > 0) and has cells (a build of no songs has none). */
function canAppend(gen: Generation): boolean {
  return gen.generation > 0 && gen.index.nlist > 0 && gen.index.size > 0;
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
