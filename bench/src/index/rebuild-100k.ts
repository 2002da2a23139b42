import 'reflect-metadata';
import { createBus, createLogger } from '@polyphony/platform';
import type { ChildProcess } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { buildIndex, emptyGeneration, loadIndexConfig, RequestScope, type RebuildOutcome } from '@polyphony/index';
import { createBenchDatabase, gc, mb, RssSampler, startChild } from '../bench-support';
import { indexBenchScript } from '../support';

/**
 * Rebuild benchmark of the real index service at N songs (default 100000):
 *  - a FakePeers catalogue with N synthetic songs runs in a child process (its memory is not counted);
 *  - the index service (buildIndex, real PostgreSQL from TEST_DATABASE_URL or 127.0.0.1:5432) pulls the
 *    snapshot over loopback HTTP, builds, persists and activates one generation;
 *  - printed: phase timings, RSS before / peak during / after the build (after a GC when run with
 *    --expose-gc), then a second instance's start-up load of the stored generation (time + RSS),
 *    and in-process query latencies (similar songs, masked to the main and to the 1% server);
 *  - then (growFraction > 0, default 0.01) the catalogue grows by that share of new songs and a second build runs
 *    while the first generation serves: its phases, and what it kept of the first (INDEX_BUILD_REUSE_MAX_CHANGED,
 *    0.05 here unless set; 0 = the same build without reuse). With reuse on, the second build reads only the songs the
 *    catalogue's change feed lists (`delta`; FAKE_PEERS_NO_CHANGE_FEED=1 in the child: the full snapshot, as before).
 * LIVE_BATCH=<n> first adds n songs through the live library (no rebuild), LIVE_BATCHES times (default 2), and prints
 * each batch's wall, CPU, largest event-loop delay and whether it measured the drift probes.
 * INDEX_TABLE_RESIDENT_MIB (when set) is passed on: e.g. 1 puts the display metadata and text-search tables on disk at
 * 100k songs, as the default 32 MiB does at 1M.
 * Usage: node --expose-gc bench/dist/index/rebuild-100k.js [songs] [growFraction]
 */
