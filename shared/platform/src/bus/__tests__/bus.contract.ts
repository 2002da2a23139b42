/**
 * One delivery-semantics contract, run against every Bus implementation
 * (InMemoryBus in memory.test.ts and bus.contract.int.test.ts, RabbitBus in bus.contract.int.test.ts).
 */
import { z } from 'zod';
import { currentContext, runWithContext } from '../../context';
import { BusClosedError } from '../common';
import { type Bus, type MessageContext, PermanentMessageError } from '../types';

/** What a contract run needs from an implementation. */
export interface BusHarness {
  bus: Bus;
  /** A queue name unique to this harness (registered for cleanup). */
  queue(label: string): string;
  /** Dead letters of `queue` read so far (payloads), read beside the bus. Accumulates across calls. */
  deadLetters(queue: string): Promise<unknown[]>;
  /** Ready messages in `queue`, read beside the bus (works after `bus.close()`). */
  depth(queue: string): Promise<number>;
  /** Closes the bus if still open and removes everything this harness created. */
  cleanup(): Promise<void>;
}

/** Bus settings every harness must apply (small delays keep the suite fast). */
export interface HarnessSettings {
  retryDelayMs: number;
  maxRetryDelayMs: number;
}

export type MakeHarness = (settings: HarnessSettings) => Promise<BusHarness>;

const SETTINGS: HarnessSettings = { retryDelayMs: 20, maxRetryDelayMs: 100 };

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every 10 ms until it holds; throws with `what` after `timeoutMs`. */
export async function waitFor(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await sleep(10);
  }
}

