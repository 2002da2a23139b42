import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '@polyphony/testkit';
import { runWithContext } from './context';
import { SchemaBehindError, SettingsStore, assertSchemaCurrent, createServiceDataSource, isConnectTimeout, migrateSchema, queryRows, settingsTableSql, waitOutBackgroundConnectTimeouts } from './db';

class First1700000000000 implements MigrationInterface {
  name = 'First1700000000000';
  async up(q: QueryRunner) {
    await q.query(settingsTableSql('demo'));
  }
  async down(q: QueryRunner) {
    await q.query('DROP TABLE demo.settings');
  }
}
class Second1700000000001 implements MigrationInterface {
  name = 'Second1700000000001';
  async up(q: QueryRunner) {
    await q.query('CREATE TABLE demo.things (id int PRIMARY KEY, label text)');
  }
  async down(q: QueryRunner) {
    await q.query('DROP TABLE demo.things');
  }
}

describe('service schemas and migrations (real PostgreSQL)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('When the schema does not exist or is behind, then the service refuses to start; after migrating it starts', async () => {
    const v1 = createServiceDataSource({ url: db.url, schema: 'demo', migrations: [First1700000000000] });
    await v1.initialize();
    await expect(assertSchemaCurrent(v1)).rejects.toBeInstanceOf(SchemaBehindError);
    expect(await migrateSchema(v1)).toEqual(['First1700000000000']);
    await assertSchemaCurrent(v1);
    await v1.destroy();
    const v2 = createServiceDataSource({ url: db.url, schema: 'demo', migrations: [First1700000000000, Second1700000000001] });
    await v2.initialize();
    await expect(assertSchemaCurrent(v2)).rejects.toThrow(/pending migrations/);
    expect(await migrateSchema(v2)).toEqual(['Second1700000000001']);
    expect(await migrateSchema(v2)).toEqual([]);
    // The migrations table lives in the service's own schema.
    const rows = await v2.query(`SELECT name FROM demo.migrations ORDER BY id`);
    expect(rows.map((r: { name: string }) => r.name)).toEqual(['First1700000000000', 'Second1700000000001']);
    await v2.destroy();
  });

  it('When two processes migrate at once, then the advisory lock serialises them and each migration runs once', async () => {
    const a = createServiceDataSource({ url: db.url, schema: 'race', migrations: [] });
    const make = () => createServiceDataSource({ url: db.url, schema: 'race', migrations: [RaceOne1700000000002] });
    const [x, y] = [make(), make()];
    await Promise.all([x.initialize(), y.initialize(), a.initialize()]);
    const applied = await Promise.all([migrateSchema(x), migrateSchema(y)]);
    expect(applied.flat()).toEqual(['RaceOne1700000000002']);
    await Promise.all([x.destroy(), y.destroy(), a.destroy()]);
  });

  it('When settings are seeded twice, then the first value stays (env imported on first start only)', async () => {
    const ds = createServiceDataSource({ url: db.url, schema: 'demo', migrations: [First1700000000000, Second1700000000001] });
    await ds.initialize();
    const store = new SettingsStore(ds, 'demo');
    await store.seedOnce({ A: '1', B: undefined });
    await store.seedOnce({ A: '2', B: '3' });
    expect(await store.all()).toEqual({ A: '1', B: '3' });
    await store.set('A', '9');
    expect(await store.get('A')).toBe('9');
    await ds.query(`INSERT INTO demo.things VALUES (1, 'a'), (2, 'b')`);
    const updated = await queryRows<{ id: number }>(ds, `UPDATE demo.things SET label = 'z' RETURNING id`);
    expect(updated.map((r) => r.id).sort()).toEqual([1, 2]);
    const none = await queryRows(ds, `DELETE FROM demo.things WHERE id = 99 RETURNING id`);
    expect(none).toEqual([]);
    await ds.destroy();
  });
});

class RaceOne1700000000002 implements MigrationInterface {
  name = 'RaceOne1700000000002';
  async up(q: QueryRunner) {
    await q.query('CREATE TABLE race.once (id int PRIMARY KEY)');
  }
  async down(q: QueryRunner) {
    await q.query('DROP TABLE race.once');
  }
}

/**
 * Replica recovery (issue 36): an index replica restarted on a loaded machine never finished loading its generation,
 * logging database connection time-outs. Cause: pg-pool's connect time-out is a timer, so it also fires when the
 * process's OWN event loop was blocked (a synchronous step of the load, stretched by a starved CPU) and destroys a
 * connection PostgreSQL had accepted. Background work now tries such a connect again; a waiting request connects once
 * more when its own loop was busy for most of the wait, and otherwise keeps its time-out (503 + Retry-After).
 */
