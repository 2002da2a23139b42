import { BusEvents } from '@polyphony/contracts';
import { consumeEvent, type Bus, type ConsumerHandle } from '@polyphony/platform';
import type { TaskBoardStore } from '../domain/ports';

/** Keeps the task board: stores the latest snapshot of every task (idempotent: older seq ignored). */
export function consumeTaskUpdates(bus: Bus, tasks: Pick<TaskBoardStore, 'upsert'>, prefetch: number): Promise<ConsumerHandle> {
  return consumeEvent(bus, BusEvents.taskUpdated, {
    queue: 'registry.task-board',
    prefetch,
    handler: async (event) => {
      await tasks.upsert(event);
    },
  });
}