/** A promise with its resolve function exposed. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const Item = z.object({ n: z.number().int() });
type Item = z.infer<typeof Item>;

/** Registers the contract cases under `describe(name)`; each case gets a fresh harness. */
export function runBusContract(name: string, makeHarness: MakeHarness): void {
  describe(`Bus contract: ${name}`, () => {
    let h: BusHarness;
    let bus: Bus;

    beforeEach(async () => {
      h = await makeHarness(SETTINGS);
      bus = h.bus;
    });
    afterEach(async () => {
      await h.cleanup();
    });

    it('routes by topic pattern (* one word, # zero or more) and keeps per-queue order with prefetch 1', async () => {
      const q = h.queue('topic');
      const seen: Array<{ n: number; key: string }> = [];
      await bus.consume({
        queue: q,
        bindings: ['test.*.created', 'other.#'],
        schema: Item,
        prefetch: 1,
        handler: async (p, ctx) => {
          seen.push({ n: p.n, key: ctx.routingKey });
        },
      });
      await bus.publish('test.track.created', { n: 1 });
      await bus.publish('test.track.deep.created', { n: 2 }); // * is exactly one word
      await bus.publish('other', { n: 3 }); // # matches zero words
      await bus.publish('other.a.b', { n: 4 });
      await bus.publish('nope.x', { n: 5 });
      await bus.publish('test.created', { n: 6 });
      await bus.publish('test.album.created', { n: 7 }); // sentinel: FIFO, so all earlier matches came first
      await waitFor(() => seen.some((s) => s.n === 7), 'sentinel delivered');
      expect(seen).toEqual([
        { n: 1, key: 'test.track.created' },
        { n: 3, key: 'other' },
        { n: 4, key: 'other.a.b' },
        { n: 7, key: 'test.album.created' },
      ]);
    });

    it('copies a message into every queue whose binding matches', async () => {
      const qa = h.queue('fan-a');
      const qb = h.queue('fan-b');
      const a: number[] = [];
      const b: number[] = [];
      await bus.consume({ queue: qa, bindings: ['fan.#'], schema: Item, handler: async (p) => void a.push(p.n) });
      await bus.consume({ queue: qb, bindings: ['fan.x'], schema: Item, handler: async (p) => void b.push(p.n) });
      await bus.publish('fan.x', { n: 1 });
      await bus.publish('fan.y', { n: 2 });
      await waitFor(() => a.length === 2 && b.length === 1, 'both queues served');
      expect(a.sort()).toEqual([1, 2]);
      expect(b).toEqual([1]);
    });

    it('carries messageId, requestId and custom headers; attempt starts at 1; requestId becomes the handler context', async () => {
      const q = h.queue('headers');
      const got: Array<{ ctx: MessageContext; ctxRequestId: string | undefined }> = [];
      await bus.consume({
        queue: q,
        bindings: ['hdr.#'],
        schema: Item,
        handler: async (_p, ctx) => {
          got.push({ ctx, ctxRequestId: currentContext()?.requestId });
        },
      });
      await bus.publish('hdr.one', { n: 1 }, { messageId: 'msg-0001', headers: { requestId: 'req-42', tenant: 't1' } });
      // requestId taken from the publisher's async context when not given explicitly
      await runWithContext({ requestId: 'ctx-7' }, () => bus.publish('hdr.two', { n: 2 }));
      await waitFor(() => got.length === 2, 'two messages');
      const byKey = new Map(got.map((g) => [g.ctx.routingKey, g]));
      const one = byKey.get('hdr.one');
      expect(one?.ctx.messageId).toBe('msg-0001');
      expect(one?.ctx.headers).toMatchObject({ requestId: 'req-42', tenant: 't1', attempt: 1 });
      expect(one?.ctx.redelivered).toBe(false);
      expect(one?.ctxRequestId).toBe('req-42');
      const two = byKey.get('hdr.two');
      expect(two?.ctx.headers.requestId).toBe('ctx-7');
      expect(two?.ctxRequestId).toBe('ctx-7');
      expect(two?.ctx.messageId).toMatch(/^[0-9a-f-]{36}$/);
      expect(two?.ctx.messageId).not.toBe(one?.ctx.messageId);
    });

    it('dead-letters a payload that fails the schema without calling the handler or retrying it', async () => {
      const q = h.queue('invalid');
      const handled: number[] = [];
      await bus.consume({
        queue: q,
        bindings: ['inv.#'],
        schema: Item,
        prefetch: 1,
        handler: async (p) => void handled.push(p.n),
      });
      await bus.publish('inv.x', { n: 'not a number' });
      await waitFor(async () => (await h.deadLetters(q)).length === 1, 'dead letter');
      await bus.publish('inv.x', { n: 9 });
      await waitFor(() => handled.length === 1, 'valid message handled');
      await sleep(150); // several retry delays: an invalid message must not come back
      expect(handled).toEqual([9]);
      expect(await h.deadLetters(q)).toEqual([{ n: 'not a number' }]);
    });

    it('retries a transient failure with attempt+1 and the original routing key and id, then succeeds', async () => {
      const q = h.queue('transient');
      const calls: MessageContext[] = [];
      await bus.consume({
        queue: q,
        bindings: ['tr.*'],
        schema: Item,
        maxAttempts: 5,
        handler: async (_p, ctx) => {
          calls.push(ctx);
          if (calls.length < 3) throw new Error('database briefly unavailable');
        },
      });
      await bus.publish('tr.a', { n: 1 }, { headers: { requestId: 'r-tr' } });
      await waitFor(() => calls.length === 3, 'three attempts');
      await sleep(150);
      expect(calls).toHaveLength(3);
      expect(calls.map((c) => c.headers.attempt)).toEqual([1, 2, 3]);
      expect(new Set(calls.map((c) => c.messageId)).size).toBe(1);
      expect(calls.every((c) => c.routingKey === 'tr.a' && c.headers.requestId === 'r-tr')).toBe(true);
      expect(await h.deadLetters(q)).toEqual([]);
      expect(await bus.queueDepth(q)).toBe(0);
    });

    it('retries a transient fault past every attempt budget and never dead-letters it', async () => {
      const q = h.queue('outage');
      const attempts: unknown[] = [];
      await bus.consume({
        queue: q,
        bindings: ['out.#'],
        schema: Item,
        maxAttempts: 2,
        handler: async (_p, ctx) => {
          attempts.push(ctx.headers.attempt);
          // A database that stays down for 24 deliveries (more than the 18 once allowed before a dead letter).
          if (attempts.length <= 24) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
        },
      });
      await bus.publish('out.1', { n: 9 });
      await waitFor(() => attempts.length === 25, 'the 25th delivery', 20_000);
      await sleep(150);
      expect(attempts).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
      expect(await h.deadLetters(q)).toEqual([]);
      expect(await bus.queueDepth(q)).toBe(0);
    });

    it('dead-letters after maxAttempts failed attempts', async () => {
      const q = h.queue('exhaust');
      let calls = 0;
      await bus.consume({
        queue: q,
        bindings: ['ex.#'],
        schema: Item,
        maxAttempts: 3,
        handler: async () => {
          calls++;
          throw new Error('still failing');
        },
      });
      await bus.publish('ex.1', { n: 5 });
      await waitFor(async () => (await h.deadLetters(q)).length === 1, 'dead letter');
      await sleep(200);
      expect(calls).toBe(3);
      expect(await h.deadLetters(q)).toEqual([{ n: 5 }]);
    });

    it('dead-letters at once on PermanentMessageError', async () => {
      const q = h.queue('permanent');
      let calls = 0;
      await bus.consume({
        queue: q,
        bindings: ['perm.#'],
        schema: Item,
        maxAttempts: 5,
        handler: async () => {
          calls++;
          throw new PermanentMessageError('track does not exist');
        },
      });
      await bus.publish('perm.1', { n: 6 });
      await waitFor(async () => (await h.deadLetters(q)).length === 1, 'dead letter');
      await sleep(150);
      expect(calls).toBe(1);
    });

    it('runs at most `prefetch` handlers of one consumer at once', async () => {
      const q = h.queue('prefetch');
      let running = 0;
      let maxRunning = 0;
      let done = 0;
      await bus.consume({
        queue: q,
        bindings: ['pf.#'],
        schema: Item,
        prefetch: 2,
        handler: async () => {
          running++;
          maxRunning = Math.max(maxRunning, running);
          await sleep(60);
          running--;
          done++;
        },
      });
      for (let i = 0; i < 6; i++) await bus.publish('pf.x', { n: i });
      await waitFor(() => done === 6, 'all handled');
      expect(maxRunning).toBe(2);
    });

    it('close() waits for an in-flight handler, which still acks', async () => {
      const q = h.queue('close');
      const started = deferred();
      let finished = false;
      await bus.consume({
        queue: q,
        bindings: ['cl.#'],
        schema: Item,
        handler: async () => {
          started.resolve();
          await sleep(300);
          finished = true;
        },
      });
      await bus.publish('cl.1', { n: 1 });
      await started.promise;
      await bus.close();
      expect(finished).toBe(true);
      expect(bus.isHealthy()).toBe(false);
      expect(await h.depth(q)).toBe(0); // acked, not handed back to the queue
      await expect(bus.publish('cl.1', { n: 2 })).rejects.toBeInstanceOf(BusClosedError);
    });

    it('stop() of a consumer waits for its in-flight handler; later messages wait in the queue', async () => {
      const q = h.queue('stop');
      const started = deferred();
      let finished = false;
      const handle = await bus.consume({
        queue: q,
        bindings: ['st.#'],
        schema: Item,
        handler: async () => {
          started.resolve();
          await sleep(200);
          finished = true;
        },
      });
      await bus.publish('st.1', { n: 1 });
      await started.promise;
      await handle.stop();
      expect(finished).toBe(true);
      await bus.publish('st.1', { n: 2 });
      await bus.publish('st.1', { n: 3 });
      await waitFor(async () => (await bus.queueDepth(q)) === 2, 'two kept in the queue');
      const got: number[] = [];
      await bus.consume({ queue: q, bindings: ['st.#'], schema: Item, handler: async (p) => void got.push(p.n) });
      await waitFor(() => got.length === 2, 'kept messages delivered');
      expect(got.sort()).toEqual([2, 3]);
    });

    it('keeps messages published to a declared queue before any consumer starts; queueDepth counts them', async () => {
      const q = h.queue('early');
      expect(bus.declareQueue).toBeDefined();
      await bus.declareQueue!(q, ['early.*']);
      for (let i = 1; i <= 3; i++) await bus.publish('early.x', { n: i });
      await bus.publish('unbound.x', { n: 99 });
      await waitFor(async () => (await bus.queueDepth(q)) === 3, 'three ready');
      const got: number[] = [];
      await bus.consume({
        queue: q,
        bindings: ['early.*'],
        schema: Item,
        prefetch: 1,
        handler: async (p) => void got.push(p.n),
      });
      await waitFor(() => got.length === 3, 'three delivered');
      expect(got).toEqual([1, 2, 3]);
      expect(await bus.queueDepth(q)).toBe(0);
      expect(await bus.queueDepth(h.queue('never-declared'))).toBeUndefined();
    });

    it('gives competing consumers of one queue distinct messages', async () => {
      const q = h.queue('compete');
      const a: number[] = [];
      const b: number[] = [];
      const make = (into: number[]) => async (p: Item): Promise<void> => {
        into.push(p.n);
        await sleep(15);
      };
      await bus.consume({ queue: q, bindings: ['co.#'], schema: Item, prefetch: 1, handler: make(a) });
      await bus.consume({ queue: q, bindings: ['co.#'], schema: Item, prefetch: 1, handler: make(b) });
      for (let i = 0; i < 20; i++) await bus.publish('co.x', { n: i });
      await waitFor(() => a.length + b.length === 20, 'all delivered');
      await sleep(100);
      expect(a.length + b.length).toBe(20);
      expect(new Set([...a, ...b]).size).toBe(20);
      expect(a.length).toBeGreaterThan(0);
      expect(b.length).toBeGreaterThan(0);
    });

    it('rejects a payload without a JSON form', async () => {
      await expect(bus.publish('x.y', undefined)).rejects.toBeInstanceOf(TypeError);
    });

    it('is healthy while open', () => {
      expect(bus.isHealthy()).toBe(true);
    });
  });
}
