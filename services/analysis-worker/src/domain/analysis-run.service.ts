import { RoutingKeys, type AnalysisTrackRequested, type EmbeddingSwitchStatus, type IndexRebuildRequested, type ServerTaskCounts } from '@polyphony/contracts';
import type { ProviderTrack } from '@polyphony/media-servers';
import {
  LeaseLostError,
  TaskHost,
  isTransientFault,
  jitteredBackoffMs,
  leaseOwnerName,
  withTransientRetry,
  type Bus,
  type Logger,
  type Metrics,
  type TaskContext,
  type TaskEnd,
  type TaskRun,
} from '@polyphony/platform';
import type { AnalysisRunStore, CataloguePort, IndexPort, LearnedTarget, MediaClientFactory, RegistryPort, RunServerRow, ServerInfo } from './ports';
import { serverCounts, runProgress } from './run-progress';
import { DEFAULT_RUN_SETTINGS, SERVER_FAILURE_THRESHOLD, storedOptions, withOverrides, type AnalysisRunOptions, type RunOverrides, type RunSettings } from './run-settings';

export { SERVER_FAILURE_THRESHOLD, type AnalysisRunOptions, type RunOverrides, type RunSettings } from './run-settings';
import { indexCoverage } from './index-coverage';
import { metadataHash } from './track-processor';

/** Working state of the run coordinated here (rebuilt by `begin` from durable rows on a takeover). */
interface AnalysisWork {
  /** Durable per-server state, in run order. */
  rows: RunServerRow[];
  /** The options fixed when the run started. */
  options: RunSettings;
  /** Whether this coordination fixed the server order and wrote its first snapshot. */
  started: boolean;
}

/** Media-server failure while enumerating (counts towards the server's consecutive failures). */
class ServerReadError extends Error {
  constructor(readonly inner: unknown) {
    super((inner as Error)?.message ?? String(inner));
    this.name = 'ServerReadError';
  }
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * The analysis task (spec: Analysis across servers, Batch tasks), run on the platform task host
 * (shared/platform/src/tasks/; this service is its executor) so that no single process owns a run:
 *
 * - The run row (`analysis.runs`) is the one model of the run; every status-board snapshot is built
 *   from it after a write. The coordinating process holds a lease renewed by heartbeat; when it dies,
 *   loses the database for longer than the TTL or is stopped (SIGTERM hands the lease back), another
 *   replica (or the same one later) takes the run over and resumes it. Every write is fenced by the
 *   lease generation.
 * - Every configured server in turn, default first, in an order fixed at the start (`run_servers`).
 *   The full catalogue is enumerated page by page; mapped provider ids and excluded files are
 *   skipped; every other track gets a durable `queued` row, then one `analysis.track.requested.v1`
 *   message, then `published = true`. A resumed enumeration starts over but enqueues only tracks
 *   without a row, and republishes queued rows never confirmed.
 * - Progress is derived from the durable per-track rows; a server is done when it has no queued row.
 * - A server is marked failed only after {@link SERVER_FAILURE_THRESHOLD} consecutive failed reads;
 *   the run continues with the next server.
 * - At the end one index rebuild is requested and the run ends SUCCESS only when the index serves a
 *   generation whose build started after that request (the songs are queryable). The generation is
 *   reported in `details.indexGeneration`.
 * - Cancel ends the run in the database at once (REVOKED) whatever its coordinator's state; queued
 *   messages of a cancelled run are acknowledged without work.
 */
export class AnalysisRunService {
  private readonly pollMs: number;
  private readonly lookupBatch: number;
  private readonly learnedModel: () => LearnedTarget | undefined;
  private lastSwitch?: { at: number; status: EmbeddingSwitchStatus };
  private readonly serverRetryDelayMs: number;
  private readonly indexWaitMs: number;
  private readonly indexRerequestMs: number;
  private readonly failureThreshold: number;
  private readonly settings: () => Promise<RunSettings>;
  /** Starts runs, takes over runs whose coordinator died, cancels, hands leases back on stop. */
  readonly host: TaskHost<AnalysisWork>;

