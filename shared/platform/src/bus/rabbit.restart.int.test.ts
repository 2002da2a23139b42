/**
 * RabbitBus across a connection loss: the broker force-closes our connection
 * (`rabbitmqctl close_connection` on this bus's connection only, so parallel runs are unaffected)
 * while a handler is in flight and its message unacked. The bus must reconnect, the broker must
 * redeliver the unacked message, a publish made during the outage must wait and go through, and
 * new messages (including a retried one) must flow after the reconnect.
 */
import { execFileSync } from 'node:child_process';
import { z } from 'zod';
import { deferred, sleep, waitFor } from './__tests__/bus.contract';
import { makeRabbitHarness, uniqueName } from './__tests__/harness';
import type { RabbitBus } from './rabbit';

/**
 * Closes `bus`'s AMQP connection from the broker side. Falls back to destroying the client socket
 * when rabbitmqctl is not usable here (not installed, not root); returns which way was used.
 */
function dropConnection(bus: RabbitBus): 'broker' | 'socket' {
  try {
    const out = execFileSync('rabbitmqctl', ['-q', 'list_connections', '--no-table-headers', 'pid', 'client_properties'], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    const line = out.split('\n').find((l) => l.includes(`{"connection_name","${bus.name}"}`));
    const pid = line?.split('\t')[0];
    if (!pid) throw new Error(`connection ${bus.name} not listed by rabbitmqctl`);
    execFileSync('rabbitmqctl', ['-q', 'close_connection', pid, 'polyphony restart test'], { timeout: 20_000 });
    return 'broker';
  } catch (err) {
    console.warn(`rabbitmqctl unusable (${String(err)}); destroying the socket instead`);
    const internals = bus as unknown as { current?: { model: { connection: { stream: { destroy(): void } } } } };
    internals.current?.model.connection.stream.destroy();
    return 'socket';
  }
}

describe('RabbitBus reconnect after the broker drops the connection', () => {
  it('redelivers the unacked in-flight message, lets an outage publish through, and keeps consuming', async () => {
    const h = await makeRabbitHarness(
      { retryDelayMs: 20, maxRetryDelayMs: 100 },
      { reconnectDelayMs: 300, connectionName: uniqueName('polyphony-restart-test'), publishTimeoutMs: 15_000 },
    );
    const bus = h.rabbit;
    const release = deferred();
    try {
      const q = h.queue('restart');
      const firstStarted = deferred();
      const calls: Array<{ n: number; redelivered: boolean; attempt: unknown }> = [];
      const done = new Set<number>();
      let failedOnce = false;
      await bus.consume({
        queue: q,
        bindings: ['rs.#'],
        schema: z.object({ n: z.number() }),
        prefetch: 1,
        handler: async (p, ctx) => {
          calls.push({ n: p.n, redelivered: ctx.redelivered, attempt: ctx.headers.attempt });
          if (p.n === 1 && calls.length === 1) {
            firstStarted.resolve();
            await release.promise; // still running (message unacked) when the connection drops
          }
          if (p.n === 4 && !failedOnce) {
            failedOnce = true;
            throw new Error('transient after reconnect');
          }
          done.add(p.n);
        },
      });

      await bus.publish('rs.a', { n: 1 });
      await firstStarted.promise;
      const how = dropConnection(bus);
      await waitFor(() => !bus.isHealthy(), 'connection loss noticed', 10_000);

      // Published during the outage: waits for the reconnect instead of failing.
      expect(bus.isHealthy()).toBe(false);
      const outagePublish = bus.publish('rs.a', { n: 2 });
      await waitFor(() => bus.isHealthy(), 'reconnected', 15_000);
      await outagePublish;

      // The broker requeued the unacked message; the new consumer gets it, flagged redelivered.
      await waitFor(() => calls.filter((c) => c.n === 1).length === 2, 'unacked message redelivered', 10_000);
      expect(calls.filter((c) => c.n === 1)[1]).toEqual({ n: 1, redelivered: true, attempt: 1 });
      release.resolve(); // the first handler ends; its ack targets a dead channel and is dropped

      await bus.publish('rs.b', { n: 3 });
      await bus.publish('rs.c', { n: 4 }); // fails once: the retry path works on the new connection
      await waitFor(() => [1, 2, 3, 4].every((n) => done.has(n)), 'all processed', 10_000);
      await sleep(200);
      expect(calls.filter((c) => c.n === 1)).toHaveLength(2);
      expect(calls.filter((c) => c.n === 2)).toHaveLength(1);
      expect(calls.filter((c) => c.n === 4).map((c) => c.attempt)).toEqual([1, 2]);
      expect(await h.admin.depth(q)).toBe(0);
      expect(await h.deadLetters(q)).toEqual([]);
      expect(how).toBe('broker');
    } finally {
      release.resolve(); // never leave a handler blocked (close waits for in-flight handlers)
      await h.cleanup();
    }
  });

  it('redelivers every unacked message of a prefetch window after the drop (none lost)', async () => {
    const h = await makeRabbitHarness(
      { retryDelayMs: 20, maxRetryDelayMs: 100 },
      { reconnectDelayMs: 200, connectionName: uniqueName('polyphony-restart-test') },
    );
    const bus = h.rabbit;
    const gate = deferred();
    try {
      const q = h.queue('window');
      let blocking = true;
      let started = 0;
      const acked = new Set<number>();
      await bus.consume({
        queue: q,
        bindings: ['w.#'],
        schema: z.object({ n: z.number() }),
        prefetch: 3,
        handler: async (p) => {
          if (blocking) {
            started++;
            await gate.promise;
            return; // ack after the drop: lost, so the broker must redeliver
          }
          acked.add(p.n);
        },
      });
      for (let n = 0; n < 8; n++) await bus.publish('w.x', { n });
      await waitFor(() => started === 3, 'prefetch window full');
      dropConnection(bus);
      await waitFor(() => !bus.isHealthy(), 'connection loss noticed', 10_000);
      blocking = false;
      gate.resolve();
      await waitFor(() => acked.size === 8, 'all eight processed after reconnect', 15_000);
      expect([...acked].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      await waitFor(async () => (await h.admin.depth(q)) === 0, 'queue empty');
    } finally {
      gate.resolve();
      await h.cleanup();
    }
  });
});
