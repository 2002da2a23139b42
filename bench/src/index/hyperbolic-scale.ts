/**
 * Cost of the hyperbolic layout at catalogue scale (issue 32): CPU of `buildPoincareBall` (what every index generation
 * pays before it is served) and of one full scan of the ball, the inner loop of /api/hyperbolic/similar (one per
 * query) and of each journey point (one per interior song), on synthetic clustered unit vectors (200-d, 64 clusters;
 * the vectors' content does not change the cost).
 *
 * Usage: npm run build && node bench/dist/index/hyperbolic-scale.js [songs=100000]
 * Prints CPU ms (process.cpuUsage, user + system) and wall ms; the shared machine's load makes wall figures noisy.
 */
import { ballBytes, ballDistanceTo, ballNorm2, ballPoint, ballRadius, buildPoincareBall, radiusToDistance } from '@polyphony/index';

function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 100_000);
  const dim = 200;
  let s = 12345;
  const rand = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
  const centres = Array.from({ length: 64 }, () => Float32Array.from({ length: dim }, rand));
  const data = new Float32Array(n * dim);
  for (let r = 0; r < n; r++) {
    const c = centres[r % 64]!;
    let m = 0;
    for (let d = 0; d < dim; d++) {
      const v = c[d]! + 0.6 * rand();
      data[r * dim + d] = v;
      m += v * v;
    }
    m = Math.sqrt(m);
    for (let d = 0; d < dim; d++) data[r * dim + d]! /= m;
  }
  const input = { size: n, dim, getVector: (row: number) => data.slice(row * dim, (row + 1) * dim) };
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  return buildPoincareBall(input).then((ball) => {
    const c1 = process.cpuUsage(c0);
    const w1 = performance.now();
    console.log(`hyperbolic ball of ${n} songs (${dim}-d -> ${ball.dim}-d): build ${((c1.user + c1.system) / 1e3).toFixed(0)} ms CPU, ${(w1 - w0).toFixed(0)} ms wall; ${ballBytes(ball) / 1e6} MB (${ball.points instanceof Int16Array ? 'int16' : 'float32'} points)`);
    const scans = 20;
    // The scan of /api/hyperbolic/similar (mode similar, radial_spread 0.5): Poincaré distance to the seed plus the
    // radial term, which reads every row's radius: computed on demand from its point in a compact ball (ballRadius),
    // or from a stored float32 table (the layout before issue 35's cut, 4 bytes a song), both timed here.
    const stored = Float32Array.from({ length: n }, (_, r) => ballRadius(ball, r));
    const scan = (radiusOf: (row: number) => number): { ms: number; sink: number } => {
      const c2 = process.cpuUsage();
      let sink = 0;
      for (let q = 0; q < scans; q++) {
        const seed = (q * 7919) % n;
        let best = Infinity;
        const p = ballPoint(ball, seed);
        const p2 = ballNorm2(ball, seed);
        const rhoS = radiusToDistance(radiusOf(seed));
        for (let r = 0; r < n; r++) if (r !== seed) best = Math.min(best, ballDistanceTo(ball, p, p2, r) + 0.5 * Math.abs(radiusToDistance(radiusOf(r)) - rhoS));
        sink += best;
      }
      const c3 = process.cpuUsage(c2);
      return { ms: (c3.user + c3.system) / 1e3 / scans, sink };
    };
    // Interleaved, twice each, so a change of machine speed shows as spread.
    const runs: Array<[string, { ms: number; sink: number }]> = [];
    for (let i = 0; i < 2; i++) {
      runs.push(['radius on demand', scan((r) => ballRadius(ball, r))]);
      runs.push(['radius from a stored table', scan((r) => stored[r]!)]);
    }
    for (const [name, r] of runs) console.log(`one full scan (similar query, or one journey point), ${name}: ${r.ms.toFixed(1)} ms CPU (mean of ${scans}; checksum ${r.sink.toFixed(6)})`);
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