  constructor(
    private readonly runs: AnalysisRunStore,
    private readonly registry: RegistryPort,
    private readonly catalogue: CataloguePort,
    private readonly index: IndexPort,
    private readonly clientFactory: MediaClientFactory,
    private readonly bus: Bus,
    private readonly logger: Logger,
    metrics?: Metrics,
    options: AnalysisRunOptions = {},
  ) {
    this.pollMs = options.pollMs ?? 1000;
    this.lookupBatch = options.lookupBatch ?? 500;
    this.learnedModel = options.learnedModel ?? (() => undefined);
    this.serverRetryDelayMs = options.serverRetryDelayMs ?? 2000;
    this.indexWaitMs = options.indexWaitMs ?? 30 * 60_000;
    this.indexRerequestMs = options.indexRerequestMs ?? 5 * 60_000;
    this.failureThreshold = options.serverFailureThreshold ?? SERVER_FAILURE_THRESHOLD;
    this.settings = options.settings ?? (async () => DEFAULT_RUN_SETTINGS);
    this.host = new TaskHost<AnalysisWork>(
      runs.tasks,
      leaseOwnerName('analysis'),
      { start: (ctx) => this.begin(ctx), step: (work, ctx) => this.step(work, ctx) },
      logger,
      { bus, type: 'analysis', owner: 'analysis', metrics: metrics && { metrics, task: 'analysis' } },
      { ttlMs: options.leaseTtlMs, scanMs: options.takeoverScanMs, requestIdPrefix: 'analysis' },
    );
  }

  /**
   * Starts a run coordinated by this process; 409 ConflictError while another is live. Returns at once (202).
   * @param overrides this run's NUM_RECENT_ALBUMS / TOP_N_MOODS instead of the settings
   */
  async start(overrides: RunOverrides = {}): Promise<TaskRun> {
    // Fixed at start and stored with the run, so a replica that takes it over applies the same ones.
    const options = withOverrides(await this.runSettings(), overrides);
    return this.host.start({ options });
  }

  /** The live run (NEW or RUNNING, waiting for its end-of-run index rebuild included), if any, in any process. */
  async liveRun(): Promise<{ id: string } | undefined> {
    const run = await this.runs.tasks.live();
    return run && { id: run.id };
  }

  /** Resolves when no run is coordinated by this process (tests). */
  async idle(): Promise<void> {
    await this.host.idle();
  }

  /**
   * Ends a live run as REVOKED at once (database first, so it holds even when the coordinator is
   * dead or the broker is down), then tells the status board.
   */
  async cancel(taskId: string): Promise<void> {
    await this.host.cancel(taskId);
  }

  /** Executor `start`: the run's options and durable per-server rows (a run taken over keeps both). */
  private async begin(ctx: TaskContext): Promise<AnalysisWork> {
    // Runs started by an older version stored no options: the current settings apply to them.
    const options = storedOptions(ctx.run.details) ?? (await this.runSettings());
    return { rows: await this.runs.servers(ctx.run.id), options, started: false };
  }

  /**
   * Executor `step`: first the server order (fixed once, from the registry), then one server at a time
   * (enumerate, then wait for its tracks), then the index rebuild and the end of the run.
   */
  private async step(work: AnalysisWork, ctx: TaskContext): Promise<TaskEnd | undefined> {
    if (!work.started) return this.startServers(work, ctx);
    const row = work.rows.find((r) => r.status !== 'done' && r.status !== 'failed' && r.status !== 'cancelled');
    if (row) {
      await this.runServer(ctx, row, work.rows, work.options);
      return undefined;
    }
    return this.end(ctx);
  }

