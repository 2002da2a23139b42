/**
 * What the sweep and cleaning executors see of the batch task they run (`BatchTaskRun`), how it is
 * shown on the task board (`batchTaskEvents`, task.status.updated.v1, owner 'catalogue'), and the
 * helpers they share.
 *
 * A batch task runs on the platform task host (domain/batch-runner.ts): every snapshot is a fenced
 * write of the task row through the host's TaskContext that bumps its seq first, so the board (which
 * keeps the highest seq) never goes back, across processes and restarts, and shows exactly the row.
 * A task with coalesced aliases is published under each of its ids.
 */
import type { ServerTaskCounts, TaskUpdatedEvent } from '@polyphony/contracts';
import { isTransientFault, type LiveRunState, type TaskContext } from '@polyphony/platform';
import type { BatchTask, RegistryPort, ServerInfo } from './ports';

/** Longest log kept on the board (the contract's cap). */
const LOG_LINES = 200;

/**
 * The board events of a batch task: one under its id and one under each alias (with
 * `details.coalescedInto`). The row keeps no per-server counts or log: they come from `live`, the
 * running coordination's (empty for snapshots taken outside one, e.g. at admission).
 */
export function batchTaskEvents(task: BatchTask, live: LiveRunState): TaskUpdatedEvent[] {
  const finished = task.state === 'SUCCESS' || task.state === 'FAIL' || task.state === 'REVOKED';
  return [task.id, ...task.aliases].map((id) => ({
    taskId: id,
    type: task.type,
    owner: 'catalogue',
    state: task.state,
    progress: Math.max(0, Math.min(100, task.progress)),
    message: task.message.slice(0, 500),
    servers: live.servers,
    log: live.log.slice(-LOG_LINES),
    details: id === task.id ? task.details : { ...task.details, coalescedInto: task.id },
    ...(task.startedAt ? { startedAt: task.startedAt.toISOString() } : {}),
    ...(finished ? { finishedAt: (task.finishedAt ?? new Date()).toISOString() } : {}),
    seq: task.seq,
  }));
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
export async function serversDefaultFirst(registry: RegistryPort, run: BatchTaskRun): Promise<ServerInfo[] | TaskOutcome> {
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
 * One running batch task as the sweep and cleaning executors see it, over the host's TaskContext.
 * `progress` publishes at most once per `intervalMs` (a forced call always publishes) and never goes
 * back; `cancelled()` answers from the coordination's abort signal (a cancel handled here, the lease
 * lost or handed back, a shutdown) and polls the database (a cancel handled on another replica) at most
 * once a second. Writes are fenced by the task's lease.
 */
export class BatchTaskRun {
  /** Per-server count rows (the task's `servers[]`), published with every snapshot. */
  readonly servers: ServerTaskCounts[] = [];
  private lastPublish = 0;
  private lastCancelPoll = 0;
  private lastProgress = 0;
  private readonly cancel = new AbortController();
  /** Aborted by a cancel (seen here or polled), a lost lease or a shutdown (for waits that must end then). */
  readonly signal: AbortSignal;

  constructor(
    private readonly ctx: TaskContext<BatchTask>,
    private readonly intervalMs: number,
  ) {
    this.signal = AbortSignal.any([ctx.signal, this.cancel.signal]);
  }

  /** The task row as this process claimed it. */
  get task(): BatchTask {
    return this.ctx.run;
  }

  /** The task log (timestamped lines). */
  get log(): string[] {
    return this.ctx.log;
  }

  /** Adds a pending per-server count row for each server, in order (the task's `servers[]`). */
  addPendingServers(servers: readonly ServerInfo[]): void {
    for (const s of servers) this.servers.push({ serverId: s.id, serverName: s.name, seen: 0, skippedMapped: 0, mappedExisting: 0, analyzed: 0, failed: 0, status: 'pending' });
  }

  /** Appends a timestamped line to the task log (and the service log). */
  note(line: string): void {
    this.ctx.note(line);
  }

  /** Publishes RUNNING with `percent` (0-100, never going back, at most 99) and a one-line `message`. */
  async progress(percent: number, message: string, force = false): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lastPublish < this.intervalMs) return;
    this.lastPublish = now;
    this.lastProgress = Math.max(this.lastProgress, Math.min(99, percent));
    await this.ctx.report({ progress: this.lastProgress, message, servers: this.servers });
  }

  /** True once a cancel (or a shutdown, or a lost lease) asked this run to stop. */
  async cancelled(): Promise<boolean> {
    if (this.signal.aborted) return true;
    const now = Date.now();
    if (now - this.lastCancelPoll < 1000) return false;
    this.lastCancelPoll = now;
    if (await this.ctx.stopped()) this.cancel.abort();
    return this.signal.aborted;
  }
}
