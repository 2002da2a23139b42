import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { signIdentity } from '@polyphony/platform';
import { adminUrl, createBenchDatabase, startChild } from '../bench-support';
import type { LoadResult } from '../load-child';
import { startReplica, vmRssMiB, type Replica } from '../replica-process';
import { indexBenchScript } from '../support';

/**
 * Replica memory at N songs, fast (issue 35 "replica RSS < 500 MiB"; the whole `default-1m` run takes ~25 min).
 * Each replica is an `index-replica.js` child with jemalloc preloaded as the image runs it and `--expose-gc`
 * (TP_JEMALLOC=1, TP_REPLICA_ARGS=--expose-gc unless set), on a FakePeers child with N songs on 3 servers:
 *  - `build`: a replica that builds a generation (into a fresh database, or a new generation of RM_DB_URL's);
 *  - `load`: a replica that only loads the live generation (as the second replica of `default-1m`).
 * Per replica, one JSON line: build / load wall ms, then its memory report (`index-replica.ts`: RSS, JS heap, per
 * structure MiB, smaps summary) after a full GC right away and again after RM_SETTLE_SEC (default 5) s (jemalloc
 * returns freed pages within ~1 s), and its idle VmRSS min-max over that wait; the load average with each.
 * Then (RM_TRAFFIC_SEC, default 20; 0 = none) similar-songs traffic straight to the replica (`similar10` of
 * `default-1m`: 200 seeds, n=10, 16 connections, the identity the gateway signs), 10 s idle, and the memory report
 * after a full GC again (**after traffic**: the figure `default-1m` takes with TP_MEMORY_AFTER, V8's new space grown
 * by the traffic), then once more after RM_SETTLE_SEC s.
 * Usage: node bench/dist/index/replica-memory.js [songs=1000000] [steps=build,load]
 * RM_REPLICA_DIR=<another tree's bench/dist>: run that tree's `index-replica.js` (the service code before a change; its
 * ready line has the same memory figures), e.g. `/work/main/bench/dist`.
 * RM_HEAP_SNAPSHOT_DIR=<dir>: also writes a V8 heap snapshot of each replica there (after the settled figures).
 * RM_DB_URL=<url>: use that database (kept); otherwise a fresh one is made and KEPT (its URL is printed: pass it as
 * RM_DB_URL to measure `load` again without building; drop it with RM_DROP=1 on the last run).
 * Run it with FAKE_PEERS_LEARNED=1 (as `bash scripts/bench.sh replica-memory` does) for real-length learned tags.
 */
