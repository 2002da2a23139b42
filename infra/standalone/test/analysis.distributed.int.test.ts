import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import request from 'supertest';
import { Client } from 'pg';
import { ArrayCatalogue, createFakeJellyfin, testAmqpUrl, wesnothTracks, type StartedFake } from '@polyphony/testkit';
import { API_TOKEN, useTestStack, waitForTask } from './helpers';

const ROOT = path.resolve(__dirname, '../../..');

/**
 * Distributed wiring over RabbitMQ: a second analysis-worker PROCESS (the built service, as a pod
 * would run it) competes for track messages with the stack's own worker and is SIGKILLed mid-run.
 * Its unacknowledged messages are redelivered; the run completes with every track analyzed once.
 */
describe('analysis with competing workers over RabbitMQ', () => {
  jest.setTimeout(10 * 60_000);
  let fake: StartedFake;
  let worker: ChildProcess | undefined;
  const auth = { Authorization: `Bearer ${API_TOKEN}` };

  afterAll(() => {
    worker?.kill('SIGKILL');
  });
  const app = useTestStack({}, { amqpUrl: testAmqpUrl() });
  afterAll(async () => {
    await fake?.close();
  });

  it('When one of two workers is killed mid-track, then nothing is lost and every track is analyzed exactly once', async () => {
    const wes = wesnothTracks();
    const tracks = [...wes].slice(0, 8);
    const jf = createFakeJellyfin({ catalogue: new ArrayCatalogue(wes.libraries, tracks), token: 'tok' });
    fake = await jf.start();
    const server = await request(app.url).post('/api/servers').set(auth).send({ name: 'J', server_type: 'jellyfin', creds: { url: fake.url, user_id: jf.userId, token: 'tok' } }).expect(201);

    const peers = app.stack.peers();
    worker = spawn(process.execPath, [path.join(ROOT, 'services/analysis-worker/dist/main.js')], {
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: app.db.url,
        AMQP_URL: testAmqpUrl(),
        BUS_NAMESPACE: `test-${app.db.name}`,
        INTERNAL_SECRET: app.stack.internalSecret,
        REGISTRY_URL: peers.registry,
        CATALOGUE_URL: peers.catalogue,
        INDEX_URL: peers.index,
        PORT: '0',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await new Promise((r) => setTimeout(r, 3000));
    expect(worker.exitCode).toBeNull();

    const start = await request(app.url).post('/api/analysis/start').set(auth).send({}).expect(202);
    // Let both workers take messages (prefetch 2 each), then kill the external one without warning.
    const firstDownload = Date.now();
    while (!jf.requests.some((r) => /Download|stream|File/i.test(r.path)) && Date.now() - firstDownload < 60_000) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 1500));
    worker.kill('SIGKILL');

    const status = await waitForTask(app.url, start.body.task_id, { timeoutMs: 8 * 60_000, intervalMs: 2000 });
    expect(status.state).toBe('SUCCESS');
    expect(status.details.servers[0]).toMatchObject({ seen: 8, analyzed: 8, failed: 0 });
    const c = new Client({ connectionString: app.db.url });
    await c.connect();
    const maps = (await c.query(`SELECT count(*)::int AS n FROM catalogue.track_server_map WHERE server_id = $1`, [server.body.id])).rows[0].n;
    const outcomes = (await c.query(`SELECT count(*)::int AS n FROM analysis.run_tracks WHERE run_id = $1`, [start.body.task_id])).rows[0].n;
    await c.end();
    expect(maps).toBe(8);
    expect(outcomes).toBe(8);
  });
});
