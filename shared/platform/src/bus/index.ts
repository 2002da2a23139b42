import { InMemoryBus, type InMemoryBusOptions } from './memory';
import { RabbitBus, type RabbitBusOptions } from './rabbit';
import type { BusEvent } from '@polyphony/contracts';
import type { Bus, ConsumeOptions, ConsumerHandle } from './types';

export * from './types';
export { BusClosedError, BusUnavailableError, BUS_DEFAULTS } from './common';
export { compileTopicPattern, matchTopic, matchAnyTopic, type TopicMatcher } from './topic';
export { InMemoryBus, type InMemoryBusOptions, type DeadLetter } from './memory';
export { RabbitBus, type RabbitBusOptions } from './rabbit';

/** Options of {@link createBus}: the RabbitMQ options without `url`, plus an optional `amqpUrl`. */
export interface CreateBusOptions extends Omit<RabbitBusOptions, 'url'>, InMemoryBusOptions {
  /** AMQP URL; when absent or empty the in-process bus is used (standalone mode). */
  amqpUrl?: string;
}

/**
 * The bus for this process: a {@link RabbitBus} when `amqpUrl` is set (it connects in the background
 * and reconnects forever; `isHealthy()` is false until connected; publish/consume wait for the
 * connection within their bounds), else an {@link InMemoryBus}. Never throws for an unreachable broker;
 * `await (bus as RabbitBus).ready()` or use `RabbitBus.connect` to wait for the first connection.
 */
export function createBus(options: CreateBusOptions = {}): Bus {
  const { amqpUrl, ...rest } = options;
  if (amqpUrl) return new RabbitBus({ ...rest, url: amqpUrl });
  return new InMemoryBus(rest);
}
export { InstrumentedBus, PUBLISHED_AT_HEADER } from './instrumented';

/** Options of {@link consumeEvent}: those of `Bus.consume` without the bindings and schema the event brings. */
export type ConsumeEventOptions<T> = Omit<ConsumeOptions<T>, 'bindings' | 'schema'>;

/**
 * Consumes one bus event (contracts' `BusEvents.x`: routing key and payload schema) on a durable queue:
 * `bus.consume` bound to the event's key and validated by its schema (a payload that fails it is
 * dead-lettered without retry).
 */
export function consumeEvent<T>(bus: Bus, event: BusEvent<T>, options: ConsumeEventOptions<T>): Promise<ConsumerHandle> {
  return bus.consume({ ...options, bindings: [event.key], schema: event.schema });
}
