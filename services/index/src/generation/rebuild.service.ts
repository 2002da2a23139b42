import { randomUUID } from 'node:crypto';
import { TaskHost, leaseOwnerName, type Bus, type Logger, type Metrics, type TaskHostOptions } from '@polyphony/platform';
import { DEFAULT_PQ_M, IvfIndex, quantiserFromParams, restoreQuantised } from '@polyphony/vector-engine';
import { ArtistModelBuilder } from '../artists/artist-model';
import { DEFAULT_REUSE_MAX_CHANGED, DEFAULT_REUSE_MAX_DRIFT, type VectorStoreSettings } from '../config';
import { ArtistLinks, type Generation, type IndexState } from '../core/generation';
import type { CataloguePort } from '../core/ports';
import type { MapFollower } from '../maps/generation-maps';
import { decodeBallBasis } from '../hyperbolic/ball';
import { decodeBasis, projectAll } from '../maps/projection';
import { loadTrackMeta } from '../maps/track-meta-store';
import type { BuildSettings, RebuildOutcome } from './build-run';
import { BuildTaskExecutor, type BuildWork } from './build-task';
import type { BuildQueue, GenerationStore, TrackCopy } from './ports';
import { residentBytesOf, tableStorageOf } from './vector-storage';
import { DEFAULT_DRIFT } from './live/drift';

export type { RebuildOutcome } from './build-run';
export { tableStorageOf } from './vector-storage';

/** Tunables of the rebuild. */
export interface RebuildOptions {
  /**
   * Keep the serving generation's PCA basis, IVF centroids and cells, quantiser and codes, map positions and artist
   * mixtures for unchanged songs when at most this share of rows is new, changed or removed (generation/reuse.ts);
   * 0 = always train, lay out and fit everything.
   * Default `DEFAULT_REUSE_MAX_CHANGED` (`INDEX_BUILD_REUSE_MAX_CHANGED`).
   */
  reuseMaxChanged?: number;
  /**
   * A reusing build keeps the serving generation's IVF cells (no k-means) only while its largest cell / mean cell
   * size is at most this (the live library's `maxCellImbalance`, `INDEX_LIVE_MAX_CELL_IMBALANCE`); above it the
   * build trains. Default `DEFAULT_DRIFT.maxCellImbalance` (8).
   */
  reuseMaxCellImbalance?: number;
  /** Cumulative bound of reuse (reuse.ts `reuseLineage`). Default `DEFAULT_REUSE_MAX_DRIFT` (`INDEX_BUILD_REUSE_MAX_DRIFT`). */
  reuseMaxDrift?: number;
  /** Tracks per catalogue snapshot page (the contract allows up to 5000). Default 5000. */
  snapshotPageSize?: number;
  /** Snapshot pages written into the catalogue copy at once (each on its own database connection). Default 2. */
  snapshotWriters?: number;
  /** Rows per vector batch streamed from the catalogue copy into the build. Default 2000. */
  vectorBatchSize?: number;
  /** Completed cells are written when this many bytes of vectors are buffered. Default 4 MiB. */
  cellFlushBytes?: number;
  /** How generations hold their vectors (default: float in memory). */
  vectors?: VectorStoreSettings;
  /** A build stops (HeapLimitError, build FAIL, previous generation live) when used heap / heap limit passes this (default 0.9; `guardHeap`). */
  heapFraction?: number;
  /**
   * Feed the IVF build from the snapshot pages as they arrive (default true) instead of reading every vector back
   * from `index.tracks` after the snapshot. Same rows, same order, same bytes, so the same generation (test); the
   * read-back path stays for a snapshot whose pages are not in byte order of the ids or that restarted.
   */
  feedBuildFromSnapshot?: boolean;
  /** Lease TTL and claim scan of the build task host (tests shorten them; defaults: the platform's 60 s TTL, 5 s scan). */
  host?: Pick<TaskHostOptions, 'ttlMs' | 'scanMs'>;
}

