import { z } from 'zod';
import { runBusContract, sleep, waitFor } from './__tests__/bus.contract';
import { makeMemoryHarness } from './__tests__/harness';
import { InMemoryBus } from './memory';
import { PermanentMessageError } from './types';

runBusContract('InMemoryBus', makeMemoryHarness);

describe('InMemoryBus specifics', () => {
  const Item = z.object({ n: z.number() });

  it('records why each message was dead-lettered', async () => {
    const bus = new InMemoryBus({ retryDelayMs: 1 });
    await bus.consume({
      queue: 'q',
      bindings: ['k.*'],
      schema: Item,
      maxAttempts: 2,
      handler: async (p) => {
        if (p.n === 1) throw new PermanentMessageError('gone');
        throw new Error('flaky');
      },
    });
    await bus.publish('k.a', { n: 'x' }, { messageId: 'bad' });
    await bus.publish('k.a', { n: 1 }, { messageId: 'perm' });
    await bus.publish('k.a', { n: 2 }, { messageId: 'tired' });
    await waitFor(() => bus.deadLetters('q').length === 3, 'three dead letters');
    const byId = new Map(bus.deadLetters('q').map((d) => [d.messageId, d]));
    expect(byId.get('bad')).toMatchObject({ reason: 'invalid', payload: { n: 'x' }, routingKey: 'k.a' });
    expect(byId.get('perm')).toMatchObject({ reason: 'permanent', error: 'PermanentMessageError: gone' });
    expect(byId.get('tired')).toMatchObject({ reason: 'max-attempts', error: 'Error: flaky' });
    expect(byId.get('tired')?.headers.attempt).toBe(2);
    expect(await bus.queueDepth('q.dlq')).toBe(3);
    await bus.close();
  });

  it('waits retryDelayMs * 2^(attempt-1) between attempts', async () => {
    const bus = new InMemoryBus({ retryDelayMs: 40, maxRetryDelayMs: 1000 });
    const times: number[] = [];
    await bus.consume({
      queue: 'q',
      bindings: ['#'],
      schema: Item,
      maxAttempts: 3,
      handler: async () => {
        times.push(Date.now());
        throw new Error('no');
      },
    });
    await bus.publish('a', { n: 1 });
    await waitFor(() => bus.deadLetters('q').length === 1, 'dead letter');
    const [t1, t2, t3] = times as [number, number, number];
    expect(t2 - t1).toBeGreaterThanOrEqual(38);
    expect(t3 - t2).toBeGreaterThanOrEqual(78);
    expect(await bus.queueDepth('q.retry')).toBe(0);
    await bus.close();
  });

  it('close() drops pending retries instead of running them after close', async () => {
    const bus = new InMemoryBus({ retryDelayMs: 50 });
    let calls = 0;
    await bus.consume({
      queue: 'q',
      bindings: ['#'],
      schema: Item,
      handler: async () => {
        calls++;
        throw new Error('no');
      },
    });
    await bus.publish('a', { n: 1 });
    await waitFor(async () => (await bus.queueDepth('q.retry')) === 1, 'retry pending');
    await bus.close();
    await sleep(120);
    expect(calls).toBe(1);
  });

  it('delivers JSON copies (a handler cannot mutate the publisher\'s object; Dates become strings)', async () => {
    const bus = new InMemoryBus();
    const original = { n: 1, when: new Date(0) };
    let got: unknown;
    await bus.consume({
      queue: 'q',
      bindings: ['#'],
      schema: z.object({ n: z.number(), when: z.string() }),
      handler: async (p) => {
        got = p;
        (p as { n: number }).n = 2;
      },
    });
    await bus.publish('a', original);
    await waitFor(() => got !== undefined, 'delivered');
    expect(got).toEqual({ n: 2, when: '1970-01-01T00:00:00.000Z' });
    expect(original.n).toBe(1);
    await bus.close();
  });

  it('rejects invalid prefetch, maxAttempts and transientMaxAttempts', async () => {
    const bus = new InMemoryBus();
    const base = { queue: 'q', bindings: ['#'], schema: Item, handler: async () => undefined };
    await expect(bus.consume({ ...base, prefetch: 0 })).rejects.toBeInstanceOf(RangeError);
    await expect(bus.consume({ ...base, maxAttempts: 0 })).rejects.toBeInstanceOf(RangeError);
    await expect(bus.consume({ ...base, transientMaxAttempts: 7.5 })).rejects.toBeInstanceOf(RangeError);
    await bus.close();
  });
});
