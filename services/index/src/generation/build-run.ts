import { CooperativeScheduler, buildIvfIndex, type IvfBuildOptions, type IvfBuildResult, type VectorBatch } from '@polyphony/vector-engine';
import { ArtistLinkCounter, type Generation } from '../core/generation';
import type { GenerationMaps } from '../maps/generation-maps';
import { artistKey } from '../core/text';
import { VECTOR_DIM } from '../core/track.repository';
import { loadTrackMeta, TrackMetaStore } from '../maps/track-meta-store';
import { SemanticRows, seedSemanticDelta, seedSemanticRows, type SemanticDeltaSeed } from '../semantic/column-fill';
import { encodeBallBasis } from '../hyperbolic/ball';
import { ballBasisOf } from '../hyperbolic/ball-seed';
import { BackgroundStores, CellWriter } from './cell-writer';
import { BuildRows } from './build-rows';
import { fitArtists, layOutMap, quantise, type PhaseContext } from './build-phases';
import { BuildReuse } from './build-reuse';
import { PhaseClock } from './phase-clock';
import type { BuildHost, RebuildOutcome } from './build-types';
import { readDelta, type DeltaMaps, type FeedMark } from './delta-snapshot';
import { SnapshotFeed, feedDelta, feedPage } from './snapshot-feed';
import type { FeedBase, LinkRecorder } from './snapshot-delta';
import { logResume, snapshotPages } from './snapshot-pages';
import type { SnapshotPageBytes } from '../maps/wire';
import { tableStorageOf } from './vector-storage';

export type { BuildHost, BuildSettings, RebuildOutcome } from './build-types';

/**
 * One build of one generation, in named phases (RebuildService's steps; `run` calls them in order):
 *  1. `snapshot`: catalogue pages -> the catalogue copy, and (by default) -> the IVF build's ingest at once;
 *  2. `buildIvf`: the IVF build's rest (or a build from the copy); its cells are written in the background
 *     (`CellWriter`) while phases 3-4 run, and all stored before phase 5;
 *  3. `layOutMap` (PCA basis, UMAP or PCA map) and `fitArtists` (artist mixtures, provider artist links; build-phases.ts);
 *  4. `quantise` (int8 / pq modes: the float generation is re-packed, codes stored; build-phases.ts);
 *  5. `activate`: maps (carried from the serving generation's after a delta snapshot) and display metadata loaded,
 *     per-generation tables prepared, the generation made live;
 *  6. `cleanup`: the older builds' rows deleted (after the swap).
 * Wall and CPU time per phase are measured (`PhaseClock`); an abort (`signal`) stops between and inside phases.
 * What the build takes over from the serving generation is decided by `BuildReuse` (build-reuse.ts); the delta
 * snapshot and its base are delta-snapshot.ts.
 */