/**
 * Rebuilds the shared index from the catalogue (spec "Shared index" 2; issue 6 "Index"), one build at a time across
 * every replica, on the platform task host (issue 29; docs/architecture.md "Task runs"):
 *  - {@link request} queues a build in `index.build_runs` (build-queue.repository.ts) or joins the queued one: a
 *    request while a build runs is coalesced into a single follow-up build (which sees every change made meanwhile);
 *    every requester's task id is reported on completion (`index.rebuild.completed.v1`);
 *  - the {@link host} (`TaskHost`) claims the queued build when none runs (on any replica), keeps its lease, takes
 *    over a build whose replica died or stopped (it builds again from the start), and ends a cancelled one
 *    (task.cancel.requested.v1 of type `index_build`); the executor (build-task.ts) does the work: the covering
 *    check, then the phases of build-run.ts, whose activation is fenced by the run's lease;
 *  - queries keep being answered from the old generation until the activation (the build yields to the event loop);
 *    a failed build leaves the previous generation live and ends FAIL on the task board.
 */
export class RebuildService {
  /** The task host of index builds (start scanning at service start, stop at shutdown). */
  readonly host: TaskHost<BuildWork>;
  private readonly settings: BuildSettings;
  private readonly vectors: VectorStoreSettings;
  /** Requests being admitted (so {@link busy} and {@link idle} see them). */
  private readonly admitting = new Set<Promise<unknown>>();
  /** Outcome of the last successful build here (for status and benchmarks). */
  lastOutcome?: RebuildOutcome;
  lastError?: string;
  /** The last generation loaded from the database: how long it took (ms, maps included) and whether its quantised codes were stored (not recomputed). */
  lastLoad?: { generation: number; ms: number; storedCodes: boolean; phasesMs: Record<string, number> };

  constructor(
    catalogue: CataloguePort,
    private readonly tracks: TrackCopy,
    private readonly generations: GenerationStore,
    private readonly queue: BuildQueue,
    private readonly state: IndexState,
    private readonly maps: MapFollower,
    bus: Bus,
    private readonly logger: Logger,
    options: RebuildOptions = {},
    metrics?: Metrics,
  ) {
    this.settings = {
      snapshotPageSize: options.snapshotPageSize ?? 5000,
      vectorBatchSize: options.vectorBatchSize ?? 2000,
      snapshotWriters: Math.max(1, options.snapshotWriters ?? 2),
      cellFlushBytes: options.cellFlushBytes ?? 4 * 1024 * 1024,
      feedFromSnapshot: options.feedBuildFromSnapshot ?? true,
      reuseMaxChanged: options.reuseMaxChanged ?? DEFAULT_REUSE_MAX_CHANGED,
      reuseMaxCellImbalance: options.reuseMaxCellImbalance ?? DEFAULT_DRIFT.maxCellImbalance,
      reuseMaxDrift: options.reuseMaxDrift ?? DEFAULT_REUSE_MAX_DRIFT,
    };
    this.vectors = options.vectors ?? { mode: 'float', pqM: 25, buildWorkers: 0 };
    const executor = new BuildTaskExecutor({
      catalogue,
      tracks,
      generations,
      queue,
      state,
      maps,
      bus,
      logger,
      vectors: this.vectors,
      settings: this.settings,
      heapFraction: options.heapFraction ?? 0.9,
      loadLive: () => this.loadLive({ markInterrupted: false }),
      ended: (o) => {
        if ('ok' in o) {
          this.lastOutcome = o.ok;
          this.lastError = undefined;
        } else this.lastError = o.error;
      },
    });
    this.host = new TaskHost<BuildWork>(
      queue,
      leaseOwnerName('index-build'),
      executor,
      logger,
      { bus, type: 'index_build', owner: 'index', ...(metrics ? { metrics: { metrics, task: 'index_build' } } : {}) },
      { requestIdPrefix: 'index-build', cancelMessage: 'Cancelled; the previous generation stays live', logLabel: 'index build', ...options.host },
    );
  }

  /**
   * Requests a rebuild: queues one, or joins the queued follow-up build; the build starts on whichever replica
   * claims it first (this one is nudged now).
   * `since`: the newest change the request is about (default: now). A build that started at or after it covers the
   * request (the run ends without building): the live library passes its last song's arrival, so a request made
   * after another replica's build already read those songs builds nothing.
   * @returns the task id of the build that will serve the request, and whether it was coalesced (joined the
   *   queued build, or waits behind a running one)
   * @throws when the build queue cannot be written (database down): the caller retries or logs
   */
  async request(reason: string, requesterTaskId?: string, since?: Date): Promise<{ taskId: string; coalesced: boolean }> {
    const admitted = this.queue.request(randomUUID(), reason, requesterTaskId, since);
    this.admitting.add(admitted);
    try {
      const { run, coalesced } = await admitted;
      // A build that starts now reports RUNNING first; a queued one is shown as queued (NEW) at once.
      if (coalesced) await this.host.publish(run, false);
      void this.host.kick();
      return { taskId: run.id, coalesced };
    } finally {
      this.admitting.delete(admitted);
    }
  }

