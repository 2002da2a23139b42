/**
 * Cost of one live-library batch on a quantised generation (issue 35 gap 3): `appendRows` on an int8 (or pq)
 * generation of `base` synthetic songs x 200-d, `batches` batches of `batch` songs each, appended in place (the new
 * rows written after the old ones in the generation's own vector file, `VectorFile.grownTo`) and, for comparison, with
 * the copy of the whole vector file the append made before (`copyVectorFile: true`). Prints per mode the wall and CPU
 * ms per batch (median and max), the vector-file bytes written per batch, and whether every appended song is found by
 * a k=1 search of its own vector. The codes (in memory, size x codeSize bytes) are still copied per batch in both.
 *
 * Usage: npm run build && node --max-old-space-size=4096 bench/dist/index/live-append.js [base=200000] [batch=100] [batches=10] [mode=int8]
 */
import { SyntheticMixture } from '@polyphony/testkit';
import { appendRows, buildIvfIndex, quantiseIndex, type IvfIndex } from '@polyphony/vector-engine';
import { loadavg } from 'node:os';
import { takeMixtureRows } from './mixture-rows';

const DIM = 200;

const take = (mix: SyntheticMixture, count: number, streamSeed: number, prefix: string) => takeMixtureRows(mix, count, streamSeed, prefix, DIM);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const base = Number(process.argv[2] ?? 200_000);
  const batch = Number(process.argv[3] ?? 100);
  const batches = Number(process.argv[4] ?? 10);
  const mode = (process.argv[5] ?? 'int8') as 'int8' | 'pq';
  const mix = new SyntheticMixture({ dim: DIM });
  const b = take(mix, base, 1, '');
  let t = performance.now();
  const built = (await buildIvfIndex([{ ids: b.ids, vectors: b.vectors }], { expectedCount: base, dim: DIM })).index;
  const q = await quantiseIndex(built, { mode, ...(mode === 'pq' ? { pqM: 25 } : {}) });
  console.log(`base: ${base} songs x ${DIM}-d, ${mode}, nlist ${q.nlist}, built and quantised in ${Math.round(performance.now() - t)} ms; load avg ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log('vector file | batch | batches | wall ms per batch median / max | CPU ms per batch median | file bytes written per batch | appended songs found (k=1)');
  for (const copy of [false, true]) {
    let gen: IvfIndex = q;
    const wall: number[] = [];
    const cpu: number[] = [];
    let found = 0;
    for (let i = 0; i < batches; i++) {
      const add = take(mix, batch, 100 + i, `b${i}_${copy ? 'c' : 'p'}_`);
      const c0 = process.cpuUsage();
      t = performance.now();
      gen = appendRows(gen, add.ids, add.vectors, { copyVectorFile: copy });
      wall.push(performance.now() - t);
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
      for (let j = 0; j < batch; j++) if (gen.search(add.vectors.subarray(j * DIM, (j + 1) * DIM), { k: 1 })[0]!.row === gen.size - batch + j) found++;
    }
    const bytes = copy ? `${(((base + (batches * batch) / 2) * DIM * 4) / 1048576).toFixed(0)} MiB (the whole file, mean)` : `${((batch * DIM * 4) / 1024).toFixed(0)} KiB (the new rows)`;
    console.log(`${copy ? 'copied (before)' : 'in place'} | ${batch} | ${batches} | ${median(wall).toFixed(1)} / ${Math.max(...wall).toFixed(1)} | ${median(cpu).toFixed(1)} | ${bytes} | ${found}/${batch * batches}`);
  }
  console.log(`load avg after: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