  /** The run's servers, default first (written once: a resumed run keeps its order), and the first snapshot. */
  private async startServers(work: AnalysisWork, ctx: TaskContext): Promise<TaskEnd | undefined> {
    const { options } = work;
    if (work.rows.length === 0) {
      let servers: ServerInfo[];
      try {
        servers = await withTransientRetry(() => this.registry.listServers(), { maxAttempts: 6, signal: ctx.signal });
      } catch (err) {
        ctx.throwIfStopped();
        ctx.note(`cannot read the server registry: ${(err as Error).message}`);
        return { state: 'FAIL', message: 'Cannot read the server registry', servers: [] };
      }
      servers.sort((a, b) => Number(b.isDefault) - Number(a.isDefault));
      await this.runs.initServers(ctx.lease, servers.map((s) => ({ id: s.id, name: s.name })));
      work.rows = await this.runs.servers(ctx.run.id);
    }
    if (!ctx.resumed) ctx.note(`options: ${options.numRecentAlbums > 0 ? `the ${options.numRecentAlbums} most recently added albums of each server` : 'every track of each server'}, top ${options.topNMoods} moods`);
    await this.progress(ctx, work.rows, `Analyzing ${work.rows.length} server(s)`, { options });
    work.started = true;
    return undefined;
  }

  /** Every server has ended: the embedder switch, one index rebuild waited for, and the run's end. */
  private async end(ctx: TaskContext): Promise<TaskEnd> {
    const final = await this.runs.servers(ctx.run.id);
    const failedServers = final.filter((s) => s.status === 'failed').length;
    const allFailed = final.length > 0 && failedServers === final.length;
    let details: Record<string, unknown> = {};
    // The catalogue switches embedder versions when the run covered it; asked before the rebuild request, so the
    // build that follows reads the new version (the status call performs the switch when covered).
    const embeddingSwitch = await this.switchStatus(true);
    if (embeddingSwitch) details.embeddingSwitch = embeddingSwitch;
    const servers = async () => (final.length ? (await this.counts(ctx.run.id, final)).map(({ queued: _q, ...c }) => c) : []);
    if (!allFailed && final.length > 0) {
      const waited = await this.waitForIndex(ctx, final);
      if (!waited.ok) return { state: 'FAIL', message: `Analysis done but the index was not rebuilt: ${waited.reason}`, servers: await servers(), details: waited.details };
      details = { ...details, ...waited.details };
    }
    const counts = await this.counts(ctx.run.id, final);
    const summary = counts.reduce((a, c) => ({ analyzed: a.analyzed + c.analyzed, mapped: a.mapped + c.mappedExisting, failed: a.failed + c.failed }), { analyzed: 0, mapped: 0, failed: 0 });
    return {
      state: allFailed ? 'FAIL' : 'SUCCESS',
      message: `${allFailed ? 'All servers failed' : 'Done'}: ${summary.analyzed} analyzed, ${summary.mapped} mapped to existing songs, ${summary.failed} failed${failedServers ? `, ${failedServers} server(s) failed` : ''}`,
      servers: await servers(),
      details,
    };
  }

  /** The settings a new run applies (defaults when the registry cannot be read: the reader keeps the last known values). */
  private async runSettings(): Promise<RunSettings> {
    try {
      return await this.settings();
    } catch (err) {
      this.logger.warn('analysis settings unreadable; defaults apply to this run', { err: (err as Error).message });
      return DEFAULT_RUN_SETTINGS;
    }
  }

