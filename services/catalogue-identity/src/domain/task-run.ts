/**
 * Task-board reporting of the catalogue's batch tasks (task.status.updated.v1, owner 'catalogue') and the
 * per-run context the sweep and cleaning executors report through: throttled progress (percent and a
 * one-line status, what the UI's progress bar shows), per-server counts, a short log, cancel checks.
 *
 * Every snapshot is a fenced write of the task row (platform lease model, see
 * store/batch-task.repository.ts) that bumps its seq first, so the board (which keeps the highest seq)
 * never goes back, across processes and restarts, and shows exactly the row. A task with coalesced
 * aliases is published under each of its ids.
 */
import { RoutingKeys, type ServerTaskCounts, type TaskState, type TaskUpdatedEvent } from '@polyphony/contracts';
import { isTransientFault, type Bus, type Lease, type Logger } from '@polyphony/platform';
import type { BatchTask, BatchTaskRepository } from '../store/batch-task.repository';
import type { RegistryPort, ServerInfo } from './ports';

/** Longest log kept on the board (the contract's cap). */
const LOG_LINES = 200;

/** Publishes snapshots of batch tasks to the task board. */
export class TaskBoard {
  constructor(
    private readonly repo: BatchTaskRepository,
    private readonly bus: Bus,
    private readonly logger: Logger,
  ) {}

  /**
   * Writes a snapshot (fenced by `lease`, bumping seq) and publishes it under the task id and every alias.
   * @returns the task as stored after the write.
   * @throws LeaseLostError when the task was cancelled or taken over (nothing written).
   */
  async write(
    lease: Lease,
    patch: { state?: TaskState; progress: number; message: string; details?: Record<string, unknown>; finished?: boolean },
    extra: { servers?: ServerTaskCounts[]; log?: string[] } = {},
  ): Promise<BatchTask> {
    const w = await this.repo.snapshot(lease, patch);
    await this.publish(w.task, extra.servers ?? [], extra.log ?? []);
    return w.task;
  }

  /** Publishes the stored state of `task` (its row's current seq) under its id and aliases. Bus failures are logged only. */
  async publish(task: BatchTask, servers: ServerTaskCounts[] = [], log: string[] = []): Promise<void> {
    const finished = task.state === 'SUCCESS' || task.state === 'FAIL' || task.state === 'REVOKED';
    for (const id of [task.id, ...task.aliases]) {
      const event: TaskUpdatedEvent = {
        taskId: id,
        type: task.type,
        owner: 'catalogue',
        state: task.state,
        progress: Math.max(0, Math.min(100, task.progress)),
        message: task.message.slice(0, 500),
        servers,
        log: log.slice(-LOG_LINES),
        details: id === task.id ? task.details : { ...task.details, coalescedInto: task.id },
        ...(task.startedAt ? { startedAt: task.startedAt.toISOString() } : {}),
        ...(finished ? { finishedAt: (task.finishedAt ?? new Date()).toISOString() } : {}),
        seq: task.seq,
      };
      try {
        await this.bus.publish(RoutingKeys.taskUpdated, event);
      } catch (err) {
        this.logger.warn('task board publish failed', { taskId: id, err: (err as Error).message });
      }
    }
  }
}

/** How an executor's run ended. */
export interface TaskOutcome {
  /** Final state unless `cancelled`. */
  readonly state: 'SUCCESS' | 'FAIL';
  /** The run stopped early on a cancel (or a shutdown); everything written so far is kept. */
  readonly cancelled?: boolean;
  readonly message: string;
  readonly details: Record<string, unknown>;
}

/**
 * The servers a catalogue task walks, default server first (the spec's "default first" order), or
 * the FAIL outcome to end the task with when the registry cannot be read (noted on the run).
 */
export async function serversDefaultFirst(registry: RegistryPort, run: TaskRun): Promise<ServerInfo[] | TaskOutcome> {
  let servers: ServerInfo[];
  try {
    servers = await registry.listServers();
  } catch (err) {
    run.note(`cannot read the server registry: ${(err as Error).message}`);
    return { state: 'FAIL', message: 'Cannot read the server registry', details: {} };
  }
  return servers.sort((a, b) => Number(b.isDefault) - Number(a.isDefault));
}

