/**
 * The sweep of one server and the alignment over every server (spec "Setup-time alignment" 1-7):
 * metadata only — no download, no analysis, no id calculation.
 *
 * Per server (alignment: every server, default first, one at a time; a failing server is reported and
 * the run goes on with the next):
 * 1. fetch: the server's full catalogue through its client (library filter applied by the client),
 *    condensed into a {@link RemoteIndex}; a fetch that throws fails the server before anything is
 *    written (it is never pruned);
 * 2. the provider ids already mapped on the server are flagged (never re-mapped);
 * 3. match: the local catalogue streams in keyset chunks (SWEEP_CHUNK_SIZE, 20000) through the
 *    {@link SweepMatcher}; each chunk's matches are written (match_tier = the tier) and its retractions
 *    deleted before the next chunk is read, so a cancel keeps everything matched so far;
 * 4. the server's artist links are upserted from the listing;
 * 5. refresh (chunked over the server's mapping rows): album, album artist, year, rating of every mapped
 *    song the server speaks for (a song on several servers: the default server's, else its source server's;
 *    store/sweep.repository.ts metadataAuthoritySql), the file path only from the default server, the rows' own path/artist/duration, the
 *    duration back-fill, and — full refresh only, and only when {@link pruneAllowed} — deletion of rows
 *    whose provider track is gone or filtered out;
 * 6. the server's track count and matched-song count go to the registry (catalogue.server.counted.v1) and
 *    catalogue.mapping.changed.v1 is scheduled for it.
 */
import { RoutingKeys, type ServerCountedEvent, type ServerTaskCounts } from '@polyphony/contracts';
import type { Bus, Logger } from '@polyphony/platform';
import { SweepMatcher, pruneAllowed } from './sweep/matcher';
import { planRefresh } from './sweep/refresh';
import { RemoteIndex, TIERS, type Tier } from './sweep/remote-index';
import type { CatalogueSettings } from '../settings';
import type { MappingChangedPublisher } from './mapping-events';
import type { MediaClientFactory, RegistryPort, ServerInfo, SweepStore } from './ports';
import { rethrowOwnTransientFault, serversDefaultFirst, type BatchTaskRun, type TaskOutcome } from './batch-task-run';

/** Instrumentation points (tests and benchmarks): awaited by the sweep, so they can pause it deterministically. */
export interface SweepHooks {
  /** After a matching chunk was written. */
  afterChunk?(info: { taskId: string; serverId: string; chunk: number; written: number }): Promise<void>;
}

/** Options of the sweep. */
export interface SweepOptions {
  /** Local songs per matching chunk (spec "Limits": 20000). */
  chunkSize: number;
  /** Songs per chunk of the refresh/prune pass (and provider ids per page of the mapped-id scan). */
  refreshChunkSize: number;
  hooks?: SweepHooks;
}

/** What one server's sweep did (task details, per server). */
export interface ServerSweepReport {
  serverId: string;
  serverName: string;
  isDefault: boolean;
  status: 'done' | 'failed' | 'cancelled' | 'pending';
  error?: string;
  /** Tracks in the fetched listing (library filter applied). */
  fetched: number;
  /** Mapping rows the server had before the sweep. */
  storedMappings: number;
  /** Local songs streamed through the matcher. */
  scanned: number;
  /** New mapping rows written, in total and per tier. */
  matched: number;
  byTier: Record<Tier, number>;
  /** Rows written earlier in this sweep and deleted again (ambiguous or taken over). */
  retracted: number;
  /** Local songs left unmatched because their key named several remote tracks. */
  ambiguous: number;
  artistsUpserted: number;
  metadataRefreshed: number;
  mappingsRefreshed: number;
  durationsFilled: number;
  pruned: number;
  /** Why pruning did not run: not a full refresh, or the fetch looked partial. */
  pruneSkipped?: 'not_full_refresh' | 'partial_fetch';
  matchedSongs: number;
  elapsedMs: number;
  /** Wall time per phase, ms: fetch (listing + index), match (chunks + writes), artists, refresh (+ prune). */
  phaseMs: { fetch: number; match: number; artists: number; refresh: number };
}

const emptyTiers = (): Record<Tier, number> => ({ path: 0, tail: 0, exact_meta: 0, norm_meta: 0 });
const EMPTY_SET = { has: () => false };

/** Thrown inside a server's sweep when its catalogue could not be read completely. */
class FetchFailed extends Error {}

/** Runs sweep and alignment tasks (see module doc). */
export class SweepExecutor {
  constructor(
    private readonly store: SweepStore,
    private readonly registry: RegistryPort,
    private readonly clients: MediaClientFactory,
    private readonly settings: CatalogueSettings,
    private readonly events: MappingChangedPublisher,
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly options: SweepOptions,
  ) {}

