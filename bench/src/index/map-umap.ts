/**
 * Time of the map layout of one index generation (issue 17 "Map": UMAP computed server-side once per
 * generation, bounded time at large catalogues), against the PCA projection it replaces.
 *
 *   npx tsc -b bench
 *   node bench/dist/index/map-umap.js [N=10000] [fitRows=UMAP_FIT_ROWS] [worker|in-thread]
 *
 * Builds one float generation over N synthetic 200-d vectors (SyntheticMixture, 500 components, the same
 * stand-in as ivf-1m.ts), then times `umapLayout` (wall clock and process CPU) and `fitPca` + `projectAll`,
 * (and the event-loop delay meanwhile: what a request of the replica waits at most), and reports how well each map keeps the mixture's components together: the share of songs whose nearest
 * point on the map belongs to the same component, over 2000 random songs. Load average and cores are
 * printed with the figures: the machine is shared.
 */
import { cpus, loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fitPca, projectAll, UMAP_FIT_ROWS, umapLayout } from '@polyphony/index';
import { mapNeighbourPurity, SyntheticMixture } from '@polyphony/testkit';
import { buildIvfIndex, CooperativeScheduler } from '@polyphony/vector-engine';
import { SeededRandom } from '@polyphony/vectors';

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; wallMs: number; cpuMs: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const cpu = process.cpuUsage(c0);
  return { value, wallMs: Math.round(performance.now() - t0), cpuMs: Math.round((cpu.user + cpu.system) / 1000) };
}

/** Share of `probes` random rows (seeded, repeats possible) whose nearest other map point carries the same label. */
function purity(coords: Float32Array, label: (row: number) => number, probes: number): number {
  const rng = new SeededRandom(99);
  const n = coords.length / 2;
  return mapNeighbourPurity(coords, label, Array.from({ length: probes }, () => rng.nextInt(n)));
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 10_000);
  const fitRows = Number(process.argv[3] ?? UMAP_FIT_ROWS);
  const mixture = new SyntheticMixture({ clusters: Math.max(20, Math.round(n / 200)) });
  const labels = new Map<string, number>();
  const batches = [];
  for (const b of mixture.batches(n, 10_000)) {
    b.ids.forEach((id, i) => labels.set(id, b.labels[i]!));
    batches.push({ ids: b.ids, vectors: b.vectors });
  }
  const index = (await buildIvfIndex(batches, { dim: 200 })).index;
  const label = (row: number) => labels.get(index.idOf(row))!;
  const inThread = process.argv[4] === 'in-thread';
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const umap = await timed(() => umapLayout(index, new CooperativeScheduler(10), { fitRows, inThread }));
  delay.disable();
  const pca = await timed(async () => projectAll(index, (await fitPca(index))!));
  console.log(
    JSON.stringify({
      n,
      nlist: index.nlist,
      components: mixture.options.clusters,
      fitRows,
      umap: { wallMs: umap.wallMs, cpuMs: umap.cpuMs, fit: inThread ? 'in-thread' : 'worker', eventLoopDelayMaxMs: Math.round(delay.max / 1e6), eventLoopDelayP99Ms: Math.round(delay.percentile(99) / 1e6), neighbourPurity: purity(umap.value!, label, 2000) },
      pca: { wallMs: pca.wallMs, cpuMs: pca.cpuMs, neighbourPurity: purity(pca.value, label, 2000) },
      loadavg: loadavg().map((x) => Math.round(x * 100) / 100),
      cores: cpus().length,
    }),
  );
}

void main();
