import {
  CooperativeScheduler,
  buildIvfIndex,
  cellsOfCodes,
  encodeIndexCodes,
  quantiseIndex,
  quantiseKeepingCodes,
  type IvfBuildOptions,
  type IvfBuildResult,
  type IvfIndex,
  type KeptCells,
  type VectorBatch,
} from '@polyphony/vector-engine';
import { ArtistModel } from '../artists/artist-model';
import { ArtistLinkCounter, type ArtistLinks, type Generation, type MapMethod, type ReuseLineage } from '../core/generation';
import { artistKey } from '../core/text';
import { VECTOR_DIM } from '../core/track.repository';
import { encodeBasis, fitPca, projectAll, type PcaBasis } from '../maps/projection';
import { loadTrackMeta, TrackMetaStore } from '../maps/track-meta-store';
import { umapLayout } from '../maps/umap-projection';
import { SemanticRows, seedSemanticRows } from '../semantic/column-fill';
import { encodeBallBasis } from '../hyperbolic/ball';
import { ballBasisOf } from '../hyperbolic/ball-seed';
import type { CellRecord } from './ports';
import { BuildRows } from './build-rows';
import { PhaseClock } from './phase-clock';
import type { BuildHost, RebuildOutcome } from './build-types';
import { GenerationReuse, RowMatcher, reuseLineage } from './reuse';
import { SnapshotFeed, feedPage, feedRows } from './snapshot-feed';
import { LinkRecorder, mergeDelta, planDelta } from './snapshot-delta';
import { logResume, snapshotPages } from './snapshot-pages';
import type { SnapshotPageBytes } from '../maps/wire';
import { residentBytesOf, storedQuantiser, tableStorageOf } from './vector-storage';

export type { BuildHost, BuildSettings, RebuildOutcome } from './build-types';

/**
 * One build of one generation, in named phases (RebuildService's steps; `run` calls them in order):
 *  1. `snapshot`: catalogue pages -> the catalogue copy, and (by default) -> the IVF build's ingest at once;
 *  2. `buildIvf`: the IVF build's rest (or a build from the copy), cells written as they complete;
 *  3. `layOutMap` (PCA basis, UMAP or PCA map) and `fitArtists` (artist mixtures, provider artist links);
 *  4. `quantise` (int8 / pq modes: the float generation is re-packed, codes stored);
 *  5. `activate`: maps and display metadata loaded, per-generation tables prepared, the generation made live;
 *  6. `cleanup`: the older builds' rows deleted (after the swap).
 * Wall and CPU time per phase are measured (`PhaseClock`); an abort (`signal`) stops between and inside phases.
 */
export class BuildRun {
  private readonly clock = new PhaseClock();
  /** Rows of the new generation in build order and their artists, filled by whichever input feeds the IVF build. */
  private readonly rows = new BuildRows();
  private readonly scheduler: CooperativeScheduler;
  private lastPercent = -1;
  private buffered: CellRecord[] = [];
  private bufferedBytes = 0;
  // Snapshot results.
  private links = new ArtistLinkCounter();
  private synced = 0;
  private skipped = 0;
  /** One embedder version per generation (docs/architecture.md "Embedder versions"). */
  private version: string | undefined;
  /** Where the snapshot's time goes: waiting for the catalogue's next page, writing a page into the copy. */
  private snapshotWaitMs = 0;
  private snapshotWriteMs = 0;
  // The build fed from the pages: started at the first page, stopped (read-back path instead) when the pages
  // are not in the byte order the read-back uses or the snapshot restarts, so both paths give the same rows.
  private readonly feedAbort = new AbortController();
  /** The build's abort (cancel, lost lease, shutdown, heap guard) also ends the feed the fed build may be waiting on. */
  private readonly abortFeed = () => this.endFeed(new Error('index build aborted'));
  private feed: SnapshotFeed | undefined;
  private fed: Promise<IvfBuildResult> | undefined;
  private feedStopped: string | undefined;
  /**
   * Display metadata of the fed rows, filled from the snapshot pages (row = build order, as the fed build numbers
   * them): activation then does not read `index.tracks` back. Dropped with the feed (read-back path).
   */
  private fedMeta: TrackMetaStore | undefined;
  /** The text search's columns of the fed rows, filled from the snapshot pages (same rows as `fedMeta`; dropped with the feed). */
  private fedSemantic: SemanticRows | undefined;
  private reuse: GenerationReuse | undefined;
  /** The fed rows matched with the serving generation as they stream (reuse on and a serving generation); dropped with the feed. */
  private matcher: RowMatcher | undefined;
  /** The reuse plan from the matcher (taken when the fed build asks for kept cells). */
  private matched: GenerationReuse | undefined;
  private cellsKept = false;
  private refusalNoted = false;
  private reuseReport: RebuildOutcome['reuse'];
  private activateMs: RebuildOutcome['activateMs'] = { load: 0, prepare: 0, commit: 0 };
  /** The change-feed mark taken before this build read the catalogue, and the catalogue it belongs to (snapshot-delta.ts). */
  private mark: { mark: string; catalogue: string } | undefined;
  /** The link contributions of this build's rows, for the next build's delta (fed builds only). */
  private linkRecorder: LinkRecorder | undefined;
  /** A delta build's removed ids (deleted from the catalogue copy at activation instead of every unmarked row). */
  private removedIds: string[] | undefined;
  private deltaReport: RebuildOutcome['delta'];
  private fullReason: string | undefined;

