import { RoutingKeys, TaskUpdatedEvent } from '@polyphony/contracts';
import type { Bus, ConsumerHandle } from '@polyphony/platform';
import type { TaskRepository } from '../store/task.repository';

/** Keeps the task board: stores the latest snapshot of every task (idempotent: older seq ignored). */
export function consumeTaskUpdates(bus: Bus, tasks: TaskRepository, prefetch: number): Promise<ConsumerHandle> {
  return bus.consume({
    queue: 'registry.task-board',
    bindings: [RoutingKeys.taskUpdated],
    schema: TaskUpdatedEvent,
    prefetch,
    handler: async (event) => {
      await tasks.upsert(event);
    },
  });
}
