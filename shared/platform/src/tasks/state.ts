import type { ServerTaskCounts, TaskState, TaskType, TaskUpdatedEvent } from '@polyphony/contracts';

/**
 * State machine of a task run (issues 11 and 12): NEW -> RUNNING -> SUCCESS | FAIL | REVOKED.
 * Terminal states never change again; every transition and every progress write bumps `seq`, so the
 * registry's status board (which keeps the highest seq) never goes back. FAIL is shown to plugins as
 * FAILURE (see {@link pluginStatus}).
 */

/** The states a run may be in while it is live (a second start is refused while one is). */
export const LIVE_STATES: readonly TaskState[] = ['NEW', 'RUNNING'];

/** Whether a state is terminal. */
export function isTerminal(state: TaskState): boolean {
  return state === 'SUCCESS' || state === 'FAIL' || state === 'REVOKED';
}

/**
 * Plugin vocabulary for a task's `status` (Celery-style, as existing plugins read it: the Lyrion
 * plugin counts a task as active only when status is PENDING, STARTED or PROGRESS).
 */
export function pluginStatus(state: TaskState): 'PENDING' | 'PROGRESS' | 'SUCCESS' | 'FAILURE' | 'REVOKED' {
  switch (state) {
    case 'NEW':
      return 'PENDING';
    case 'RUNNING':
      return 'PROGRESS';
    case 'SUCCESS':
      return 'SUCCESS';
    case 'FAIL':
      return 'FAILURE';
    case 'REVOKED':
      return 'REVOKED';
  }
}

/** One run as stored (a row of a task-run table, see `schema.ts`). */
export interface TaskRun {
  id: string;
  state: TaskState;
  message: string;
  /** 0-100 */
  progress: number;
  servers: ServerTaskCounts[];
  log: string[];
  details: Record<string, unknown>;
  seq: number;
  cancelRequested: boolean;
  startedAt: Date;
  finishedAt?: Date;
  heartbeatAt: Date;
  leaseOwner?: string;
  leaseGeneration: number;
  leaseExpiresAt?: Date;
}

/** Longest log kept on a run and on the board (lines; the contract caps it at 200, runs keep 100). */
export const RUN_LOG_LINES = 100;

/** The status-board snapshot of a run: the board never holds anything the row does not. */
export function toTaskEvent(run: TaskRun, type: TaskType, owner: TaskUpdatedEvent['owner']): TaskUpdatedEvent {
  return {
    taskId: run.id,
    type,
    owner,
    state: run.state,
    progress: run.progress,
    message: run.message.slice(0, 500),
    servers: run.servers,
    log: run.log.slice(-RUN_LOG_LINES),
    details: run.details,
    startedAt: run.startedAt.toISOString(),
    finishedAt: run.finishedAt?.toISOString(),
    seq: run.seq,
  };
}

/** Progress clamped to 0-100 (NaN and infinities count as 0). */
export function clampProgress(p: number): number {
  return Number.isFinite(p) ? Math.max(0, Math.min(100, p)) : 0;
}
