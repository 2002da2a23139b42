import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { adminDatabaseUrl, createTestDatabaseFromTemplate, templateDatabaseName, type TestDatabase } from './pg';

/** Database names starting with `prefix` on the test server. */
async function databasesLike(prefix: string): Promise<string[]> {
  const c = new Client({ connectionString: adminDatabaseUrl() });
  await c.connect();
  try {
    return (await c.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname', [prefix])).rows.map((r) => r.datname);
  } finally {
    await c.end();
  }
}

async function dropAll(names: string[]): Promise<void> {
  const c = new Client({ connectionString: adminDatabaseUrl() });
  await c.connect();
  try {
    for (const n of names) await c.query(`DROP DATABASE IF EXISTS "${n}" WITH (FORCE)`);
  } finally {
    await c.end();
  }
}

describe('createTestDatabaseFromTemplate (real PostgreSQL)', () => {
  const key = `pg.int.test ${randomBytes(8).toString('hex')}`;
  const failingKey = `${key} failing`;
  const made: TestDatabase[] = [];
  afterAll(async () => {
    for (const db of made) await db.drop();
    await dropAll([templateDatabaseName(key), templateDatabaseName(failingKey)]);
  });

  it('When several copies are asked for at once, then the template is built once and every copy holds what build wrote', async () => {
    let builds = 0;
    const build = async (url: string) => {
      builds++;
      const c = new Client({ connectionString: url });
      await c.connect();
      try {
        await c.query(`CREATE TABLE template_probe (k text); INSERT INTO template_probe VALUES ('${key}')`);
        await new Promise((r) => setTimeout(r, 300)); // a slow build: the other callers must wait for it
      } finally {
        await c.end();
      }
    };
    const dbs = await Promise.all([0, 1, 2].map(() => createTestDatabaseFromTemplate(key, build)));
    made.push(...dbs);
    expect(builds).toBe(1);
    expect(new Set(dbs.map((d) => d.name)).size).toBe(3);
    for (const db of dbs) expect(await db.query('SELECT k FROM template_probe')).toEqual([{ k: key }]);
    // A copy is a database of its own: writing to one changes neither the template nor the other copies.
    await dbs[0]!.query(`INSERT INTO template_probe VALUES ('only in the first')`);
    const later = await createTestDatabaseFromTemplate(key, build);
    made.push(later);
    expect(builds).toBe(1);
    expect(await later.count('SELECT count(*) FROM template_probe')).toBe(1);
    expect(await dbs[1]!.count('SELECT count(*) FROM template_probe')).toBe(1);
  });

  it('When the build fails, then no template and no half-built database remain, and the next call builds again', async () => {
    await expect(createTestDatabaseFromTemplate(failingKey, async () => Promise.reject(new Error('migration 7 failed')))).rejects.toThrow('migration 7 failed');
    expect(await databasesLike(templateDatabaseName(failingKey))).toEqual([]); // neither the template nor its half-built database
    let built = false;
    const db = await createTestDatabaseFromTemplate(failingKey, async (url) => {
      built = true;
      const c = new Client({ connectionString: url });
      await c.connect();
      await c.query(`CREATE TABLE template_probe (k text)`).finally(() => c.end());
    });
    made.push(db);
    expect(built).toBe(true);
    expect(await db.count('SELECT count(*) FROM template_probe')).toBe(0);
    expect(await databasesLike(templateDatabaseName(failingKey))).toEqual([templateDatabaseName(failingKey)]);
    expect(await databasesLike(`${templateDatabaseName(failingKey)}_b_`)).toEqual([]);
  });
});
