import { createTestDatabase, type TestDatabase } from '@polyphony/testkit';
import type { DataSource } from 'typeorm';
import { createServiceDataSource } from '../db';
import { createLogger } from '../logger';
import type { Bus } from '../bus';
import { LeaseLostError, TaskHost, TaskRunStore, createTaskRunTableSql, pluginStatus, toTaskEvent, type TaskContext, type TaskExecutor } from '.';
import type { TaskUpdatedEvent } from '@polyphony/contracts';

describe('platform task runs (PostgreSQL)', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let store: TaskRunStore;
  const logger = createLogger({ service: 'test', level: 'error' });

  beforeAll(async () => {
    db = await createTestDatabase('taskrun');
    ds = createServiceDataSource({ url: db.url, schema: 'tr', migrations: [] });
    await ds.initialize();
    await ds.query('CREATE SCHEMA tr');
    for (const sql of createTaskRunTableSql('tr', 'runs')) await ds.query(sql);
    store = new TaskRunStore(ds, 'tr', 'runs', 'busy');
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });
  beforeEach(async () => {
    await ds.query('DELETE FROM tr.runs');
  });

  it('When a lease expires and another replica takes the run over, then the old holder is fenced out and the new one finishes it', async () => {
    const { run, lease } = await store.create('one', 2000);
    await expect(store.create('two')).rejects.toMatchObject({ httpStatus: 409, code: 'task_already_running' });
    await store.save(lease, { message: 'half', progress: 50, servers: [] });
    expect(await store.claimExpired('two', 10_000)).toBeUndefined();
    await new Promise((r) => setTimeout(r, 2100));
    const taken = await store.claimExpired('two', 10_000);
    expect(taken?.lease).toEqual({ runId: run.id, owner: 'two', generation: lease.generation + 1 });
    await expect(store.save(lease, { message: 'stale writer', progress: 60, servers: [] })).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.renew(lease)).rejects.toBeInstanceOf(LeaseLostError);
    const done = await store.finish(taken!.lease, 'SUCCESS', { message: 'ok', progress: 100, servers: [] });
    expect(done).toMatchObject({ state: 'SUCCESS', message: 'ok', progress: 100 });
    expect(pluginStatus(done.state)).toBe('SUCCESS');
    expect(toTaskEvent(done, 'analysis', 'analysis')).toMatchObject({ taskId: run.id, state: 'SUCCESS', seq: done.seq });
    // A new run can start once the previous one ended.
    await expect(store.create('three')).resolves.toMatchObject({ run: { state: 'NEW' } });
  });

  it('When a run is cancelled while its coordinator is stuck, then it ends REVOKED at once and the coordinator can no longer write', async () => {
    const { run, lease } = await store.create('one', 60_000);
    const cancelled = await store.cancel(run.id);
    expect(cancelled).toMatchObject({ state: 'REVOKED', cancelRequested: true });
    expect(pluginStatus('REVOKED')).toBe('REVOKED');
    await expect(store.save(lease, { message: 'late', progress: 70, servers: [] })).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.finish(lease, 'SUCCESS', { message: 'late', progress: 100, servers: [] })).rejects.toBeInstanceOf(LeaseLostError);
    expect(await store.cancel(run.id)).toBeUndefined();
    expect((await store.find(run.id))?.state).toBe('REVOKED');
  });

  describe('TaskHost with an executor', () => {
    /** A run of `items` items done one per step; the items done are durable in `details.done`. */
    const counting = (name: string, log: string[], opts: { blockAt?: number } = {}): TaskExecutor<{ done: number; items: number }> => ({
      async start(ctx: TaskContext) {
        log.push(`${name} start ${ctx.resumed ? 'resumed' : 'new'} at ${Number(ctx.run.details.done ?? 0)}`);
        return { done: Number(ctx.run.details.done ?? 0), items: Number(ctx.run.details.items) };
      },
      async step(work, ctx) {
        // An abort can land between the host's stop check and this step: check it before waiting for one.
        if (work.done === opts.blockAt && !ctx.signal.aborted) await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => r(), { once: true }));
        if (ctx.signal.aborted) return undefined;
        work.done++;
        await ctx.report({ message: `${work.done}/${work.items}`, progress: (100 * work.done) / work.items, details: { done: work.done } });
        return work.done === work.items ? { state: 'SUCCESS', message: `${name} did ${work.items}` } : undefined;
      },
      async cancel(work) {
        log.push(`${name} cancelled at ${work.done}`);
      },
    });
    const events: TaskUpdatedEvent[] = [];
    /** The board's side of the bus: every published event, in order. */
    const bus = { publish: async (_key: string, e: unknown) => void events.push(e as TaskUpdatedEvent) } as unknown as Bus;
    beforeEach(() => {
      events.length = 0;
    });
    const board = () => ({ bus, type: 'analysis' as const, owner: 'analysis' as const });

    it('When a run is started, then the host drives its steps, publishes every write from the row and writes the end', async () => {
      const log: string[] = [];
      const host = new TaskHost(store, 'a', counting('a', log), logger, board(), { ttlMs: 60_000 });
      const run = await host.start({ items: 3 });
      await host.idle();
      const end = await store.find(run.id);
      expect(end).toMatchObject({ state: 'SUCCESS', message: 'a did 3', progress: 100, details: { items: 3, done: 3 } });
      expect(events.map((e) => [e.state, e.message, e.seq])).toEqual([['NEW', 'Queued', 0], ['RUNNING', '1/3', 1], ['RUNNING', '2/3', 2], ['RUNNING', '3/3', 3], ['SUCCESS', 'a did 3', 4]]);
      expect(log).toEqual(['a start new at 0']);
    });

    it('When the coordinating host stops mid-run, then another host resumes from the durable results and finishes it', async () => {
      const log: string[] = [];
      const a = new TaskHost(store, 'a', counting('a', log, { blockAt: 2 }), logger, board(), { ttlMs: 60_000, scanMs: 50 });
      const b = new TaskHost(store, 'b', counting('b', log), logger, board(), { ttlMs: 60_000, scanMs: 50 });
      const run = await a.start({ items: 4 });
      while ((await store.find(run.id))?.details.done !== 2) await new Promise((r) => setTimeout(r, 20));
      await a.stop();
      b.startScanning();
      const until = Date.now() + 5000;
      while ((await store.find(run.id))?.state !== 'SUCCESS' && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      await b.stop();
      expect(await store.find(run.id)).toMatchObject({ state: 'SUCCESS', message: 'b did 4', leaseGeneration: 2 });
      expect(log).toEqual(['a start new at 0', 'b start resumed at 2']);
      expect((await store.find(run.id))?.log.some((l) => l.includes('resumed by b (lease generation 2)'))).toBe(true);
    });

    it('When a run is cancelled, then it ends REVOKED, its executor is told and no end is written', async () => {
      const log: string[] = [];
      const host = new TaskHost(store, 'a', counting('a', log, { blockAt: 1 }), logger, board(), { ttlMs: 60_000 });
      const run = await host.start({ items: 3 });
      while ((await store.find(run.id))?.details.done !== 1) await new Promise((r) => setTimeout(r, 20));
      expect((await host.cancel(run.id))?.state).toBe('REVOKED');
      await host.idle();
      expect(await store.find(run.id)).toMatchObject({ state: 'REVOKED', details: { done: 1 } });
      expect(log).toEqual(['a start new at 0', 'a cancelled at 1']);
      expect(events.at(-1)).toMatchObject({ taskId: run.id, state: 'REVOKED' });
      expect(await host.cancel(run.id)).toBeUndefined();
    });

    it('When stop() runs while a claim is in flight, then the claimed run is not coordinated here and its lease is handed back at once', async () => {
      const log: string[] = [];
      // A run whose coordinator handed its lease back: any host may take it over.
      const { run, lease } = await store.create('gone', 60_000, undefined, { items: 2 });
      await store.release(lease);
      // The claim of host a waits (a slow database) until the host is stopping.
      let claimStarted!: () => void;
      const started = new Promise<void>((r) => (claimStarted = r));
      let openGate!: () => void;
      const gate = new Promise<void>((r) => (openGate = r));
      const slow = Object.create(store) as TaskRunStore;
      slow.claim = async (owner, ttlMs) => {
        claimStarted();
        await gate;
        return store.claim(owner, ttlMs);
      };
      const a = new TaskHost(slow, 'a', counting('a', log), logger, board(), { ttlMs: 60_000, scanMs: 60_000 });
      const kicked = a.kick();
      await started;
      const stopping = a.stop();
      openGate();
      await Promise.all([kicked, stopping]);
      // Host a never started the run, and another host takes it over at once (no wait for the 60 s lease).
      expect(log).toEqual([]);
      expect(a.active).toEqual([]);
      const taken = await store.claim('b', 60_000);
      expect(taken?.run.id).toBe(run.id);
      expect(taken?.lease.generation).toBe(3);
    });

    // The second case is what a loaded CI machine did: the lease hand-back landed after the backoff had run out.
    it.each([
      ['the lease is handed back and the host resumes the run after its backoff', 0],
      ['handing the lease back takes longer than the backoff and the host still resumes the run (no wait for the scan)', 400],
      ['the backoff timer fires before the wall clock reaches the end of the pause (a timer may fire a millisecond early) and the host still resumes the run', -1],
    ])('When a step hits a transient fault, then %s', async (_name, releaseDelayMs) => {
      const log: string[] = [];
      const executor = counting('a', log);
      const step = executor.step.bind(executor);
      let failed = false;
      executor.step = async (work, ctx) => {
        if (work.done === 1 && !failed) {
          failed = true;
          throw Object.assign(new Error('connection terminated unexpectedly'), { code: 'ECONNRESET' });
        }
        return step(work, ctx);
      };
      const release = store.release.bind(store);
      const slow = Object.create(store) as TaskRunStore;
      // -1: from the first clock reading after the hand-back (the pause's end is computed from it), the wall clock
      // reads 5 ms behind, so the backoff timer fires while Date.now() is still before the pause's end.
      const realNow = Date.now.bind(Date);
      let lag = 0;
      let armed = false;
      const clock =
        releaseDelayMs < 0
          ? jest.spyOn(Date, 'now').mockImplementation(() => {
              const now = realNow() - lag;
              if (armed) [armed, lag] = [false, 5];
              return now;
            })
          : undefined;
      slow.release = async (lease) => {
        await new Promise((r) => setTimeout(r, Math.max(0, releaseDelayMs)));
        const out = await release(lease);
        armed = releaseDelayMs < 0;
        return out;
      };
      const host = new TaskHost(slow, 'a', executor, logger, board(), { ttlMs: 60_000, scanMs: 60_000, transientBackoff: { baseMs: 100, maxMs: 200 } });
      const run = await host.start({ items: 2 });
      const until = Date.now() + 5000;
      while ((await store.find(run.id))?.state !== 'SUCCESS' && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      await host.stop();
      clock?.mockRestore();
      expect(await store.find(run.id)).toMatchObject({ state: 'SUCCESS', leaseGeneration: 2 });
      expect(log).toEqual(['a start new at 0', 'a start resumed at 1']);
    });
  });
});