/**
 * A server's failure inside a batch task is recorded on that server and the task goes on, unless it is a
 * transient fault of the catalogue's own infrastructure (its database or broker away: platform
 * `isTransientFault`) and not the media server's (`mediaServerFault`, e.g. a listing that failed): that
 * one is rethrown, so the batch runner hands the task back and it resumes (sweeps and cleanings are
 * idempotent). Returns when the caller should record the server's failure.
 * @throws err when it is such a fault.
 */
export function rethrowOwnTransientFault(err: unknown, mediaServerFault: boolean): void {
  if (!mediaServerFault && isTransientFault(err)) throw err;
}

/**
 * One running task as its executor sees it. `progress` publishes at most once per `intervalMs` (a
 * forced call always publishes); `cancelled()` answers from the in-process abort signal (a cancel
 * handled here, the lease lost or handed back, a shutdown), and polls the database (a cancel handled
 * on another replica) at most once a second. Writes are fenced by `lease`.
 */
export class TaskRun {
  readonly servers: ServerTaskCounts[] = [];

  /** Adds a pending per-server count row for each server, in order (the task's `servers[]`). */
  addPendingServers(servers: readonly ServerInfo[]): void {
    for (const s of servers) this.servers.push({ serverId: s.id, serverName: s.name, seen: 0, skippedMapped: 0, mappedExisting: 0, analyzed: 0, failed: 0, status: 'pending' });
  }
  readonly log: string[] = [];
  private lastPublish = 0;
  private lastCancelPoll = 0;
  private lastProgress = 0;

  constructor(
    readonly task: BatchTask,
    readonly lease: Lease,
    private readonly repo: BatchTaskRepository,
    private readonly board: TaskBoard,
    private readonly abort: AbortController,
    private readonly logger: Logger,
    private readonly intervalMs: number,
  ) {}

  /** Appends a timestamped line to the task log (and the service log). */
  note(line: string): void {
    this.log.push(`${new Date().toISOString()} ${line}`);
    if (this.log.length > LOG_LINES) this.log.splice(0, this.log.length - LOG_LINES);
    this.logger.info('batch task', { taskId: this.task.id, type: this.task.type, line });
  }

  /** Publishes RUNNING with `percent` (0-100, never going back) and a one-line `message`. */
  async progress(percent: number, message: string, force = false): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lastPublish < this.intervalMs) return;
    this.lastPublish = now;
    this.lastProgress = Math.max(this.lastProgress, Math.min(99, percent));
    await this.board.write(this.lease, { progress: this.lastProgress, message }, { servers: this.servers, log: this.log });
  }

  /** Aborted by a cancel handled in this process, a lost lease or a shutdown (for waits that must end then). */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** True once a cancel (or a shutdown) asked this run to stop. */
  async cancelled(): Promise<boolean> {
    if (this.abort.signal.aborted) return true;
    const now = Date.now();
    if (now - this.lastCancelPoll < 1000) return false;
    this.lastCancelPoll = now;
    if (await this.repo.isCancelRequested(this.task.id)) this.abort.abort();
    return this.abort.signal.aborted;
  }

  /** Writes and publishes the final snapshot (fenced; throws LeaseLostError when cancelled or taken over). */
  async finish(state: Exclude<TaskState, 'REVOKED'>, message: string, details: Record<string, unknown>): Promise<void> {
    await this.board.write(this.lease, { state, progress: 100, message, details, finished: true }, { servers: this.servers, log: this.log });
  }

  /** After a cancel ended the task: records what the run did on the REVOKED row (if this run held it last) and publishes it. */
  async closeRevoked(details: Record<string, unknown>): Promise<void> {
    const task = await this.repo.amendRevoked(this.lease, details);
    if (task) await this.board.publish(task, this.servers, this.log);
  }
}