async function main(): Promise<void> {
  const songs = Number(process.argv[2] ?? 100_000);
  const db = await createBenchDatabase('index_bench');
  const { child, info } = await startChild<{ url: string }>(indexBenchScript('fake-peers-server.js'), [String(songs)]);
  const logger = createLogger({ service: 'index-bench', level: 'warn' });
  const bus = createBus({});
  const peers = () => ({ registry: info.url, catalogue: info.url, analysis: info.url, index: info.url, playlist: info.url });
  const growFraction = Number(process.argv[3] ?? 0.01);
  const config = loadIndexConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'warn', INDEX_BUILD_REUSE_MAX_CHANGED: process.env.INDEX_BUILD_REUSE_MAX_CHANGED ?? '0.05', INDEX_TABLE_RESIDENT_MIB: process.env.INDEX_TABLE_RESIDENT_MIB });
  try {
    const svc = buildIndex(config, { logger, bus, peers, migrateOnStart: true, rebuildOnStart: false });
    await svc.start();
    gc();
    const rssBefore = process.memoryUsage().rss;
    const sampler = new RssSampler();
    sampler.start();
    const t0 = performance.now();
    await svc.rebuild.request('benchmark');
    await svc.rebuild.idle();
    const wall = performance.now() - t0;
    const peak = sampler.stop();
    if (!svc.rebuild.lastOutcome) throw new Error(`build failed: ${svc.rebuild.lastError}`);
    const o = svc.rebuild.lastOutcome;
    const first = { ...summary(o), wallMs: Math.round(wall) };
    gc();
    const rssAfter = process.memoryUsage().rss;
    const heap = process.memoryUsage();

    // Query latency in process (no HTTP): similar songs through the request scope (mask, search, metadata, mapping).
    const latencies = async (serverId: string, seeds: string[], rounds: number) => {
      const times: number[] = [];
      for (let r = 0; r < rounds; r++) {
        const seed = seeds[r % seeds.length]!;
        const t = performance.now();
        const scope = new RequestScope(svc.state.current(), serverId, svc.features.scopeDeps);
        await svc.features.similarity.similarTracks(scope, { itemId: seed }, { n: 10, eliminateDuplicates: true, maxPerArtist: 3 });
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      return { p50: round(times[Math.floor(times.length * 0.5)]!), p99: round(times[Math.floor(times.length * 0.99)]!), mean: round(times.reduce((s, x) => s + x, 0) / times.length) };
    };
    const mainSeeds = Array.from({ length: 200 }, (_, i) => `m-${(i * 7919) % songs}`);
    const sparseSeeds = Array.from({ length: 50 }, (_, i) => String(100_000_000 + ((i * 100) % songs)));
    await latencies('srv-main', mainSeeds, 20); // warm-up (masks, JIT)
    const mainLat = await latencies('srv-main', mainSeeds, 300);
    await latencies('srv-sparse', sparseSeeds, 10);
    const sparseLat = await latencies('srv-sparse', sparseSeeds, 300);

    // A live-library batch (LIVE_BATCH songs, default 0 = skipped): the songs are added to the catalogue, noted as the
    // analysis events would, and flushed: looked up, stored, appended to the serving generation, its text-search table
    // and Poincaré ball prepared for the new revision, swapped in. Wall and process CPU of the flush.
    // LIVE_BATCHES (default 2) batches in a row: the first measures the drift probes, later small ones do not.
    const liveBatch: Array<Record<string, unknown>> = [];
    const liveSongs = Number(process.env.LIVE_BATCH ?? 0);
    for (let b = 0; liveSongs > 0 && b < Number(process.env.LIVE_BATCHES ?? 2); b++) {
      const before = svc.state.current().index.size;
      const grown = await childLine<{ grown: number; ids: string[] }>(child, `grow ${liveSongs}`, 'grown');
      for (const id of grown.ids) svc.live.noteAdded(id);
      const loop = monitorEventLoopDelay({ resolution: 10 });
      loop.enable();
      const cpu0 = process.cpuUsage();
      const t = performance.now();
      await svc.live.flush();
      const cpu = process.cpuUsage(cpu0);
      const wallMs = performance.now() - t;
      // One more resolution period, so a stall at the very end of the flush is sampled too.
      await new Promise((r) => setTimeout(r, 20));
      loop.disable();
      const g = svc.state.current();
      if (g.index.size !== before + grown.grown) throw new Error(`live batch not applied: ${g.index.size} rows`);
      liveBatch.push({ songs: grown.grown, revision: g.revision, wallMs: Math.round(wallMs), processCpuMs: Math.round((cpu.user + cpu.system) / 1000), maxLoopDelayMs: Math.round(loop.max / 1e6), probed: svc.live.lastDrift?.probed });
    }

    // Second build: the library grew by `growFraction` (new songs, new artists, the last artist possibly longer) while
    // generation 1 serves; the build may keep generation 1's basis, map and artist mixtures (INDEX_BUILD_REUSE_MAX_CHANGED).
    let grownBuild: Record<string, unknown> | undefined;
    if (growFraction > 0) {
      const grown = await childLine<{ grown: number; songs: number }>(child, `grow ${Math.round(songs * growFraction)}`, 'grown');
      const cpu0 = process.cpuUsage();
      const t2 = performance.now();
      await svc.rebuild.request('benchmark: grown library');
      await svc.rebuild.idle();
      const wall2 = performance.now() - t2;
      const cpu2 = process.cpuUsage(cpu0);
      const o2 = svc.rebuild.lastOutcome;
      if (!o2 || o2.generation === o.generation) throw new Error(`second build failed: ${svc.rebuild.lastError}`);
      grownBuild = { grownBy: grown.grown, songs: grown.songs, ...summary(o2), processCpuMs: Math.round((cpu2.user + cpu2.system) / 1000), wallMs: Math.round(wall2) };
    }

    // Restart: a second instance loads the stored generation instead of rebuilding.
    await svc.stop();
    svc.state.swap(emptyGeneration()); // release the first instance's generation before measuring the second
    gc();
    const rssIdle = process.memoryUsage().rss;
    const second = buildIndex(config, { logger, bus, peers, migrateOnStart: true, rebuildOnStart: false });
    const t1 = performance.now();
    await second.start();
    const loadMs = performance.now() - t1;
    gc();
    const rssLoaded = process.memoryUsage().rss;
    process.stdout.write(
      `${JSON.stringify(
        {
          songs,
          generation: o.generation,
          nlist: o.nlist,
          rebuild: first,
          ...(liveBatch.length ? { liveBatch } : {}),
          ...(grownBuild ? { secondRebuild: grownBuild } : {}),
          rssMb: { beforeBuild: mb(rssBefore), peakDuringBuild: mb(peak), afterBuild: mb(rssAfter), heapUsedAfter: mb(heap.heapUsed), arrayBuffersAfter: mb(heap.arrayBuffers) },
          restart: { loadMs: Math.round(loadMs), items: second.state.current().index.size, rssBeforeMb: mb(rssIdle), rssAfterLoadMb: mb(rssLoaded) },
          similarTracksInProcessMs: { mainServer: mainLat, sparseServer1pct: sparseLat },
        },
        null,
        2,
      )}\n`,
    );
    await second.stop();
  } finally {
    await bus.close();
    child.stdin?.end();
    child.kill();
    await db.drop();
  }
}

/** Phase figures of one build (wall and CPU ms per phase, the snapshot's waits, the IVF build's parts, the activation's parts, what was reused). */
function summary(o: RebuildOutcome): Record<string, unknown> {
  const ms = (r: Record<string, number>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Math.round(v)]));
  const { fedFromSnapshot: _fed, ...ivf } = o.ivf;
  // liveMs: wall time until the generation was served (the clean-up of older builds runs after that).
  return { generation: o.generation, items: o.items, liveMs: Math.round(o.timingsMs.total - o.timingsMs.cleanup), phasesMs: ms(o.timingsMs), cpuMs: ms(o.cpuMs), snapshotMs: ms(o.snapshotMs), ivfMs: ms(ivf), activateMs: ms(o.activateMs), ...(o.reuse ? { reuse: { ...o.reuse, fraction: round(o.reuse.fraction * 1e4) / 1e4, matchMs: Math.round(o.reuse.matchMs) } } : {}), ...(o.delta ? { delta: { ...o.delta, ms: Math.round(o.delta.ms) } } : {}), ...(o.fullReason ? { fullReason: o.fullReason } : {}) };
}

/** Sends one line to the fake peers child and waits for its JSON answer line holding `key`. */
function childLine<T>(child: ChildProcess, line: string, key: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const text = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (text.includes(`"${key}"`)) {
          child.stdout!.off('data', onData);
          resolve(JSON.parse(text) as T);
          return;
        }
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`fake peers exited with ${code}`)));
    child.stdin!.write(`${line}\n`);
  });
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
