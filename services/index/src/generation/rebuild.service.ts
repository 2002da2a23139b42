import { randomUUID } from 'node:crypto';
import { RoutingKeys, type IndexRebuilt, type TaskState, type TaskUpdatedEvent } from '@polyphony/contracts';
import type { Bus, Logger } from '@polyphony/platform';
import { DEFAULT_PQ_M, IvfIndex, quantiserFromParams, restoreQuantised } from '@polyphony/vector-engine';
import { ArtistModelBuilder } from '../artists/artist-model';
import { DEFAULT_REUSE_MAX_CHANGED, type VectorStoreSettings } from '../config';
import { ArtistLinks, type Generation, type IndexState } from '../core/generation';
import type { CataloguePort } from '../core/ports';
import type { MapFollower } from '../maps/generation-maps';
import { decodeBasis, projectAll } from '../maps/projection';
import { loadTrackMeta } from '../maps/track-meta-store';
import { LocalBuildLock } from './build-lock';
import { BuildRun, type BuildHost, type BuildSettings, type RebuildOutcome } from './build-run';
import { guardHeap } from './heap-guard';
import type { BuildLock, BuildLockHandle, GenerationStore, TrackCopy } from './ports';
import { residentBytesOf, tableStorageOf } from './vector-storage';

export type { RebuildOutcome } from './build-run';
export { tableStorageOf } from './vector-storage';

/** Tunables of the rebuild. */
export interface RebuildOptions {
  /**
   * Keep the serving generation's PCA basis, map positions and artist mixtures for unchanged songs when at most
   * this share of rows is new, changed or removed (generation/reuse.ts); 0 = always lay out and fit everything.
   * Default `DEFAULT_REUSE_MAX_CHANGED` (`INDEX_BUILD_REUSE_MAX_CHANGED`).
   */
  reuseMaxChanged?: number;
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
  /** Cross-replica build lock (default: in-process only). */
  lock?: BuildLock;
  /** A build stops (HeapLimitError, build FAIL, previous generation live) when used heap / heap limit passes this (default 0.9; `guardHeap`). */
  heapFraction?: number;
  /**
   * Feed the IVF build from the snapshot pages as they arrive (default true) instead of reading every vector back
   * from `index.tracks` after the snapshot. Same rows, same order, same bytes, so the same generation (test); the
   * read-back path stays for a snapshot whose pages are not in byte order of the ids or that restarted.
   */
  feedBuildFromSnapshot?: boolean;
}

interface Job {
  taskId: string;
  /** Task ids of the requesters (e.g. the analysis or cleaning task), echoed in index.rebuild.completed.v1. */
  requesters: string[];
  reasons: string[];
  /** When the first request of this job arrived (a build that started later covers it). */
  requestedAt: Date;
  seq: number;
  startedAt?: string;
  log: string[];
}

/**
 * Rebuilds the shared index from the catalogue (spec "Shared index" 2; issue 6 "Index"):
 *  1. snapshot: every page of `GET /internal/snapshot/tracks` (binary pages, JSON from an older catalogue) is
 *     upserted into the catalogue copy (`index.tracks`), marked with the new generation; provider artist ids are
 *     counted per server; the page's vectors go into the IVF build's ingest at the same time (`SnapshotFeed`);
 *  2. build: the IVF build (ivf/ivf-build.ts) trains and assigns once the last page is in; every completed cell is
 *     written to `index.cells` as it is emitted. When the feed stopped (ids not in byte order, a restarted
 *     snapshot) the marked vectors stream back from the copy in canonical-id order instead (same generation);
 *  3. the 2-D PCA projection and the artist mixtures of the new generation are computed and stored;
 *  4. activation: one transaction flips `live` to the new generation, deletes tracks that vanished from
 *     the catalogue and every other generation's rows; then the in-memory reference is swapped.
 * Queries keep being answered from the old generation until step 4 (the build yields to the event loop).
 *
 * One build at a time: a request while one runs is coalesced into a single follow-up build (which sees
 * every change made meanwhile); every requester's task id is reported on completion. A failed build
 * leaves the previous generation live and is reported on the task board (state FAIL).
 */
export class RebuildService {
  private running?: { job: Job; done: Promise<void>; abort: AbortController };
  private pending?: Job;
  private readonly settings: BuildSettings;
  private readonly vectors: VectorStoreSettings;
  private readonly lock: BuildLock;
  private readonly heapFraction: number;
  /** Outcome of the last successful build (for status and benchmarks). */
  lastOutcome?: RebuildOutcome;
  lastError?: string;
  /** The last generation loaded from the database: how long it took (ms, maps included) and whether its quantised codes were stored (not recomputed). */
  lastLoad?: { generation: number; ms: number; storedCodes: boolean; phasesMs: Record<string, number> };

