import type { ServerTaskCounts } from '@polyphony/contracts';
import type { Logger } from '../logger';
import { LeaseLostError, type Lease, type LeaseKeeper } from './lease-keeper';
import type { TaskRun } from './state';

/** What a coordination holds besides its row: the per-server counts and the log last reported. */
export interface LiveRunState {
  servers: ServerTaskCounts[];
  log: string[];
}
import type { StoredRun, TaskStore } from './store';

/** Lines of the run log kept in memory by a coordinator (the row keeps the last 100). */
const MEMORY_LOG_LINES = 200;

/** A progress snapshot an executor reports (fenced write of the row, then a board event). */
export interface TaskReport {
  /** One line for the board (at most 500 characters are kept). */
  message: string;
  /** 0-100; clamped. */
  progress: number;
  /** Per-server counts; omitted = the last reported (initially the row's). */
  servers?: ServerTaskCounts[];
  /** Merged (shallow) into the run's details; omitted = unchanged. */
  details?: Record<string, unknown>;
}

/**
 * One coordination of a run as its executor sees it: what the row held when this process took the
 * run (new or taken over), the stop signals, the run log, and {@link report}, the only way an executor
 * writes the run. Every write is fenced by {@link lease}: it throws {@link LeaseLostError} once the run
 * was cancelled or taken over, and the host then ends this coordination.
 */
export class TaskContext<R extends StoredRun = TaskRun> {
  /** The run log (timestamped lines), continued from the row's on a takeover. */
  readonly log: string[];
  private currentDetails: Record<string, unknown>;
  private currentServers: ServerTaskCounts[];

  constructor(
    /** The row as this process claimed it (details and servers written by earlier coordinators included). */
    readonly run: R & Partial<Pick<TaskRun, 'servers' | 'log'>>,
    private readonly keeper: LeaseKeeper,
    private readonly stopping: AbortSignal,
    private readonly store: TaskStore<R>,
    private readonly publish: (run: R, final: boolean, live: LiveRunState) => Promise<void>,
    private readonly logger: Logger,
    /** Log message of {@link note} lines (the task type). */
    private readonly noteLabel: string,
  ) {
    this.log = [...(run.log ?? [])];
    this.currentDetails = { ...run.details };
    this.currentServers = run.servers ?? [];
    this.signal = AbortSignal.any([keeper.signal, stopping]);
  }

  /** Aborted when this coordination must stop: lease lost or cancel seen by the heartbeat, or this process shutting down. */
  readonly signal: AbortSignal;

  /** The lease every write is fenced by. */
  get lease(): Lease {
    return this.keeper.lease;
  }

  /** Whether another coordinator ran this run before (lease generation above 1). */
  get resumed(): boolean {
    return this.run.leaseGeneration > 1;
  }

  /** The run's details as last written by this coordination (initially the row's). */
  get details(): Readonly<Record<string, unknown>> {
    return this.currentDetails;
  }

  /** True once the run must stop: {@link signal} aborted, or the run was cancelled (asks the database). */
  async stopped(): Promise<boolean> {
    return this.signal.aborted || (await this.store.isCancelled(this.run.id));
  }

  /** Throws (the abort reason, or LeaseLostError) when {@link signal} is aborted. */
  throwIfStopped(): void {
    if (this.signal.aborted) throw this.signal.reason instanceof Error ? this.signal.reason : new LeaseLostError(this.run.id);
  }

  /** Appends a timestamped line to the run log (written with the next report) and to the service log. */
  note(line: string): void {
    this.log.push(`${new Date().toISOString()} ${line}`);
    if (this.log.length > MEMORY_LOG_LINES) this.log.splice(0, this.log.length - MEMORY_LOG_LINES);
    this.logger.info(this.noteLabel, { taskId: this.run.id, line });
  }

  /**
   * Writes a RUNNING snapshot (fenced) and publishes it to the task board.
   * @returns the row after the write.
   * @throws LeaseLostError when the run was cancelled or taken over (nothing written).
   */
  async report(r: TaskReport): Promise<R> {
    const saved = await this.store.save(this.lease, this.snapshot(r));
    await this.publish(saved, false, this.live);
    return saved;
  }

  /** The per-server counts and log last reported (for stores whose rows do not keep them). */
  get live(): LiveRunState {
    return { servers: this.currentServers, log: this.log };
  }

  /** The host's final write (SUCCESS or FAIL, progress 100), fenced like {@link report}. */
  async finish(state: 'SUCCESS' | 'FAIL', r: Omit<TaskReport, 'progress'>): Promise<R> {
    const saved = await this.store.finish(this.lease, state, this.snapshot({ ...r, progress: 100 }));
    await this.publish(saved, true, this.live);
    return saved;
  }

  private snapshot(r: TaskReport) {
    if (r.servers) this.currentServers = r.servers;
    if (r.details) this.currentDetails = { ...this.currentDetails, ...r.details };
    return { message: r.message, progress: r.progress, servers: this.currentServers, log: this.log, details: r.details ? this.currentDetails : undefined };
  }
}
