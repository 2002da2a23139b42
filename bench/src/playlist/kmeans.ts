/**
 * Clustering benchmark: k-means (k-means++ seeding, 3 restarts, at most 50 Lloyd iterations, training
 * sample 10 000) on synthetic unit vectors of 200 dimensions drawn around k random centres, as a
 * clustering run sees a server's song set. Prints wall time, iterations, purity against the generating
 * centres (fraction of points whose cluster's majority centre is their own), the longest event-loop
 * stall measured by a 1 ms timer while it runs (the HTTP server of the process shares that loop), and
 * the CPU seconds used (wall time inflates on a loaded machine; CPU time does not).
 *
 * Run: npm run build && node bench/dist/playlist/kmeans.js [n ...]
 */
import { kmeans, mulberry32, normaliseInPlace } from '@polyphony/vectors';
import { chooseK, DEFAULT_MAX_CLUSTERS, DEFAULT_MIN_CLUSTERS } from '@polyphony/playlist';

const D = 200;

function gaussian(rng: () => number): number {
  // Box-Muller transform.
  const u = Math.max(rng(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng());
}

function dataset(n: number, k: number, noise: number, seed: number): { points: Float32Array; truth: Int32Array } {
  const rng = mulberry32(seed);
  const centres = Array.from({ length: k }, () => {
    const c = new Float32Array(D);
    for (let t = 0; t < D; t++) c[t] = gaussian(rng);
    normaliseInPlace(c);
    return c;
  });
  const points = new Float32Array(n * D);
  const truth = new Int32Array(n);
  const row = new Float32Array(D);
  for (let i = 0; i < n; i++) {
    const g = Math.floor(rng() * k);
    truth[i] = g;
    for (let t = 0; t < D; t++) row[t] = centres[g]![t]! + noise * gaussian(rng);
    normaliseInPlace(row);
    points.set(row, i * D);
  }
  return { points, truth };
}

function purity(assign: Int32Array, truth: Int32Array, k: number): number {
  const counts = new Map<number, Map<number, number>>();
  for (let i = 0; i < assign.length; i++) {
    let m = counts.get(assign[i]!);
    if (!m) counts.set(assign[i]!, (m = new Map()));
    m.set(truth[i]!, (m.get(truth[i]!) ?? 0) + 1);
  }
  let agree = 0;
  for (const m of counts.values()) agree += Math.max(...m.values());
  void k;
  return agree / assign.length;
}

async function run(n: number): Promise<void> {
  const k = chooseK(n, { minClusters: DEFAULT_MIN_CLUSTERS, maxClusters: DEFAULT_MAX_CLUSTERS });
  // Noise per dimension 0.06 puts a point about 0.85 (cosine) from its centre: overlapping but separable groups.
  const { points, truth } = dataset(n, k, 0.06, 42);
  let maxStall = 0;
  let lastTick = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    maxStall = Math.max(maxStall, now - lastTick);
    lastTick = now;
  }, 1);
  const rssBefore = process.memoryUsage().rss;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await kmeans(points, n, D, { k });
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  clearInterval(timer);
  const rssAfter = process.memoryUsage().rss;
  console.log(
    JSON.stringify({
      n,
      d: D,
      k,
      trained: r.trained,
      iterations: r.iterations,
      wallSeconds: +(ms / 1000).toFixed(2),
      cpuSeconds: +((cpu.user + cpu.system) / 1e6).toFixed(2),
      purity: +purity(r.assignments, truth, k).toFixed(4),
      maxEventLoopStallMs: +maxStall.toFixed(1),
      rssDeltaMiB: +((rssAfter - rssBefore) / 2 ** 20).toFixed(1),
    }),
  );
}

async function main(): Promise<void> {
  const sizes = process.argv.slice(2).map(Number).filter((x) => x > 0);
  for (const n of sizes.length ? sizes : [2_000, 10_000, 50_000]) await run(n);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