  /** Enumerates (or resumes) one server and waits until every queued track of it has an outcome. */
  private async runServer(ctx: TaskContext, row: RunServerRow, rows: RunServerRow[], options: RunSettings): Promise<void> {
    const lease = ctx.lease;
    const taskId = lease.runId;
    const abort = ctx.signal;
    row.status = 'running';
    await this.runs.updateServer(lease, row.serverId, { status: 'running' });
    ctx.note(`server ${row.serverName}: ${row.enumerated ? 'waiting for its tracks' : 'started'}`);
    let server: ServerInfo | undefined;
    while (!row.enumerated) {
      if (abort.aborted) return;
      try {
        server ??= await this.registry.getServer(row.serverId);
        await this.enumerate(ctx, server, row, rows, options);
        row.enumerated = true;
        await this.runs.updateServer(lease, row.serverId, { enumerated: true, failures: 0 });
      } catch (err) {
        if (abort.aborted) return;
        const serverFault = err instanceof ServerReadError || (err as { httpStatus?: number }).httpStatus === 404;
        if (!serverFault) {
          // Our own infrastructure (database, catalogue, broker): not the server's fault; retry after a pause.
          this.logger.warn('analysis enumeration interrupted, retrying', { taskId, serverId: row.serverId, transient: isTransientFault(err), err: (err as Error).message });
          await sleep(jitteredBackoffMs(2, this.serverRetryDelayMs, 30_000), abort);
          continue;
        }
        row.failures++;
        const message = (err as Error).message.slice(0, 300);
        await this.runs.updateServer(lease, row.serverId, { failures: row.failures, error: message });
        if (row.failures >= this.failureThreshold) {
          row.status = 'failed';
          row.error = message;
          await this.runs.updateServer(lease, row.serverId, { status: 'failed', error: message });
          ctx.note(`server ${row.serverName}: failed after ${row.failures} consecutive failures: ${message}`);
          await this.progress(ctx, rows);
          return;
        }
        ctx.note(`server ${row.serverName}: read failed (${row.failures}/${this.failureThreshold}), retrying: ${message}`);
        await sleep(jitteredBackoffMs(row.failures, this.serverRetryDelayMs, 60_000), abort);
      }
    }
    // Wait until every queued track of the server has an outcome (workers record them idempotently).
    for (;;) {
      if (abort.aborted) return;
      try {
        const republished = await this.republishUnconfirmed(taskId, row.serverId, server, options);
        if (republished) ctx.note(`server ${row.serverName}: ${republished} unconfirmed message(s) published again`);
        const counts = (await this.runs.outcomeCounts(taskId)).get(row.serverId);
        if (!counts || counts.queued === 0) break;
        await this.progress(ctx, rows);
      } catch (err) {
        if (err instanceof LeaseLostError) throw err;
        this.logger.warn('analysis progress check failed, retrying', { taskId, err: (err as Error).message });
      }
      await sleep(this.pollMs, abort);
    }
    if (abort.aborted) return;
    row.status = 'done';
    await this.runs.updateServer(lease, row.serverId, { status: 'done' });
    const c = (await this.counts(taskId, rows)).find((x) => x.serverId === row.serverId);
    ctx.note(`server ${row.serverName}: done (seen ${c?.seen}, skipped ${c?.skippedMapped}, mapped ${c?.mappedExisting}, analyzed ${c?.analyzed}, failed ${c?.failed})`);
    await this.progress(ctx, rows);
  }