  /** Runs `run.task` (type 'sweep' or 'alignment') to its end, a failure of every server, or a cancel. */
  async run(run: BatchTaskRun): Promise<TaskOutcome> {
    const listed = await serversDefaultFirst(this.registry, run);
    if (!Array.isArray(listed)) return listed;
    let servers = listed;
    const defaultServerId = listed.find((s) => s.isDefault)?.id ?? null;
    if (run.task.type === 'sweep') {
      servers = servers.filter((s) => s.id === run.task.serverId);
      if (servers.length === 0) return { state: 'FAIL', message: `Server ${run.task.serverId} is not configured`, details: {} };
    }
    const reports: ServerSweepReport[] = servers.map((s) => ({
      serverId: s.id,
      serverName: s.name,
      isDefault: s.isDefault,
      status: 'pending',
      fetched: 0,
      storedMappings: 0,
      scanned: 0,
      matched: 0,
      byTier: emptyTiers(),
      retracted: 0,
      ambiguous: 0,
      artistsUpserted: 0,
      metadataRefreshed: 0,
      mappingsRefreshed: 0,
      durationsFilled: 0,
      pruned: 0,
      matchedSongs: 0,
      elapsedMs: 0,
      phaseMs: { fetch: 0, match: 0, artists: 0, refresh: 0 },
    }));
    run.addPendingServers(servers);
    await run.progress(0, servers.length ? `Aligning ${servers.length} server(s)` : 'No servers configured', true);
    let failed = 0;
    let cancelled = false;
    for (let i = 0; i < servers.length && !cancelled; i++) {
      const server = servers[i]!;
      const report = reports[i]!;
      const counts = run.servers[i]!;
      counts.status = 'running';
      const t0 = Date.now();
      run.note(`${server.name}: sweep started`);
      try {
        cancelled = await this.sweepServer(run, server, defaultServerId, report, counts, (p) => ((i + p) / servers.length) * 100);
        report.status = cancelled ? 'cancelled' : 'done';
      } catch (err) {
        rethrowOwnTransientFault(err, err instanceof FetchFailed);
        failed++;
        report.status = 'failed';
        report.error = (err as Error).message.slice(0, 300);
        counts.error = report.error;
        run.note(`${server.name}: ${err instanceof FetchFailed ? 'catalogue could not be read completely, skipped (nothing pruned)' : 'failed'}: ${report.error}`);
      }
      report.elapsedMs = Date.now() - t0;
      counts.status = report.status;
      counts.seen = report.fetched;
      counts.mappedExisting = report.matched;
      counts.skippedMapped = report.storedMappings;
      if (report.status === 'done') {
        run.note(
          `${server.name}: ${report.fetched} tracks, ${report.matched} newly mapped (path ${report.byTier.path}, tail ${report.byTier.tail}, exact ${report.byTier.exact_meta}, normalised ${report.byTier.norm_meta}), ` +
            `${report.ambiguous} ambiguous, ${report.pruned} pruned${report.pruneSkipped === 'partial_fetch' ? ' (prune refused: the fetch looks partial)' : ''}`,
        );
      }
    }
    const totals = reports.reduce((a, r) => ({ matched: a.matched + r.matched, pruned: a.pruned + r.pruned }), { matched: 0, pruned: 0 });
    const details = { per_server: reports, fullRefresh: run.task.fullRefresh, matched: totals.matched, pruned: totals.pruned, failedServers: reports.filter((r) => r.status === 'failed').map((r) => r.serverId) };
    if (cancelled) return { state: 'SUCCESS', cancelled: true, message: `Cancelled; ${totals.matched} mappings written so far are kept`, details };
    const allFailed = servers.length > 0 && failed === servers.length;
    return {
      state: allFailed ? 'FAIL' : 'SUCCESS',
      message: `${allFailed ? 'Every server failed' : 'Done'}: ${totals.matched} newly mapped, ${totals.pruned} stale mappings pruned${failed ? `, ${failed} server(s) failed` : ''}`,
      details,
    };
  }