  constructor(
    private readonly host: BuildHost,
    private readonly generation: number,
    private readonly signal: AbortSignal,
  ) {
    this.feedStopped = host.settings.feedFromSnapshot ? undefined : 'disabled';
    this.scheduler = new CooperativeScheduler(10, signal);
  }

  /** Runs every phase in order. @throws on abort or any phase's failure (the previous generation stays live) */
  async run(): Promise<RebuildOutcome> {
    await this.snapshot();
    this.clock.end('snapshot');
    this.host.note(`snapshot: ${this.synced} songs (${this.skipped} skipped), embedder ${this.version ?? 'none'}`);
    const { index, report } = await this.buildIvf();
    this.clock.end('build');
    const { pca, coords, mapMethod } = await this.layOutMap(index);
    this.clock.end('projection');
    const { artists, links } = await this.fitArtists(index, pca);
    this.clock.end('artists');
    const served = await this.quantise(index);
    this.clock.end('quantise');
    const lineage = this.lineage(index.size);
    if (this.reuseReport) this.reuseReport.lineage = lineage;
    await this.host.generations.saveLineage(this.generation, lineage);
    const deleted = await this.activate({ generation: this.generation, index: served, artists, links, pca, coords, mapMethod, builtAt: new Date(), embedderVersion: this.version ?? null, lineage });
    this.clock.end('activate');
    // The next build's delta starts from this generation (only when every row was fed and recorded).
    const rec = this.linkRecorder;
    this.host.feedBase?.set(this.mark && rec && !this.feedStopped && rec.rows === index.size ? { generation: this.generation, ...this.mark, rows: index.size, links: rec } : undefined);
    this.host.logger.info('index generation live', { generation: this.generation, items: index.size, nlist: index.nlist, artists: artists.count, deletedTracks: deleted, ms: Math.round(this.clock.wallMs.total) });
    await this.host.generations.dropOlderBuilds(this.generation).catch((err: unknown) => this.host.logger.warn('older builds not deleted', { generation: this.generation, err: (err as Error).message }));
    this.clock.end('cleanup');
    return {
      generation: this.generation,
      items: index.size,
      nlist: report.nlist,
      deletedTracks: deleted,
      skippedTracks: this.skipped,
      timingsMs: this.clock.wallMs,
      snapshotMs: { waitForPages: this.snapshotWaitMs, writeCopy: this.snapshotWriteMs },
      cpuMs: this.clock.cpuMs,
      ivf: { ...report.timingsMs, fedFromSnapshot: this.feedStopped === undefined },
      ...(this.reuseReport ? { reuse: this.reuseReport } : {}),
      ...(this.deltaReport ? { delta: this.deltaReport } : {}),
      ...(this.fullReason ? { fullReason: this.fullReason } : {}),
      activateMs: this.activateMs,
    };
  }

  /** Writes the buffered cells (`index.cells`). */
  private async flush(): Promise<void> {
    if (this.buffered.length === 0) return;
    const cells = this.buffered;
    this.buffered = [];
    this.bufferedBytes = 0;
    await this.host.generations.saveCells(this.generation, cells);
  }

