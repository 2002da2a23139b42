/**
 * Where recall@10 is lost in the default int8 mode (issue 35, "recall@10 >= 0.95 at 1M"): cells not probed vs int8
 * scoring inside the probed cells, per nprobe.
 *
 *   npm run build
 *   flock /work/heavy.lock nice -n 5 node --max-old-space-size=6144 bench/dist/vector-engine/recall-decomposition.js \
 *     [N=1000000] [queries=500] [nprobes=32,64,96,128] [nlist=default] [workers=0] [assignGroups=default]
 *   (bash scripts/bench.sh recall-decomposition-1m)
 *
 * Data: the FakePeers catalogue `syntheticSongs` (20-song artists, 10-song albums, seed 3), the vectors of
 * `default-1m` and of `coarse-quantiser.ts`; one float build (`buildIvfIndex`, default options unless nlist is given:
 * the service's build, bit-identical with or without workers), then `quantiseIndex` int8 with the float copy on
 * disk only (as at 1M in the service). Queries: `queries` stored songs, rows `i * 7919 mod N` (the seeds of
 * `default-1m`), the seed excluded; truth = exact top-10 by brute force over every row (float32 unit vectors,
 * float64 sums), cached in `$TMPDIR/recall-truth-<N>-<queries>.json` for re-runs.
 *
 * Per nprobe it prints recall@10 of:
 *  - `cells`: exact search restricted to the probed cells (the best nprobe cells by exact centroid score) = the share
 *    of true neighbours whose cell is probed. Its loss splits into `misassigned` (the neighbour's cell is not probed
 *    but the cell of its nearest centroid is: the build's approximate assignment, `assignGroups`) and `partition`
 *    (neither is probed); `nearest-cell` = the recall an exact assignment would give (neighbour's nearest cell probed);
 *    `cells + the seed's own cell` = the recall if a similar-songs query also probed its seed's cell;
 *  - `float`: the float IVF query (`searchByRow`, the `CentroidScan` coarse quantiser: equals `cells` when the scan
 *    picks the exact cells);
 *  - `int8 file`: int8 ADC short list (max(50, 1.25 (k + 1)) rows) re-ranked with the exact floats from the file,
 *    exact seed (loss vs `float` = the short list's);
 *  - `int8 codes exact-seed`: short list re-ranked from the codes (normalised reconstruction), exact seed;
 *  - `int8 codes` = the service's similar-songs path at 1M (`INDEX_RERANK_SOURCE=codes`: seed and re-rank from the
 *    codes), also with a short list of 100 (`R100`).
 * and the CPU per query (process.cpuUsage, single thread, fastest of REPEATS passes) of the float, `int8 file` and
 * `int8 codes` queries, with the work of an `int8 codes` query (rows and centroids scored, load-independent). The load average is printed with every row (the machine is shared).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIvfIndex, IvfIndex, type Neighbour, quantiseIndex, type SearchStats } from '@polyphony/vector-engine';
import { dot } from '@polyphony/vectors';
import { recall } from '@polyphony/testkit';
import { catalogueBatches } from './catalogue-batches';

const K = 10;
const DIM = 200;
const REPEATS = 3;

function load(): string {
  return loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
}

function cpuMs(run: () => void): number {
  const c0 = process.cpuUsage();
  run();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}


/** Exact top-K of every seed row (seed excluded) over every row of the float index, one pass over the rows. */
function bruteForce(index: IvfIndex, seeds: number[]): Neighbour[][] {
  const qs = seeds.map((r) => index.getVector(r));
  const best = seeds.map(() => [] as Neighbour[]);
  const worst = new Float64Array(seeds.length).fill(Infinity);
  for (let row = 0; row < index.size; row++) {
    const v = index.getVector(row);
    for (let q = 0; q < seeds.length; q++) {
      if (seeds[q] === row) continue;
      const d = 1 - dot(qs[q]!, 0, v, 0, DIM);
      const list = best[q]!;
      if (list.length >= K && d >= worst[q]!) continue;
      list.push({ row, distance: d });
      list.sort((a, b) => a.distance - b.distance || a.row - b.row);
      if (list.length > K) list.pop();
      if (list.length >= K) worst[q] = list[K - 1]!.distance;
    }
  }
  return best;
}

