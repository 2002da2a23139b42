import { InMemoryBus, PermanentMessageError } from './bus';
import { BUS_DEFAULTS, attemptBudget, resolveRetry } from './bus/common';
import { UpstreamUnavailableError, ValidationError } from './errors';
import { TransientError, classifyFault, jitteredBackoffMs, withTransientRetry } from './faults';
import { z } from 'zod';

describe('fault classification', () => {
  it('When errors come from lost connections, peers answering 5xx or timeouts, then they are transient', () => {
    expect(classifyFault(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).toBe('transient');
    expect(classifyFault(new Error('Connection terminated unexpectedly'))).toBe('transient');
    expect(classifyFault(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))).toBe('transient');
    expect(classifyFault({ name: 'QueryFailedError', message: 'x', driverError: { code: '08006' } })).toBe('transient');
    expect(classifyFault(new UpstreamUnavailableError('catalogue down'))).toBe('transient');
    expect(classifyFault(Object.assign(new Error('bad gateway'), { httpStatus: 502 }))).toBe('transient');
    expect(classifyFault(Object.assign(new Error('x'), { name: 'TimeoutError' }))).toBe('transient');
    expect(classifyFault(new Error('outer', { cause: Object.assign(new Error('inner'), { code: 'ECONNRESET' }) }))).toBe('transient');
    class BusyElsewhere extends TransientError {
      override name = 'BusyElsewhere';
    }
    expect(classifyFault(new BusyElsewhere('held by another attempt'))).toBe('transient');
  });

  it('When errors are bad input, undecodable files or constraint violations, then they are permanent; anything else is unknown', () => {
    expect(classifyFault(new ValidationError('bad'))).toBe('permanent');
    expect(classifyFault(new PermanentMessageError('poison'))).toBe('permanent');
    expect(classifyFault(Object.assign(new Error('x'), { name: 'UndecodableAudioError' }))).toBe('permanent');
    expect(classifyFault(Object.assign(new Error('dup'), { code: '23505' }))).toBe('permanent');
    expect(classifyFault(Object.assign(new Error('nf'), { httpStatus: 404 }))).toBe('permanent');
    expect(classifyFault(new TypeError('undefined is not a function'))).toBe('unknown');
  });

  it('When a call fails transiently then succeeds, then withTransientRetry returns its result; a permanent error is thrown at once', async () => {
    let n = 0;
    const ok = await withTransientRetry(async () => {
      if (++n < 3) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
      return 'done';
    }, { initialDelayMs: 1, maxDelayMs: 2 });
    expect([ok, n]).toEqual(['done', 3]);
    let m = 0;
    await expect(withTransientRetry(async () => {
      m++;
      throw new ValidationError('no');
    }, { initialDelayMs: 1 })).rejects.toThrow('no');
    expect(m).toBe(1);
    let k = 0;
    await expect(withTransientRetry(async () => {
      k++;
      throw new UpstreamUnavailableError('down');
    }, { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 1 })).rejects.toThrow('down');
    expect(k).toBe(3);
  });

  it('When backoff is jittered, then each delay lies in [d/2, d] of the capped exponential', () => {
    expect(jitteredBackoffMs(1, 1000, 60_000, () => 0)).toBe(500);
    expect(jitteredBackoffMs(3, 1000, 60_000, () => 1)).toBe(4000);
    expect(jitteredBackoffMs(20, 1000, 60_000, () => 1)).toBe(60_000);
  });

  it('When a failure is transient, then the bus allows the larger attempt budget', () => {
    const r = resolveRetry({}, { maxAttempts: 4 });
    expect(attemptBudget(new UpstreamUnavailableError('x'), r)).toEqual({ limit: BUS_DEFAULTS.transientMaxAttempts, transient: true });
    // Transient faults are never dead-lettered by default: the budget is unbounded.
    expect(BUS_DEFAULTS.transientMaxAttempts).toBe(Number.POSITIVE_INFINITY);
    expect(attemptBudget(new TypeError('bug'), r)).toEqual({ limit: 4, transient: false });
  });
});

describe('dead letters on the in-process bus', () => {
  it('When transient failures outlast every attempt budget (30 > the 18 once allowed), then the message is retried, not dead-lettered; a poison one is, and replay hands it back once', async () => {
    const bus = new InMemoryBus({ retryDelayMs: 1, maxRetryDelayMs: 2 });
    const handled: string[] = [];
    let dbDown = 30;
    let poisonFixed = false;
    await bus.consume({
      queue: 'q',
      bindings: ['k'],
      schema: z.object({ id: z.string() }),
      maxAttempts: 2,
      handler: async (m) => {
        if (m.id === 'transient' && dbDown-- > 0) throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
        if (m.id === 'poison' && !poisonFixed) throw new PermanentMessageError('bad input');
        handled.push(m.id);
      },
    });
    await bus.publish('k', { id: 'transient' });
    await bus.publish('k', { id: 'poison' });
    const until = Date.now() + 5000;
    while (handled.length < 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    expect(handled).toEqual(['transient']);
    const dead = await bus.listDeadLetters('q', 10);
    expect(dead.map((d) => [d.payload, d.error])).toEqual([[{ id: 'poison' }, 'PermanentMessageError: bad input']]);
    poisonFixed = true;
    expect(await bus.replayDeadLetters('q', 10)).toBe(1);
    while (handled.length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    expect(handled).toEqual(['transient', 'poison']);
    expect(await bus.listDeadLetters('q', 10)).toEqual([]);
    await bus.close();
  });
});
