import { randomUUID } from 'node:crypto';
import { RoutingKeys, type AnalysisTrackRequested, type IndexRebuildRequested, type ServerTaskCounts, type TaskState, type TaskUpdatedEvent } from '@polyphony/contracts';
import type { ProviderTrack } from '@polyphony/media-servers';
import { runWithContext, type Bus, type Logger, type Metrics } from '@polyphony/platform';
import type { RunRecord, RunRepository } from '../store/run.repository';
import type { CataloguePort, MediaClientFactory, RegistryPort, ServerInfo } from './ports';
import { metadataHash } from './track-processor';

export interface AnalysisRunOptions {
  /** How often the coordinator refreshes counts and publishes progress, ms. */
  pollMs?: number;
  /** Provider ids looked up per catalogue call. */
  lookupBatch?: number;
}

/**
 * The analysis task (spec: Analysis across servers, Batch tasks). One run at a time over every
 * configured server, sequentially, default first. For each server the full catalogue is enumerated
 * page by page; tracks whose provider id is already mapped are skipped, excluded files (undecodable,
 * same metadata) are skipped, and every other track becomes one `analysis.track.requested.v1`
 * message for the competing analysis workers. The coordinator waits until every message of the
 * server has an outcome before the next server starts. A failing server is isolated and reported.
 * At the end one index rebuild is requested. Cancel stops enqueueing at once; queued messages of a
 * cancelled run are acknowledged without work; everything finished so far is kept.
 */
export class AnalysisRunService {
  private readonly pollMs: number;
  private readonly lookupBatch: number;
  private active?: Promise<void>;

  constructor(
    private readonly runs: RunRepository,
    private readonly registry: RegistryPort,
    private readonly catalogue: CataloguePort,
    private readonly clientFactory: MediaClientFactory,
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly metrics?: Metrics,
    options: AnalysisRunOptions = {},
  ) {
    this.pollMs = options.pollMs ?? 1000;
    this.lookupBatch = options.lookupBatch ?? 500;
  }

  /** Starts a run; 409 ConflictError while another is live. Returns the task id at once (202). */
  async start(): Promise<RunRecord> {
    const run = await this.runs.create(randomUUID());
    await this.publish(run.id, 'NEW', 0, 'Queued', [], []);
    this.active = runWithContext({ requestId: `analysis-${run.id}` }, () => this.execute(run.id)).catch((err: unknown) => {
      this.logger.error('analysis run crashed', { taskId: run.id, err });
    });
    return run;
  }

  /** Resolves when the current run (if any) has finished; for tests and graceful shutdown. */
  async idle(): Promise<void> {
    await this.active;
  }

  async cancel(taskId: string): Promise<void> {
    await this.runs.requestCancel(taskId);
  }

  private async publish(taskId: string, state: TaskState, progress: number, message: string, servers: ServerTaskCounts[], log: string[], finished = false): Promise<void> {
    const { seq, startedAt } = await this.runs.save({ id: taskId, state, message, progress, servers, log, finished });
    const event: TaskUpdatedEvent = {
      taskId,
      type: 'analysis',
      owner: 'analysis',
      state,
      progress,
      message,
      servers,
      log: log.slice(-100),
      details: {},
      startedAt: startedAt?.toISOString(),
      finishedAt: finished ? new Date().toISOString() : undefined,
      seq,
    };
    await this.bus.publish(RoutingKeys.taskUpdated, event);
  }