  /** The IVF build's options; `streamed` = fed from the snapshot pages (its ingest progress is the snapshot's). */
  private ivfOptions(expected: number | undefined, buildSignal: AbortSignal, streamed: boolean): IvfBuildOptions {
    const h = this.host;
    return {
      dim: VECTOR_DIM,
      ...(expected !== undefined ? { expectedCount: expected } : {}),
      generation: this.generation,
      signal: buildSignal,
      workers: h.vectors.buildWorkers,
      ...(streamed ? { keptCells: (count: number) => this.keptCells(count) } : {}),
      onTrained: async (info) => {
        await h.generations.saveTrained(this.generation, info.dim, info.nlist, info.count, info.centroids);
        h.note(`trained ${info.nlist} cells on ${info.sampleSize} songs`);
      },
      onCell: async (cellId, rowIds, vectors, ids) => {
        this.buffered.push({ cellId, rowIds: rowIds.slice(), ids: [...ids], vectors: vectors.slice() });
        this.bufferedBytes += vectors.byteLength + rowIds.byteLength;
        if (this.bufferedBytes >= h.settings.cellFlushBytes) await this.flush();
      },
      onProgress: (p) => {
        if (streamed && p.phase === 'ingest') return;
        const base = { ingest: 30, train: 45, assign: 55, arrange: 70, emit: 70 }[p.phase];
        const span = { ingest: 15, train: 10, assign: 15, arrange: 0, emit: 10 }[p.phase];
        const percent = Math.floor(base + (p.total > 0 ? (span * p.done) / p.total : 0));
        if (percent !== this.lastPercent) {
          this.lastPercent = percent;
          void h.progress(percent, `building the index: ${p.phase}`);
        }
      },
    };
  }

  /**
   * Asked by the fed build after its ingest: the serving generation's cells when the rows matched while streaming
   * change at most `reuseMaxChanged` of the catalogue and its cells are balanced enough (`GenerationReuse.keptCells`),
   * else undefined (k-means). The match is kept for the map and artists either way.
   */
  private keptCells(count: number): KeptCells | undefined {
    const m = this.matcher;
    this.matcher = undefined;
    if (!m || this.feedStopped) return undefined;
    if (m.failure) this.host.note(`rows not matched while streaming (${m.failure}); matched after the build`);
    const plan = GenerationReuse.fromMatcher(m, count, this.version ?? null, VECTOR_DIM);
    if (!plan) return undefined;
    this.matched = plan;
    this.reuseReport = { changed: plan.changed, removed: plan.removed, fraction: plan.fraction, map: false, artistsKept: 0, artistsFitted: 0, matchMs: m.ms, matchedInSnapshot: true, cellsKept: false, cellsPlaced: 0 };
    if (plan.fraction > this.host.settings.reuseMaxChanged || this.reuseRefused(plan)) return undefined;
    const kept = plan.keptCells(this.host.settings.reuseMaxCellImbalance);
    this.host.note(kept ? `IVF cells kept (${kept.cells.nlist} cells, imbalance ${kept.imbalance.toFixed(1)}): ${plan.changed} rows to place` : 'IVF cells retrained: the serving generation has none or they are too uneven');
    this.cellsKept = kept !== undefined;
    return kept?.cells;
  }

  /**
   * Why this build must not keep the serving generation's cells, basis or map although few rows changed: it was
   * requested for measured drift (`BuildHost.fresh`), or the lineage's cumulative drift (`reuseLineage`) would pass
   * `reuseMaxDrift`. Notes the reason once; undefined = reuse allowed.
   */
  private reuseRefused(plan: GenerationReuse): string | undefined {
    const { carried, drift } = reuseLineage(plan);
    const why = this.host.fresh
      ? 'requested for measured drift'
      : drift > this.host.settings.reuseMaxDrift
        ? `${carried.placedRows} rows placed without training since the lineage's ${carried.trainedRows}-row root (${drift.toFixed(3)} > ${this.host.settings.reuseMaxDrift})`
        : undefined;
    if (why && !this.refusalNoted) {
      this.refusalNoted = true;
      this.host.note(`trained afresh (no cells, basis or map kept): ${why}`);
    }
    return why;
  }