  /**
   * One pass over the server's catalogue (see class doc), or over the tracks of its
   * `options.numRecentAlbums` newest albums; throws ServerReadError for the server's own failures.
   */
  private async enumerate(ctx: TaskContext, server: ServerInfo, row: RunServerRow, rows: RunServerRow[], options: RunSettings): Promise<void> {
    const lease = ctx.lease;
    const taskId = lease.runId;
    const abort = ctx.signal;
    const client = this.clientFactory(server.connection);
    row.seen = 0;
    row.skippedMapped = 0;
    row.excluded = 0;
    await this.runs.updateServer(lease, row.serverId, { seen: 0, skippedMapped: 0, excluded: 0 });
    const pages = (options.numRecentAlbums > 0 ? client.iterateRecentAlbumTracks(options.numRecentAlbums) : client.iterateTracks())[Symbol.asyncIterator]();
    let lastPublish = 0;
    for (;;) {
      if (abort.aborted) return;
      let next: IteratorResult<ProviderTrack[]>;
      try {
        next = await pages.next();
      } catch (err) {
        throw new ServerReadError(err);
      }
      if (next.done) break;
      if (row.failures > 0) {
        row.failures = 0;
        await this.runs.updateServer(lease, row.serverId, { failures: 0 });
      }
      const page = next.value;
      for (let off = 0; off < page.length; off += this.lookupBatch) {
        const batch = page.slice(off, off + this.lookupBatch);
        const ids = batch.map((t) => t.id);
        const [mapped, inRun] = await Promise.all([this.catalogue.mappedProviderIds(server.id, ids), this.runs.inRun(taskId, server.id, ids)]);
        const hashes = new Map(batch.map((t) => [t.id, metadataHash(toMessageTrack(t))]));
        const excluded = await this.runs.isExcluded(server.id, ids.filter((id) => !mapped.has(id) && !inRun.has(id)), hashes);
        // Mapped files changed in place (listed stamp differs from the stored one, issue 35) are analysed again whole
        // (`changedFile`): the catalogue decides whether each is still the same song.
        const changed = await this.changedAmong(server.id, batch.filter((t) => mapped.has(t.id) && !inRun.has(t.id)));
        // With the learned model installed, mapped songs lacking its tags or its embedding are analysed again (no new song, mapping or id).
        const model = this.learnedModel();
        const retag = model && mapped.size > 0 ? await this.catalogue.songsNeedingTags(server.id, ids.filter((id) => mapped.has(id) && !inRun.has(id) && !changed.has(id)), model) : new Map<string, string>();
        // Mapped songs without a recording fingerprint (analysed before fingerprints existed) are fetched again and
        // fingerprinted only: the backfill rides on the run, so it is resumable and leased like the rest of it.
        const unprinted = this.catalogue.songsWithoutFingerprint && mapped.size > 0 ? await this.catalogue.songsWithoutFingerprint(server.id, ids.filter((id) => mapped.has(id) && !inRun.has(id) && !retag.has(id) && !changed.has(id))) : new Map<string, string>();
        const candidates: ProviderTrack[] = [];
        for (const t of batch) {
          if (inRun.has(t.id)) continue; // this run's own work (queued or finished): counted by its row
          if (changed.has(t.id) || retag.has(t.id) || unprinted.has(t.id)) candidates.push(t);
          else if (mapped.has(t.id)) row.skippedMapped++;
          else if (excluded.has(t.id)) row.excluded++;
          else candidates.push(t);
        }
        row.seen += batch.length;
        const fresh = new Set(await this.runs.enqueue(taskId, server.id, candidates.map((t) => t.id)));
        await this.publishTracks(taskId, server.id, candidates.filter((t) => fresh.has(t.id)), options, changed);
      }
      await this.runs.updateServer(lease, row.serverId, { seen: row.seen, skippedMapped: row.skippedMapped, excluded: row.excluded });
      if (Date.now() - lastPublish > this.pollMs) {
        lastPublish = Date.now();
        await this.progress(ctx, rows);
      }
    }
    await this.republishUnconfirmed(taskId, server.id, server, options);
  }

  /**
   * Publishes track messages (bounded number of confirms in flight), then marks them published. Tracks in `changed`
   * (mapped files changed in place) carry `changedFile`.
   */
  private async publishTracks(taskId: string, serverId: string, tracks: ProviderTrack[], options: RunSettings, changed: ReadonlySet<string> = new Set()): Promise<void> {
    for (let p = 0; p < tracks.length; p += 32) {
      const slice = tracks.slice(p, p + 32);
      await Promise.all(slice.map((t) => this.bus.publish(RoutingKeys.analysisTrackRequested, { taskId, serverId, track: toMessageTrack(t), topNMoods: options.topNMoods, ...(changed.has(t.id) ? { changedFile: true } : {}) } satisfies AnalysisTrackRequested)));
      await this.runs.markPublished(taskId, serverId, slice.map((t) => t.id));
    }
  }

