/**
 * The bus contract against both implementations; RabbitBus against the real broker
 * (TEST_AMQP_URL, default amqp://guest:guest@127.0.0.1:5672). Every harness uses its own
 * exchange and queues (unique names) and deletes them afterwards.
 */
import { randomUUID } from 'node:crypto';
import * as amqp from 'amqplib';
import { z } from 'zod';
import { runBusContract, waitFor } from './__tests__/bus.contract';
import { makeMemoryHarness, makeRabbitHarness, RabbitAdmin, TEST_AMQP_URL, uniqueName } from './__tests__/harness';
import { BusUnavailableError } from './common';
import { createBus, InMemoryBus, RabbitBus } from './index';
import { matchTopic } from './topic';

runBusContract('InMemoryBus', makeMemoryHarness);
runBusContract('RabbitBus', (s) => makeRabbitHarness(s));

describe('RabbitBus specifics', () => {
  const Item = z.object({ n: z.number() });

  it('routes exactly like the broker\'s topic exchange (topic.ts parity)', async () => {
    const h = await makeRabbitHarness({ retryDelayMs: 20, maxRetryDelayMs: 100 });
    try {
      const patterns = ['a.*', 'a.#', '#.z', 'a.#.z', '*.*', '#', 'a.*.#', 'a..b', 'a.*.b', 'x'];
      const keys = ['a', 'a.b', 'a.b.z', 'a.z', 'z', 'a..b', 'b.a', 'x', 'a.b.c.z', ''];
      const got = new Map<string, Set<string>>();
      for (const [i, p] of patterns.entries()) {
        const q = h.queue(`parity${i}`);
        const set = new Set<string>();
        got.set(p, set);
        await h.bus.consume({
          queue: q,
          bindings: [p],
          schema: z.object({ key: z.string() }),
          handler: async (m) => void set.add(m.key),
        });
      }
      for (const k of keys) await h.bus.publish(k, { key: k });
      await h.bus.publish('sentinel.end', { key: 'sentinel.end' }); // matched by '#'
      await waitFor(() => got.get('#')?.has('sentinel.end') === true, 'sentinel');
      await new Promise((r) => setTimeout(r, 200));
      for (const p of patterns) {
        const expected = keys.filter((k) => matchTopic(p, k));
        if (p === '#') expected.push('sentinel.end');
        if (p === '*.*') expected.push('sentinel.end');
        expect({ p, keys: [...(got.get(p) ?? [])].sort() }).toEqual({ p, keys: expected.sort() });
      }
    } finally {
      await h.cleanup();
    }
  });

  it('declares the documented topology: DLQ via the dead-letter exchange, retry queue back to the queue', async () => {
    const h = await makeRabbitHarness({ retryDelayMs: 20, maxRetryDelayMs: 100 });
    try {
      const q = h.queue('topo');
      await h.bus.consume({
        queue: q,
        bindings: ['t.#'],
        schema: Item,
        maxAttempts: 2,
        handler: async () => {
          throw new Error('boom');
        },
      });
      await h.bus.publish('t.x', { n: 1 }, { messageId: 'topo-1', headers: { requestId: 'r1' } });
      await waitFor(async () => (await h.admin.depth(`${q}.dlq`)) === 1, 'in DLQ');
      const [letter] = await h.admin.drain(`${q}.dlq`);
      expect(letter?.payload).toEqual({ n: 1 });
      // broker-side dead-lettering: x-death names our queue and reason 'rejected'
      const death = (letter?.headers['x-death'] as Array<Record<string, unknown>>)[0];
      expect(death).toMatchObject({ queue: q, reason: 'rejected' });
      expect(letter?.headers).toMatchObject({ attempt: 2, requestId: 'r1', 'x-routing-key': 't.x' });
      expect(h.rabbit.deadLetterExchange).toBe(`${h.rabbit.exchange}.dlx`);
    } finally {
      await h.cleanup();
    }
  });

  it('When dead letters are listed, then they stay in the DLQ; when only some are replayed, then those go back to the queue with attempt 1 and the rest stay', async () => {
    const h = await makeRabbitHarness({ retryDelayMs: 20, maxRetryDelayMs: 100 });
    try {
      const q = h.queue('replay');
      let failing = true;
      const seen: Array<{ n: number; attempt: unknown; routingKey: string }> = [];
      await h.bus.consume({
        queue: q,
        bindings: ['rp.#'],
        schema: Item,
        maxAttempts: 1,
        handler: async (p, ctx) => {
          if (failing) throw new Error('boom');
          seen.push({ n: p.n, attempt: ctx.headers.attempt, routingKey: ctx.routingKey });
        },
      });
      await h.bus.publish('rp.a', { n: 1 }, { messageId: 'rp-1' });
      await h.bus.publish('rp.b', { n: 2 }, { messageId: 'rp-2' });
      await waitFor(async () => (await h.admin.depth(`${q}.dlq`)) === 2, 'both in the DLQ');
      const listed = await h.rabbit.listDeadLetters(q, 10);
      expect(listed.map((d) => [d.messageId, d.routingKey, d.payload])).toEqual([
        ['rp-1', 'rp.a', { n: 1 }],
        ['rp-2', 'rp.b', { n: 2 }],
      ]);
      expect(listed.map((d) => d.attempt)).toEqual([1, 1]);
      // Listing takes nothing away (the unacked reads are requeued when the reading channel closes).
      await waitFor(async () => (await h.admin.depth(`${q}.dlq`)) === 2, 'still in the DLQ after listing');
      failing = false;
      expect(await h.rabbit.replayDeadLetters(q, 10, new Set(['rp-2']))).toBe(1);
      await waitFor(() => seen.length === 1, 'replayed message handled');
      expect(seen).toEqual([{ n: 2, attempt: 1, routingKey: 'rp.b' }]);
      await waitFor(async () => (await h.admin.depth(`${q}.dlq`)) === 1, 'the other one left in the DLQ');
      expect((await h.rabbit.listDeadLetters(q, 10)).map((d) => d.messageId)).toEqual(['rp-1']);
    } finally {
      await h.cleanup();
    }
  });

  it('recovers its publish channel after a channel error (exchange deleted under it)', async () => {
    const logged: string[] = [];
    const logger = { info: (m: string) => void logged.push(m), warn: (m: string) => void logged.push(m), error: (m: string) => void logged.push(m) };
    const h = await makeRabbitHarness({ retryDelayMs: 20, maxRetryDelayMs: 100 }, { reconnectDelayMs: 50, logger });
    try {
      await h.bus.publish('before.delete', { n: 1 });
      await h.admin.remove([], [h.rabbit.exchange]);
      // The publish hits a missing exchange (channel closed by the broker), the bus reopens the
      // channel, re-declares the exchange and publishes again.
      await h.bus.publish('after.delete', { n: 2 });
      expect(logged).toEqual(
        expect.arrayContaining(['bus publish interrupted by a closed channel, publishing again', 'bus publish channel reopened']),
      );
      expect(logged).not.toContain('bus connection lost, reconnecting');
      expect(h.bus.isHealthy()).toBe(true);
      const q = h.queue('after');
      const got: number[] = [];
      await h.bus.consume({ queue: q, bindings: ['after.*'], schema: Item, handler: async (p) => void got.push(p.n) });
      await h.bus.publish('after.again', { n: 3 });
      await waitFor(() => got.length === 1, 'delivered after recovery');
      expect(got).toEqual([3]);
    } finally {
      await h.cleanup();
    }
  });

  it('restarts a consumer the broker cancelled (queue deleted under it), re-declaring its queue', async () => {
    const h = await makeRabbitHarness({ retryDelayMs: 20, maxRetryDelayMs: 100 }, { reconnectDelayMs: 50 });
    try {
      const q = h.queue('cancelled');
      const got: number[] = [];
      await h.bus.consume({ queue: q, bindings: ['cx.*'], schema: Item, handler: async (p) => void got.push(p.n) });
      await h.admin.remove([q], []);
      let n = 0;
      // Until the consumer re-declared the queue and its bindings, publishes are unroutable (dropped).
      await waitFor(async () => {
        await h.bus.publish('cx.a', { n: ++n });
        await new Promise((r) => setTimeout(r, 50));
        return got.length > 0;
      }, 'consumer back', 5000);
      expect(h.bus.isHealthy()).toBe(true);
      expect(await h.admin.depth(q)).toBe(0);
    } finally {
      await h.cleanup();
    }
  });

  it('defaults to exchange polyphony and dead-letter exchange polyphony.dlx', async () => {
    // Unreachable URL: the test checks names only and declares nothing on the shared broker.
    const bus = new RabbitBus({ url: 'amqp://guest:guest@127.0.0.1:1' });
    try {
      expect(bus.exchange).toBe('polyphony');
      expect(bus.deadLetterExchange).toBe('polyphony.dlx');
    } finally {
      await bus.close();
    }
  });

  it('fails clearly when the broker is unreachable (connect, publish and consume are bounded)', async () => {
    const url = 'amqp://guest:guest@127.0.0.1:1';
    await expect(RabbitBus.connect({ url, connectTimeoutMs: 300, reconnectDelayMs: 50 })).rejects.toBeInstanceOf(
      BusUnavailableError,
    );
    const bus = new RabbitBus({ url, publishTimeoutMs: 200, connectTimeoutMs: 200, reconnectDelayMs: 50 });
    try {
      expect(bus.isHealthy()).toBe(false);
      const t0 = Date.now();
      await expect(bus.publish('a.b', { n: 1 })).rejects.toBeInstanceOf(BusUnavailableError);
      expect(Date.now() - t0).toBeLessThan(2000);
      await expect(
        bus.consume({ queue: 'never', bindings: ['#'], schema: Item, handler: async () => undefined }),
      ).rejects.toBeInstanceOf(BusUnavailableError);
      expect(await bus.queueDepth('never')).toBeUndefined();
    } finally {
      await bus.close();
    }
  });

  it('reports a queue declared with conflicting arguments as an error from consume()', async () => {
    const admin = await RabbitAdmin.open();
    const q = uniqueName('test.conflict');
    const ch = await amqp.connect(TEST_AMQP_URL);
    const c = await ch.createChannel();
    await c.assertQueue(q, { durable: false, autoDelete: true });
    const h = await makeRabbitHarness({ retryDelayMs: 20, maxRetryDelayMs: 100 });
    try {
      await expect(
        h.bus.consume({ queue: q, bindings: ['#'], schema: Item, handler: async () => undefined }),
      ).rejects.toThrow(/PRECONDITION_FAILED/);
      // the bus stays usable
      expect(h.bus.isHealthy()).toBe(true);
      await h.bus.publish('still.works', { n: 1 });
    } finally {
      await ch.close();
      await admin.remove([q], []);
      await admin.close();
      await h.cleanup();
    }
  });
});

describe('createBus', () => {
  it('gives an InMemoryBus without amqpUrl and a RabbitBus with one', async () => {
    const mem = createBus({});
    expect(mem).toBeInstanceOf(InMemoryBus);
    await mem.close();
    const rabbit = createBus({ amqpUrl: TEST_AMQP_URL, exchange: `test.${randomUUID()}` });
    try {
      expect(rabbit).toBeInstanceOf(RabbitBus);
      await (rabbit as RabbitBus).ready(5000);
      expect(rabbit.isHealthy()).toBe(true);
    } finally {
      await rabbit.close();
      const admin = await RabbitAdmin.open();
      await admin.remove([], [(rabbit as RabbitBus).exchange, (rabbit as RabbitBus).deadLetterExchange]);
      await admin.close();
    }
  });
});