  private async execute(taskId: string): Promise<void> {
    const log: string[] = [];
    const note = (line: string) => {
      log.push(`${new Date().toISOString()} ${line}`);
      this.logger.info('analysis', { taskId, line });
    };
    let servers: ServerInfo[];
    try {
      servers = await this.registry.listServers();
    } catch (err) {
      note(`cannot read the server registry: ${(err as Error).message}`);
      await this.publish(taskId, 'FAIL', 0, 'Cannot read the server registry', [], log, true);
      return;
    }
    servers.sort((a, b) => Number(b.isDefault) - Number(a.isDefault));
    const counts: ServerTaskCounts[] = servers.map((s) => ({ serverId: s.id, serverName: s.name, seen: 0, skippedMapped: 0, mappedExisting: 0, analyzed: 0, failed: 0, status: 'pending' }));
    await this.publish(taskId, 'RUNNING', 0, servers.length ? `Analyzing ${servers.length} server(s)` : 'No servers configured', counts, log);
    let failedServers = 0;
    let cancelled = false;
    for (let i = 0; i < servers.length && !cancelled; i++) {
      const server = servers[i]!;
      const c = counts[i]!;
      c.status = 'running';
      note(`server ${server.name}: started`);
      try {
        cancelled = await this.analyzeServer(taskId, server, c, (p) => this.publish(taskId, 'RUNNING', Math.min(99, ((i + p) / servers.length) * 100), `${server.name}: ${c.seen} seen, ${c.analyzed} analyzed, ${c.mappedExisting} mapped, ${c.failed} failed`, counts, log));
        c.status = cancelled ? 'cancelled' : 'done';
        note(`server ${server.name}: ${c.status} (seen ${c.seen}, skipped ${c.skippedMapped}, mapped ${c.mappedExisting}, analyzed ${c.analyzed}, failed ${c.failed})`);
      } catch (err) {
        failedServers++;
        c.status = 'failed';
        c.error = (err as Error).message.slice(0, 300);
        note(`server ${server.name}: failed: ${c.error}`);
      }
    }
    if (cancelled) {
      await this.publish(taskId, 'REVOKED', counts.length ? 100 : 0, 'Cancelled; work done so far is kept', counts, log, true);
      return;
    }
    await this.bus.publish(RoutingKeys.indexRebuildRequested, { reason: 'analysis', taskId } satisfies IndexRebuildRequested);
    note('index rebuild requested');
    const allFailed = servers.length > 0 && failedServers === servers.length;
    const state: TaskState = allFailed ? 'FAIL' : 'SUCCESS';
    const summary = counts.reduce((a, c) => ({ analyzed: a.analyzed + c.analyzed, mapped: a.mapped + c.mappedExisting, failed: a.failed + c.failed }), { analyzed: 0, mapped: 0, failed: 0 });
    this.metrics?.tasks.inc({ task: 'analysis', outcome: state });
    await this.publish(taskId, state, 100, `${allFailed ? 'All servers failed' : 'Done'}: ${summary.analyzed} analyzed, ${summary.mapped} mapped to existing songs, ${summary.failed} failed${failedServers ? `, ${failedServers} server(s) failed` : ''}`, counts, log, true);
  }

  /** Enumerates one server and waits for its messages; returns true when the run was cancelled. */
  private async analyzeServer(taskId: string, server: ServerInfo, c: ServerTaskCounts, progress: (fraction: number) => Promise<void>): Promise<boolean> {
    const client = this.clientFactory(server.connection);
    let enqueued = 0;
    let lastPublish = Date.now();
    for await (const page of client.iterateTracks()) {
      if (await this.runs.isCancelled(taskId)) return true;
      for (let off = 0; off < page.length; off += this.lookupBatch) {
        const batch = page.slice(off, off + this.lookupBatch);
        c.seen += batch.length;
        const ids = batch.map((t) => t.id);
        const mapped = await this.catalogue.mappedProviderIds(server.id, ids);
        const hashes = new Map(batch.map((t) => [t.id, metadataHash(toMessageTrack(t))]));
        const excluded = await this.runs.isExcluded(server.id, ids.filter((id) => !mapped.has(id)), hashes);
        const toPublish: ProviderTrack[] = [];
        for (const t of batch) {
          if (mapped.has(t.id)) c.skippedMapped++;
          else if (excluded.has(t.id)) c.failed++;
          else toPublish.push(t);
        }
        // Publisher confirms cost a broker round trip each: keep a bounded number in flight.
        for (let p = 0; p < toPublish.length; p += 32) {
          await Promise.all(toPublish.slice(p, p + 32).map((t) => this.bus.publish(RoutingKeys.analysisTrackRequested, { taskId, serverId: server.id, track: toMessageTrack(t) } satisfies AnalysisTrackRequested)));
        }
        enqueued += toPublish.length;
      }
      await this.runs.setEnqueued(taskId, server.id, enqueued);
      if (Date.now() - lastPublish > this.pollMs) {
        lastPublish = Date.now();
        await progress(0.05);
      }
    }
    await this.runs.setEnqueued(taskId, server.id, enqueued);
    // Counts from the enumeration (mapped before enqueueing, excluded); worker outcomes add to them.
    const enumerated = { skippedMapped: c.skippedMapped, failed: c.failed };
    // Wait until every enqueued track has an outcome (workers record them idempotently).
    for (;;) {
      const o = await this.runs.outcomeCounts(taskId, server.id);
      const done = o.analyzed + o.mapped_existing + o.skipped_mapped + o.failed + o.excluded + o.cancelled;
      c.analyzed = o.analyzed;
      c.mappedExisting = o.mapped_existing;
      c.skippedMapped = enumerated.skippedMapped + o.skipped_mapped;
      c.failed = enumerated.failed + o.failed + o.excluded;
      await progress(enqueued ? 0.05 + 0.95 * (done / enqueued) : 1);
      if (done >= enqueued) return o.cancelled > 0 || (await this.runs.isCancelled(taskId));
      if (await this.runs.isCancelled(taskId)) return true;
      await new Promise((r) => setTimeout(r, this.pollMs));
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
  };
}
