import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '@polyphony/testkit';
import { SchemaBehindError, SettingsStore, assertSchemaCurrent, createServiceDataSource, migrateSchema, queryRows, settingsTableSql } from './db';

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