  /**
   * The new generation's reuse lineage: carried on from the serving generation when this build kept its cells or its
   * map (`reuseLineage`), else the build is the root (its rows trained, nothing placed).
   */
  private lineage(size: number): ReuseLineage {
    const plan = this.reuse ?? this.matched;
    if (plan && (this.cellsKept || this.reuseReport?.map)) return reuseLineage(plan).carried;
    return { trainedRows: size, placedRows: 0 };
  }

  /** Stops the fed build (the IVF build reads the catalogue copy back instead). */
  private stopFeed(reason: string): void {
    if (this.feedStopped) return;
    this.feedStopped = reason;
    this.feed?.fail(new Error(`snapshot feed stopped: ${reason}`));
    this.feedAbort.abort();
    this.rows.reset();
    this.fedMeta?.close();
    this.fedMeta = undefined;
    this.fedSemantic = undefined;
    this.matcher = undefined;
    this.host.note(`index build reads the catalogue copy back (${reason})`);
  }

  /**
   * Ends the fed build: the feed fails first, then its signal aborts. The fed build waits for the next page inside the
   * feed, where no abort check runs, so a snapshot that stopped feeding (an abort, or a catalogue page that failed,
   * after page 1) must fail the feed or awaiting the fed build never returns (the build, its lease renewal and
   * TaskHost.stop() then hung forever; issue 29).
   */
  private endFeed(reason: Error): void {
    this.feed?.fail(reason);
    this.feedAbort.abort();
  }

  private async settleFeed(): Promise<void> {
    if (this.fed) await this.fed.catch(() => undefined);
  }

