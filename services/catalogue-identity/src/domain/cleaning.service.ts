/**
 * The cleaning task (spec "Cleaning" 1-5, "Batch tasks", reference section 5 `tasks/cleaning.py`).
 *
 * 1. Per server, one at a time, default first: the full catalogue enumeration the sweeps use (library
 *    filter applied by the client). A server that cannot be read completely (the enumeration throws) is
 *    skipped and reported. Otherwise only that server's stale mapping rows are removed — rows whose
 *    provider id is absent from the listing and older than it — unless the listing holds fewer tracks
 *    than half the server's stored mappings (looks partial: prune refused, reported). Score rows,
 *    embeddings and other servers' mappings are never touched by this pass (sweeps back-fill durations).
 * 2. Orphans (songs mapped on no server) are counted and sampled for the report.
 * 3. Orphan deletion runs only when asked (the run's `clean_catalogue`, else the CLEANING_CATALOGUE
 *    setting) and is refused unless every server was read completely with its prune allowed, and the
 *    orphans are fewer than half the catalogue (exactly half is refused). The rule is re-checked on the
 *    counts taken inside the deleting transaction. A deleted song's files, if they come back, are not
 *    mapped anywhere, so the next analysis downloads and analyzes them again.
 * 4. The run ends with the full index rebuild, waited for inline; the task succeeds only when the build
 *    that serves it went live (the indexes then match the cleaned catalogue).
 */
import { RoutingKeys, type ServerCountedEvent } from '@polyphony/contracts';
import { MediaServerError } from '@polyphony/media-servers';
import type { Bus, Logger } from '@polyphony/platform';
import { pruneStaleMappings } from './removals.service';
import type { CatalogueSettings } from '../settings';
import type { MappingChangedPublisher } from './mapping-events';
import type { IndexPort, MediaClientFactory, RegistryPort, ServerInfo, SweepStore } from './ports';
import { rethrowOwnTransientFault, serversDefaultFirst, type BatchTaskRun, type TaskOutcome } from './batch-task-run';

/** Options of the cleaning. */
export interface CleaningOptions {
  /** Mapping rows (by song) per prune chunk. */
  chunkSize: number;
  /** Longest wait for the index rebuild, ms. */
  indexTimeoutMs: number;
  /** Poll interval of the index build status, ms. */
  indexPollMs: number;
  /** Orphans listed in the report (the reference caps its list at CLEANING_SAFETY_LIMIT = 100). */
  orphanSampleLimit?: number;
}

/** One server's part of the cleaning report. */
export interface ServerCleaningReport {
  serverId: string;
  serverName: string;
  status: 'done' | 'failed' | 'prune_refused' | 'cancelled' | 'pending';
  error?: string;
  /** Tracks in the listing (filter applied). */
  fetched: number;
  /** Mapping rows before the cleaning. */
  storedMappings: number;
  /** Stale mapping rows removed. */
  pruned: number;
  /** Mapping rows absent from the listing (pruned or not). */
  unbound: number;
  elapsedMs: number;
}

/** How the orphan deletion ended. */
export interface CatalogueDeletionReport {
  requested: boolean;
  /** 'not_requested', 'refused', 'nothing_to_delete' or 'deleted'. */
  outcome: 'not_requested' | 'refused' | 'nothing_to_delete' | 'deleted';
  reason?: string;
  deleted: number;
}

/** Orphan deletion ceiling (spec "Limits"): orphans must be FEWER than half the catalogue. */
export function orphanDeletionAllowed(orphans: number, catalogue: number): boolean {
  return orphans * 2 < catalogue;
}

/** Runs cleaning tasks (see module doc). */
export class CleaningExecutor {
  constructor(
    private readonly store: SweepStore,
    private readonly registry: RegistryPort,
    private readonly clients: MediaClientFactory,
    private readonly index: IndexPort,
    private readonly settings: CatalogueSettings,
    private readonly events: MappingChangedPublisher,
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly options: CleaningOptions,
  ) {}

