/**
 * JavaScript against WebAssembly SIMD kernels of the IVF index, in the same run (issue 19 "faster scan kernels").
 *
 *   npx tsc -b bench && node bench/dist/vector-engine/simd-kernels.js
 *
 * Five kernels on random data, 200-d, each timed by CPU time (process.cpuUsage, load-independent) over
 * enough repetitions for ~1 s:
 *  - nearest centroid (build: k-means and coarse assignment): 4096 points x 64 centroids,
 *    `nearestOfFour` (JS) vs `nearest4` (wasm);
 *  - dot products of one vector with a block (assignment through CentroidTree): 64 rows, `dot` vs `dots`;
 *  - the same with float64 sums bit-identical to `dot` (query centroid scores, CentroidGroups): `dot` vs `dotsF64`;
 *  - int8 ADC (query scan): 8192 codes, `ScalarQuantiser.scoreRange` (float table, JS) vs `dotU8I16`;
 *  - PQ ADC (query scan): 8192 codes of m = 25, `ProductQuantiser.scoreRange` vs `pqScores`.
 * Prints multiply-adds (or look-ups) per second and the ratio, with the load average.
 */
import { cpus, loadavg } from 'node:os';
import { dot, nearestOfFour, SeededRandom } from '@polyphony/vectors';
import { KernelMemory, ProductQuantiser, ScalarQuantiser } from '@polyphony/vector-engine';

const DIM = 200;
const rng = new SeededRandom(7);
const rand = (n: number): Float32Array => Float32Array.from({ length: n }, () => rng.nextFloat() * 2 - 1);

function cpuTime(fn: () => void): number {
  fn(); // warm-up
  let reps = 1;
  for (;;) {
    const c0 = process.cpuUsage();
    for (let r = 0; r < reps; r++) fn();
    const c = process.cpuUsage(c0);
    const s = (c.user + c.system) / 1e6;
    if (s > 0.5) return s / reps;
    reps *= 2;
  }
}

function line(name: string, ops: number, js: number, wasm: number, unit: string): void {
  console.log(`${name}: JS ${(ops / js / 1e9).toFixed(2)} G${unit}/s, wasm ${(ops / wasm / 1e9).toFixed(2)} G${unit}/s, ratio ${(js / wasm).toFixed(1)}x`);
}

function main(): void {
  const l = loadavg();
  console.log(`SIMD kernels vs JavaScript, ${DIM}-d, node ${process.version}, load avg ${l.map((x) => x.toFixed(2)).join(' ')}, ${cpus().length} cores`);
  const km = new KernelMemory(1 << 24);

  // nearest centroid
  const n = 4096;
  const k = 64;
  const pts = rand(n * DIM);
  const cents = rand(k * DIM);
  const best = new Int32Array(4);
  const bestScore = new Float64Array(4);
  const js1 = cpuTime(() => {
    for (let i = 0; i < n; i += 4) nearestOfFour(pts, i * DIM, (i + 1) * DIM, (i + 2) * DIM, (i + 3) * DIM, cents, k, DIM, best, bestScore);
  });
  const xp = km.allocF32(pts);
  const cp = km.allocF32(cents);
  const ip = km.alloc(n * 4);
  const sp = km.alloc(n * 4);
  const w1 = cpuTime(() => km.nearest4(xp, n, cp, k, DIM, ip, sp));
  line('nearest centroid (4096 x 64)', n * k * DIM, js1, w1, 'madd');

  // dots of one vector against a block
  const rows = 64;
  const out = new Float64Array(rows);
  const js2 = cpuTime(() => {
    for (let r = 0; r < 256; r++) for (let j = 0; j < rows; j++) out[j] = dot(cents, j * DIM, pts, r * DIM, DIM);
  });
  const op = km.alloc(rows * 4);
  const w2 = cpuTime(() => {
    for (let r = 0; r < 256; r++) km.dots(xp + r * DIM * 4, cp, rows, DIM, op);
  });
  line('dots (1 x 64 rows)', 256 * rows * DIM, js2, w2, 'madd');
  const op64 = km.alloc(rows * 8);
  const w2f64 = cpuTime(() => {
    for (let r = 0; r < 256; r++) km.dotsF64(xp + r * DIM * 4, cp, rows, DIM, op64);
  });
  line('dotsF64 (1 x 64 rows, same float64 sums as dot)', 256 * rows * DIM, js2, w2f64, 'madd');

  // int8 ADC
  const codesN = 8192;
  const codes = new Uint8Array(codesN * DIM);
  for (let i = 0; i < codes.length; i++) codes[i] = rng.nextInt(256);
  const sq = new ScalarQuantiser(DIM, rand(DIM), Float32Array.from(rand(DIM), (v) => Math.abs(v) / 255 + 1e-4));
  const table = new Float32Array(DIM);
  sq.prepare(rand(DIM), table);
  const scores = new Float64Array(codesN);
  const js3 = cpuTime(() => sq.scoreRange(codes, 0, codesN, table, scores));
  const cop = km.alloc(codes.length);
  km.u8.set(codes, cop);
  const tp = km.alloc(DIM * 2);
  for (let d = 0; d < DIM; d++) km.i16[(tp >> 1) + d] = rng.nextInt(65535) - 32767;
  const outp = km.alloc(codesN * 4);
  const w3 = cpuTime(() => km.dotU8I16(cop, codesN, DIM, tp, outp));
  line('int8 ADC (8192 codes)', codesN * DIM, js3, w3, 'madd');

  // PQ ADC
  const m = 25;
  const pq = new ProductQuantiser(DIM, m, rand(m * 256 * (DIM / m)));
  const pqTable = new Float32Array(m * 256);
  pq.prepare(rand(DIM), pqTable);
  const pqCodes = codes.subarray(0, codesN * m);
  const js4 = cpuTime(() => pq.scoreRange(pqCodes, 0, codesN, pqTable, scores));
  const ptp = km.allocF32(pqTable);
  const w4 = cpuTime(() => km.pqScores(cop, codesN, m, ptp, outp));
  line('PQ ADC (8192 codes, m = 25)', codesN * m, js4, w4, 'lookup');
}

main();
