/**
 * Benchmark of the shared IVF index at catalogue scale.
 *
 *   npx tsc -b bench
 *   node --max-old-space-size=256 --max-semi-space-size=2 bench/dist/vector-engine/ivf-1m.js [N=1000000] [queries=200] [nprobes=16,32,64,128] [workers=0] [int8=0]
 *   (IVF_SIMD=0 in the environment: JavaScript kernels instead of WebAssembly SIMD, for comparison;
 *   IVF_DATA=catalogue: the vectors of the throughput benchmark's catalogue, `syntheticSongs` (20-song artists around
 *   independent N(0, 1) centres: a few near songs per seed, every other song far and nearly equidistant), instead of
 *   the clustered mixture)
 *   int8=1: afterwards the generation is quantised as the service holds it (INDEX_VECTOR_MODE=int8, the float copy
 *   on disk in $TMPDIR) and the nprobe sweep is repeated in the similar-songs configuration of the service: k = 10
 *   and k = 41 (the candidate pool of an n = 10 request with the duplicate / per-artist filters, `similarTracks`),
 *   recall@10 of the first 10 rows against the exact top 10, CPU per query, unmasked and with a 50% mask
 *   (issue 19: the nprobe / recall trade-off of the default).
 *
 * The vectors live in typed arrays outside the V8 heap, so small V8 limits are enough and keep garbage
 * (batch id strings) from inflating the RSS: at 1M the peak RSS is ~934-945 MiB with both flags and
 * ~960-967 MiB with the old-space limit alone (V8's default 16 MiB semi-spaces). Runs in ~5-10 min on the
 * 2-core build machine (build ~140-150 s CPU, the rest is exact-search ground truth).
 *
 * Builds an index over N synthetic 200-d vectors (SyntheticMixture: 500 components, 12-d subspaces, noise;
 * generated batch by batch, never held twice), then measures, single-threaded, k = 10:
 *  - build time per phase, CPU time, peak RSS (VmHWM from /proc/self/status), event-loop delay during the
 *    build (how long a request arriving mid-build would wait);
 *  - how often the build's assignment equals the brute-force nearest centroid (sampled rows);
 *  - recall@10 against exact search and latency p50/p99 for several nprobe, query = a stored song
 *    (searchByRow, the seed excluded), like a "similar songs" request;
 *  - the same with a 50% and a 1% availability mask (recall against exact search over the available rows);
 *  - exact brute-force latency and its ratio to the IVF latency.
 * Latencies are wall-clock (performance.now) and CPU time (process.cpuUsage) per query: on a shared machine
 * the CPU figure shows the work, the wall figure what a caller would have seen.
 * Aims (services/index task): recall@10 >= 0.95, p99 < 10 ms, RSS < 1 GB at N = 1M.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { AvailabilityMask, VectorBatch, buildIvfIndex, IvfIndex, Neighbour, SearchStats, simdKernelsAvailable, quantiseIndex } from '@polyphony/vector-engine';
import { nearestOfFour, SeededRandom } from '@polyphony/vectors';
import { recall, SyntheticMixture, syntheticSongs } from '@polyphony/testkit';
import { generationCpuS, timedGeneration } from '../bench-support';

const K = 10;

function peakRssMb(): number {
  try {
    const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) / 1024;
  } catch {
    // not Linux: fall back to the current RSS
  }
  return process.memoryUsage().rss / 1048576;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

interface Timed {
  results: Neighbour[][];
  wallMs: number[];
  cpuMs: number[];
  distanceComputations: number;
  modes: Set<string>;
}

function timeQueries(queries: number[], run: (row: number, stats: SearchStats) => Neighbour[]): Timed {
  const out: Timed = { results: [], wallMs: [], cpuMs: [], distanceComputations: 0, modes: new Set() };
  for (const row of queries) {
    const stats: SearchStats = { mode: 'ivf', cellsProbed: 0, distanceComputations: 0, centroidComputations: 0 };
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const res = run(row, stats);
    const t1 = performance.now();
    const c1 = process.cpuUsage(c0);
    out.results.push(res);
    out.wallMs.push(t1 - t0);
    out.cpuMs.push((c1.user + c1.system) / 1000);
    out.distanceComputations += stats.distanceComputations;
    out.modes.add(stats.mode);
  }
  return out;
}

function fmt(t: Timed): string {
  return (
    `p50 ${percentile(t.wallMs, 50).toFixed(2)} ms, p99 ${percentile(t.wallMs, 99).toFixed(2)} ms (cpu p50 ${percentile(t.cpuMs, 50).toFixed(2)}, ` +
    `p99 ${percentile(t.cpuMs, 99).toFixed(2)}), ${Math.round(t.distanceComputations / t.results.length)} distances/query, mode ${[...t.modes].join('+')}`
  );
}

function assignmentAgreement(index: IvfIndex, rows: number[]): number {
  const dim = index.dim;
  const centroids = new Float32Array(index.nlist * dim);
  for (let c = 0; c < index.nlist; c++) centroids.set(index.centroid(c), c * dim);
  const best = new Int32Array(4);
  const scores = new Float64Array(4);
  let agree = 0;
  for (const row of rows) {
    const v = index.getVector(row);
    nearestOfFour(v, 0, 0, 0, 0, centroids, index.nlist, dim, best, scores);
    if (best[0] === index.cellOf(row)) agree++;
  }
  return agree / rows.length;
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 1_000_000);
  const queryCount = Number(process.argv[3] ?? 200);
  const nprobes = (process.argv[4] ?? '16,32,64,128').split(',').map(Number);
  const workers = Number(process.argv[5] ?? 0);
  const summary: Record<string, unknown> = { n, queries: queryCount, k: K };
  console.log(`IVF benchmark: N=${n}, dim=200, ${queryCount} queries, k=${K}, node ${process.version}`);

  const mixture = new SyntheticMixture();
  let emittedCells = 0;
  let emittedFloats = 0;
  async function* source(): AsyncGenerator<VectorBatch> {
    // Small batches: generating a point costs ~5 us, so this keeps the generator's own event-loop stalls
    // (a real source waits on the database asynchronously) out of the build's delay figure.
    if (process.env.IVF_DATA === 'catalogue') {
      for (const b of catalogueBatches(n, 1000)) yield b;
      return;
    }
    for (const b of timedGeneration(mixture.batches(n, 1000))) yield { ids: b.ids, vectors: b.vectors };
  }
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let lastLog = performance.now();
  const { index, report } = await buildIvfIndex(source(), {
    expectedCount: n,
    workers,
    onProgress: (p) => {
      const now = performance.now();
      if (now - lastLog < 15000) return;
      lastLog = now;
      console.log(`  .. ${((now - t0) / 1000).toFixed(0)} s: ${p.phase} ${p.done}/${p.total}, rss ${(process.memoryUsage().rss / 1048576).toFixed(0)} MB`);
    },
    onCell: async (_cell, rowIds, vectors) => {
      // Stands in for the database writer: touches the payload and yields like an awaited INSERT would.
      emittedCells++;
      emittedFloats += vectors.length + rowIds.length;
      if ((emittedCells & 63) === 0) await new Promise((r) => setImmediate(r));
    },
  });
  const buildWall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  loopDelay.disable();
  const buildRss = peakRssMb();
  console.log(
    `build (${workers} worker threads, SIMD kernels ${simdKernelsAvailable() ? 'on' : 'off'}; ${loadavg().map((x) => x.toFixed(2)).join(' ')} load avg): ${(buildWall / 1000).toFixed(1)} s wall, ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s CPU; nlist ${report.nlist}, ` +
      `sample ${report.sampleSize}, ${report.trainingIterations} Lloyd iterations, empty cells ${report.emptyCells}, largest cell ${report.largestCell}`,
  );
  console.log(`  of which generating the synthetic data: ${generationCpuS().toFixed(1)} s CPU; the build itself ${((cpu.user + cpu.system) / 1e6 - generationCpuS()).toFixed(1)} s CPU`);
  console.log(
    `  phases (s): ingest+generate ${(report.timingsMs.ingest / 1000).toFixed(1)}, train ${(report.timingsMs.train / 1000).toFixed(1)}, ` +
      `assign ${(report.timingsMs.assign / 1000).toFixed(1)}, arrange ${(report.timingsMs.arrange / 1000).toFixed(1)}, emit ${(report.timingsMs.emit / 1000).toFixed(1)}`,
  );
  console.log(
    `  dot products: training ${(report.trainingDotProducts / 1e6).toFixed(0)}M, assignment ${(report.assignmentDotProducts / 1e6).toFixed(0)}M ` +
      `(brute force would be ${((n * report.nlist) / 1e6).toFixed(0)}M); cells emitted ${emittedCells} (${((emittedFloats * 4) / 1048576).toFixed(0)} MB)`,
  );
  const stallP99 = loopDelay.percentile(99) / 1e6;
  const stallMax = loopDelay.max / 1e6;
  console.log(`  peak RSS after build: ${buildRss.toFixed(0)} MB; event-loop delay during the build p99 ${stallP99.toFixed(0)} ms, max ${stallMax.toFixed(0)} ms (longest build slice ${report.longestSliceMs.toFixed(0)} ms)`);
  summary.build = { wallS: buildWall / 1000, cpuS: (cpu.user + cpu.system) / 1e6, peakRssMb: buildRss, loopDelayP99Ms: stallP99, loopDelayMaxMs: stallMax, report };

  const rng = new SeededRandom(2024);
  const queries = Array.from({ length: queryCount }, () => rng.nextInt(n));
  const agreement = assignmentAgreement(index, queries.slice(0, Math.min(1000, queries.length)));
  console.log(`  assignment equal to brute-force nearest centroid: ${(agreement * 100).toFixed(1)}% of sampled rows`);
  summary.assignmentAgreement = agreement;

  // Warm-up (JIT) on other rows.
  for (let i = 0; i < 30; i++) index.searchByRow(rng.nextInt(n), { k: K });

  const exact = timeQueries(queries, (row, stats) => index.exactSearch(index.getVector(row), { k: K, exclude: [row], stats }));
  console.log(`exact brute force: ${fmt(exact)}`);
  summary.exact = { p50: percentile(exact.wallMs, 50), p99: percentile(exact.wallMs, 99), cpuP50: percentile(exact.cpuMs, 50) };

  const sweep: Record<string, unknown>[] = [];
  for (const nprobe of nprobes) {
    const t = timeQueries(queries, (row, stats) => index.searchByRow(row, { k: K, nprobe, stats }));
    const r = recall(t.results, exact.results);
    console.log(`ivf nprobe=${nprobe}: recall@10 ${r.toFixed(4)}, ${fmt(t)}, speed-up vs exact (p50) ${(percentile(exact.wallMs, 50) / percentile(t.wallMs, 50)).toFixed(0)}x`);
    sweep.push({ nprobe, recall: r, p50: percentile(t.wallMs, 50), p99: percentile(t.wallMs, 99), cpuP50: percentile(t.cpuMs, 50), cpuP99: percentile(t.cpuMs, 99) });
  }
  summary.sweep = sweep;

  const defaultRun = timeQueries(queries, (row, stats) => index.searchByRow(row, { k: K, stats }));
  const defaultRecall = recall(defaultRun.results, exact.results);
  console.log(`ivf default nprobe=${index.defaultNprobe}: recall@10 ${defaultRecall.toFixed(4)}, ${fmt(defaultRun)}`);
  summary.default = { nprobe: index.defaultNprobe, recall: defaultRecall, p50: percentile(defaultRun.wallMs, 50), p99: percentile(defaultRun.wallMs, 99) };
  summary.exactToIvfRatioP50 = percentile(exact.wallMs, 50) / percentile(defaultRun.wallMs, 50);

  for (const density of [0.5, 0.01]) {
    const maskRng = new SeededRandom(Math.round(density * 1000));
    const rows: number[] = [];
    for (let r = 0; r < n; r++) if (maskRng.nextFloat() < density) rows.push(r);
    const mask = AvailabilityMask.fromRows(n, rows);
    const ivf = timeQueries(queries, (row, stats) => index.searchByRow(row, { k: K, mask, stats }));
    const truth = timeQueries(queries, (row, stats) => index.exactSearch(index.getVector(row), { k: K, mask, exclude: [row], stats }));
    let leaked = 0;
    for (const res of ivf.results) for (const h of res) if (!mask.has(h.row)) leaked++;
    const short = ivf.results.filter((r) => r.length < K).length;
    const r = recall(ivf.results, truth.results);
    console.log(
      `mask ${(density * 100).toFixed(0)}% (${mask.count} rows): recall@10 ${r.toFixed(4)}, ${fmt(ivf)}; unavailable rows returned ${leaked}, ` +
        `queries with < k results ${short}; exact masked scan p50 ${percentile(truth.wallMs, 50).toFixed(2)} ms`,
    );
    summary[`mask${density * 100}`] = { rows: mask.count, recall: r, p50: percentile(ivf.wallMs, 50), p99: percentile(ivf.wallMs, 99), cpuP99: percentile(ivf.cpuMs, 99), leaked, short };
  }
  if (process.argv[6] === '1') summary.int8 = await int8Sweep(index, queries, exact.results, nprobes, workers);
  summary.peakRssMb = peakRssMb();
  const mem = process.memoryUsage();
  console.log(
    `peak RSS overall: ${(summary.peakRssMb as number).toFixed(0)} MB (now: rss ${(mem.rss / 1048576).toFixed(0)}, ` +
      `JS heap ${(mem.heapUsed / 1048576).toFixed(0)}/${(mem.heapTotal / 1048576).toFixed(0)}, array buffers ${(mem.arrayBuffers / 1048576).toFixed(0)} MB)`,
  );
  console.log(`SUMMARY ${JSON.stringify(summary)}`);
}

/** The vectors of `syntheticSongs` (the FakePeers / throughput-bench catalogue) in batches. */
function* catalogueBatches(n: number, size: number): Generator<VectorBatch> {
  let ids: string[] = [];
  let vectors = new Float32Array(size * 200);
  for (const song of syntheticSongs(n)) {
    vectors.set(song.vector, ids.length * 200);
    ids.push(song.itemId);
    if (ids.length === size) {
      yield { ids, vectors };
      ids = [];
      vectors = new Float32Array(size * 200);
    }
  }
  if (ids.length > 0) yield { ids, vectors: vectors.subarray(0, ids.length * 200) };
}