  /** Mapped files changed in place among `tracks` (listed stamp differs from the stored one, issue 35); none without the port. */
  private async changedAmong(serverId: string, tracks: ProviderTrack[]): Promise<Set<string>> {
    const stamped = tracks.filter((t) => t.fileStamp !== undefined);
    return this.catalogue.changedProviderIds && stamped.length > 0 ? this.catalogue.changedProviderIds(serverId, stamped) : new Set<string>();
  }

  /**
   * Queued rows whose publish was never confirmed (the previous coordinator stopped in between):
   * their tracks are looked up on the server again and published. Returns how many.
   */
  private async republishUnconfirmed(taskId: string, serverId: string, server: ServerInfo | undefined, options: RunSettings): Promise<number> {
    const ids = await this.runs.unpublished(taskId, serverId, 5000);
    if (ids.length === 0) return 0;
    server ??= await this.registry.getServer(serverId);
    const want = new Set(ids);
    const found: ProviderTrack[] = [];
    for await (const page of this.clientFactory(server.connection).iterateTracks()) {
      for (const t of page) if (want.has(t.id)) found.push(t);
      if (found.length === want.size) break;
    }
    // Files changed in place keep their `changedFile` (compared again: the stamps are the catalogue's and the listing's).
    await this.publishTracks(taskId, serverId, found, options, await this.changedAmong(serverId, found));
    // Tracks no longer on the server: nothing to analyze.
    const missing = ids.filter((id) => !found.some((t) => t.id === id));
    for (const id of missing) await this.runs.recordOutcome(taskId, serverId, id, 'failed', undefined, 'no longer on the server');
    return found.length;
  }

  /**
   * Requests one index rebuild (once per run: the request time is kept in the run's details) and
   * waits until every live index replica serves a generation whose build started after it
   * ({@link indexCoverage}); meanwhile the run's message names the generation and the replicas it waits for.
   */
  private async waitForIndex(ctx: TaskContext, rows: RunServerRow[]): Promise<{ ok: true; details: Record<string, unknown> } | { ok: false; reason: string; details: Record<string, unknown> }> {
    const taskId = ctx.run.id;
    const abort = ctx.signal;
    let requestedAt = typeof ctx.details.indexRequestedAt === 'string' ? new Date(ctx.details.indexRequestedAt) : undefined;
    const request = async () => {
      requestedAt = await this.runs.now();
      await this.bus.publish(RoutingKeys.indexRebuildRequested, { reason: 'analysis', taskId } satisfies IndexRebuildRequested);
      await this.progress(ctx, rows, 'Waiting for the index rebuild', { indexRequestedAt: requestedAt.toISOString() });
      ctx.note('index rebuild requested');
    };
    if (!requestedAt) await withTransientRetry(request, { maxAttempts: 8, signal: abort });
    const started = Date.now();
    let lastRequest = Date.now();
    let lastSeen: { generation: number; items: number } | undefined;
    let lastWaiting = '';
    while (Date.now() - started < this.indexWaitMs) {
      if (abort.aborted) throw abort.reason instanceof Error ? abort.reason : new LeaseLostError(taskId);
      try {
        const live = await this.index.live();
        lastSeen = { generation: live.generation, items: live.items };
        const coverage = requestedAt ? indexCoverage(live, requestedAt) : undefined;
        if (coverage?.ok) {
          ctx.note(`index generation ${coverage.generation} is live on ${coverage.replicas} replica(s)`);
          return { ok: true, details: { indexRequestedAt: requestedAt!.toISOString(), indexGeneration: coverage.generation, indexItems: live.items, indexReplicas: coverage.replicas } };
        }
        if (coverage?.target !== undefined) {
          // Some replica serves the new generation; report which ones the run still waits for.
          const waiting = `Waiting for index generation ${coverage.target} on ${coverage.lagging.length} of ${coverage.replicas} replica(s): ${coverage.lagging.join(', ')}`.slice(0, 500);
          if (waiting !== lastWaiting) {
            lastWaiting = waiting;
            ctx.note(waiting);
            await this.progress(ctx, rows, waiting, { indexRequestedAt: requestedAt!.toISOString(), indexWaitingFor: { generation: coverage.target, lagging: coverage.lagging } });
          }
        }
        // A new build is asked again only when no replica serves one yet (a lagging replica loads, it does not build).
        if (coverage?.target === undefined && Date.now() - lastRequest > this.indexRerequestMs) {
          lastRequest = Date.now();
          await request();
        }
      } catch (err) {
        if (err instanceof LeaseLostError) throw err;
        this.logger.warn('index generation check failed, retrying', { taskId, err: (err as Error).message });
      }
      await sleep(Math.max(250, Math.min(this.pollMs, 2000)), abort);
    }
    return { ok: false, reason: `no index generation built after ${requestedAt?.toISOString()} went live on every index replica within ${Math.round(this.indexWaitMs / 1000)} s${lastWaiting ? ` (${lastWaiting})` : ''}`, details: { indexRequestedAt: requestedAt?.toISOString(), lastLiveGeneration: lastSeen?.generation } };
  }