  /** True while this replica builds or admits a request (builds of other replicas: {@link building}). */
  get busy(): boolean {
    return this.host.active.length > 0 || this.admitting.size > 0;
  }

  /**
   * True while a build runs or is queued here or on any replica (`index.build_runs`), or while the live generation in
   * the database is newer than the one served here (built elsewhere, not loaded here yet: asking for a build then
   * would build the same songs twice). Two reads; either failing counts as busy (ask again later).
   */
  async busyAnywhere(): Promise<boolean> {
    if (this.busy) return true;
    const runs = await this.queue.liveRuns().catch(() => null);
    if (runs === null || runs.length > 0) return true;
    const live = await this.generations.live().catch(() => null);
    if (live === null) return true;
    return live !== undefined && live.generation > this.state.current().generation;
  }

  /** Task id of the build this replica runs, if any. */
  get runningTaskId(): string | undefined {
    return this.host.active[0];
  }

  /**
   * Whether a build runs or is queued on any replica, and the running (else queued) one's task id; this replica's
   * own state when the database cannot be read.
   */
  async building(): Promise<{ building: boolean; taskId?: string }> {
    try {
      const live = await this.queue.liveRuns();
      return { building: live.length > 0, ...(live[0] ? { taskId: live[0].id } : {}) };
    } catch {
      return { building: this.busy, ...(this.runningTaskId ? { taskId: this.runningTaskId } : {}) };
    }
  }

  /** Cancels a queued or running build (task.cancel.requested.v1); unknown or finished runs are ignored. */
  async cancel(taskId: string): Promise<void> {
    await this.host.cancel(taskId);
  }

  /** Starts claiming builds (queued ones and takeovers); at service start, after the live generation is loaded. */
  startScanning(): void {
    this.host.startScanning();
  }

