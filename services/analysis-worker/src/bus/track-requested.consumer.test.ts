/**
 * The analysis consumer's end of a long outage (in-process bus, fake processor): transient failures are
 * retried by the bus without limit; after TRACK_TRANSIENT_MAX_ATTEMPTS the track is recorded as failed (the
 * run ends, the next run retries it); while even that record fails transiently, the message keeps coming
 * back and is never dead-lettered.
 */
import { RoutingKeys } from '@polyphony/contracts';
import { InMemoryBus, Metrics } from '@polyphony/platform';
import { TrackBusyError, type TrackProcessor } from '../domain/track-processor';
import { TRACK_QUEUE, TRACK_TRANSIENT_MAX_ATTEMPTS, consumeTrackRequests } from './track-requested.consumer';

const refused = (): Error => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
const msg = { taskId: 't1', serverId: 's1', track: { id: 'p1', title: 'Song', artist: 'Artist' } };

async function until(cond: () => boolean, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('analysis track consumer under a long transient outage', () => {
  it('When the media server stays unreachable past the transient budget, then the track is recorded failed once and nothing is dead-lettered', async () => {
    const bus = new InMemoryBus({ retryDelayMs: 1, maxRetryDelayMs: 2 });
    const finals: boolean[] = [];
    const recorded: string[] = [];
    const processor = {
      process: async (_m: unknown, finalAttempt: boolean) => {
        finals.push(finalAttempt);
        throw refused();
      },
      recordFailure: async (_m: unknown, reason: string) => {
        recorded.push(reason);
      },
    } as unknown as TrackProcessor;
    await consumeTrackRequests(bus, processor, 1, new Metrics('analysis-worker-test'));
    // Start one delivery before the budget so the test sees the bus's own retry reach the last attempt.
    await bus.publish(RoutingKeys.analysisTrackRequested, msg, { headers: { attempt: TRACK_TRANSIENT_MAX_ATTEMPTS - 1 } });
    await until(() => recorded.length === 1, 'the recorded failure');
    await new Promise((r) => setTimeout(r, 100));
    expect(recorded).toEqual([expect.stringMatching(new RegExp(`^gave up after ${TRACK_TRANSIENT_MAX_ATTEMPTS} attempts: connect ECONNREFUSED`))]);
    // Every in-place retry of delivery 17 asks for no final attempt, every one of delivery 18 does (same count each).
    const perDelivery = finals.length / 2;
    expect(perDelivery).toBeGreaterThanOrEqual(1);
    expect(finals).toEqual([...Array(perDelivery).fill(false), ...Array(perDelivery).fill(true)]);
    expect(await bus.listDeadLetters(TRACK_QUEUE, 10)).toEqual([]);
    await bus.close();
  });

  it('When the failure cannot be recorded because the database is down, then the message comes back until it can, never dead-lettered', async () => {
    const bus = new InMemoryBus({ retryDelayMs: 1, maxRetryDelayMs: 2 });
    let dbDownFor = 4;
    const recordCalls: number[] = [];
    const processor = {
      process: async () => {
        throw refused();
      },
      recordFailure: async () => {
        recordCalls.push(Date.now());
        if (dbDownFor-- > 0) throw refused();
      },
    } as unknown as TrackProcessor;
    await consumeTrackRequests(bus, processor, 1, new Metrics('analysis-worker-test'));
    await bus.publish(RoutingKeys.analysisTrackRequested, msg, { headers: { attempt: TRACK_TRANSIENT_MAX_ATTEMPTS } });
    await until(() => recordCalls.length === 5, 'the fifth record attempt');
    await new Promise((r) => setTimeout(r, 100));
    expect(recordCalls).toHaveLength(5);
    expect(await bus.listDeadLetters(TRACK_QUEUE, 10)).toEqual([]);
    expect(await bus.queueDepth(TRACK_QUEUE)).toBe(0);
    await bus.close();
  });

  it('When the track stays busy with a live holder past the transient budget, then no failure is recorded over it and the message waits for the holder', async () => {
    const bus = new InMemoryBus({ retryDelayMs: 1, maxRetryDelayMs: 2 });
    let busyFor = 6;
    const recorded: string[] = [];
    let done = 0;
    const processor = {
      process: async () => {
        if (busyFor-- > 0) throw new TrackBusyError('p1', new Date(Date.now() + 20_000));
        done++;
        return { outcome: 'analyzed', duplicate: true };
      },
      recordFailure: async (_m: unknown, reason: string) => {
        recorded.push(reason);
      },
    } as unknown as TrackProcessor;
    await consumeTrackRequests(bus, processor, 1, new Metrics('analysis-worker-test'));
    await bus.publish(RoutingKeys.analysisTrackRequested, msg, { headers: { attempt: TRACK_TRANSIENT_MAX_ATTEMPTS } });
    await until(() => done === 1, 'the holder to finish');
    await new Promise((r) => setTimeout(r, 100));
    expect(recorded).toEqual([]);
    expect(await bus.listDeadLetters(TRACK_QUEUE, 10)).toEqual([]);
    await bus.close();
  });
});
