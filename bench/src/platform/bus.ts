/**
 * Bus throughput figures (not a test). Build, then run:
 *   npm run build && node bench/dist/platform/bus.js
 * BENCH_AMQP_URL (default amqp://guest:guest@127.0.0.1:5672) selects the broker; set it to `none`
 * to measure the in-memory bus only. Prints, per implementation: sequential publishes (each awaited,
 * i.e. one broker confirm round trip per message) and concurrent publish + consume (prefetch 50).
 * Uses its own exchange and queues and deletes them afterwards.
 */
import * as amqp from 'amqplib';
import { z } from 'zod';
import { readEnv, InMemoryBus, RabbitBus } from '@polyphony/platform';
import type { Bus } from '@polyphony/platform';

const URL_ = readEnv().BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

async function measure(name: string, bus: Bus, queue: string, n: number): Promise<void> {
  let got = 0;
  let done: () => void = () => undefined;
  let all = new Promise<void>((r) => (done = r));
  await bus.consume({
    queue,
    bindings: ['bench.#'],
    schema: z.object({ i: z.number() }),
    prefetch: 50,
    handler: async () => {
      if (++got === n) done();
    },
  });
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await bus.publish('bench.x', { i });
  const seqMs = Number(process.hrtime.bigint() - t0) / 1e6;
  await all;
  got = 0;
  all = new Promise<void>((r) => (done = r));
  t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: n }, (_, i) => bus.publish('bench.x', { i })));
  await all;
  const parMs = Number(process.hrtime.bigint() - t0) / 1e6;
  console.log(
    `${name}: sequential publish ${((n / seqMs) * 1000).toFixed(0)} msg/s (${(seqMs / n).toFixed(3)} ms each, n=${n}); ` +
      `concurrent publish+consume ${((n / parMs) * 1000).toFixed(0)} msg/s (n=${n})`,
  );
  await bus.close();
}

async function main(): Promise<void> {
  await measure('InMemoryBus', new InMemoryBus(), 'bench.q', 20_000);
  if (URL_ === 'none') return;
  const exchange = `bench.${process.pid}.${Date.now()}`;
  const queue = `${exchange}.q`;
  const bus = await RabbitBus.connect({ url: URL_, exchange, connectTimeoutMs: 5000 });
  try {
    await measure('RabbitBus (persistent, confirms)', bus, queue, 5000);
  } finally {
    await bus.close();
    const conn = await amqp.connect(URL_);
    const ch = await conn.createChannel();
    for (const q of [queue, `${queue}.retry`, `${queue}.dlq`]) await ch.deleteQueue(q);
    await ch.deleteExchange(exchange);
    await ch.deleteExchange(`${exchange}.dlx`);
    await conn.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