  async run(run: BatchTaskRun): Promise<TaskOutcome> {
    const listed = await serversDefaultFirst(this.registry, run);
    if (!Array.isArray(listed)) return listed;
    const servers = listed;
    const tunables = await this.settings.get();
    const reports: ServerCleaningReport[] = servers.map((s) => ({ serverId: s.id, serverName: s.name, status: 'pending', fetched: 0, storedMappings: 0, pruned: 0, unbound: 0, elapsedMs: 0 }));
    run.addPendingServers(servers);
    await run.progress(0, `Cleaning ${servers.length} server(s)`, true);

    for (let i = 0; i < servers.length; i++) {
      const server = servers[i]!;
      const report = reports[i]!;
      const counts = run.servers[i]!;
      counts.status = 'running';
      const t0 = Date.now();
      try {
        const stopped = await this.cleanServer(run, server, report, (p) => ((i + p) / servers.length) * 80);
        if (stopped) {
          report.status = 'cancelled';
          counts.status = 'cancelled';
          return { state: 'SUCCESS', cancelled: true, message: 'Cancelled; rows removed so far stay removed, no orphan was deleted', details: this.details(reports, undefined, undefined, undefined) };
        }
      } catch (err) {
        rethrowOwnTransientFault(err, err instanceof MediaServerError);
        report.status = 'failed';
        report.error = (err as Error).message.slice(0, 300);
        counts.error = report.error;
        run.note(`${server.name}: could not be read completely, skipped: ${report.error}`);
      }
      report.elapsedMs = Date.now() - t0;
      counts.status = report.status;
      counts.seen = report.fetched;
      counts.failed = report.status === 'failed' ? 1 : 0;
      if (report.status === 'done') run.note(`${server.name}: ${report.fetched} tracks, ${report.pruned} stale mappings removed`);
      if (report.status === 'prune_refused') run.note(`${server.name}: ${report.fetched} tracks for ${report.storedMappings} stored mappings looks partial; nothing removed`);
    }

    await run.progress(82, 'Counting orphans', true);
    const orphans = await this.store.orphanReport(this.options.orphanSampleLimit ?? 100);
    run.note(`${orphans.orphans} of ${orphans.catalogue} songs are mapped on no server (orphans)`);

    // Orphan deletion: opt-in, and refused unless every server was read completely and orphans < half.
    const requested = run.task.cleanCatalogue ?? tunables.cleaningCatalogue;
    const incomplete = reports.filter((r) => r.status !== 'done');
    let deletion: CatalogueDeletionReport;
    if (!requested) deletion = { requested, outcome: 'not_requested', deleted: 0 };
    else if (incomplete.length > 0) deletion = { requested, outcome: 'refused', reason: `not every server was read completely (${incomplete.map((r) => r.serverName).join(', ')})`, deleted: 0 };
    else if (await run.cancelled()) return { state: 'SUCCESS', cancelled: true, message: 'Cancelled before the orphan deletion; nothing deleted', details: this.details(reports, orphans, undefined, undefined) };
    else {
      const r = await this.store.deleteOrphansIf((o, c) => o === 0 || orphanDeletionAllowed(o, c));
      if (r.orphans === 0) deletion = { requested, outcome: 'nothing_to_delete', deleted: 0 };
      else if (r.refused) deletion = { requested, outcome: 'refused', reason: `${r.orphans} orphans are not fewer than half of the ${r.catalogue} songs`, deleted: 0 };
      else deletion = { requested, outcome: 'deleted', deleted: r.deleted };
    }
    run.note(`orphan deletion: ${deletion.outcome}${deletion.reason ? ` (${deletion.reason})` : ''}${deletion.deleted ? `, ${deletion.deleted} songs deleted` : ''}`);

    // The inline full index rebuild.
    await run.progress(85, 'Rebuilding the index', true);
    let indexResult: Awaited<ReturnType<IndexPort['rebuildAndWait']>> | undefined;
    let indexError: string | undefined;
    try {
      indexResult = await this.index.rebuildAndWait({ timeoutMs: this.options.indexTimeoutMs, pollMs: this.options.indexPollMs, signal: run.signal });
    } catch (err) {
      // Shutdown or cancel while waiting: the runner hands the task back (or ends it REVOKED), never an hour later.
      if (run.signal.aborted) throw err;
      indexError = (err as Error).message;
    }
    const indexReport = indexResult ? { state: indexResult.state, buildTaskId: indexResult.buildTaskId, generation: indexResult.generation, items: indexResult.items, waitedMs: indexResult.waitedMs } : { state: 'FAIL', error: indexError };
    run.note(`index rebuild: ${indexReport.state}${indexResult ? ` (generation ${indexResult.generation}, ${indexResult.items} songs)` : ''}${indexError ? `: ${indexError}` : ''}`);

    const details = this.details(reports, orphans, deletion, indexReport);
    const pruned = reports.reduce((a, r) => a + r.pruned, 0);
    const failed = reports.filter((r) => r.status === 'failed').length;
    const summary = `${pruned} stale mappings removed, ${orphans.orphans} orphans (${deletion.outcome.replace(/_/g, ' ')}${deletion.deleted ? `: ${deletion.deleted} deleted` : ''})${failed ? `, ${failed} server(s) skipped` : ''}`;
    if (indexReport.state !== 'SUCCESS') return { state: 'FAIL', message: `Index rebuild ${indexReport.state === 'TIMEOUT' ? 'timed out' : 'failed'}; ${summary}`, details };
    if (servers.length > 0 && failed === servers.length) return { state: 'FAIL', message: `Every server failed; ${summary}`, details };
    return { state: 'SUCCESS', message: `Done: ${summary}`, details };
  }