  /**
   * Resolves when no build runs or waits on any replica (tests, benchmarks): this replica's coordinations end, then
   * the queue is read again (a queued build is claimed by this replica when none runs). Returns at once when the
   * database cannot be read.
   */
  async idle(): Promise<void> {
    for (;;) {
      await Promise.allSettled([...this.admitting]);
      await this.host.idle();
      const live = await this.queue.liveRuns().catch(() => []);
      if (live.length === 0 && this.admitting.size === 0) return;
      await this.host.kick();
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Shutdown: stops claiming; a build running here stops and hands its lease back (another replica takes it over). */
  async stop(): Promise<void> {
    await this.host.stop();
  }

  /**
   * Start-up: marks builds interrupted by a dead process (their run ended) as failed, then loads the live generation from
   * the database into memory (no rebuild). A stored generation that cannot be restored is logged and
   * treated as absent.
   * @returns whether a generation was loaded and how many interrupted builds were found
   */
  async loadLive(options: { markInterrupted?: boolean } = {}): Promise<{ loaded: boolean; interrupted: number }> {
    // Builds left 'building' whose run is not RUNNING any more (a build of a RUNNING run, here or on another
    // replica, is its coordinator's or its takeover's to end).
    const interrupted = options.markInterrupted !== false ? await this.generations.failInterrupted() : [];
    if (interrupted.length) this.logger.warn('index builds were interrupted by a restart', { generations: interrupted });
    const live = await this.generations.live();
    if (!live || live.dim === null || live.itemCount === null || live.centroids === null) return { loaded: false, interrupted: interrupted.length };
    const t0 = performance.now();
    let restored: Omit<Generation, 'maps' | 'meta'>;
    let codesLoaded = false;
    const phasesMs: Record<string, number> = {};
    let tPhase = performance.now();
    const phase = (name: string) => {
      const now = performance.now();
      phasesMs[name] = Math.round(now - tPhase);
      tPhase = now;
    };
    try {
      const input = { dim: live.dim, count: live.itemCount, centroids: live.centroids, cells: this.generations.cells(live.generation), generation: live.generation };
      const v = this.vectors;
      // Quantised modes restore in bounded memory: the float vectors go to the on-disk copy, codes stay in memory.
      let index: IvfIndex;
      if (v.mode === 'float') index = await IvfIndex.restore(input);
      else {
        // Codes saved with the generation by the replica that built it; trained and encoded here only when absent.
        const q = await this.generations.quantiser(live.generation, v.mode);
        const stored = q && (v.mode !== 'pq' || q.pqM === (v.pqM ?? DEFAULT_PQ_M)) ? { quantiser: quantiserFromParams(v.mode, live.dim, q.params, q.pqM ?? undefined), cells: this.generations.cellCodes(live.generation, v.mode) } : undefined;
        index = await restoreQuantised(input, { mode: v.mode, pqM: v.pqM, workers: v.buildWorkers, residentMaxBytes: residentBytesOf(v), ...(v.rerank ? { rerank: v.rerank } : {}), ...(v.dir ? { dir: v.dir } : {}) }, stored);
        codesLoaded = stored !== undefined;
      }
      phase('index');
      const pca = live.pca ? decodeBasis(live.pca) : undefined;
      // A generation without stored coordinates (not expected) gets the cheap PCA map rather than a UMAP fit at start.
      const stored = await this.generations.projection(live.generation);
      const usable = stored && stored.coords.length === index.size * 2;
      const coords = usable ? stored.coords : pca ? await projectAll(index, pca) : new Float32Array(index.size * 2);
      const mapMethod = usable ? stored.method : 'pca';
      phase('projection');
      const totals = await this.generations.artistTotals(live.generation);
      const builder = new ArtistModelBuilder(live.dim, index.size, totals.artists, totals.components, totals.songs, this.vectors.dir);
      try {
        for await (const r of this.generations.artists(live.generation)) builder.add(r);
      } catch (err) {
        builder.abandon();
        throw err;
      }
      const artists = builder.finish();
      const links = new ArtistLinks();
      phase('artists');
      for (const l of await this.generations.links(live.generation)) links.set(l.serverId, l.key, l.providerId);
      phase('links');
      // The ball's basis the builder stored (generation reuse on), so this replica lays out the builder's ball.
      const ballBasis = live.ball ? decodeBallBasis(live.ball) : undefined;
      restored = { generation: live.generation, index, artists, links, pca, coords, mapMethod, builtAt: live.finishedAt ?? live.createdAt, embedderVersion: live.embedderVersion, ...(ballBasis ? { ballBasis } : {}), ...(live.lineage ? { lineage: live.lineage } : {}) };
    } catch (err) {
      this.logger.error('stored index generation could not be loaded', { generation: live.generation, err: (err as Error).message });
      return { loaded: false, interrupted: interrupted.length };
    }
    // The maps are loaded and caught up before the swap: the generation is never served with older maps.
    // A catalogue that stays unreachable fails the start (the replica never becomes ready).
    const tMaps = performance.now();
    const [maps, meta] = await Promise.all([
      this.maps.load(restored.index).finally(() => (phasesMs.maps = Math.round(performance.now() - tMaps))),
      loadTrackMeta(restored.index, this.tracks, tableStorageOf(this.vectors)).finally(() => (phasesMs.meta = Math.round(performance.now() - tMaps))),
    ]);
    const gen: Generation = { ...restored, maps, meta };
    // Per-generation tables (text search) are built before the generation is served and the replica turns ready.
    const tPrepare = performance.now();
    await this.state.prepare(gen);
    phasesMs.prepare = Math.round(performance.now() - tPrepare);
    this.state.swap(gen);
    void this.maps.catchUp(maps).catch(() => undefined);
    this.lastLoad = { generation: live.generation, ms: performance.now() - t0, storedCodes: codesLoaded, phasesMs };
    this.logger.info('index generation loaded', {
      generation: live.generation,
      items: gen.index.size,
      nlist: gen.index.nlist,
      artists: gen.artists.count,
      ms: Math.round(performance.now() - t0),
      mapsMs: Math.round(performance.now() - tMaps),
      mapSeq: maps.seq,
      metaRows: meta.count,
      metaMiB: Math.round(meta.bytes / 1048576),
      metaOnDisk: meta.onDisk,
      vectorMode: this.vectors.mode,
      storedCodes: codesLoaded,
    });
    return { loaded: true, interrupted: interrupted.length };
  }
}
