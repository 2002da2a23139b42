import { randomUUID } from 'node:crypto';
import { RoutingKeys, type IndexRebuilt, type TaskState, type TaskUpdatedEvent, type SnapshotTrackBytes } from '@polyphony/contracts';
import type { Bus, Logger } from '@polyphony/platform';
import type { CellRecord, GenerationRepository, StoredQuantiserRecord } from './generation.repository';
import { LocalBuildLock, type BuildLock, type BuildLockHandle } from './build-lock.repository';
import { type TrackRepository, VECTOR_DIM, snapshotVector } from '../core/track.repository';
import { SnapshotFeed, byteOrderLess } from './snapshot-feed';
import { ArtistModel, ArtistModelBuilder } from '../artists/artist-model';
import { ArtistLinkCounter, ArtistLinks, type Generation, type IndexState, type MapMethod } from '../core/generation';
import { CooperativeScheduler, buildIvfIndex, type IvfBuildOptions, type IvfBuildResult, type VectorBatch, IvfIndex, ProductQuantiser, type Quantiser, DEFAULT_PQ_M, cellsOfCodes, encodeIndexCodes, quantiseIndex, quantiserFromParams, restoreQuantised } from '@polyphony/vector-engine';
import type { VectorStoreSettings } from '../config';
import type { MapFollower } from '../maps/generation-maps';
import { loadTrackMeta } from '../maps/track-meta-store';
import type { CataloguePort } from '../core/ports';
import { decodeBasis, encodeBasis, fitPca, projectAll } from '../maps/projection';
import { umapLayout } from '../maps/umap-projection';
import { artistKey } from '../core/text';

