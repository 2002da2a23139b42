import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Client } from 'pg';
import { PrivatePostgres, PrivateRabbit, startSupysonic, WESNOTH_MUSIC_DIR } from '@polyphony/testkit';
import { startChild } from '../bench-support';

/**
 * Soak (issue 36 "A soak"; docs/operations.md): the standalone stack (its own process, on a private RabbitMQ and
 * a private PostgreSQL) serving supysonic's Wesnoth songs under mixed traffic for `minutes` (default 120), with an
 * analysis run at the start and a clustering run plus a re-analysis every 20 minutes.
 * Traffic: `workers` (default 4) clients in a loop, each request followed by a 100 ms pause: similar songs,
 * metadata search, a sync page, text search, alchemy, the map, the dashboard summary, in turn.
 * Sampled every minute: the stack's RSS (/proc), its event-loop delay (p99 and max of prom-client's
 * nodejs_eventloop_lag from /metrics, reset by each scrape), its open file handles, its PostgreSQL connections
 * (pg_stat_activity of its database) and its RabbitMQ channels (rabbitmqctl list_channels of the private node),
 * and the requests and 5xx answers since the last sample.
 * Printed: one row per minute, then per metric the mean of the first 10 minutes after warm-up against the
 * last 10 minutes, and the least-squares slope after warm-up (per hour).
 * Usage: node bench/dist/ops/soak.js [minutes=120] [workers=4] [warmupMinutes=10]
 * SOAK_END_AT=<ISO time> ends the traffic phase at that time if it comes before `minutes` are up (a session with a
 * hard stop: the set-up's length is not known in advance); the printed sample count says how long it really ran.
 */
