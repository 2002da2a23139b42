import { createTestDatabase, type TestDatabase } from '@polyphony/testkit';
import type { DataSource } from 'typeorm';
import { createServiceDataSource } from '../db';
import { createLogger } from '../logger';
import { LeaseLostError, TASK_RUN_COLUMNS_SQL, TaskRunHost, TaskRunStore, pluginStatus, taskRunIndexesSql, toTaskEvent, type LeaseKeeper, type TaskRun } from '.';

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
    await ds.query(`CREATE TABLE tr.runs (${TASK_RUN_COLUMNS_SQL})`);
    for (const sql of taskRunIndexesSql('tr', 'runs')) await ds.query(sql);
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

  it('When the host coordinating a run stops (SIGTERM), then it releases the lease and another host resumes the run at once', async () => {
    const seen: Array<{ host: string; generation: number }> = [];
    const execute = (name: string) => async (run: TaskRun, keeper: LeaseKeeper, stop: AbortSignal) => {
      seen.push({ host: name, generation: keeper.lease.generation });
      if (name === 'a') {
        await new Promise<void>((r) => stop.addEventListener('abort', () => r(), { once: true }));
        return;
      }
      await store.finish(keeper.lease, 'SUCCESS', { message: `finished by ${name}`, progress: 100, servers: run.servers });
    };
    const a = new TaskRunHost(store, 'a', execute('a'), logger, { ttlMs: 60_000, scanMs: 50 });
    const b = new TaskRunHost(store, 'b', execute('b'), logger, { ttlMs: 60_000, scanMs: 50 });
    const run = await a.startNew();
    b.startScanning();
    await new Promise((r) => setTimeout(r, 150));
    expect((await store.find(run.id))?.state).toBe('NEW'); // b does not steal a live lease
    const t0 = Date.now();
    await a.stop();
    const until = Date.now() + 5000;
    while ((await store.find(run.id))?.state !== 'SUCCESS' && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    const end = await store.find(run.id);
    expect(end).toMatchObject({ state: 'SUCCESS', message: 'finished by b' });
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(seen).toEqual([{ host: 'a', generation: 1 }, { host: 'b', generation: 2 }]);
    await b.stop();
  });
});