/** Cell ranks of every centroid for query `q` (0 = best exact score, ties to the lower cell). */
function cellRanks(centroids: Float32Array, nlist: number, q: Float32Array): Int32Array {
  const scores = new Float64Array(nlist);
  for (let c = 0; c < nlist; c++) scores[c] = dot(centroids, c * DIM, q, 0, DIM);
  const order = Array.from({ length: nlist }, (_, c) => c).sort((a, b) => scores[b]! - scores[a]! || a - b);
  const rank = new Int32Array(nlist);
  order.forEach((c, i) => (rank[c] = i));
  return rank;
}

function nearestCell(centroids: Float32Array, nlist: number, v: Float32Array): number {
  let best = 0;
  let bestScore = -Infinity;
  for (let c = 0; c < nlist; c++) {
    const s = dot(centroids, c * DIM, v, 0, DIM);
    if (s > bestScore) {
      bestScore = s;
      best = c;
    }
  }
  return best;
}

function timed(rows: number[], run: (row: number) => Neighbour[]): { results: Neighbour[][]; ms: number } {
  let results: Neighbour[][] = [];
  for (let i = 0; i < Math.min(50, rows.length); i++) run(rows[i]!); // warm-up
  const ms = Math.min(...Array.from({ length: REPEATS }, () => cpuMs(() => (results = rows.map(run)))));
  return { results, ms: ms / rows.length };
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 1_000_000);
  const queryCount = Number(process.argv[3] ?? 500);
  const nprobes = (process.argv[4] ?? '32,64,96,128').split(',').map(Number);
  const nlistArg = process.argv[5] && process.argv[5] !== 'default' ? Number(process.argv[5]) : undefined;
  const workers = Number(process.argv[6] ?? 0);
  const assignGroups = process.argv[7] && process.argv[7] !== 'default' ? Number(process.argv[7]) : undefined;
  const t0 = performance.now();
  const { index: float, report } = await buildIvfIndex(catalogueBatches(n, 1000, DIM), { expectedCount: n, workers, ...(nlistArg ? { nlist: nlistArg } : {}), ...(assignGroups ? { assignGroups } : {}) });
  const { centroids, nlist } = float.parts();
  console.log(`recall decomposition: N=${n} catalogue, nlist ${nlist} (largest cell ${report.largestCell}), assign groups ${assignGroups ?? 'default'} (assign ${(report.timingsMs.assign / 1000).toFixed(1)} s wall, ${(report.assignmentDotProducts / n).toFixed(0)} dot products per row), ${queryCount} queries, k=${K}; float build ${((performance.now() - t0) / 1000).toFixed(0)} s; node ${process.version}; load ${load()}`);
  const seeds = Array.from({ length: queryCount }, (_, i) => (i * 7919) % n);
  const cache = join(tmpdir(), `recall-truth-${n}-${queryCount}.json`);
  let truth: Neighbour[][];
  if (existsSync(cache)) truth = JSON.parse(readFileSync(cache, 'utf8')) as Neighbour[][];
  else {
    const t1 = performance.now();
    truth = bruteForce(float, seeds);
    writeFileSync(cache, JSON.stringify(truth));
    console.log(`brute-force truth in ${((performance.now() - t1) / 1000).toFixed(0)} s (cached in ${cache}); load ${load()}`);
  }

  // Assignment quality of the true neighbours: assigned cell vs exact nearest centroid.
  const nearestOf = new Map<number, number>();
  for (const list of truth) for (const t of list) if (!nearestOf.has(t.row)) nearestOf.set(t.row, nearestCell(centroids, nlist, float.getVector(t.row)));
  let misassigned = 0;
  for (const [row, c] of nearestOf) if (float.cellOf(row) !== c) misassigned++;
  console.log(`true neighbours not in their nearest centroid's cell: ${misassigned} of ${nearestOf.size} (${((100 * misassigned) / nearestOf.size).toFixed(1)} %)`);
  const ranks = seeds.map((r) => cellRanks(centroids, nlist, float.getVector(r)));

  const q8 = await quantiseIndex(float, { mode: 'int8', workers: 0, rerank: 'codes' });
  const qParts = q8.parts();
  const q8file = new IvfIndex({ ...qParts, quantised: { ...qParts.quantised!, rerank: 'file' } });
  if (!q8.codesServeQueries || q8file.codesServeQueries) throw new Error('int8 variants are not the intended re-rank sources');
  const exactSeeds = seeds.map((r) => q8file.getVector(r));
  console.log(`int8 quantised (codes ${(q8.memory().codes / 1048576).toFixed(1)} MiB); load ${load()}`);

  for (const nprobe of nprobes) {
    let inCells = 0;
    let inCellsOrSeed = 0;
    let inNearest = 0;
    let lostMis = 0;
    let lostPartition = 0;
    let total = 0;
    truth.forEach((list, i) => {
      const rank = ranks[i]!;
      const seedCell = float.cellOf(seeds[i]!);
      for (const t of list) {
        total++;
        const probed = rank[float.cellOf(t.row)]! < nprobe;
        if (probed || float.cellOf(t.row) === seedCell) inCellsOrSeed++;
        const nearestProbed = rank[nearestOf.get(t.row)!]! < nprobe;
        if (probed) inCells++;
        if (nearestProbed) inNearest++;
        if (!probed && nearestProbed) lostMis++;
        if (!probed && !nearestProbed) lostPartition++;
      }
    });
    const fl = timed(seeds, (r) => float.searchByRow(r, { k: K, nprobe }));
    const file = timed(seeds, (r) => q8file.searchByRow(r, { k: K, nprobe }));
    const exactSeed = seeds.map((r, i) => q8.search(exactSeeds[i]!, { k: K, nprobe, exclude: [r] }));
    const codes = timed(seeds, (r) => q8.searchByRow(r, { k: K, nprobe }));
    const codes100 = seeds.map((r) => q8.searchByRow(r, { k: K, nprobe, rerank: 100 }));
    // Work per query, independent of the load: rows scored (the probed cells' sizes) and centroids scored.
    let rowsScored = 0;
    let centroidsScored = 0;
    for (const r of seeds) {
      const stats: SearchStats = { mode: 'ivf', cellsProbed: 0, distanceComputations: 0, centroidComputations: 0 };
      q8.searchByRow(r, { k: K, nprobe, stats });
      rowsScored += stats.distanceComputations;
      centroidsScored += stats.centroidComputations;
    }
    const f = (x: number): string => x.toFixed(4);
    console.log(
      `nprobe ${String(nprobe).padStart(3)} (${((100 * nprobe) / nlist).toFixed(2)} % of cells): cells ${f(inCells / total)} (lost: misassigned ${f(lostMis / total)}, partition ${f(lostPartition / total)}; ` +
        `nearest-cell ${f(inNearest / total)}; cells + the seed's own cell ${f(inCellsOrSeed / total)}); float ${f(recall(fl.results, truth))}; int8 file ${f(recall(file.results, truth))}; ` +
        `int8 codes exact-seed ${f(recall(exactSeed, truth))}; int8 codes ${f(recall(codes.results, truth))} (R100 ${f(recall(codes100, truth))}); ` +
        `CPU ms/query float ${fl.ms.toFixed(3)}, int8 file ${file.ms.toFixed(3)}, int8 codes ${codes.ms.toFixed(3)}; ` +
        `rows scored per query ${(rowsScored / seeds.length).toFixed(0)}, centroids ${(centroidsScored / seeds.length).toFixed(0)}; load ${load()}`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
