import { BusEvents } from '@polyphony/contracts';
import { consumeEvent, type Bus, type ConsumerHandle } from '@polyphony/platform';
import type { BatchRunner } from '../domain/batch-runner';

/**
 * registry.sweep.requested.v1 -> the batch queue (a sweep of one server, or an alignment over every
 * server; with `cancelRunning` queued and running sweeps are cancelled first, keeping their matches).
 * The message is acked once the request is stored; the work runs in the batch lane. Idempotent per task id.
 */
export function consumeSweepRequests(bus: Bus, runner: BatchRunner, prefetch: number): Promise<ConsumerHandle> {
  return consumeEvent(bus, BusEvents.sweepRequested, {
    queue: 'catalogue.sweep-requests',
    prefetch,
    handler: (e) => runner.onSweepRequested(e),
  });
}

/** task.cancel.requested.v1 for sweep, alignment and cleaning tasks (other types belong to other services). */
export function consumeTaskCancels(bus: Bus, runner: BatchRunner, prefetch: number, imports?: { cancel(taskId: string): Promise<unknown> }): Promise<ConsumerHandle> {
  return consumeEvent(bus, BusEvents.taskCancelRequested, {
    queue: 'catalogue.task-cancel',
    prefetch,
    handler: async (e) => {
      if (e.type === 'sweep' || e.type === 'alignment' || e.type === 'cleaning') await runner.onCancelRequested(e.taskId);
      else if (e.type === 'import' && imports) await imports.cancel(e.taskId);
    },
  });
}
