/**
 * Issue 36 "resource exhaustion: PostgreSQL's disk full". A private PostgreSQL whose data directory is on a real
 * 64 MiB tmpfs (mounted by the test; needs root, skipped with a message otherwise) and whose write-ahead log is on
 * another filesystem, as a server with its WAL on its own volume. The tmpfs is filled with a file (`fallocate`)
 * until inserts fail, then the file is removed (the space is back):
 * - a write during the full disk answers 503 `database_disk_full` with `Retry-After` (never a 500) and logs an
 *   error telling the operator to free space; reads still answer 200;
 * - rows written before are all there; once space is back the same write answers 201 with no restart.
 * With the WAL on the full volume PostgreSQL itself PANICs and shuts down (see docs/operations.md): polyphony then
 * sees a database outage (db-outage.int.test.ts).
 */
import { execFileSync } from 'node:child_process';
import { rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import express from 'express';
import request from 'supertest';
import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { mountTmpfs, PrivatePostgres, unmountTmpfs } from '@polyphony/testkit';
import { createServiceDataSource, migrateSchema } from './db';
import { classifyFault } from './faults';
import { asyncRoute, errorHandler } from './http';
import { createLogger } from './logger';

class Things1700000000000 implements MigrationInterface {
  name = 'Things1700000000000';
  async up(q: QueryRunner) {
    await q.query('CREATE TABLE full_demo.things (id serial PRIMARY KEY, body text NOT NULL)');
  }
  async down(q: QueryRunner) {
    await q.query('DROP TABLE full_demo.things');
  }
}

describe('PostgreSQL disk full (a real small tmpfs)', () => {
  jest.setTimeout(180_000);
  let mount: string | undefined;
  let pg: PrivatePostgres;
  let ds: DataSource;
  const errors: Array<{ message: string; meta: Record<string, unknown> }> = [];
  let app: express.Express;

  beforeAll(async () => {
    mount = mountTmpfs('64m', 'disk-full test');
    if (!mount) return;
    pg = await PrivatePostgres.start({ parentDir: mount, walDir: path.join(tmpdir(), `polyphony-wal-${process.pid}-${Date.now()}`) });
    ds = createServiceDataSource({ url: pg.url, schema: 'full_demo', migrations: [Things1700000000000] });
    await ds.initialize();
    await migrateSchema(ds);
    const logger = createLogger({ service: 'test', level: 'error' });
    const spy = Object.assign(Object.create(logger) as typeof logger, {
      error: (msg: string, meta?: Record<string, unknown>) => {
        errors.push({ message: msg, meta: meta ?? {} });
        return spy;
      },
    });
    app = express();
    // A write of about 1 MB (1,000 rows of 1 kB) and a read, answered through the platform's error handler.
    app.post('/things', asyncRoute(async (_req, res) => {
      await ds.query(`INSERT INTO full_demo.things (body) SELECT repeat(md5(random()::text), 32) FROM generate_series(1, 1000)`);
      res.status(201).json({ ok: true });
    }));
    app.get('/things/count', asyncRoute(async (_req, res) => {
      res.json({ count: Number((await ds.query(`SELECT count(*)::int AS n FROM full_demo.things`))[0].n) });
    }));
    app.use(errorHandler(spy));
  });
  afterAll(async () => {
    await ds?.destroy();
    await pg?.destroy();
    unmountTmpfs(mount);
  });

  it('When the data volume fills up, then writes answer 503 database_disk_full with Retry-After and a logged error, reads and earlier rows stay, and writes succeed again once space is freed', async () => {
    if (!mount) return;
    await request(app).post('/things').expect(201);
    // Fill the volume, leaving about 2 MB: a few more writes fit, then PostgreSQL cannot extend the table.
    const filler = path.join(mount, 'filler');
    const st = statfsSync(mount);
    execFileSync('fallocate', ['-l', String(st.bavail * st.bsize - 2 * 1024 * 1024), filler]);
    let written = 1;
    let refused: request.Response | undefined;
    for (let i = 0; i < 20 && !refused; i++) {
      const res = await request(app).post('/things');
      if (res.status === 201) written++;
      else refused = res;
    }
    expect(refused?.status).toBe(503);
    expect(refused?.body.code).toBe('database_disk_full');
    expect(Number(refused?.headers['retry-after'])).toBeGreaterThan(0);
    expect(errors.map((e) => e.message)).toContain('request failed: database disk full (free space on the PostgreSQL data volume)');
    expect(String(errors[0]?.meta.err)).toMatch(/No space left on device/);
    // Reads work and every row written before the disk filled is there.
    expect((await request(app).get('/things/count').expect(200)).body.count).toBe(written * 1000);
    // The classification the bus and the task host use: transient, so background writes are retried, not dropped.
    const direct = await ds.query(`INSERT INTO full_demo.things (body) SELECT repeat('x', 1000) FROM generate_series(1, 1000)`).catch((e: unknown) => e);
    expect(classifyFault(direct)).toBe('transient');

    rmSync(filler);
    await request(app).post('/things').expect(201);
    expect((await request(app).get('/things/count').expect(200)).body.count).toBe((written + 1) * 1000);
  });
});
