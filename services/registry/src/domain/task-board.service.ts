import { RoutingKeys, type TaskCancelRequestedEvent } from '@polyphony/contracts';
import { NotFoundError, type Bus } from '@polyphony/platform';
import type { TaskBoardStore, TaskRecord } from './ports';

/** Whether a task is still live (its owner may still act on a cancel). */
const isLive = (t: TaskRecord): boolean => t.state === 'NEW' || t.state === 'RUNNING';

/**
 * The task board as the HTTP API reads and steers it: look-ups over the stored snapshots, and cancel requests.
 * A cancel records the request (shown at once as "Cancel requested" while the task is live) and asks the owning
 * service to stop (`task.cancel.requested` on the bus); the board's state stays the owner's: REVOKED arrives with
 * the owner's snapshot once it has ended the run (work done is kept).
 */
export class TaskBoardService {
  constructor(
    private readonly tasks: TaskBoardStore,
    private readonly bus: Bus,
  ) {}

  find(id: string): Promise<TaskRecord | undefined> {
    return this.tasks.find(id);
  }

  /** Live tasks, newest first. */
  active(): Promise<TaskRecord[]> {
    return this.tasks.active();
  }

  last(): Promise<TaskRecord | undefined> {
    return this.tasks.last();
  }

  /** Task history, newest first: `kind` a type prefix, `state` one state, at most `limit` rows. */
  history(f: { kind?: string; state?: string; limit: number }): Promise<TaskRecord[]> {
    return this.tasks.history(f);
  }

  /**
   * Asks for one task to be cancelled. Returns whether it was live (a finished task is left as it is).
   * @throws NotFoundError (404) for an unknown id
   */
  async cancel(id: string): Promise<{ live: boolean }> {
    const t = await this.tasks.find(id);
    if (!t) throw new NotFoundError(`Task ${id} not found`);
    const live = isLive(t);
    if (live) await this.requestCancel(t);
    return { live };
  }

  /**
   * Asks every live task to stop, or those whose type starts with `typePrefix` (also matched as `main_<type>`, the
   * plugins' names). Returns the ids asked.
   */
  async cancelAll(typePrefix?: string): Promise<string[]> {
    const live = (await this.tasks.active()).filter((t) => !typePrefix || t.type.startsWith(typePrefix) || `main_${t.type}`.startsWith(typePrefix));
    for (const t of live) await this.requestCancel(t);
    return live.map((t) => t.taskId);
  }

  private async requestCancel(t: TaskRecord): Promise<void> {
    await this.tasks.requestCancel(t.taskId);
    await this.bus.publish(RoutingKeys.taskCancelRequested, { taskId: t.taskId, type: t.type } satisfies TaskCancelRequestedEvent);
  }
}
