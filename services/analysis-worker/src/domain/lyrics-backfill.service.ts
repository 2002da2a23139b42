import { randomUUID } from 'node:crypto';
import { RoutingKeys, type TaskState, type TaskUpdatedEvent } from '@polyphony/contracts';
import { ConflictError, type Bus, type Logger } from '@polyphony/platform';
import { backfillLyrics, type LyricsBackfillReport } from './lyrics';
import type { CataloguePort, MediaClientFactory, RegistryPort } from './ports';

/**
 * The lyrics backfill as a task on the task board (type `lyrics_backfill`, owner analysis): one at a time
 * per worker process (a second start while one runs is a 409). Resumable: the work list is "songs without
 * a lookup", so a backfill stopped by a restart or a cancel continues where it stopped when started again.
 * Progress = songs examined / songs pending at the start.
 */
export class LyricsBackfillService {
  private running?: { taskId: string; abort: AbortController; done: Promise<void> };

  constructor(
    private readonly catalogue: CataloguePort,
    private readonly registry: RegistryPort,
    private readonly clientFactory: MediaClientFactory,
    private readonly bus: Bus,
    private readonly logger: Logger,
  ) {}

  /** Starts a backfill in the background. @throws ConflictError while one runs in this process. */
  start(): { taskId: string } {
    if (this.running) throw new ConflictError(`A lyrics backfill is already running (task ${this.running.taskId})`, 'task_already_running');
    const taskId = randomUUID();
    const abort = new AbortController();
    const done = this.execute(taskId, abort.signal).finally(() => {
      this.running = undefined;
    });
    this.running = { taskId, abort, done };
    return { taskId };
  }

  /** Asks the running backfill (if it is `taskId`) to stop after the current song. */
  cancel(taskId: string): boolean {
    if (this.running?.taskId !== taskId) return false;
    this.running.abort.abort();
    return true;
  }

  /** Resolves when no backfill runs (tests, shutdown). */
  async idle(): Promise<void> {
    await this.running?.done;
  }

  /** Stops a running backfill and waits for it. */
  async stop(): Promise<void> {
    this.running?.abort.abort();
    await this.idle();
  }

  private async execute(taskId: string, signal: AbortSignal): Promise<void> {
    let seq = 0;
    const startedAt = new Date().toISOString();
    const publish = async (state: TaskState, progress: number, message: string, report?: LyricsBackfillReport) => {
      const finished = state === 'SUCCESS' || state === 'FAIL' || state === 'REVOKED';
      const event: TaskUpdatedEvent = {
        taskId,
        type: 'lyrics_backfill',
        owner: 'analysis',
        state,
        progress,
        message,
        servers: [],
        log: [],
        details: report ? { ...report } : {},
        startedAt,
        finishedAt: finished ? new Date().toISOString() : undefined,
        seq: seq++,
      };
      await this.bus.publish(RoutingKeys.taskUpdated, event).catch((err: unknown) => this.logger.warn('task update not published', { taskId, err: (err as Error).message }));
    };
    try {
      await publish('RUNNING', 0, 'Looking up lyrics of songs analyzed before');
      const total = Math.max(1, (await this.catalogue.pendingLyrics(undefined, 1)).remaining);
      let last = 0;
      const report = await backfillLyrics(this.catalogue, this.registry, this.clientFactory, this.logger, {
        signal,
        onProgress: (r) => {
          if (Date.now() - last < 1000) return;
          last = Date.now();
          void publish('RUNNING', Math.min(99, (100 * r.examined) / total), `${r.examined} songs examined, ${r.found} with lyrics`, r);
        },
      });
      const msg = `${report.examined} songs examined: ${report.found} with lyrics, ${report.none} without, ${report.instrumental} instrumental, ${report.errors} failed (${report.remaining} still pending)`;
      await publish(signal.aborted ? 'REVOKED' : 'SUCCESS', 100, msg, report);
      this.logger.info('lyrics backfill finished', { taskId, ...report });
    } catch (err) {
      this.logger.error('lyrics backfill failed', { taskId, err: (err as Error).message });
      await publish('FAIL', 100, `Lyrics backfill failed: ${(err as Error).message}`);
    }
  }
}
