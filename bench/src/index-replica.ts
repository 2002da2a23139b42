import 'reflect-metadata';
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import path from 'node:path';
import { createBus, createLogger } from '@polyphony/platform';
import { buildIndex, generationMemory, loadIndexConfig } from '@polyphony/index';
import { onStdinLine } from './bench-support';

/**
 * One index replica in its own process, for the throughput benchmark (`index-throughput.ts`). TP_BUILD_READBACK=1
 * builds by reading the vectors back from `index.tracks` (the path before the snapshot-fed build).
 * argv[2] = JSON `{ dbUrl, secret, peersUrl, port, build, mode }`: starts the service on 127.0.0.1:`port`
 * (0 = any), builds a generation first when `build`, else loads the stored one. Prints one JSON line
 * `{ url, buildMs, loadMs, rssMb }` once ready. SIGTERM stops it gracefully (readiness off first, then
 * in-flight requests finish), like `main.ts`; closing stdin does the same.
 * With TP_PROFILE_DIR set, a V8 CPU profile of the serving phase only (from ready to stop, the build left
 * out) is written there as `replica-<pid>.cpuprofile`. The ready line's `memoryMiB.resident` says where the RSS is
 * (smaps summary, see `residentByMapping`). A line `memory` on stdin prints the same memory figures again (after a
 * full GC with --expose-gc), e.g. after the load scenarios; `heapsnapshot <file>` writes a V8 heap snapshot there. INDEX_* variables of the environment are passed to the service.
 */
/**
 * Where this process's resident memory is, from /proc/self/smaps (Linux; {} elsewhere), in MiB: `file` (the node
 * binary and libraries), `heap` (glibc's main [heap]), `stack`, and anonymous mappings by size: `anonHuge` (>= 1 GiB
 * of address space: WebAssembly memories, V8's reservations), `anonLarge` (>= 16 MiB: V8 heap spaces, glibc arenas,
 * mmap-ed buffers), `anonSmall`; plus the 8 largest resident anonymous mappings as `size/rss`.
 */
function residentByMapping(): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync('/proc/self/smaps', 'utf8');
  } catch {
    return {};
  }
  const out: Record<string, number> = { file: 0, heap: 0, stack: 0, anonHuge: 0, anonLarge: 0, anonSmall: 0 };
  const largest: Array<[number, number, string]> = [];
  let name = '';
  let size = 0;
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      size = (parseInt(head[2]!, 16) - parseInt(head[1]!, 16)) / 1048576;
      name = head[3] ?? '';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const mib = Number(rss[1]) / 1024;
    if (name.startsWith('/')) out.file! += mib;
    else if (name === '[heap]') out.heap! += mib;
    else if (name.startsWith('[stack')) out.stack! += mib;
    else {
      out[size >= 1024 ? 'anonHuge' : size >= 16 ? 'anonLarge' : 'anonSmall']! += mib;
      largest.push([mib, size, name]);
    }
  }
  largest.sort((a, b) => b[0] - a[0]);
  const r = (x: number) => Math.round(x * 10) / 10;
  return { ...Object.fromEntries(Object.entries(out).map(([k, v]) => [k, r(v)])), top: largest.slice(0, 8).map(([m, sz]) => `${r(sz)}/${r(m)}`) };
}

function cpuMs(u: NodeJS.CpuUsage): number {
  return (u.user + u.system) / 1000;
}

