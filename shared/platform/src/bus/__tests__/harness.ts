/** Harnesses that adapt each Bus implementation to the contract suite in bus.contract.ts. */
import { randomUUID } from 'node:crypto';
import * as amqp from 'amqplib';
import { InMemoryBus } from '../memory';
import { RabbitBus, type RabbitBusOptions } from '../rabbit';
import type { BusHarness, HarnessSettings } from './bus.contract';

/** Broker for integration tests (override with TEST_AMQP_URL). */
export const TEST_AMQP_URL = process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** A name unique to this test run (parallel jest workers and runs do not clash). */
export function uniqueName(prefix: string): string {
  return `${prefix}.${process.pid}.${randomUUID().slice(0, 8)}`;
}

export async function makeMemoryHarness(settings: HarnessSettings): Promise<BusHarness> {
  const bus = new InMemoryBus(settings);
  const prefix = uniqueName('mem');
  return {
    bus,
    queue: (label) => `${prefix}.${label}`,
    deadLetters: async (queue) => bus.deadLetters(queue).map((d) => d.payload),
    depth: async (queue) => (await bus.queueDepth(queue)) ?? 0,
    cleanup: () => bus.close(),
  };
}

/** Admin connection beside the bus: reads DLQs and depths, deletes what a test created. */
export class RabbitAdmin {
  private constructor(
    private readonly conn: amqp.ChannelModel,
    private ch: amqp.Channel,
  ) {}

  static async open(url = TEST_AMQP_URL): Promise<RabbitAdmin> {
    const conn = await amqp.connect(url);
    const ch = await conn.createChannel();
    return new RabbitAdmin(conn, ch);
  }

  private async channel(): Promise<amqp.Channel> {
    return this.ch;
  }

  /** Takes (and removes) every message now in `queue`, returning the parsed payloads and headers. */
  async drain(queue: string): Promise<Array<{ payload: unknown; headers: Record<string, unknown> }>> {
    const out: Array<{ payload: unknown; headers: Record<string, unknown> }> = [];
    const ch = await this.channel();
    for (;;) {
      const m = await ch.get(queue, { noAck: true });
      if (m === false) return out;
      out.push({ payload: JSON.parse(m.content.toString('utf8')) as unknown, headers: (m.properties.headers ?? {}) as Record<string, unknown> });
    }
  }

  async depth(queue: string): Promise<number> {
    return (await (await this.channel()).checkQueue(queue)).messageCount;
  }

  /** Deletes queues `<q>`, `<q>.retry`, `<q>.dlq` and the exchanges; missing ones are ignored. */
  async remove(queues: Iterable<string>, exchanges: Iterable<string>): Promise<void> {
    for (const name of [...queues].flatMap((q) => [q, `${q}.retry`, `${q}.dlq`])) {
      await this.ignoring404(() => this.ch.deleteQueue(name));
    }
    for (const name of exchanges) await this.ignoring404(() => this.ch.deleteExchange(name));
  }

  private async ignoring404(op: () => Promise<unknown>): Promise<void> {
    try {
      await op();
    } catch {
      // A failed operation closes the channel: open a fresh one.
      this.ch = await this.conn.createChannel();
    }
  }

  async close(): Promise<void> {
    await this.conn.close().catch(() => undefined);
  }
}

export async function makeRabbitHarness(
  settings: HarnessSettings,
  extra: Partial<RabbitBusOptions> = {},
): Promise<BusHarness & { rabbit: RabbitBus; admin: RabbitAdmin }> {
  const exchange = uniqueName('test.polyphony');
  const bus = await RabbitBus.connect({
    url: TEST_AMQP_URL,
    exchange,
    publishTimeoutMs: 5000,
    connectTimeoutMs: 5000,
    ...settings,
    ...extra,
  });
  const admin = await RabbitAdmin.open();
  const queues = new Set<string>();
  const letters = new Map<string, unknown[]>();
  return {
    bus,
    rabbit: bus,
    admin,
    queue: (label) => {
      const q = `${exchange}.${label}`;
      queues.add(q);
      return q;
    },
    deadLetters: async (queue) => {
      const seen = letters.get(queue) ?? [];
      for (const m of await admin.drain(`${queue}.dlq`)) seen.push(m.payload);
      letters.set(queue, seen);
      return [...seen];
    },
    depth: (queue) => admin.depth(queue),
    cleanup: async () => {
      await bus.close();
      await admin.remove(queues, [exchange, bus.deadLetterExchange]);
      await admin.close();
    },
  };
}