/** Tunables of the rebuild. */
export interface RebuildOptions {
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

/** What a finished build reports. */
export interface RebuildOutcome {
  generation: number;
  items: number;
  nlist: number;
  deletedTracks: number;
  skippedTracks: number;
  timingsMs: { snapshot: number; build: number; projection: number; artists: number; quantise: number; activate: number; total: number };
  /** Snapshot wall time spent waiting for the catalogue's pages (fetch, JSON parse and validation not overlapped with writing) and waiting for the writes into `index.tracks` (a free writer, then the last writes), ms. */
  snapshotMs: { waitForPages: number; writeCopy: number };
  /** Process CPU time (user + system, every thread: the build and map workers included) of the same phases, ms. */
  cpuMs: { snapshot: number; build: number; projection: number; artists: number; quantise: number; activate: number; total: number };
  /**
   * The IVF build itself (ivf-build.ts report, wall ms): ingest (during the snapshot when fed from it), train,
   * assign, arrange, emit (cells written to `index.cells` as they are emitted); `fedFromSnapshot` says which input path ran.
   */
  ivf: { ingest: number; train: number; assign: number; arrange: number; emit: number; total: number; fedFromSnapshot: boolean };
}

/** User + system CPU time of this process (all threads), ms. */
function cpuNow(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

type BuildPhase = 'snapshot' | 'build' | 'projection' | 'artists' | 'quantise' | 'activate';

/** Wall and process-CPU time of a build's consecutive phases: `end(phase)` closes a phase where the last one ended. */
class PhaseClock {
  private readonly t0 = performance.now();
  private readonly c0 = cpuNow();
  private t = this.t0;
  private c = this.c0;
  readonly wallMs = { snapshot: 0, build: 0, projection: 0, artists: 0, quantise: 0, activate: 0, total: 0 };
  readonly cpuMs = { snapshot: 0, build: 0, projection: 0, artists: 0, quantise: 0, activate: 0, total: 0 };

  end(phase: BuildPhase): void {
    const t = performance.now();
    const c = cpuNow();
    this.wallMs[phase] = t - this.t;
    this.cpuMs[phase] = c - this.c;
    this.wallMs.total = t - this.t0;
    this.cpuMs.total = c - this.c0;
    this.t = t;
    this.c = c;
  }
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
  private readonly snapshotPageSize: number;
  private readonly vectorBatchSize: number;
  private readonly snapshotWriters: number;
  private readonly cellFlushBytes: number;
  private readonly vectors: VectorStoreSettings;
  private readonly lock: BuildLock;
  private readonly feedFromSnapshot: boolean;
  /** Outcome of the last successful build (for status and benchmarks). */
  lastOutcome?: RebuildOutcome;
  lastError?: string;
  /** The last generation loaded from the database: how long it took (ms, maps included) and whether its quantised codes were stored (not recomputed). */
  lastLoad?: { generation: number; ms: number; storedCodes: boolean; phasesMs: Record<string, number> };

  constructor(
    private readonly catalogue: CataloguePort,
    private readonly tracks: TrackRepository,
    private readonly generations: GenerationRepository,
    private readonly state: IndexState,
    private readonly maps: MapFollower,
    private readonly bus: Bus,
    private readonly logger: Logger,
    options: RebuildOptions = {},
  ) {
    this.snapshotPageSize = options.snapshotPageSize ?? 5000;
    this.vectorBatchSize = options.vectorBatchSize ?? 2000;
    this.snapshotWriters = Math.max(1, options.snapshotWriters ?? 2);
    this.cellFlushBytes = options.cellFlushBytes ?? 4 * 1024 * 1024;
    this.lock = options.lock ?? new LocalBuildLock();
    this.feedFromSnapshot = options.feedBuildFromSnapshot ?? true;
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
        index = await restoreQuantised(input, { mode: v.mode, pqM: v.pqM, workers: v.buildWorkers, residentMaxBytes: residentBytesOf(v), ...(v.dir ? { dir: v.dir } : {}) }, stored);
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

  private async build(job: Job, generation: number, signal: AbortSignal): Promise<RebuildOutcome> {
    const clock = new PhaseClock();
    // Rows of the new generation in build order and their artists, filled by whichever input feeds the IVF build.
    const rows = new BuildRows();
    // The IVF build's options; `streamed` = fed from the snapshot pages (its ingest progress is the snapshot's).
    let lastPercent = -1;
    let buffered: CellRecord[] = [];
    let bufferedBytes = 0;
    const flush = async () => {
      if (buffered.length === 0) return;
      const cells = buffered;
      buffered = [];
      bufferedBytes = 0;
      await this.generations.saveCells(generation, cells);
    };
    const ivfOptions = (expected: number | undefined, buildSignal: AbortSignal, streamed: boolean): IvfBuildOptions => ({
      dim: VECTOR_DIM,
      ...(expected !== undefined ? { expectedCount: expected } : {}),
      generation,
      signal: buildSignal,
      workers: this.vectors.buildWorkers,
      onTrained: async (info) => {
        await this.generations.saveTrained(generation, info.dim, info.nlist, info.count, info.centroids);
        this.note(job, `trained ${info.nlist} cells on ${info.sampleSize} songs`);
      },
      onCell: async (cellId, rowIds, vectors, ids) => {
        buffered.push({ cellId, rowIds: rowIds.slice(), ids: [...ids], vectors: vectors.slice() });
        bufferedBytes += vectors.byteLength + rowIds.byteLength;
        if (bufferedBytes >= this.cellFlushBytes) await flush();
      },
      onProgress: (p) => {
        if (streamed && p.phase === 'ingest') return;
        const base = { ingest: 30, train: 45, assign: 55, arrange: 70, emit: 70 }[p.phase];
        const span = { ingest: 15, train: 10, assign: 15, arrange: 0, emit: 10 }[p.phase];
        const percent = Math.floor(base + (p.total > 0 ? (span * p.done) / p.total : 0));
        if (percent !== lastPercent) {
          lastPercent = percent;
          void this.publishTask(job, 'RUNNING', percent, `building the index: ${p.phase}`);
        }
      },
    });

    // 1. snapshot -> catalogue copy, and (by default) -> the IVF build's ingest at the same time
    let links = new ArtistLinkCounter();
    let synced = 0;
    let skipped = 0;
    // One embedder version per generation: the catalogue serves one version at a time, but it may switch while
    // the pages are read (docs/architecture.md "Embedder versions"); the snapshot then starts over (rows are upserts).
    let version: string | undefined;
    let restarts = 0;
    // Where the snapshot's time goes: waiting for the catalogue's next page, writing a page into the copy.
    let snapshotWaitMs = 0;
    let snapshotWriteMs = 0;
    const writes = new Set<Promise<void>>();
    const drainWrites = async () => {
      const all = [...writes];
      writes.clear();
      const failed = (await Promise.allSettled(all)).find((r) => r.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
    };
    // The build fed from the pages: started at the first page, stopped (read-back path instead) when the pages
    // are not in the byte order the read-back uses or the snapshot restarts, so both paths give the same rows.
    const feedAbort = new AbortController();
    const abortFeed = () => feedAbort.abort();
    signal.addEventListener('abort', abortFeed, { once: true });
    let feed: SnapshotFeed | undefined;
    let fed: Promise<IvfBuildResult> | undefined;
    let feedStopped: string | undefined = this.feedFromSnapshot ? undefined : 'disabled';
    const stopFeed = (reason: string) => {
      if (feedStopped) return;
      feedStopped = reason;
      feed?.fail(new Error(`snapshot feed stopped: ${reason}`));
      feedAbort.abort();
      rows.reset();
      this.note(job, `index build reads the catalogue copy back (${reason})`);
    };
    const settleFeed = async () => {
      if (fed) await fed.catch(() => undefined);
    };
    // The next page is fetched while the current one is written (one page of look-ahead).
    let nextPage = this.catalogue.snapshotPage(null, this.snapshotPageSize);
    try {
      try {
        for (;;) {
          if (signal.aborted) {
            nextPage.catch(() => undefined);
            throw new Error('index build aborted');
          }
          const tWait = performance.now();
          const page = await nextPage;
          snapshotWaitMs += performance.now() - tWait;
          const other = page.tracks.find((t) => t.embedderVersion !== (version ??= t.embedderVersion));
          if (other) {
            if (++restarts > 3) throw new Error(`the catalogue snapshot mixes embedder versions (${version} and ${other.embedderVersion})`);
            await drainWrites();
            this.note(job, `embedder version changed during the snapshot (${version} -> ${other.embedderVersion}); reading it again`);
            stopFeed('the snapshot restarted');
            version = undefined;
            links = new ArtistLinkCounter();
            synced = 0;
            skipped = 0;
            nextPage = this.catalogue.snapshotPage(null, this.snapshotPageSize);
            continue;
          }
          if (page.next && page.tracks.length > 0) nextPage = this.catalogue.snapshotPage(page.next, this.snapshotPageSize);
          if (!feedStopped) {
            if (!feed) {
              feed = new SnapshotFeed();
              // Capacity hint: the catalogue's count on the first page, else the live generation's size (grows if short).
              const live = this.state.current().index.size;
              fed = buildIvfIndex(feed, ivfOptions(page.total ?? (live > 0 ? Math.ceil(live * 1.05) + 1024 : undefined), feedAbort.signal, true));
              fed.catch(() => undefined);
            }
            this.feedPage(page.tracks, feed, rows, stopFeed);
          }
          // Up to `snapshotWriters` pages are written at once, each on its own connection (pages hold disjoint ids).
          const tWrite = performance.now();
          while (writes.size >= this.snapshotWriters) await Promise.race(writes);
          snapshotWriteMs += performance.now() - tWrite;
          const write: Promise<void> = this.tracks.upsertSnapshot(page.tracks, generation).then((res) => {
            synced += res.written;
            skipped += res.skipped.length;
            if (res.skipped.length) this.logger.warn('snapshot tracks skipped (embedding is not 200 float32 values)', { count: res.skipped.length, first: res.skipped[0] });
          });
          writes.add(write);
          // A failed write is kept in the set so the next wait (or the drain below) throws it.
          void write.then(() => writes.delete(write), () => undefined);
          for (const t of page.tracks) {
            const key = artistKey(t.artist);
            for (const m of t.mappings) if (m.artistId) links.add(m.serverId, key, m.artistId);
          }
          await this.publishTask(job, 'RUNNING', Math.min(29, 1 + Math.floor(synced / 10_000)), `catalogue snapshot: ${synced} songs`);
          if (!page.next || page.tracks.length === 0) break;
        }
      } catch (err) {
        // No write outlives a failed snapshot.
        await drainWrites().catch(() => undefined);
        throw err;
      }
      // The fed build trains and assigns while the last pages are written.
      feed?.end();
      const tDrain = performance.now();
      await drainWrites();
      snapshotWriteMs += performance.now() - tDrain;
    } catch (err) {
      // No build outlives a failed snapshot either.
      feedAbort.abort();
      await settleFeed();
      signal.removeEventListener('abort', abortFeed);
      throw err;
    }
    clock.end('snapshot');
    this.note(job, `snapshot: ${synced} songs (${skipped} skipped), embedder ${version ?? 'none'}`);

    // 2. IVF build, cells written as they complete: the fed build's rest, or a build from the catalogue copy
    let built: IvfBuildResult;
    try {
      if (fed && !feedStopped) built = await fed;
      else {
        await settleFeed();
        rows.reset();
        const expected = await this.tracks.countSeen(generation);
        const tracks = this.tracks;
        const batchSize = this.vectorBatchSize;
        const source = async function* (): AsyncGenerator<VectorBatch> {
          for await (const b of tracks.streamVectors(generation, batchSize)) {
            rows.add(b.ids, b.artistKeys, b.artistNames);
            yield { ids: b.ids, vectors: b.vectors };
          }
        };
        built = await buildIvfIndex(source(), ivfOptions(expected, signal, false));
      }
    } finally {
      signal.removeEventListener('abort', abortFeed);
    }
    const { index, report } = built;
    await flush();
    clock.end('build');
    if (index.size !== rows.count) throw new Error(`build holds ${index.size} rows but ${rows.count} were streamed`);
    if (index.size !== synced) throw new Error(`build holds ${index.size} rows but the snapshot wrote ${synced}`);
    const artistOfRow = rows.artistOfRow();
    const artistKeys = rows.artistKeys;
    const artistNames = rows.artistNames;

    // 3. projection and artists
    const scheduler = new CooperativeScheduler(10, signal);
    // The PCA basis is always fitted (artist mixture prior); the map is UMAP from UMAP_MIN_SAMPLES rows on.
    const pca = await fitPca(index, scheduler);
    await this.publishTask(job, 'RUNNING', 76, 'laying out the map');
    const umap = await umapLayout(index, scheduler);
    const mapMethod: MapMethod = umap ? 'umap' : 'pca';
    const coords = umap ?? (pca ? await projectAll(index, pca, scheduler) : new Float32Array(0));
    await this.generations.saveProjection(generation, coords, pca ? encodeBasis(pca) : null, mapMethod);
    clock.end('projection');
    await this.publishTask(job, 'RUNNING', 82, 'fitting artist mixtures');
    const artists = pca ? await ArtistModel.fit(index, artistOfRow, artistKeys, artistNames, pca.variance, scheduler, this.vectors.dir, this.vectors.buildWorkers) : ArtistModel.empty(VECTOR_DIM, index.size);
    // Records are read back from the model's mixture file one batch at a time.
    await this.generations.saveArtists(generation, (function* () {
      for (let a = 0; a < artists.count; a++) yield artists.record(a);
    })());
    const artistLinks = links.finish();
    await this.generations.saveLinks(generation, artistLinks.entries());
    clock.end('artists');

    // 4. quantisation (int8 / pq modes): the float generation is re-packed and dropped.
    let served = index;
    if (this.vectors.mode !== 'float') {
      await this.publishTask(job, 'RUNNING', 90, `quantising the vectors (${this.vectors.mode})`);
      const v = this.vectors;
      served = await quantiseIndex(index, { mode: v.mode as 'int8' | 'pq', pqM: v.pqM, scheduler, workers: v.buildWorkers, residentMaxBytes: residentBytesOf(v), ...(v.dir ? { dir: v.dir } : {}) });
      // Stored with the generation: other replicas load the codes instead of training and encoding again.
      const parts = served.parts();
      const qz = parts.quantised!.quantiser;
      await this.generations.saveQuantised(generation, storedQuantiser(qz), cellsOfCodes(parts.cellOffsets, parts.quantised!.codes, qz.codeSize));
      if (v.mode === 'pq') {
        // The int8 codes too (one pass over the float cells, ~1 s of CPU per 100k rows, encoded cell by cell into
        // the INSERTs): an int8 replica of this generation restores without encoding. An int8 build stores no PQ
        // codes (PQ encoding costs ~85x more); a PQ replica of such a generation trains and encodes its own.
        const int8 = await encodeIndexCodes(index, { mode: 'int8', scheduler });
        await this.generations.saveQuantised(generation, storedQuantiser(int8.quantiser), int8.cells);
      }
    }

    clock.end('quantise');

    // 5. activation
    await this.publishTask(job, 'RUNNING', 95, 'activating the new generation');
    if (signal.aborted) throw new Error('index build aborted');
    const [maps, meta] = await Promise.all([this.maps.load(served), loadTrackMeta(served, this.tracks, tableStorageOf(this.vectors))]);
    if (signal.aborted) throw new Error('index build aborted');
    const gen: Generation = { generation, index: served, artists, links: artistLinks, pca, coords, mapMethod, builtAt: new Date(), embedderVersion: version ?? null, maps, meta };
    // Per-generation tables (text search) are built while the old generation still answers.
    await this.state.prepare(gen);
    if (signal.aborted) throw new Error('index build aborted');
    const deleted = await this.generations.activate(generation, version ?? null);
    this.state.swap(gen);
    // Changes logged while the activation committed.
    void this.maps.catchUp(maps).catch(() => undefined);
    clock.end('activate');
    this.logger.info('index generation live', { generation, items: index.size, nlist: index.nlist, artists: artists.count, deletedTracks: deleted, ms: Math.round(clock.wallMs.total) });
    return {
      generation,
      items: index.size,
      nlist: report.nlist,
      deletedTracks: deleted,
      skippedTracks: skipped,
      timingsMs: clock.wallMs,
      snapshotMs: { waitForPages: snapshotWaitMs, writeCopy: snapshotWriteMs },
      cpuMs: clock.cpuMs,
      ivf: { ...report.timingsMs, fedFromSnapshot: feedStopped === undefined },
    };
  }

  /**
   * Pushes the usable vectors of one snapshot page into the fed build (the rule of `snapshotVector`, as the copy
   * skips them), checking that ids rise in byte order (`byteOrderLess`, the read-back's order); the first id out of
   * order stops the feed (`stop`), so the build reads the copy back instead and still sees the same row order.
   */
  private feedPage(tracks: readonly SnapshotTrackBytes[], feed: SnapshotFeed, rows: BuildRows, stop: (reason: string) => void): void {
    let lastId = rows.lastId;
    const ids: string[] = [];
    const keys: string[] = [];
    const names: string[] = [];
    const vectors = new Float32Array(tracks.length * VECTOR_DIM);
    for (const t of tracks) {
      const f = snapshotVector(t.vector);
      if (!f) continue;
      if (lastId !== undefined && !byteOrderLess(lastId, t.itemId)) {
        stop(`snapshot ids not in byte order at ${JSON.stringify(t.itemId.slice(0, 100))}`);
        return;
      }
      lastId = t.itemId;
      vectors.set(f, ids.length * VECTOR_DIM);
      ids.push(t.itemId);
      keys.push(artistKey(t.artist));
      names.push(t.artist);
    }
    if (ids.length === 0) return;
    rows.add(ids, keys, names);
    feed.push({ ids, vectors: vectors.subarray(0, ids.length * VECTOR_DIM) });
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

/** Bytes of a generation's float copy kept in memory at most (`INDEX_VECTOR_RESIDENT_MIB`; absent = 0, disk only). */
function residentBytesOf(v: VectorStoreSettings): number {
  return Math.floor((v.residentMiB ?? 0) * 1024 * 1024);
}

/**
 * Where a generation's display metadata and text-search columns live (`INDEX_TABLE_RESIDENT_MIB`, `INDEX_VECTOR_DIR`);
 * settings without a table budget (tests, benches) keep them in memory.
 */
export function tableStorageOf(v: VectorStoreSettings): { dir?: string; residentMaxBytes?: number } {
  return { ...(v.dir ? { dir: v.dir } : {}), ...(v.tableResidentMiB !== undefined ? { residentMaxBytes: Math.floor(v.tableResidentMiB * 1024 * 1024) } : {}) };
}

/** The stored form of a trained quantiser (`index.quantisers` row). */
function storedQuantiser(q: Quantiser): StoredQuantiserRecord {
  return { mode: q.kind, pqM: q instanceof ProductQuantiser ? q.m : null, codeSize: q.codeSize, params: q.toParams() };
}

/**
 * The rows of a build in build order and their artists (index per distinct folded artist key, -1 = no artist),
 * filled batch by batch by the input that feeds the IVF build (the snapshot pages or the catalogue copy).
 */
class BuildRows {
  count = 0;
  lastId: string | undefined;
  artistKeys: string[] = [];
  artistNames: string[] = [];
  private keyToArtist = new Map<string, number>();
  private artistOf = new Int32Array(1024);

  /** Appends one batch: canonical ids, folded artist keys and display names, same length. */
  add(ids: readonly string[], keys: readonly string[], names: readonly string[]): void {
    if (this.count + ids.length > this.artistOf.length) {
      const grown = new Int32Array(Math.max(this.count + ids.length, this.artistOf.length * 2));
      grown.set(this.artistOf.subarray(0, this.count));
      this.artistOf = grown;
    }
    keys.forEach((key, i) => {
      let a = this.keyToArtist.get(key);
      if (a === undefined) {
        a = this.artistKeys.length;
        this.keyToArtist.set(key, a);
        this.artistKeys.push(key);
        this.artistNames.push(names[i]!);
      }
      this.artistOf[this.count + i] = key ? a : -1;
    });
    this.count += ids.length;
    if (ids.length) this.lastId = ids[ids.length - 1];
  }

  /** Forgets every row (the build starts over from another input). */
  reset(): void {
    this.count = 0;
    this.lastId = undefined;
    this.artistKeys = [];
    this.artistNames = [];
    this.keyToArtist = new Map();
    this.artistOf = new Int32Array(1024);
  }

  /** Artist index of each row (`count` entries). */
  artistOfRow(): Int32Array {
    return this.artistOf.subarray(0, this.count);
  }
}