async function main(): Promise<void> {
  const requestedMinutes = Number(process.argv[2] ?? 120);
  const endAt = process.env.SOAK_END_AT ? Date.parse(process.env.SOAK_END_AT) : NaN;
  const workers = Number(process.argv[3] ?? 4);
  const warmup = Number(process.argv[4] ?? 10);
  const token = randomBytes(16).toString('hex');
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const rabbit = await PrivateRabbit.start();
  const supysonic = await startSupysonic({ musicDir: WESNOTH_MUSIC_DIR, user: 'soak', password: 'soak-pass' });
  // A private PostgreSQL: the soak neither competes for nor counts other clients' connections.
  const postgres = await PrivatePostgres.start();
  const db = { url: postgres.url };
  const dbName = 'postgres';
  const env = { SERVICE_USER: 'admin', SERVICE_PASSWORD: 'soak-password-1', API_TOKEN: token, JWT_SECRET: randomBytes(32).toString('hex'), MODELS_DIR: process.env.MODELS_DIR ?? resolve(__dirname, '../../../..', 'shared', 'models') };
  const { child, info } = await startChild<{ port: number; pid: number }>(require.resolve('./soak-stack'), [JSON.stringify({ databaseUrl: db.url, amqpUrl: rabbit.url, env })]);
  const base = `http://127.0.0.1:${info.port}`;
  const pg = new Client({ connectionString: db.url });
  await pg.connect();
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(new URL(path, base), { method, headers: auth, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, json: () => JSON.parse(text) as Record<string, any> };
  };
  // Set-up and task polling retry a failed connection (as a real client does; counted and printed): one lost
  // keep-alive race under the shared machine's load must not end a 2-hour run. The traffic loops do not retry.
  let pollRetries = 0;
  const callRetrying = async (method: string, path: string, body?: unknown) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call(method, path, body);
      } catch (err) {
        if (attempt >= 5) throw err;
        pollRetries++;
        console.log(`${method} ${path}: ${(err as Error).message} (${String((err as { cause?: unknown }).cause ?? '')}); retry ${attempt}`);
        await new Promise((r) => setTimeout(r, 1000 * attempt));
      }
    }
  };
  const waitTask = async (taskId: string) => {
    for (;;) {
      const s = await callRetrying('GET', `/api/status/${taskId}`);
      if (s.status === 200 && ['SUCCESS', 'FAIL', 'REVOKED'].includes(s.json().state)) return s.json().state as string;
      await new Promise((r) => setTimeout(r, 2000));
    }
  };
  let stop = false;
  try {
    await callRetrying('POST', '/api/servers', { name: 'Supysonic', server_type: 'navidrome', creds: { url: supysonic.url, user: 'soak', password: 'soak-pass' } });
    const first = await callRetrying('POST', '/api/analysis/start', {});
    console.log(`analysis: ${await waitTask(first.json().task_id)}`);
    const ids = (await pg.query<{ provider_id: string }>(`SELECT provider_id FROM catalogue.track_server_map`)).rows.map((r) => r.provider_id);
    const paths = [
      (i: number) => ['GET', `/api/similar_tracks?item_id=${ids[i % ids.length]}&n=10`],
      (i: number) => ['GET', `/api/search_tracks?search_query=${['the', 'battle', 'elf', 'sad', 'north'][i % 5]}`],
      (i: number) => ['GET', `/api/sync?limit=20&page=${i % 3}`],
      (i: number) => ['POST', '/api/clap/search', { query: ['calm orchestral', 'epic drums', 'sad piano'][i % 3], limit: 10 }],
      (i: number) => ['POST', '/api/alchemy', { items: [{ id: ids[i % ids.length], op: 'ADD', type: 'song' }, { id: ids[(i * 7) % ids.length], op: 'ADD', type: 'song' }], n: 10, temperature: 0 }],
      () => ['GET', '/api/map?percent=100'],
      () => ['GET', '/api/dashboard/summary'],
    ] as Array<(i: number) => [string, string, unknown?]>;
    let requests = 0;
    let failures = 0;
    const loops = Array.from({ length: workers }, async (_, w) => {
      for (let i = w; !stop; i += workers) {
        const [method, path, body] = paths[i % paths.length]!(i);
        try {
          const r = await call(method, path, body);
          requests++;
          if (r.status >= 500) failures++;
        } catch {
          requests++;
          failures++;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    });
    const rows: Array<{ minute: number; rssMiB: number; lagP99Ms: number; lagMaxMs: number; fds: number; pgConns: number; channels: number; requests: number; failures: number }> = [];
    console.log('| minute | RSS MiB | loop p99 ms | loop max ms | fds | PG conns | AMQP channels | requests | 5xx |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    const t0 = Date.now();
    const minutes = Number.isFinite(endAt) ? Math.max(1, Math.min(requestedMinutes, Math.floor((endAt - t0) / 60_000))) : requestedMinutes;
    console.log(`traffic phase: ${minutes} minutes (asked ${requestedMinutes}${Number.isFinite(endAt) ? `, SOAK_END_AT ${process.env.SOAK_END_AT}` : ''}), started ${new Date(t0).toISOString()}`);
    for (let minute = 1; minute <= minutes; minute++) {
      await new Promise((r) => setTimeout(r, t0 + minute * 60_000 - Date.now()));
      if (minute % 20 === 0 && minute < minutes) {
        // Reported when they end; a run still going when the soak stops is reported as cut off, not thrown.
        const report = (what: string) => (st: unknown) => console.log(`${what} at minute ${minute}: ${String(st)}`);
        const cutOff = (what: string) => (err: unknown) => console.log(`${what} at minute ${minute}: not followed to its end (${(err as Error).message})`);
        void callRetrying('POST', '/api/clustering/start', {}).then((r) => (r.status === 202 ? waitTask(r.json().task_id) : `refused ${r.status}`)).then(report('clustering'), cutOff('clustering'));
        void callRetrying('POST', '/api/analysis/start', {}).then((r) => (r.status === 202 ? waitTask(r.json().task_id) : `refused ${r.status}`)).then(report('re-analysis'), cutOff('re-analysis'));
      }
      const status = readFileSync(`/proc/${info.pid}/status`, 'utf8');
      const rssMiB = Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
      const metrics = await (await fetch(new URL('/metrics', base), { headers: auth })).text();
      const metric = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)`, 'm').exec(metrics)?.[1] ?? NaN) * 1000;
      const fds = readdirSync(`/proc/${info.pid}/fd`).length;
      const pgConns = Number((await pg.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1`, [dbName])).rows[0].n) - 1;
      const channels = (await rabbit.ctl(['list_channels', 'number'])).split('\n').filter((l) => /^\d+$/.test(l.trim())).length;
      const row = { minute, rssMiB, lagP99Ms: metric('nodejs_eventloop_lag_p99_seconds'), lagMaxMs: metric('nodejs_eventloop_lag_max_seconds'), fds, pgConns, channels, requests, failures };
      rows.push(row);
      requests = 0;
      failures = 0;
      console.log(`| ${minute} | ${rssMiB.toFixed(0)} | ${row.lagP99Ms.toFixed(1)} | ${row.lagMaxMs.toFixed(1)} | ${fds} | ${pgConns} | ${channels} | ${row.requests} | ${row.failures} |`);
    }
    stop = true;
    await Promise.all(loops);
    const after = rows.filter((r) => r.minute > warmup);
    console.log(`\nAfter a ${warmup}-minute warm-up (${after.length} samples): first 10 vs last 10 minutes, least-squares slope per hour`);
    for (const key of ['rssMiB', 'lagP99Ms', 'fds', 'pgConns', 'channels'] as const) {
      const ys = after.map((r) => r[key]);
      const mean = (a: number[]) => a.reduce((s, x) => s + x, 0) / Math.max(1, a.length);
      const xs = after.map((r) => r.minute / 60);
      const mx = mean(xs);
      const my = mean(ys);
      const slope = xs.reduce((s, x, i) => s + (x - mx) * (ys[i]! - my), 0) / Math.max(1e-9, xs.reduce((s, x) => s + (x - mx) ** 2, 0));
      console.log(`${key}: ${mean(ys.slice(0, 10)).toFixed(1)} -> ${mean(ys.slice(-10)).toFixed(1)}, slope ${slope.toFixed(2)}/h, max ${Math.max(...ys).toFixed(1)}`);
    }
    console.log(`requests: ${rows.reduce((s, r) => s + r.requests, 0)}, 5xx or failed: ${rows.reduce((s, r) => s + r.failures, 0)}; set-up/poll calls retried after a connection error: ${pollRetries}; stack process alive: ${child.exitCode === null}`);
  } finally {
    stop = true;
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await pg.end();
    await postgres.destroy();
    await supysonic.close();
    await rabbit.destroy();
  }
}

main().catch((err: unknown) => {
  console.error((err as Error).stack ?? String(err));
  process.exit(1);
});
