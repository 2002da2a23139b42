import type { DataSource } from 'typeorm';
import { createLogger, createServiceDataSource, migrateSchema } from '@polyphony/platform';
import { createTestDatabase, type TestDatabase } from '@polyphony/testkit';
import type { ScheduleKind } from '@polyphony/contracts';
import { ScheduleService } from '../src/domain/schedule.service';
import { registryMigrations } from '../src/store/migrations';
import { PgScheduleRepository } from '../src/store/schedule.repository';

/**
 * The scheduler on real PostgreSQL: several replicas (each its own connection pool and
 * ScheduleService) tick at the same instants; each due time must start exactly one task.
 */
describe('scheduler (real PostgreSQL, several replicas)', () => {
  let db: TestDatabase;
  const pools: DataSource[] = [];
  const logger = createLogger({ service: 'test', level: 'error' });

  beforeAll(async () => {
    db = await createTestDatabase();
    for (let i = 0; i < 3; i++) {
      const ds = createServiceDataSource({ url: db.url, schema: 'registry', migrations: registryMigrations });
      await ds.initialize();
      pools.push(ds);
    }
    await pools[0]!.query('CREATE SCHEMA IF NOT EXISTS registry');
    await migrateSchema(pools[0]!);
  });
  afterAll(async () => {
    for (const ds of pools) await ds.destroy();
    await db?.drop();
  });
  beforeEach(async () => {
    await db.query('DELETE FROM registry.schedules');
  });

  /** Replicas sharing one clock; each records the tasks it started. */
  function replicas(now: { t: Date }, busy = false) {
    const started: Array<{ replica: number; kind: ScheduleKind }> = [];
    const services = pools.map(
      (ds, i) =>
        new ScheduleService(
          new PgScheduleRepository(ds),
          async (kind) => {
            started.push({ replica: i, kind });
            return `task-${started.length}`;
          },
          async () => busy,
          logger,
          () => now.t,
        ),
    );
    return { services, started };
  }

  it('When three replicas tick together over twenty due times of a seconds schedule, then each due time starts exactly one task', async () => {
    const now = { t: new Date('2026-01-01T00:00:00.500Z') };
    const { services, started } = replicas(now);
    const created = await services[0]!.create({ name: 'every 2 s', kind: 'index_rebuild', cron: '*/2 * * * * *', timezone: 'UTC', enabled: true, params: {} });
    expect(created.next_run_at).toBe('2026-01-01T00:00:02.000Z');
    for (let step = 0; step < 40; step++) {
      now.t = new Date(now.t.getTime() + 1000);
      await Promise.all(services.map((s) => s.tick()));
    }
    // Due at 2, 4, ..., 40 s: 20 firings in 40 s, whichever replica claimed each.
    expect(started).toHaveLength(20);
    const runs = await db.query(`SELECT due_at, outcome FROM registry.schedule_runs ORDER BY due_at`);
    expect(runs).toHaveLength(20);
    expect(new Set(runs.map((r: { due_at: Date }) => r.due_at.toISOString())).size).toBe(20);
    expect(runs.every((r: { outcome: string }) => r.outcome === 'started')).toBe(true);
    const [row] = await services[1]!.list();
    expect(row!.last_result).toBe('started');
    expect(row!.history.length).toBe(10);
    expect(row!.next_run_at).toBe('2026-01-01T00:00:42.000Z');
  });

  it('When the service was down for a day, then the missed schedule fires once at start-up, not once per missed time', async () => {
    const now = { t: new Date('2026-01-01T00:00:00Z') };
    const { services, started } = replicas(now);
    await services[0]!.create({ name: 'hourly', kind: 'analysis', cron: '0 * * * *', timezone: 'Europe/Berlin', enabled: true, params: {} });
    now.t = new Date('2026-01-02T00:30:00Z');
    await Promise.all(services.map((s) => s.tick()));
    await Promise.all(services.map((s) => s.tick()));
    expect(started).toHaveLength(1);
    const [row] = await services[0]!.list();
    expect(row!.next_run_at).toBe('2026-01-02T01:00:00.000Z');
  });

  it('When a task of the kind is running, then the firing is recorded as skipped: busy and nothing starts', async () => {
    const now = { t: new Date('2026-01-01T00:00:00Z') };
    const { services, started } = replicas(now, true);
    await services[0]!.create({ name: 'nightly analysis', kind: 'analysis', cron: '0 3 * * *', timezone: 'UTC', enabled: true, params: {} });
    now.t = new Date('2026-01-01T03:00:00Z');
    const out = await services[0]!.tick();
    expect(out).toEqual([expect.objectContaining({ outcome: 'skipped: busy', taskId: null })]);
    expect(started).toHaveLength(0);
    const [row] = await services[0]!.list();
    expect(row!.last_result).toBe('skipped: busy');
    expect(row!.history[0]).toMatchObject({ outcome: 'skipped: busy' });
  });

  it('When a disabled schedule is due, then it never fires', async () => {
    const now = { t: new Date('2026-01-01T00:00:00Z') };
    const { services, started } = replicas(now);
    const s = await services[0]!.create({ name: 'off', kind: 'cleaning', cron: '* * * * *', timezone: 'UTC', enabled: false, params: {} });
    expect(s.next_run_at).toBeNull();
    now.t = new Date('2026-01-01T01:00:00Z');
    await services[0]!.tick();
    expect(started).toHaveLength(0);
  });

  it('When three replicas start together on an install whose CLEANING_SCHEDULE_HOURS is 6, then one "Cleaning" schedule every 6 h replaces it, the old key is gone, and a deleted one is never created again', async () => {
    await db.query(`DELETE FROM registry.settings WHERE key = 'default_schedules_seeded'`);
    await db.query(`INSERT INTO registry.app_config (key, value, source) VALUES ('CLEANING_SCHEDULE_HOURS', '6', 'database') ON CONFLICT (key) DO UPDATE SET value = '6'`);
    const now = { t: new Date('2026-01-01T00:00:00Z') };
    const { services, started } = replicas(now);
    const seeded = await Promise.all(services.map((s) => s.seedDefaults('Europe/Berlin')));
    expect(seeded.map((x) => x.length).sort()).toEqual([0, 0, 1]);
    const [row, ...more] = await services[0]!.list();
    expect(more).toEqual([]);
    expect(row).toMatchObject({ name: 'Cleaning', kind: 'cleaning', cron: '30 */6 * * *', timezone: 'Europe/Berlin', enabled: true, next_run_at: '2026-01-01T05:30:00.000Z' });
    expect(await db.query(`SELECT * FROM registry.app_config WHERE key = 'CLEANING_SCHEDULE_HOURS'`)).toEqual([]);

    // It fires through the one scheduler like any schedule.
    now.t = new Date('2026-01-01T05:30:00Z');
    await Promise.all(services.map((s) => s.tick()));
    expect(started).toEqual([expect.objectContaining({ kind: 'cleaning' })]);

    // The admin deletes it: later starts (any replica) leave it deleted.
    await services[0]!.remove(row!.id);
    expect(await services[1]!.seedDefaults('UTC')).toEqual([]);
    expect(await services[0]!.list()).toEqual([]);
  });

  it('When the old setting was 0 (switched off), then the built-in schedule is created disabled, daily at 03:30 once switched on', async () => {
    await db.query(`DELETE FROM registry.settings WHERE key = 'default_schedules_seeded'`);
    await db.query(`INSERT INTO registry.app_config (key, value, source) VALUES ('CLEANING_SCHEDULE_HOURS', '0', 'env') ON CONFLICT (key) DO UPDATE SET value = '0'`);
    const { services } = replicas({ t: new Date('2026-01-01T00:00:00Z') });
    const [created] = await services[0]!.seedDefaults('UTC');
    expect(created).toMatchObject({ name: 'Cleaning', cron: '30 3 * * *', enabled: false, next_run_at: null });
  });
});