  /**
   * Phase 1, snapshot: every catalogue page is upserted into the catalogue copy (`index.tracks`, up to
   * `snapshotWriters` pages at once), provider artist ids are counted, and the page's vectors go into the IVF
   * build's ingest (`SnapshotFeed`). A change of embedder version mid-snapshot starts it over (at most 3 times).
   */
  private async snapshot(): Promise<void> {
    const h = this.host;
    const { snapshotWriters } = h.settings;
    const signal = this.signal;
    let restarts = 0;
    const writes = new Set<Promise<void>>();
    const drainWrites = async () => {
      const all = [...writes];
      writes.clear();
      const failed = (await Promise.allSettled(all)).find((r) => r.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
    };
    signal.addEventListener('abort', this.abortFeed, { once: true });
    try {
      if (await this.deltaSnapshot()) return;
    } catch (err) {
      this.endFeed(err instanceof Error ? err : new Error(String(err)));
      await this.settleFeed();
      signal.removeEventListener('abort', this.abortFeed);
      throw err;
    }
    const stopFeed = (reason: string) => this.stopFeed(reason);
    // The catalogue's snapshot stream, decoded ahead while the current page is written (snapshot-pages.ts).
    let pages = this.snapshotPages();
    try {
      try {
        for (;;) {
          if (signal.aborted) throw new Error('index build aborted');
          const tWait = performance.now();
          const next = await pages.next();
          this.snapshotWaitMs += performance.now() - tWait;
          if (next.done) break;
          const page = next.value;
          const other = page.tracks.find((t) => t.embedderVersion !== (this.version ??= t.embedderVersion));
          if (other) {
            if (++restarts > 3) throw new Error(`the catalogue snapshot mixes embedder versions (${this.version} and ${other.embedderVersion})`);
            await drainWrites();
            h.note(`embedder version changed during the snapshot (${this.version} -> ${other.embedderVersion}); reading it again`);
            stopFeed('the snapshot restarted');
            this.linkRecorder = undefined;
            this.version = undefined;
            this.links = new ArtistLinkCounter();
            this.synced = 0;
            this.skipped = 0;
            await pages.return(undefined);
            pages = this.snapshotPages();
            continue;
          }
          if (!this.feedStopped) {
            if (!this.feed) {
              // Capacity hint: the catalogue's count on the first page, else the live generation's size (grows if short).
              const live = h.state.current().index.size;
              const expected = page.total ?? (live > 0 ? Math.ceil(live * 1.05) + 1024 : undefined);
              this.startFeed(expected);
              this.fedSemantic = new SemanticRows(expected ?? 1024);
            }
            this.fedMeta = feedPage(page.tracks, this.feed!, this.rows, this.fedMeta, stopFeed, this.fedSemantic, this.matcher, this.linkRecorder);
          }
          const tWrite = performance.now();
          while (writes.size >= snapshotWriters) await Promise.race(writes);
          this.snapshotWriteMs += performance.now() - tWrite;
          const write: Promise<void> = h.tracks.upsertSnapshot(page.tracks, this.generation).then((res) => {
            this.synced += res.written;
            this.skipped += res.skipped.length;
            if (res.skipped.length) h.logger.warn('snapshot tracks skipped (embedding is not 200 float32 values)', { count: res.skipped.length, first: res.skipped[0] });
          });
          writes.add(write);
          // A failed write is kept in the set so the next wait (or the drain below) throws it.
          void write.then(() => writes.delete(write), () => undefined);
          for (const t of page.tracks) {
            const key = artistKey(t.artist);
            for (const m of t.mappings) if (m.artistId) this.links.add(m.serverId, key, m.artistId);
          }
          await h.progress(Math.min(29, 1 + Math.floor(this.synced / 10_000)), `catalogue snapshot: ${this.synced} songs`);
          if (!page.next || page.tracks.length === 0) break;
        }
      } catch (err) {
        // No write outlives a failed snapshot.
        await drainWrites().catch(() => undefined);
        throw err;
      } finally {
        await pages.return(undefined);
      }
      // The fed build trains and assigns while the last pages are written.
      this.feed?.end();
      const tDrain = performance.now();
      await drainWrites();
      this.snapshotWriteMs += performance.now() - tDrain;
    } catch (err) {
      // No build outlives a failed snapshot either: the feed is failed BEFORE the fed build is awaited (endFeed).
      this.endFeed(err instanceof Error ? err : new Error(String(err)));
      await this.settleFeed();
      signal.removeEventListener('abort', this.abortFeed);
      throw err;
    }
  }

  /** Starts the fed build (its feed, metadata store and serving-generation match) for about `expected` rows. */
  private startFeed(expected: number | undefined): void {
    const h = this.host;
    this.feed = new SnapshotFeed();
    this.fed = buildIvfIndex(this.feed, this.ivfOptions(expected, this.feedAbort.signal, true));
    this.fed.catch(() => undefined);
    this.fedMeta = new TrackMetaStore(expected ?? 1024, tableStorageOf(h.vectors));
    const prev = h.state.current();
    if (h.settings.reuseMaxChanged > 0 && prev.generation !== 0 && prev.index.size > 0 && prev.pca) this.matcher = new RowMatcher(prev, expected ?? 1024);
  }

  /**
   * The delta snapshot (issue 35, snapshot-delta.ts), tried first when generation reuse is on and the build is fed from
   * the snapshot: the catalogue's change feed is asked for the songs changed since the serving generation's mark (which
   * also gives this build its own mark, taken before anything is read); with a usable delta, only those songs are read
   * (by id), every other row is taken from the serving generation, and only the changed rows are written into the
   * catalogue copy. Anything else (no feed, no base, a mark the catalogue refuses, too many changes, a fault of the
   * feed) leaves the full snapshot to run, with the mark when one came back.
   * @returns true when the delta fed the build (the snapshot phase is done)
   */
  private async deltaSnapshot(): Promise<boolean> {
    const h = this.host;
    if (!(h.settings.reuseMaxChanged > 0) || this.feedStopped || !h.catalogue.snapshotChanges || !h.feedBase) return false;
    const t0 = performance.now();
    const prev = h.state.current();
    const base = h.feedBase.get();
    const usable = base && base.generation === prev.generation ? base : undefined;
    const limit = Math.max(1000, Math.ceil(h.settings.reuseMaxChanged * prev.index.size));
    const answer = await h.catalogue.snapshotChanges(usable ? { mark: usable.mark, catalogue: usable.catalogue } : undefined, limit).catch((err: unknown) => {
      // A fault of the feed costs the delta, not the build.
      this.fullReason = `change feed failed: ${(err as Error).message}`;
      h.note(`full snapshot (${this.fullReason})`);
      return undefined;
    });
    if (!answer) return false;
    this.mark = { mark: answer.mark, catalogue: answer.catalogue };
    this.linkRecorder = new LinkRecorder();
    const plan = !usable ? 'no delta base (first build, restart or a failed build)' : answer.changed === null ? `change feed: ${answer.reason ?? 'no delta'}` : await planDelta(prev, usable, answer.changed, h.catalogue, this.signal);
    if (typeof plan === 'string') {
      this.fullReason = plan;
      h.note(`full snapshot (${plan})`);
      return false;
    }
    this.version = prev.embedderVersion ?? undefined;
    this.startFeed(plan.kept + plan.incoming.length);
    const rec = this.linkRecorder;
    for (const b of mergeDelta(prev, plan)) {
      if (this.signal.aborted) throw new Error('index build aborted');
      this.fedMeta = feedRows(b.ids, b.vectors, b.metas, this.feed!, this.rows, this.fedMeta!, this.matcher);
      for (const src of b.sources) {
        if (typeof src === 'number') rec.copyRow(usable!.links, src);
        else rec.row(src);
      }
      await this.scheduler.maybeYield();
    }
    const rows = new Set(plan.incoming);
    for (const t of plan.fetched) if (!rows.has(t)) rec.skip(t);
    for (const [id, refs] of plan.skippedKept) rec.copySkipped(usable!.links, id, refs);
    rec.countInto(this.links);
    this.feed!.end();
    const tWrite = performance.now();
    for (let i = 0; i < plan.incoming.length; i += 1000) await h.tracks.upsertSnapshot(plan.incoming.slice(i, i + 1000), this.generation);
    this.snapshotWriteMs += performance.now() - tWrite;
    this.synced = this.rows.count;
    this.skipped = rec.skipped.size;
    this.removedIds = plan.removed;
    this.deltaReport = { listed: answer.changed!.length, reread: plan.reread, kept: plan.kept, removed: plan.removed.length, ms: performance.now() - t0 };
    h.note(`delta snapshot: ${answer.changed!.length} songs changed since generation ${usable!.generation}, ${plan.incoming.length} rows read, ${plan.kept} kept, ${plan.removed.length} removed`);
    return true;
  }

  /** The catalogue's snapshot pages from the start (stream, reopened after a cut; paging from an older catalogue). */
  private snapshotPages(): AsyncGenerator<SnapshotPageBytes> {
    return snapshotPages(this.host.catalogue, { limit: this.host.settings.snapshotPageSize, signal: this.signal, onResume: logResume(this.host) });
  }

  /**
   * Phase 2, IVF build: the fed build's rest, or (feed stopped) a build from the catalogue copy streamed in
   * canonical-id order; every completed cell is written as it is emitted. @throws when the row counts disagree
   */
  private async buildIvf(): Promise<IvfBuildResult> {
    const h = this.host;
    const rows = this.rows;
    let built: IvfBuildResult;
    try {
      if (this.fed && !this.feedStopped) built = await this.fed;
      else {
        await this.settleFeed();
        rows.reset();
        const expected = await h.tracks.countSeen(this.generation);
        const tracks = h.tracks;
        const generation = this.generation;
        const batchSize = h.settings.vectorBatchSize;
        const source = async function* (): AsyncGenerator<VectorBatch> {
          for await (const b of tracks.streamVectors(generation, batchSize)) {
            rows.add(b.ids, b.artistKeys, b.artistNames);
            yield { ids: b.ids, vectors: b.vectors };
          }
        };
        built = await buildIvfIndex(source(), this.ivfOptions(expected, this.signal, false));
      }
    } finally {
      this.signal.removeEventListener('abort', this.abortFeed);
    }
    await this.flush();
    if (this.reuseReport) {
      this.reuseReport.cellsKept = this.cellsKept;
      this.reuseReport.cellsPlaced = built.report.keptCellsPlaced ?? 0;
    }
    const size = built.index.size;
    if (size !== rows.count) throw new Error(`build holds ${size} rows but ${rows.count} were streamed`);
    if (size !== this.synced) throw new Error(`build holds ${size} rows but the snapshot wrote ${this.synced}`);
    return built;
  }

  /**
   * Phase 3a, map: the PCA basis is always fitted (artist mixture prior); the map is UMAP from UMAP_MIN_SAMPLES
   * rows on, else the PCA projection. Stored with the generation (`index.map_projections`).
   */
  private async layOutMap(index: IvfIndex): Promise<{ pca: PcaBasis | undefined; coords: Float32Array; mapMethod: MapMethod }> {
    const kept = await this.reusedMap(index);
    if (kept) {
      await this.host.generations.saveProjection(this.generation, kept.coords, encodeBasis(kept.pca), kept.mapMethod);
      return kept;
    }
    this.reuse = undefined;
    const pca = await fitPca(index, this.scheduler);
    await this.host.progress(76, 'laying out the map');
    const umap = await umapLayout(index, this.scheduler);
    const mapMethod: MapMethod = umap ? 'umap' : 'pca';
    const coords = umap ?? (pca ? await projectAll(index, pca, this.scheduler) : new Float32Array(0));
    await this.host.generations.saveProjection(this.generation, coords, pca ? encodeBasis(pca) : null, mapMethod);
    return { pca, coords, mapMethod };
  }

  /**
   * The serving generation's basis and map carried over (generation/reuse.ts) when this build changes at most
   * `reuseMaxChanged` of the rows; undefined (full layout) otherwise. Sets `this.reuse` for the artists.
   */
  private async reusedMap(index: IvfIndex): Promise<{ pca: PcaBasis; coords: Float32Array; mapMethod: MapMethod } | undefined> {
    const max = this.host.settings.reuseMaxChanged;
    const prev = this.host.state.current();
    if (!(max > 0) || prev.generation === 0) return undefined;
    const t = performance.now();
    const plan = this.matched ?? (await GenerationReuse.plan(prev, index, this.version ?? null, this.scheduler));
    if (!plan) return undefined;
    if (!this.matched) this.reuseReport = { changed: plan.changed, removed: plan.removed, fraction: plan.fraction, map: false, artistsKept: 0, artistsFitted: 0, matchMs: performance.now() - t, matchedInSnapshot: false, cellsKept: false, cellsPlaced: 0 };
    const kept = plan.fraction <= max && !this.reuseRefused(plan) ? await plan.map(index, this.scheduler) : undefined;
    this.host.note(`${kept ? 'map, basis and unchanged artists kept' : 'full layout'}: ${plan.changed} of ${index.size} songs changed, ${plan.removed} removed (reuse up to ${max})`);
    if (!kept) return undefined;
    this.reuse = plan;
    if (this.reuseReport) this.reuseReport.map = true;
    return kept;
  }

  /** Phase 3b, artists: every artist's mixture (prior from the PCA variance) and the provider artist links, stored. */
  private async fitArtists(index: IvfIndex, pca: PcaBasis | undefined): Promise<{ artists: ArtistModel; links: ArtistLinks }> {
    const h = this.host;
    await h.progress(82, 'fitting artist mixtures');
    const rows = this.rows;
    // With the serving generation's basis (same prior), unchanged artists keep their mixtures (generation/reuse.ts).
    const keep = this.reuse?.artists();
    let kept = 0;
    const reuse = keep
      ? (key: string, r: Int32Array) => {
          const fit = keep(key, r);
          if (fit) kept++;
          return fit;
        }
      : undefined;
    const artists = pca ? await ArtistModel.fit(index, rows.artistOfRow(), rows.artistKeys, rows.artistNames, pca.variance, this.scheduler, h.vectors.dir, h.vectors.buildWorkers, undefined, reuse) : ArtistModel.empty(VECTOR_DIM, index.size);
    if (this.reuseReport) {
      this.reuseReport.artistsKept = kept;
      this.reuseReport.artistsFitted = artists.count - kept;
    }
    // Records are read back from the model's mixture file one batch at a time.
    await h.generations.saveArtists(this.generation, (function* () {
      for (let a = 0; a < artists.count; a++) yield artists.record(a);
    })());
    const links = this.links.finish();
    await h.generations.saveLinks(this.generation, links.entries());
    return { artists, links };
  }

  /** Phase 4, quantisation (int8 / pq modes): the float generation is re-packed and dropped; codes are stored. */
  private async quantise(index: IvfIndex): Promise<IvfIndex> {
    const v = this.host.vectors;
    if (v.mode === 'float') return index;
    const generations = this.host.generations;
    await this.host.progress(90, `quantising the vectors (${v.mode})`);
    const mode = v.mode as 'int8' | 'pq';
    const options = { mode, pqM: v.pqM, scheduler: this.scheduler, workers: v.buildWorkers, residentMaxBytes: residentBytesOf(v), ...(v.rerank ? { rerank: v.rerank } : {}), ...(v.dir ? { dir: v.dir } : {}) };
    // On kept cells, the serving generation's quantiser and the codes of unchanged rows are kept (generation/reuse.ts).
    const keep = this.cellsKept ? this.matched?.keptCodes(mode, v.pqM) : undefined;
    const kept = keep ? await quantiseKeepingCodes(index, keep, options) : undefined;
    if (kept && this.reuseReport) this.reuseReport.codesEncoded = kept.encoded;
    const served = kept?.index ?? (await quantiseIndex(index, options));
    // Stored with the generation: other replicas load the codes instead of training and encoding again.
    const parts = served.parts();
    const qz = parts.quantised!.quantiser;
    await generations.saveQuantised(this.generation, storedQuantiser(qz), cellsOfCodes(parts.cellOffsets, parts.quantised!.codes, qz.codeSize));
    if (v.mode === 'pq') {
      // The int8 codes too (one pass over the float cells, ~1 s of CPU per 100k rows, encoded cell by cell into
      // the INSERTs): an int8 replica of this generation restores without encoding. An int8 build stores no PQ
      // codes (PQ encoding costs ~85x more); a PQ replica of such a generation trains and encodes its own.
      const int8 = await encodeIndexCodes(index, { mode: 'int8', scheduler: this.scheduler });
      await generations.saveQuantised(this.generation, storedQuantiser(int8.quantiser), int8.cells);
    }
    return served;
  }

  /**
   * Phase 5, activation: maps and display metadata of the served index are loaded, per-generation tables (text
   * search) prepared while the old generation still answers, then one transaction makes it live and the
   * in-memory reference is swapped. @returns the number of tracks deleted (vanished from the catalogue)
   */
  private async activate(parts: Omit<Generation, 'maps' | 'meta'>): Promise<number> {
    const h = this.host;
    const signal = this.signal;
    await h.progress(95, 'activating the new generation');
    if (signal.aborted) throw new Error('index build aborted');
    let t = performance.now();
    // The metadata the snapshot pages carried (fed build), else read back from the catalogue copy.
    const fedMeta = this.fedMeta && !this.feedStopped ? this.fedMeta.resizedTo(parts.index.size) : undefined;
    const [maps, meta] = await Promise.all([h.maps.load(parts.index), fedMeta ?? loadTrackMeta(parts.index, h.tracks, tableStorageOf(h.vectors))]);
    this.activateMs.load = performance.now() - t;
    if (signal.aborted) throw new Error('index build aborted');
    // Reuse on and the map kept: the serving generation's ball basis and its unchanged rows (GenerationReuse.keptBallBasis).
    const carried = this.host.settings.reuseMaxChanged > 0 ? this.reuse?.keptBallBasis(parts.index) : undefined;
    if (carried && this.reuseReport) this.reuseReport.ballKept = true;
    let gen: Generation = { ...parts, maps, meta, ...(carried ? { ballBasis: carried } : {}) };
    // The text search's table from the columns the snapshot pages filled, not from index.tracks (fed build only).
    if (fedMeta && this.fedSemantic) seedSemanticRows(parts.index, this.fedSemantic);
    this.fedSemantic = undefined;
    t = performance.now();
    const spans: Record<string, number> = {};
    await h.state.prepare(gen, undefined, spans);
    this.activateMs = { ...this.activateMs, prepare: performance.now() - t, ...Object.fromEntries(Object.entries(spans).map(([k, ms]) => [`prepare.${k}`, ms])) };
    if (signal.aborted) throw new Error('index build aborted');
    // Reuse on: the ball's basis (carried, or the one its ball fitted) is stored: every replica lays out this ball.
    const ballBasis = h.settings.reuseMaxChanged > 0 ? (carried ?? ballBasisOf(parts.index)) : undefined;
    if (ballBasis) await h.generations.saveBallBasis(this.generation, encodeBallBasis(ballBasis));
    if (ballBasis && !carried) gen = { ...gen, ballBasis };
    t = performance.now();
    const deleted = await h.generations.activate(this.generation, this.version ?? null, h.fence, this.removedIds);
    this.activateMs.commit = performance.now() - t;
    h.state.swap(gen);
    // Changes logged while the activation committed.
    void h.maps.catchUp(maps).catch(() => undefined);
    return deleted;
  }
}
