/**
 * Coarse quantiser comparison of the IVF index (issue 35): which cells a query probes, and what that costs.
 *
 *   npm run build
 *   flock /work/heavy.lock nice -n 5 node --max-old-space-size=4096 bench/dist/vector-engine/coarse-quantiser.js \
 *     [N=200000] [data=catalogue|mixture] [queries=100] [nprobes=32,64,128] [int8=1]
 *   (bash scripts/bench.sh coarse-200k / coarse-1m run both data kinds)
 *
 * Data: `catalogue` = the FakePeers catalogue `syntheticSongs` (20-song artists, 10-song albums around independent
 * N(0, 1) centres, seed 3: the vectors of the throughput benchmark `default-1m`); `mixture` = SyntheticMixture
 * (500 components in 12-d subspaces, what the centroid groups were tuned on). A float index is built (workers 0),
 * then, on the same centroids and cells, three coarse quantisers rank the cells of each query:
 *  - `full`: every centroid scored exactly (float64 `dot` on the WebAssembly SIMD kernel `dotsF64`, bit-identical);
 *  - `groups`: `CentroidGroups` (sqrt(nlist) spherical k-means centres, 16 * nprobe centroids of the best groups);
 *  - `scan`: `CentroidScan` (every centroid on 8-bit codes, `dotU8I16`, then the best max(32, 2 * nprobe) exactly;
 *    `scan4`: the best max(32, 4 * nprobe)).
 * Per nprobe and quantiser it prints: `cells` = fraction of the exact best nprobe cells the quantiser picks (the
 * coarse quantiser's own recall), `coarse ms` = CPU per query of the ranking step alone, `recall@10` of the whole
 * query against brute force (seed song excluded, query = a stored song, like a similar-songs request) and its CPU per
 * query, the fastest of REPEATS passes (float generation, then the int8 generation the service holds by default: codes in memory, exact re-rank
 * from the disk copy). CPU = process.cpuUsage per query, single thread; the load average is printed with every row
 * (the machine is shared: compare rows of one run).
 */
import { loadavg } from 'node:os';
import { buildIvfIndex, CentroidGroups, CentroidScan, type CoarseQuantiser, IvfIndex, type Neighbour, quantiseIndex, type VectorBatch } from '@polyphony/vector-engine';
import { dot } from '@polyphony/vectors';
import { recall, SyntheticMixture } from '@polyphony/testkit';
import { catalogueBatches } from './catalogue-batches';

const K = 10;
const DIM = 200;
/** Timed passes over the queries; the fastest is reported (the machine is shared: the others carry preemption). */
const REPEATS = 3;

function load(): string {
  return loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
}


/** The best `probe` cells of `scores` (higher first, ties to the lower cell), as a set. */
function best(scores: Float64Array, probe: number): Set<number> {
  const order = Array.from({ length: scores.length }, (_, c) => c).filter((c) => scores[c] !== -Infinity);
  order.sort((a, b) => scores[b]! - scores[a]! || a - b);
  return new Set(order.slice(0, probe));
}