async function main(): Promise<void> {
  const songs = Number(process.argv[2] ?? 1_000_000);
  const steps = (process.argv[3] ?? 'build,load').split(',');
  const settleSec = Number(process.env.RM_SETTLE_SEC ?? 5);
  process.env.TP_JEMALLOC ??= '1';
  process.env.TP_REPLICA_ARGS ??= '--expose-gc';
  const load = () =>
    loadavg()
      .map((x) => x.toFixed(1))
      .join('/');
  const db = process.env.RM_DB_URL ? { url: process.env.RM_DB_URL, drop: () => dropByUrl(process.env.RM_DB_URL!) } : await createBenchDatabase('index_mem_bench');
  if (!process.env.RM_DB_URL) console.log(`database: RM_DB_URL=${db.url}`);
  const secret = randomBytes(32).toString('hex');
  const { child: peers, info } = await startChild<{ url: string }>(indexBenchScript('fake-peers-server.js'), [String(songs)]);
  console.log(`fake peers with ${songs} songs up (load ${load()})`);
  const rows: Array<Record<string, unknown>> = [];
  try {
    for (const step of steps) {
      if (step !== 'build' && step !== 'load') throw new Error(`unknown step ${step} (build | load)`);
      const loadBefore = load();
      const script = process.env.RM_REPLICA_DIR ? path.join(process.env.RM_REPLICA_DIR, 'index-replica.js') : undefined;
      const r: Replica = await startReplica({ dbUrl: db.url, secret, peersUrl: info.url, port: 0, build: step === 'build', mode: 'int8' }, script);
      try {
        const ready = r.info as unknown as { buildMs: number; loadMs: number; memoryMiB: Record<string, unknown>; generation: number; buildPhasesMs?: unknown; loadPhases?: unknown };
        const samples: number[] = [];
        for (let s = 0; s < settleSec; s++) {
          await new Promise((res) => setTimeout(res, 1000));
          samples.push(Math.round(vmRssMiB(r.child.pid)));
        }
        const settled = (await r.memory()) as Record<string, unknown>;
        // RM_HEAP_SNAPSHOT_DIR: a V8 heap snapshot of each replica there (`<step>-<songs>.heapsnapshot`), for what the JS heap holds.
        if (process.env.RM_HEAP_SNAPSHOT_DIR) console.log(await r.ask(`heapsnapshot ${process.env.RM_HEAP_SNAPSHOT_DIR}/${step}-${songs}.heapsnapshot`));
        // After traffic, as default-1m's TP_MEMORY_AFTER: 10 s idle, then the report after a full GC.
        const trafficSec = Number(process.env.RM_TRAFFIC_SEC ?? 20);
        let traffic: Record<string, unknown> | undefined;
        if (trafficSec > 0) {
          const headers = signIdentity({ sub: 'bench', username: 'bench', role: 'admin', via: 'bearer', serverId: 'srv-main' }, secret);
          const requests = Array.from({ length: 200 }, (_, i) => ({ path: `/api/similar_tracks?item_id=m-${(i * 7919) % songs}&n=10`, headers }));
          const { info: lr } = await startChild<LoadResult>(path.join(__dirname, '..', 'load-child.js'), [JSON.stringify({ url: r.info.url, connections: 16, durationSec: trafficSec, requests })]);
          if (lr.total === 0 || lr.non2xx + lr.errors > 0) throw new Error(`traffic failed: ${JSON.stringify(lr)}`);
          await new Promise((res) => setTimeout(res, 10_000));
          const afterTraffic = (await r.memory()) as Record<string, unknown>;
          await new Promise((res) => setTimeout(res, settleSec * 1000));
          const afterTrafficSettled = (await r.memory()) as Record<string, unknown>;
          traffic = { requests: lr.total, rps: Math.round(lr.requestsPerSec), p99: lr.latencyMs.p99, afterTraffic, afterTrafficSettled };
        }
        const row = {
          step,
          songs,
          generation: ready.generation,
          buildMs: Math.round(ready.buildMs),
          loadMs: Math.round(ready.loadMs),
          phases: step === 'build' ? ready.buildPhasesMs : ready.loadPhases,
          ready: ready.memoryMiB,
          settled,
          idleVmRssMiB: [Math.min(...samples), Math.max(...samples)],
          traffic,
          load: `${loadBefore} -> ${load()}`,
        };
        rows.push(row);
        console.log(JSON.stringify(row));
      } finally {
        const exited = new Promise<void>((res) => r.child.once('exit', () => res()));
        r.child.stdin?.end();
        r.child.kill('SIGTERM');
        await exited;
      }
    }
    console.log('\n| replica | RSS after GC, ready (MiB) | RSS after GC, settled | idle VmRSS | after traffic, after GC (settled) | new space after traffic | JS heap used / total | array buffers | structures (MiB) | load |');
    console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const row of rows) {
      const s = row.settled as { rss: number; heapUsed: number; heapTotal: number; arrayBuffers: number; structures: Record<string, number> };
      const total = Object.values(s.structures).reduce((a, b) => a + b, 0);
      const t = row.traffic as { afterTraffic: { rss: number; heapSpaces: Record<string, number> }; afterTrafficSettled: { rss: number }; rps: number } | undefined;
      const after = t ? `**${t.afterTraffic.rss}** (${t.afterTrafficSettled.rss}) at ${t.rps} req/s` : '-';
      console.log(`| ${String(row.step)} | ${(row.ready as { rss: number }).rss} | **${s.rss}** | ${(row.idleVmRssMiB as number[]).join('-')} | ${after} | ${t?.afterTraffic.heapSpaces.new_space ?? '-'} | ${s.heapUsed} / ${s.heapTotal} | ${s.arrayBuffers} | ${total.toFixed(1)} | ${String(row.load)} |`);
    }
  } finally {
    peers.stdin?.end();
    peers.kill();
    if (process.env.RM_DROP === '1') await db.drop();
  }
}

/** Drops the database of `url` (RM_DROP=1 with RM_DB_URL). */
async function dropByUrl(url: string): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  const c = new Client({ connectionString: adminUrl() });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await c.end();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