/**
 * The nprobe sweep of the int8 generation (codes in memory, exact re-rank of the short list from the disk copy):
 * recall@10 of the first 10 results for k = 10 and k = 41 (the similar-songs pool of n = 10), unmasked and with a
 * 50% mask, and the CPU per query.
 */
async function int8Sweep(float: IvfIndex, queries: number[], truth: Neighbour[][], nprobes: number[], workers: number): Promise<Record<string, unknown>[]> {
  const t0 = performance.now();
  const index = await quantiseIndex(float, { mode: 'int8', workers });
  console.log(`int8: quantised in ${((performance.now() - t0) / 1000).toFixed(1)} s (codes ${(index.vectorBytes / 1048576).toFixed(0)} MiB, floats on disk)`);
  for (let i = 0; i < 30; i++) index.searchByRow(queries[i % queries.length]!, { k: 41 });
  const n = float.size;
  const maskRng = new SeededRandom(500);
  const rows: number[] = [];
  for (let r = 0; r < n; r++) if (maskRng.nextFloat() < 0.5) rows.push(r);
  const mask = AvailabilityMask.fromRows(n, rows);
  const maskTruth = queries.map((row) => float.exactSearch(float.getVector(row), { k: K, mask, exclude: [row] }));
  const top10 = (t: Timed): Neighbour[][] => t.results.map((r) => r.slice(0, K));
  const out: Record<string, unknown>[] = [];
  for (const nprobe of nprobes) {
    const k10 = timeQueries(queries, (row, stats) => index.searchByRow(row, { k: K, nprobe, stats }));
    const k41 = timeQueries(queries, (row, stats) => index.searchByRow(row, { k: 41, nprobe, stats }));
    const m41 = timeQueries(queries, (row, stats) => index.searchByRow(row, { k: 41, nprobe, mask, stats }));
    const row = {
      nprobe,
      recallK10: recall(top10(k10), truth),
      recallK41: recall(top10(k41), truth),
      recallMask50K41: recall(top10(m41), maskTruth),
      cpuP50K10: percentile(k10.cpuMs, 50),
      cpuP50K41: percentile(k41.cpuMs, 50),
      cpuMeanK41: k41.cpuMs.reduce((a, b) => a + b, 0) / k41.cpuMs.length,
      cpuP50Mask50K41: percentile(m41.cpuMs, 50),
      codesPerQueryK41: Math.round(k41.distanceComputations / k41.results.length),
    };
    console.log(
      `int8 nprobe=${nprobe}: recall@10 k=10 ${row.recallK10.toFixed(4)}, k=41 ${row.recallK41.toFixed(4)}, 50% mask k=41 ${row.recallMask50K41.toFixed(4)}; ` +
        `CPU p50 k=10 ${row.cpuP50K10.toFixed(3)} ms, k=41 ${row.cpuP50K41.toFixed(3)} ms (mean ${row.cpuMeanK41.toFixed(3)}), 50% mask ${row.cpuP50Mask50K41.toFixed(3)} ms; ` +
        `${row.codesPerQueryK41} codes/query (${((row.codesPerQueryK41 * float.dim) / 1024).toFixed(0)} KiB); load avg ${loadavg().map((x) => x.toFixed(1)).join(' ')}`,
    );
    out.push(row);
  }
  return out;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