  /**
   * Cleans one server; `at(p)` maps its progress p in [0, 1] to the task percent.
   * @returns true when cancelled.
   * @throws when the catalogue could not be read completely (the caller skips the server).
   */
  private async cleanServer(run: BatchTaskRun, server: ServerInfo, report: ServerCleaningReport, at: (p: number) => number): Promise<boolean> {
    const r = await pruneStaleMappings(this.store, this.events, this.clients(server.connection), server, 'cleaning', this.options.chunkSize, {
      listed: async (fetched, pages) => {
        report.fetched = fetched;
        await run.progress(at(0.6 * (1 - 1 / (1 + pages / 20))), `${server.name}: reading the catalogue (${fetched} tracks)`);
        return run.cancelled();
      },
      checked: async (seen, stored, pruned) => {
        report.storedMappings = stored;
        report.pruned = pruned;
        await run.progress(at(0.6 + 0.4 * Math.min(1, seen / Math.max(1, stored))), `${server.name}: checked ${seen}/${stored} mappings, ${pruned} stale`);
        return run.cancelled();
      },
    });
    report.fetched = r.fetched;
    report.storedMappings = r.storedMappings;
    report.pruned = r.pruned;
    report.unbound = r.unbound;
    report.status = r.refused ? 'prune_refused' : 'done';
    if (r.cancelled) return true;
    const listingSize = r.fetched;
    const counted: ServerCountedEvent = { serverId: server.id, trackCount: listingSize, matchedCount: await this.store.matchedCount(server.id) };
    try {
      await this.bus.publish(RoutingKeys.serverCounted, counted);
    } catch (err) {
      this.logger.warn('server count publish failed', { serverId: server.id, err: (err as Error).message });
    }
    return false;
  }

  /** The summary in the task details (keys follow the reference's cleaning summary where they overlap). */
  private details(reports: ServerCleaningReport[], orphans: Awaited<ReturnType<SweepStore['orphanReport']>> | undefined, deletion: CatalogueDeletionReport | undefined, index: Record<string, unknown> | undefined): Record<string, unknown> {
    return {
      per_server: reports,
      total_media_server_tracks: reports.reduce((a, r) => a + r.fetched, 0),
      total_catalogue_tracks: orphans?.catalogue ?? null,
      orphaned_tracks_count: orphans?.orphans ?? null,
      orphaned_albums: orphans?.orphanAlbums ?? null,
      orphan_sample: orphans?.sample ?? [],
      pruned_mappings: reports.reduce((a, r) => a + r.pruned, 0),
      unbound_mappings: reports.reduce((a, r) => a + r.unbound, 0),
      unbound_by_server: Object.fromEntries(reports.map((r) => [r.serverId, r.unbound])),
      failed_servers: reports.filter((r) => r.status === 'failed').map((r) => ({ serverId: r.serverId, serverName: r.serverName, error: r.error })),
      prune_refused_servers: reports.filter((r) => r.status === 'prune_refused').map((r) => ({ serverId: r.serverId, serverName: r.serverName, fetched: r.fetched, storedMappings: r.storedMappings })),
      deleted_count: deletion?.deleted ?? 0,
      catalogue_deletion: deletion ?? null,
      index: index ?? null,
    };
  }
}