  constructor(
    private readonly catalogue: CataloguePort,
    private readonly tracks: TrackCopy,
    private readonly generations: GenerationStore,
    private readonly state: IndexState,
    private readonly maps: MapFollower,
    private readonly bus: Bus,
    private readonly logger: Logger,
    options: RebuildOptions = {},
  ) {
    this.settings = {
      snapshotPageSize: options.snapshotPageSize ?? 5000,
      vectorBatchSize: options.vectorBatchSize ?? 2000,
      snapshotWriters: Math.max(1, options.snapshotWriters ?? 2),
      cellFlushBytes: options.cellFlushBytes ?? 4 * 1024 * 1024,
      feedFromSnapshot: options.feedBuildFromSnapshot ?? true,
      reuseMaxChanged: options.reuseMaxChanged ?? DEFAULT_REUSE_MAX_CHANGED,
    };
    this.lock = options.lock ?? new LocalBuildLock();
    this.heapFraction = options.heapFraction ?? 0.9;
    this.vectors = options.vectors ?? { mode: 'float', pqM: 25, buildWorkers: 0 };
  }

  /**
   * Requests a rebuild. Starts one now when idle; otherwise joins the single pending follow-up build.
   * @returns the task id of the build that will serve the request, and whether it was coalesced
   */
  request(reason: string, requesterTaskId?: string): { taskId: string; coalesced: boolean } {
    if (!this.running) {
      const job = this.newJob(reason, requesterTaskId);
      this.start(job);
      return { taskId: job.taskId, coalesced: false };
    }
    if (this.pending) {
      this.pending.reasons.push(reason);
      if (requesterTaskId && !this.pending.requesters.includes(requesterTaskId)) this.pending.requesters.push(requesterTaskId);
      return { taskId: this.pending.taskId, coalesced: true };
    }
    this.pending = this.newJob(reason, requesterTaskId);
    void this.publishTask(this.pending, 'NEW', 0, 'queued behind the running index build');
    return { taskId: this.pending.taskId, coalesced: true };
  }

  /** True while a build runs or waits. */
  get busy(): boolean {
    return this.running !== undefined || this.pending !== undefined;
  }

  /**
   * True while a build runs or waits here, another replica holds the cross-replica build lock (it is building), or the
   * live generation in the database is newer than the one served here (built elsewhere, not loaded here yet). A probe
   * of the lock, released at once, and one read of the live build; either failing counts as busy (ask again later).
   */
  async busyAnywhere(): Promise<boolean> {
    if (this.busy) return true;
    const held = await this.lock.tryAcquire().catch(() => null);
    if (!held) return true;
    await held.release();
    // A build another replica has just activated and this one has not loaded yet (its event is on the way) counts too:
    // asking for a build then would build the same songs twice (CI: two replicas, one burst, three generations).
    const live = await this.generations.live().catch(() => null);
    if (live === null) return true;
    return live !== undefined && live.generation > this.state.current().generation;
  }

  /** Task id of the running build, if any. */
  get runningTaskId(): string | undefined {
    return this.running?.job.taskId;
  }

  /** Resolves when no build runs or waits (tests, benchmarks, shutdown). */
  async idle(): Promise<void> {
    while (this.running) await this.running.done;
  }

  /** Aborts the running build (the previous generation stays live) and drops the pending one. */
  async stop(): Promise<void> {
    this.pending = undefined;
    if (this.running) {
      this.running.abort.abort();
      await this.running.done;
    }
  }