async function main(): Promise<void> {
  const o = JSON.parse(process.argv[2]!) as { dbUrl: string; secret: string; peersUrl: string; port: number; build: boolean; mode?: string; workers?: number };
  const logger = createLogger({ service: 'index-replica', level: 'error' });
  const bus = createBus({});
  const peers = () => ({ registry: o.peersUrl, catalogue: o.peersUrl, analysis: o.peersUrl, index: o.peersUrl, playlist: o.peersUrl });
  // INDEX_* settings of the bench's environment (INDEX_TABLE_RESIDENT_MIB, INDEX_VECTOR_RESIDENT_MIB, INDEX_VECTOR_DIR, INDEX_PQ_M) pass through.
  const passed = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('INDEX_') && e[1] !== undefined));
  const env: Record<string, string> = { ...passed, DATABASE_URL: o.dbUrl, INTERNAL_SECRET: o.secret, LOG_LEVEL: 'error', INDEX_VECTOR_MODE: o.mode ?? 'int8', INDEX_BUILD_WORKERS: String(o.workers ?? 2) };
  // TP_BUILD_READBACK=1: the build reads every vector back from index.tracks after the snapshot (the path before the
  // build was fed from the snapshot pages), for before/after runs of one tree.
  const rebuild = process.env.TP_BUILD_READBACK === '1' ? { feedBuildFromSnapshot: false } : {};
  const svc = buildIndex(loadIndexConfig(env), { logger, bus, peers, migrateOnStart: true, rebuildOnStart: false, rebuild });
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await svc.start();
  const loadMs = performance.now() - t0;
  const loadCpuMs = cpuMs(process.cpuUsage(c0));
  let buildMs = 0;
  let buildCpuMs = 0;
  if (o.build) {
    const t = performance.now();
    const c = process.cpuUsage();
    await svc.rebuild.request('benchmark');
    await svc.rebuild.idle();
    buildMs = performance.now() - t;
    buildCpuMs = cpuMs(process.cpuUsage(c));
    if (!svc.rebuild.lastOutcome) throw new Error(`build failed: ${svc.rebuild.lastError}`);
  }
  const memory = async () => {
    // Memory after a full collection when the process runs with --expose-gc (TP_REPLICA_ARGS).
    (globalThis as { gc?: () => void }).gc?.();
    const mem = process.memoryUsage();
    const mib = (b: number) => Math.round((b / 1048576) * 10) / 10;
    // The generation's structures, plus the per-generation tables other services hold (Poincaré ball, semantic table).
    const bytes = { ...generationMemory(svc.state.current()), hyperbolicBall: svc.hyperbolic.memoryBytes(), semanticTable: await svc.semantic.memoryBytes() };
    const structures = Object.fromEntries(Object.entries(bytes).map(([k, v]) => [k, mib(v)]));
    // Committed size of each V8 heap space that holds more than 1 MiB (old space, code, large objects...).
    const heapSpaces = Object.fromEntries(getHeapSpaceStatistics().filter((s) => s.space_size >= 1048576).map((s) => [s.space_name, mib(s.space_size)]));
    return { mem, memoryMiB: { rss: mib(mem.rss), heapUsed: mib(mem.heapUsed), heapTotal: mib(mem.heapTotal), external: mib(mem.external), arrayBuffers: mib(mem.arrayBuffers), heapSpaces, structures, resident: residentByMapping() } };
  };
  const { mem, memoryMiB } = await memory();
  const port = await svc.listen(o.port, '127.0.0.1');
  process.stdout.write(
    `${JSON.stringify({
      url: `http://127.0.0.1:${port}`,
      buildMs,
      buildCpuMs,
      buildPhasesMs: svc.rebuild.lastOutcome?.timingsMs,
      buildPhasesCpuMs: svc.rebuild.lastOutcome?.cpuMs,
      buildIvfMs: svc.rebuild.lastOutcome?.ivf,
      buildSnapshotMs: svc.rebuild.lastOutcome?.snapshotMs,
      loadMs,
      loadCpuMs,
      loadPhases: svc.rebuild.lastLoad,
      rssMb: mem.rss / 1048576,
      memoryMiB,
      generation: svc.state.current().generation,
    })}\n`,
  );
  const profileDir = process.env.TP_PROFILE_DIR;
  const session = profileDir ? new Session() : undefined;
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) => session!.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))));
  if (session) {
    session.connect();
    await post('Profiler.enable');
    await post('Profiler.start');
  }
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    const saved = session
      ? post('Profiler.stop').then((r) => writeFileSync(path.join(profileDir!, `replica-${process.pid}.cpuprofile`), JSON.stringify((r as { profile: unknown }).profile)))
      : Promise.resolve();
    void saved
      .then(() => svc.stop())
      .then(() => bus.close())
      .finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  // A line `memory` on stdin: one JSON line `{ memoryMiB }` (after a full GC with --expose-gc) on stdout.
  onStdinLine((line) => {
    if (line === 'memory') void memory().then((m) => process.stdout.write(`${JSON.stringify({ memoryMiB: m.memoryMiB })}\n`));
    // `heapsnapshot <file>`: a V8 heap snapshot of the serving replica (what the JS heap holds), answered `{ heapSnapshot }`.
    if (line.startsWith('heapsnapshot ')) process.stdout.write(`${JSON.stringify({ heapSnapshot: writeHeapSnapshot(line.slice('heapsnapshot '.length)) })}\n`);
  });
  process.stdin.on('end', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