describe('connect time-outs while the event loop is blocked (real PostgreSQL)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });
  const warnings: string[] = [];
  const logger = { warn: (msg: string) => void warnings.push(msg) };
  /** A query that needs a NEW connection (the one idle connection is held), issued just before the loop blocks for `blockMs`. */
  async function queryDuringStall(guarded: boolean, inRequest: boolean, blockMs = 700): Promise<string> {
    const ds = createServiceDataSource({ url: db.url, schema: 'public', migrations: [], poolSize: 3, connectTimeoutMs: 250 });
    await ds.initialize();
    if (guarded) waitOutBackgroundConnectTimeouts(ds, logger);
    const held = ds.createQueryRunner();
    await held.connect();
    try {
      const issue = () => ds.query('SELECT 42 AS answer').then((rows: Array<{ answer: number }>) => `answer ${rows[0]!.answer}`, (err: Error) => `error: ${err.message}`);
      const pending = inRequest ? runWithContext({ requestId: 'r', awaitingAnswer: () => true }, issue) : issue();
      // A synchronous step longer than the connect time-out (at load 30 a 50 ms step takes this long).
      const until = Date.now() + blockMs;
      while (Date.now() < until) {
        /* the loop is blocked */
      }
      return await pending;
    } finally {
      await held.release();
      await ds.destroy();
    }
  }

  it('When a connect of background work times out only because the event loop was blocked, then without the guard it fails (the cause) and with it the query answers', async () => {
    const unguarded = await queryDuringStall(false, false);
    expect(unguarded).toMatch(/^error: /);
    expect(isConnectTimeout(new Error(unguarded.slice('error: '.length)))).toBe(true);
    warnings.length = 0;
    expect(await queryDuringStall(true, false)).toBe('answer 42');
    expect(warnings[0]).toContain('database connect timed out in background work');
  });

  it('When the pool stays full longer than the connect time-out, then background work waits for a free connection', async () => {
    const ds = createServiceDataSource({ url: db.url, schema: 'public', migrations: [], poolSize: 1, connectTimeoutMs: 200 });
    await ds.initialize();
    waitOutBackgroundConnectTimeouts(ds, logger);
    const held = ds.createQueryRunner();
    await held.connect();
    const pending = ds.query('SELECT 7 AS n');
    setTimeout(() => void held.release(), 600);
    await expect(pending).resolves.toEqual([{ n: 7 }]);
    await ds.destroy();
  });

  it('When a waiting request connects while the loop is blocked, then without the guard it times out (the 503s of the UI suite) and with it it connects once more and answers', async () => {
    const unguarded = await queryDuringStall(false, true);
    expect(unguarded).toMatch(/^error: /);
    expect(isConnectTimeout(new Error(unguarded.slice('error: '.length)))).toBe(true);
    // That time-out blamed the busy loop, not the database: the breaker stayed closed (else the next request would be
    // refused at once with 'database unresponsive').
    warnings.length = 0;
    expect(await queryDuringStall(true, true)).toBe('answer 42');
    expect(warnings).toEqual(['database connect of a request timed out while this process was busy (event loop); trying once more']);
  });

  it('When a waiting request finds the pool full while the loop is idle, then it keeps its time-out (answered 503 + Retry-After upstream) without a second attempt', async () => {
    const ds = createServiceDataSource({ url: db.url, schema: 'public', migrations: [], poolSize: 1, connectTimeoutMs: 300 });
    await ds.initialize();
    waitOutBackgroundConnectTimeouts(ds, logger);
    const held = ds.createQueryRunner();
    await held.connect();
    warnings.length = 0;
    try {
      const t0 = Date.now();
      const r = await runWithContext({ requestId: 'r', awaitingAnswer: () => true }, () => ds.query('SELECT 1').then(() => 'answered', (err: Error) => `error: ${err.message}`));
      const waited = Date.now() - t0;
      expect(r).toMatch(/^error: /);
      expect(isConnectTimeout(new Error(r.slice('error: '.length)))).toBe(true);
      // One time-out (300 ms), not two: the idle loop does not earn a second attempt.
      expect(waited).toBeLessThan(600);
      expect(warnings).toEqual([]);
    } finally {
      await held.release();
      await ds.destroy();
    }
  });
});