  /**
   * Start-up: marks builds interrupted by a dead process as failed, then loads the live generation from
   * the database into memory (no rebuild). A stored generation that cannot be restored is logged and
   * treated as absent.
   * @returns whether a generation was loaded and how many interrupted builds were found
   */
  async loadLive(options: { markInterrupted?: boolean } = {}): Promise<{ loaded: boolean; interrupted: number }> {
    // A replica loading a generation another replica published must not fail that replica's running build.
    // Builds left 'building' are interrupted only when no replica holds the build lock (else one is running).
    let interrupted: number[] = [];
    if (options.markInterrupted !== false) {
      const free = await this.lock.tryAcquire();
      if (free) {
        try {
          interrupted = await this.generations.failInterrupted();
        } finally {
          await free.release();
        }
      }
    }
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
      restored = { generation: live.generation, index, artists, links, pca, coords, mapMethod, builtAt: live.finishedAt ?? live.createdAt, embedderVersion: live.embedderVersion };
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

  private newJob(reason: string, requesterTaskId?: string): Job {
    return { taskId: randomUUID(), requesters: requesterTaskId ? [requesterTaskId] : [], reasons: [reason], requestedAt: new Date(), seq: 0, log: [] };
  }

  private start(job: Job): void {
    const abort = new AbortController();
    const done = this.run(job, abort.signal).finally(() => {
      this.running = undefined;
      const next = this.pending;
      this.pending = undefined;
      if (next) this.start(next);
    });
    this.running = { job, done, abort };
  }

  private async run(job: Job, signal: AbortSignal): Promise<void> {
    job.startedAt = new Date().toISOString();
    let generation: number | undefined;
    let lock: BuildLockHandle | undefined;
    try {
      // One build at a time across replicas; a build that started after this request covers it.
      lock = await this.lock.acquire(signal, () => {
        this.note(job, 'waiting: another index replica is building');
        void this.publishTask(job, 'RUNNING', 0, 'waiting for the index build of another replica');
      });
      const covering = await this.generations.liveStartedSince(job.requestedAt);
      if (covering !== undefined) {
        if (this.state.current().generation !== covering) await this.loadLive({ markInterrupted: false });
        // Requesters waiting for index.rebuild.completed.v1 with their task id still get it.
        const items = this.state.current().index.size;
        for (const taskId of job.requesters) await this.safePublish(RoutingKeys.indexRebuilt, { generation: covering, items, taskId } satisfies IndexRebuilt);
        this.note(job, `served by generation ${covering}, whose build started after this request`);
        await this.publishTask(job, 'SUCCESS', 100, `index rebuilt (generation ${covering}, a build that started after this request)`, { generation: covering, requesters: job.requesters, coveredBy: covering });
        return;
      }
      await this.publishTask(job, 'RUNNING', 0, 'reading the catalogue snapshot');
      generation = await this.generations.createBuild(job.taskId, job.reasons.join('; '));
      const outcome = await this.build(job, generation, signal);
      this.lastOutcome = outcome;
      this.lastError = undefined;
      const requesters = job.requesters.length ? job.requesters : [undefined];
      for (const taskId of requesters) {
        const payload: IndexRebuilt = { generation: outcome.generation, items: outcome.items, ...(taskId ? { taskId } : {}) };
        await this.safePublish(RoutingKeys.indexRebuilt, payload);
      }
      this.note(job, `generation ${outcome.generation} live: ${outcome.items} songs, ${outcome.nlist} cells, ${Math.round(outcome.timingsMs.total)} ms`);
      await this.publishTask(job, 'SUCCESS', 100, 'index rebuilt', { ...outcome, requesters: job.requesters });
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      this.lastError = message;
      this.logger.error('index build failed', { taskId: job.taskId, generation, err: message });
      if (generation !== undefined) await this.generations.markFailed(generation, message).catch(() => undefined);
      this.note(job, `failed: ${message}`);
      await this.publishTask(job, signal.aborted ? 'REVOKED' : 'FAIL', 100, `index build failed: ${message}`.slice(0, 500), { requesters: job.requesters });
    } finally {
      await lock?.release();
    }
  }

  /** One build of generation `generation` (build-run.ts: the phases), reporting to the task board as it goes. */
  private build(job: Job, generation: number, signal: AbortSignal): Promise<RebuildOutcome> {
    const host: BuildHost = {
      catalogue: this.catalogue,
      tracks: this.tracks,
      generations: this.generations,
      state: this.state,
      maps: this.maps,
      logger: this.logger,
      vectors: this.vectors,
      settings: this.settings,
      note: (line) => this.note(job, line),
      progress: (percent, message) => this.publishTask(job, 'RUNNING', percent, message),
    };
    // A build that would exhaust the heap stops with a HeapLimitError instead of V8 ending the process (issue 36).
    const heap = guardHeap(signal, { fraction: this.heapFraction });
    return new BuildRun(host, generation, heap.signal)
      .run()
      .catch((err: unknown) => {
        throw heap.tripped() ?? err;
      })
      .finally(() => heap.stop());
  }

  private note(job: Job, line: string): void {
    job.log.push(`${new Date().toISOString()} ${line}`);
    if (job.log.length > 200) job.log.splice(0, job.log.length - 200);
  }

  private async publishTask(job: Job, state: TaskState, progress: number, message: string, details: Record<string, unknown> = {}): Promise<void> {
    const event: TaskUpdatedEvent = {
      taskId: job.taskId,
      type: 'index_build',
      owner: 'index',
      state,
      progress,
      message: message.slice(0, 500),
      servers: [],
      log: job.log.slice(-200),
      details: { reasons: job.reasons.slice(0, 20), ...details },
      ...(job.startedAt ? { startedAt: job.startedAt } : {}),
      ...(state === 'SUCCESS' || state === 'FAIL' || state === 'REVOKED' ? { finishedAt: new Date().toISOString() } : {}),
      seq: job.seq++,
    };
    await this.safePublish(RoutingKeys.taskUpdated, event);
  }

  /** Bus failures never fail a build: the index is what matters, the task board is informative. */
  private async safePublish(key: string, payload: unknown): Promise<void> {
    try {
      await this.bus.publish(key, payload);
    } catch (err) {
      this.logger.warn('bus publish failed', { key, err: (err as Error).message });
    }
  }
}

