import { RoutingKeys, SweepRequestedEvent, TaskCancelRequestedEvent } from '@polyphony/contracts';
import type { Bus, ConsumerHandle } from '@polyphony/platform';
import type { BatchRunner } from '../domain/batch-runner';

/**
 * registry.sweep.requested.v1 -> the batch queue (a sweep of one server, or an alignment over every
 * server; with `cancelRunning` queued and running sweeps are cancelled first, keeping their matches).
 * The message is acked once the request is stored; the work runs in the batch lane. Idempotent per task id.
 */
export function consumeSweepRequests(bus: Bus, runner: BatchRunner, prefetch: number): Promise<ConsumerHandle> {
  return bus.consume({
    queue: 'catalogue.sweep-requests',
    bindings: [RoutingKeys.sweepRequested],
    schema: SweepRequestedEvent,
    prefetch,
    handler: (e) => runner.onSweepRequested(e),
  });
}

/** task.cancel.requested.v1 for sweep, alignment and cleaning tasks (other types belong to other services). */
export function consumeTaskCancels(bus: Bus, runner: BatchRunner, prefetch: number): Promise<ConsumerHandle> {
  return bus.consume({
    queue: 'catalogue.task-cancel',
    bindings: [RoutingKeys.taskCancelRequested],
    schema: TaskCancelRequestedEvent,
    prefetch,
    handler: async (e) => {
      if (e.type === 'sweep' || e.type === 'alignment' || e.type === 'cleaning') await runner.onCancelRequested(e.taskId);
    },
  });
}