function cpuMs(run: () => void): number {
  const c0 = process.cpuUsage();
  run();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

interface Variant {
  name: string;
  coarse: CoarseQuantiser | null;
}

/** Cells picked and CPU of the ranking step alone, per quantiser, against the exact best `probe` cells. */
function coarseOnly(variant: Variant, centroids: Float32Array, nlist: number, queries: Float32Array[], probe: number): { cells: number; ms: number } {
  let hit = 0;
  const picked: Set<number>[] = [];
  const c = variant.coarse;
  const all = queries.map(() => new Float64Array(nlist));
  const rank = (): void =>
    queries.forEach((q, i) => {
      const scores = all[i]!;
      if (c instanceof CentroidScan && c.rescore(probe) * 2 < nlist) c.scoreBest(q, centroids, scores, probe);
      else if (c instanceof CentroidGroups && probe * 16 * 2 < nlist) c.scoreBest(q, centroids, scores, probe * 16);
      else if (c) c.scoreAll(q, centroids, scores);
      else for (let j = 0; j < nlist; j++) scores[j] = dot(centroids, j * DIM, q, 0, DIM);
    });
  rank(); // warm-up
  const ms = Math.min(...Array.from({ length: REPEATS }, () => cpuMs(rank)));
  for (const scores of all) picked.push(best(scores, probe));
  const exact = new Float64Array(nlist);
  queries.forEach((q, i) => {
    for (let j = 0; j < nlist; j++) exact[j] = dot(centroids, j * DIM, q, 0, DIM);
    for (const cell of best(exact, probe)) if (picked[i]!.has(cell)) hit++;
  });
  return { cells: hit / (queries.length * probe), ms: ms / queries.length };
}

function sweep(label: string, base: IvfIndex, variants: Variant[], rows: number[], truth: Neighbour[][], nprobes: number[]): void {
  const parts = base.parts();
  const indexes = variants.map((v) => new IvfIndex({ ...parts, groups: v.coarse }));
  const queries = rows.map((r) => {
    const v = base.getVector(r);
    let n = 0;
    for (let d = 0; d < DIM; d++) n += v[d]! * v[d]!;
    return v.map((x) => x / Math.sqrt(n));
  });
  for (const ix of indexes) for (let i = 0; i < 20; i++) ix.searchByRow(rows[i % rows.length]!, { k: K }); // warm-up
  for (const nprobe of nprobes) {
    variants.forEach((v, i) => {
      const co = coarseOnly(v, parts.centroids, parts.nlist, queries, nprobe);
      let results: Neighbour[][] = [];
      const ms = Math.min(
        ...Array.from({ length: REPEATS }, () =>
          cpuMs(() => {
            results = rows.map((r) => indexes[i]!.searchByRow(r, { k: K, nprobe }));
          }),
        ),
      );
      console.log(
        `${label} nprobe ${String(nprobe).padStart(3)} ${v.name.padEnd(6)}: cells ${co.cells.toFixed(3)}, coarse ${co.ms.toFixed(3)} ms; ` +
          `recall@10 ${recall(results, truth).toFixed(3)}, query ${(ms / rows.length).toFixed(3)} ms CPU; load ${load()}`,
      );
    });
  }
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 200_000);
  const data = process.argv[3] ?? 'catalogue';
  const queryCount = Number(process.argv[4] ?? 100);
  const nprobes = (process.argv[5] ?? '32,64,128').split(',').map(Number);
  const int8 = (process.argv[6] ?? '1') === '1';
  if (data !== 'catalogue' && data !== 'mixture') throw new Error(`data must be catalogue or mixture, not ${data}`);
  const mixture = new SyntheticMixture();
  async function* source(): AsyncGenerator<VectorBatch> {
    if (data === 'catalogue') yield* catalogueBatches(n, 1000, DIM);
    else for (const b of mixture.batches(n, 1000)) yield { ids: b.ids, vectors: b.vectors };
  }
  const t0 = performance.now();
  const { index } = await buildIvfIndex(source(), { expectedCount: n, workers: 0 });
  const { centroids, nlist } = index.parts();
  console.log(`coarse quantisers: N=${n} ${data}, nlist ${nlist}, ${queryCount} queries, k=${K}; float build ${((performance.now() - t0) / 1000).toFixed(0)} s; node ${process.version}; load ${load()}`);
  let groups: CentroidGroups | undefined;
  let scan: CentroidScan | undefined;
  const fitGroups = cpuMs(() => (groups = CentroidGroups.fit(centroids, nlist, DIM)));
  const fitScan = cpuMs(() => (scan = CentroidScan.fit(centroids, nlist, DIM)));
  const scan4 = CentroidScan.fit(centroids, nlist, DIM, 4);
  const full = CentroidScan.fit(centroids, nlist, DIM, Infinity);
  if (!groups || !scan || !scan4 || !full) throw new Error(`nlist ${nlist} is below the coarse quantisers' minimum`);
  console.log(`fit: groups ${fitGroups.toFixed(0)} ms CPU (${(groups.bytes / 1048576).toFixed(1)} MiB), scan ${fitScan.toFixed(0)} ms CPU (${(scan.bytes / 1048576).toFixed(1)} MiB)`);
  const variants: Variant[] = [
    { name: 'full', coarse: full },
    { name: 'groups', coarse: groups },
    { name: 'scan', coarse: scan },
    { name: 'scan4', coarse: scan4 },
  ];
  const rows = Array.from({ length: queryCount }, (_, i) => (i * 7919) % n);
  const truth = rows.map((r) => index.exactSearch(index.getVector(r), { k: K, exclude: [r] }));
  sweep('float', index, variants, rows, truth, nprobes);
  if (int8) {
    const q = await quantiseIndex(index, { mode: 'int8', workers: 0 });
    sweep('int8 ', q, variants, rows, truth, nprobes);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