  /** Per-server counts for the board: durable enumeration counters plus per-track outcome rows. */
  private async counts(taskId: string, rows: RunServerRow[]): Promise<Array<ServerTaskCounts & { queued: number }>> {
    return serverCounts(rows, await this.runs.outcomeCounts(taskId));
  }

  /** Reports a fenced snapshot through the host (progress derived from durable rows). */
  private async progress(ctx: TaskContext, rows: RunServerRow[], message?: string, details?: Record<string, unknown>): Promise<void> {
    const taskId = ctx.run.id;
    const counts = await this.counts(taskId, rows);
    const progress = runProgress(rows, counts);
    const current = rows.find((r) => r.status === 'running');
    const cur = current && counts.find((c) => c.serverId === current.serverId);
    const text = message ?? (cur ? `${current!.serverName}: ${cur.seen} seen, ${cur.analyzed} analyzed, ${cur.mappedExisting} mapped, ${cur.failed} failed` : 'Analyzing');
    const sw = await this.switchStatus(false);
    if (sw) details = { ...details, embeddingSwitch: sw };
    const switching = sw?.switching ? ` · embedder switch ${sw.servedVersion} -> ${sw.targetVersion}: ${sw.covered}/${sw.total} songs` : '';
    await ctx.report({ message: `${text}${message ? '' : switching}`, progress, servers: counts.map(({ queued: _q, ...c }) => c), details });
  }

  /**
   * The catalogue's embedder switch status (GET /internal/embedding/switch: served and target version, songs
   * covered), read at most every 10 s unless `fresh`; undefined when the catalogue cannot be asked (progress goes on).
   */
  private async switchStatus(fresh: boolean): Promise<EmbeddingSwitchStatus | undefined> {
    if (!fresh && this.lastSwitch && Date.now() - this.lastSwitch.at < 10_000) return this.lastSwitch.status;
    try {
      const status = await this.catalogue.embeddingSwitch();
      this.lastSwitch = { at: Date.now(), status };
      return status;
    } catch (err) {
      this.logger.warn('embedder switch status unavailable', { err: (err as Error).message });
      return this.lastSwitch?.status;
    }
  }
}

function toMessageTrack(t: ProviderTrack): AnalysisTrackRequested['track'] {
  return {
    id: t.id,
    title: t.title,
    artist: t.artist,
    artistId: t.artistId,
    album: t.album,
    albumArtist: t.albumArtist,
    year: t.year,
    rating: t.rating,
    durationSeconds: t.durationSeconds,
    path: t.path,
    libraryId: t.libraryId,
    fileStamp: t.fileStamp,
  };
}