  /**
   * Sweeps one server; `at(p)` maps its progress p in [0, 1] to the task's percent.
   * @returns true when the run was cancelled (work done so far is kept).
   * @throws FetchFailed when the catalogue could not be read; other errors of the store.
   */
  private async sweepServer(run: BatchTaskRun, server: ServerInfo, defaultServerId: string | null, report: ServerSweepReport, counts: ServerTaskCounts, at: (p: number) => number): Promise<boolean> {
    const tunables = await this.settings.get();
    const listingStartedAt = await this.store.now();
    let t = Date.now();
    const lap = (): number => {
      const now = Date.now();
      const d = now - t;
      t = now;
      return d;
    };
    const remote = new RemoteIndex();
    let pages = 0;
    try {
      const client = this.clients(server.connection);
      for await (const page of client.iterateTracks()) {
        remote.add(page);
        pages++;
        report.fetched = remote.received;
        counts.seen = remote.received;
        await run.progress(at(0.25 * (1 - 1 / (1 + pages / 20))), `${server.name}: reading the catalogue (${remote.received} tracks)`);
        if (await run.cancelled()) return true;
      }
    } catch (err) {
      throw new FetchFailed((err as Error).message ?? String(err));
    }
    report.fetched = remote.size;
    const { stored } = await this.store.markMapped(server.id, remote, this.options.refreshChunkSize);
    report.storedMappings = stored;
    report.phaseMs.fetch = lap();
    await run.progress(at(0.25), `${server.name}: ${remote.size} tracks read; matching the catalogue`, true);

    // Match: the local catalogue in keyset chunks; writes after every chunk.
    const totalSongs = Math.max(1, await this.store.songCount());
    const matcher = new SweepMatcher(remote, remote.mappedView(), EMPTY_SET);
    let after: string | null = null;
    let chunkNo = 0;
    do {
      const chunk = await this.store.localChunk(server.id, after, this.options.chunkSize);
      const { write, retract } = matcher.matchChunk(chunk.songs);
      const res = await this.store.writeMatches(server.id, write, retract, remote);
      report.scanned += chunk.scanned;
      report.matched += res.written - res.retracted;
      report.retracted += res.retracted;
      for (const t of TIERS) report.byTier[t] += (res.writtenByTier[t] ?? 0) - (res.retractedByTier[t] ?? 0);
      report.ambiguous = matcher.conflicts;
      counts.mappedExisting = report.matched;
      if (res.written > 0 || res.retracted > 0) this.events.changed(server.id, 'sweep');
      after = chunk.next;
      chunkNo++;
      await this.options.hooks?.afterChunk?.({ taskId: run.task.id, serverId: server.id, chunk: chunkNo, written: res.written });
      await run.progress(at(0.25 + 0.6 * Math.min(1, report.scanned / totalSongs)), `${server.name}: matching ${report.scanned}/${totalSongs} songs, ${report.matched} mapped`);
      if (await run.cancelled()) return true;
    } while (after !== null);
    report.phaseMs.match = lap();

    report.artistsUpserted = await this.store.upsertArtists(server.id, remote.artistLinks());
    report.phaseMs.artists = lap();

    // Refresh (and prune) over the server's mapping rows.
    const prune = run.task.fullRefresh && pruneAllowed(remote.size, stored);
    if (!run.task.fullRefresh) report.pruneSkipped = 'not_full_refresh';
    else if (!prune) report.pruneSkipped = 'partial_fetch';
    const listed = (providerId: string) => {
      const i = remote.position(providerId);
      return i === undefined ? undefined : remote.details(i);
    };
    let cursor: string | null = null;
    let refreshed = 0;
    do {
      const chunk = await this.store.mappedChunk(server.id, cursor, this.options.refreshChunkSize, listingStartedAt, defaultServerId);
      const plan = planRefresh(chunk.rows, listed, { refreshMetadata: true, isDefault: server.isDefault, prune, toleranceSeconds: tunables.identity.durationToleranceSeconds });
      const res = await this.store.applyRefresh(server.id, plan, listingStartedAt);
      report.metadataRefreshed += res.scoresUpdated;
      report.mappingsRefreshed += res.mappingsUpdated;
      report.durationsFilled += res.durationsFilled;
      report.pruned += res.pruned;
      if (res.pruned > 0) this.events.changed(server.id, 'sweep_prune');
      refreshed += chunk.rows.length;
      cursor = chunk.next;
      await run.progress(at(0.85 + 0.15 * Math.min(1, refreshed / Math.max(1, stored + report.matched))), `${server.name}: refreshing ${refreshed} mapped tracks`);
      if (await run.cancelled()) return true;
    } while (cursor !== null);
    report.phaseMs.refresh = lap();

    report.matchedSongs = await this.store.matchedCount(server.id);
    const counted: ServerCountedEvent = { serverId: server.id, trackCount: remote.size, matchedCount: report.matchedSongs };
    try {
      await this.bus.publish(RoutingKeys.serverCounted, counted);
    } catch (err) {
      this.logger.warn('server count publish failed', { serverId: server.id, err: (err as Error).message });
    }
    return false;
  }
}