export class BuildRun {
  private readonly clock = new PhaseClock();
  /** Rows of the new generation in build order and their artists, filled by whichever input feeds the IVF build. */
  private readonly rows = new BuildRows();
  private readonly scheduler: CooperativeScheduler;
  private lastPercent = -1;
  /** The completed cells, written in the background while the build goes on (awaited before the activation). */
  private readonly cells: CellWriter;
  /** Every background write of the generation's stored parts (the cells' included), awaited before the activation. */
  private readonly stores = new BackgroundStores();
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
  /** After a delta snapshot: the text search's seed carried from the serving generation (delta-snapshot.ts). */
  private deltaSemantic: SemanticDeltaSeed | undefined;
  /** After a delta snapshot: what carries the serving generation's maps into this one at activation (delta-snapshot.ts). */
  private deltaMaps: DeltaMaps | undefined;
  private readonly reuse: BuildReuse;
  private activateMs: RebuildOutcome['activateMs'] = { load: 0, prepare: 0, commit: 0 };
  /** The change-feed mark taken before this build read the catalogue, and the catalogue it belongs to (snapshot-delta.ts). */
  private mark: FeedMark | undefined;
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
    this.reuse = new BuildReuse(host);
    this.cells = new CellWriter((cells) => host.generations.saveCells(generation, cells), host.settings.cellFlushBytes);
  }

  private get phase(): PhaseContext {
    return { host: this.host, generation: this.generation, scheduler: this.scheduler, reuse: this.reuse, version: this.version, store: (w) => this.stores.add(w) };
  }

  /**
   * Runs every phase in order. @throws on abort or any phase's failure (the previous generation stays live; the
   * cell writes already started are waited for first, so none outlives the build)
   */
  async run(): Promise<RebuildOutcome> {
    try {
      return await this.phases();
    } catch (err) {
      await this.cells.settle();
      await this.stores.settle();
      throw err;
    }
  }

  /** The phases of `run`, in order (see the class comment). */
  private async phases(): Promise<RebuildOutcome> {
    await this.snapshot();
    this.clock.end('snapshot');
    this.host.note(`snapshot: ${this.synced} songs (${this.skipped} skipped), embedder ${this.version ?? 'none'}`);
    const { index, report } = await this.buildIvf();
    this.clock.end('build');
    const { pca, coords, mapMethod } = await layOutMap(this.phase, index);
    this.clock.end('projection');
    const { artists, links } = await fitArtists(this.phase, index, pca, this.rows, this.links);
    this.clock.end('artists');
    const served = await quantise(this.phase, index);
    this.clock.end('quantise');
    const lineage = this.reuse.lineage(index.size);
    await this.host.generations.saveLineage(this.generation, lineage);
    // The next build's delta starts from this generation (only when every row was fed and recorded): stored with the
    // build before it goes live (a restarted service or another replica takes it up). It is held in memory only when
    // that write failed: the link contributions are ~20 MiB of JS objects at 1M songs that a serving replica would
    // carry between builds, while reading them back from the row costs the next build ~0.6 s (session 19).
    const rec = this.linkRecorder;
    const feedBase: FeedBase | undefined = this.mark && rec && !this.feedStopped && rec.rows === index.size ? { generation: this.generation, ...this.mark, rows: index.size, links: rec } : undefined;
    const stored = feedBase ? await this.saveFeedBase(feedBase) : false;
    const deleted = await this.activate({ generation: this.generation, index: served, artists, links, pca, coords, mapMethod, builtAt: new Date(), embedderVersion: this.version ?? null, lineage });
    this.clock.end('activate');
    this.host.feedBase?.set(stored ? undefined : feedBase);
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
      ...(this.reuse.report ? { reuse: this.reuse.report } : {}),
      ...(this.deltaReport ? { delta: this.deltaReport } : {}),
      ...(this.fullReason ? { fullReason: this.fullReason } : {}),
      activateMs: this.activateMs,
    };
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
      ...(streamed ? { keptCells: (count: number) => this.reuse.keptCells(count, this.version, this.feedStopped !== undefined) } : {}),
      onTrained: async (info) => {
        await h.generations.saveTrained(this.generation, info.dim, info.nlist, info.count, info.centroids);
        h.note(`trained ${info.nlist} cells on ${info.sampleSize} songs`);
      },
      // Views of the built index's arrays (CellSink), written in the background (CellWriter).
      onCell: (cellId, rowIds, vectors, ids) => this.cells.add({ cellId, rowIds, ids: ids as string[], vectors }),
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
   * Stores the delta base with the build row (`GenerationStore.saveFeedBase`, before the activation: it is read only
   * while this generation is served). A failed write costs the next restart's delta, not this build.
   * @returns whether it was stored
   */
  private async saveFeedBase(base: FeedBase): Promise<boolean> {
    return this.host.generations.saveFeedBase(this.generation, base).then(
      () => true,
      (err: unknown) => {
        this.host.logger.warn('delta base not stored', { generation: this.generation, err: (err as Error).message });
        return false;
      },
    );
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
    this.reuse.matcher = undefined;
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
            this.fedMeta = feedPage(page.tracks, this.feed!, this.rows, this.fedMeta, stopFeed, this.fedSemantic, this.reuse.matcher, this.linkRecorder);
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
    this.reuse.startMatch(expected);
  }

  /**
   * The delta snapshot (delta-snapshot.ts `readDelta`), tried first when generation reuse is on, the build is fed from
   * the snapshot and the catalogue has a change feed: it gives this build its mark and link recorder either way.
   * @returns true when the delta fed the build (the snapshot phase is done)
   */
  private async deltaSnapshot(): Promise<boolean> {
    const h = this.host;
    if (!(h.settings.reuseMaxChanged > 0) || this.feedStopped || !h.catalogue.snapshotChanges || !h.feedBase) return false;
    const read = await readDelta(h, this.generation, this.signal, this.scheduler, this.links, {
      start: (expected, version) => {
        this.version = version;
        this.startFeed(expected);
      },
      feed: (b) => void (this.fedMeta = feedDelta(b, this.feed!, this.rows, this.fedMeta!, this.reuse.matcher)),
      end: () => this.feed!.end(),
    });
    this.mark = read.mark;
    this.linkRecorder = read.recorder;
    this.fullReason = read.fullReason;
    if (!read.delta) return false;
    this.snapshotWriteMs += read.delta.writeMs;
    this.synced = this.rows.count;
    this.skipped = read.recorder!.skipped.size;
    this.removedIds = read.delta.removed;
    this.deltaSemantic = read.semantic;
    this.deltaMaps = read.maps;
    this.deltaReport = read.delta.report;
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
    // The cells are written behind the next phases (CellWriter); the activation waits for them (BackgroundStores).
    this.stores.add(this.cells.done());
    this.reuse.built(built.report.keptCellsPlaced ?? 0);
    const size = built.index.size;
    if (size !== rows.count) throw new Error(`build holds ${size} rows but ${rows.count} were streamed`);
    if (size !== this.synced) throw new Error(`build holds ${size} rows but the snapshot wrote ${this.synced}`);
    return built;
  }

  /**
   * The provider-id maps of the new generation `index`: after a delta snapshot carried from the serving generation's
   * (MapFollower.carry: its kept rows remapped, the incoming rows' mappings, the log since the delta was read), else
   * (a full build, or the serving generation is no longer the one the delta was read from) loaded from the catalogue.
   * The maps' own wall ms go into `activateMs` as `maps.carried` or `maps.loaded`.
   */
  private async loadMaps(index: Generation['index']): Promise<GenerationMaps> {
    const h = this.host;
    const carry = this.deltaMaps;
    this.deltaMaps = undefined;
    const t = performance.now();
    const serving = h.state.current();
    // The serving generation only grows while it is served (live appends keep its first rows); its maps follow the log.
    const carried = carry !== undefined && serving.generation === carry.generation && serving.index.size >= carry.newRowOf.length;
    const maps = carried ? await h.maps.carry(serving.maps, index, carry.newRowOf, carry.incoming, carry.since) : await h.maps.load(index);
    this.activateMs[carried ? 'maps.carried' : 'maps.loaded'] = performance.now() - t;
    return maps;
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
    const [maps, meta] = await Promise.all([this.loadMaps(parts.index), fedMeta ?? loadTrackMeta(parts.index, h.tracks, tableStorageOf(h.vectors))]);
    this.activateMs.load = performance.now() - t;
    if (signal.aborted) throw new Error('index build aborted');
    // Reuse on and the map kept: the serving generation's ball basis and its unchanged rows (GenerationReuse.keptBallBasis).
    const carried = this.reuse.keptBallBasis(parts.index);
    let gen: Generation = { ...parts, maps, meta, ...(carried ? { ballBasis: carried } : {}) };
    // The text search's table from the columns the snapshot pages filled, not from index.tracks (fed build only).
    if (fedMeta && this.fedSemantic) seedSemanticRows(parts.index, this.fedSemantic);
    // ...or, after a delta snapshot, carried from the serving generation's table (changed rows from their snapshot rows).
    else if (fedMeta && this.deltaSemantic) seedSemanticDelta(parts.index, this.deltaSemantic);
    this.fedSemantic = undefined;
    this.deltaSemantic = undefined;
    t = performance.now();
    const spans: Record<string, number> = {};
    await h.state.prepare(gen, undefined, spans);
    this.activateMs = { ...this.activateMs, prepare: performance.now() - t, ...Object.fromEntries(Object.entries(spans).map(([k, ms]) => [`prepare.${k}`, ms])) };
    if (signal.aborted) throw new Error('index build aborted');
    // Reuse on: the ball's basis (carried, or the one its ball fitted) is stored: every replica lays out this ball.
    const ballBasis = h.settings.reuseMaxChanged > 0 ? (carried ?? ballBasisOf(parts.index)) : undefined;
    if (ballBasis) await h.generations.saveBallBasis(this.generation, encodeBallBasis(ballBasis));
    if (ballBasis && !carried) gen = { ...gen, ballBasis };
    // Every stored part of the generation (cells, codes, artists, links: written in the background) is in before
    // the commit that makes it loadable; the wait is counted in activateMs.stores.
    t = performance.now();
    await this.stores.done();
    this.activateMs.stores = performance.now() - t;
    t = performance.now();
    const deleted = await h.generations.activate(this.generation, this.version ?? null, h.fence, this.removedIds);
    this.activateMs.commit = performance.now() - t;
    h.state.swap(gen);
    // Changes logged while the activation committed.
    void h.maps.catchUp(maps).catch(() => undefined);
    return deleted;
  }
}
