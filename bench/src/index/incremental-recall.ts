/**
 * Recall of a generation grown by the live library (issue 35 measure "recall@10 after 10%, 30% and 100% growth by
 * incremental adds compared with a fresh build"): a float IVF generation is built on `base` synthetic songs
 * (testkit SyntheticMixture, 200-d, 500 components), then songs are appended with `appendRows` (nearest existing
 * cell, no training) until the library grew by 10%, 30% and 100%; at each step recall@10 (default nprobe, 200 queries
 * drawn from the same mixture, not indexed) against brute force over the same rows is compared with a fresh build of
 * those rows. Two growth kinds: "same mix" (new songs from the library's own components) and "new genres" (new songs
 * from 100 components the build never saw: the case where cells drift). Also printed: the drift measures
 * (measureDrift: cell imbalance, probe recall) and the append time against the fresh build time.
 *
 * Usage: npm run build && node --max-old-space-size=4096 bench/dist/index/incremental-recall.js [base=100000] [queries=200]
 */
import { SyntheticMixture, recall } from '@polyphony/testkit';
import { appendRows, buildIvfIndex, type IvfIndex } from '@polyphony/vector-engine';
import { measureDrift } from '@polyphony/index';
import { takeMixtureRows } from './mixture-rows';

const DIM = 200;
const K = 10;

const take = (mix: SyntheticMixture, count: number, streamSeed: number, prefix: string) => takeMixtureRows(mix, count, streamSeed, prefix, DIM);

function recallOf(index: IvfIndex, queries: Float32Array, nq: number): number {
  const found: Array<{ row: number }[]> = [];
  const truth: Array<{ row: number }[]> = [];
  for (let q = 0; q < nq; q++) {
    const v = queries.subarray(q * DIM, (q + 1) * DIM);
    found.push(index.search(v, { k: K }));
    truth.push(index.exactSearch(v, { k: K }));
  }
  return recall(found, truth);
}

async function main(): Promise<void> {
  const base = Number(process.argv[2] ?? 100_000);
  const nq = Number(process.argv[3] ?? 200);
  const mix = new SyntheticMixture({ dim: DIM });
  const other = new SyntheticMixture({ dim: DIM, seed: 98765, clusters: 100 });
  const b = take(mix, base, 1, '');
  let t = performance.now();
  const built = (await buildIvfIndex([{ ids: b.ids, vectors: b.vectors }], { expectedCount: base, dim: DIM })).index;
  const baseBuildMs = performance.now() - t;
  console.log(`base: ${base} songs x ${DIM}-d, nlist ${built.nlist}, built in ${Math.round(baseBuildMs)} ms; recall@${K} (nprobe ${built.defaultNprobe}) ${recallOf(built, take(mix, nq, 77, 'q').vectors, nq).toFixed(4)}`);
  console.log('growth | kind | songs | recall@10 grown | recall@10 fresh build | cell imbalance grown / fresh | probe recall | append ms wall (CPU) this step | fresh build ms wall | rebuild asked');
  for (const kind of ['same mix', 'new genres'] as const) {
    let grown = built;
    let have = 0;
    const all = { ids: [...b.ids], parts: [b.vectors] };
    for (const pct of [10, 30, 100]) {
      const want = Math.round((base * pct) / 100) - have;
      const src = kind === 'same mix' ? mix : other;
      const add = take(src, want, 100 + pct, `${kind === 'same mix' ? 'a' : 'g'}${pct}_`);
      t = performance.now();
      const c0 = process.cpuUsage();
      grown = appendRows(grown, add.ids, add.vectors);
      const appendMs = performance.now() - t;
      const c1 = process.cpuUsage(c0);
      const appendCpuMs = (c1.user + c1.system) / 1000;
      have += want;
      all.ids.push(...add.ids);
      all.parts.push(add.vectors);
      const vectors = new Float32Array(all.ids.length * DIM);
      let at = 0;
      for (const p of all.parts) {
        vectors.set(p, at);
        at += p.length;
      }
      t = performance.now();
      const fresh = (await buildIvfIndex([{ ids: all.ids, vectors }], { expectedCount: all.ids.length, dim: DIM })).index;
      const freshMs = performance.now() - t;
      // Queries: half from the library's mix, half from the growth's source (the new songs' neighbourhoods).
      const qa = take(mix, nq / 2, 555, 'qa');
      const qb = take(src, nq / 2, 556, 'qb');
      const queries = new Float32Array(nq * DIM);
      queries.set(qa.vectors, 0);
      queries.set(qb.vectors, (nq / 2) * DIM);
      const drift = await measureDrift(grown, base);
      const freshImb = (() => {
        let largest = 0;
        for (const s of fresh.cellSizes()) largest = Math.max(largest, s);
        return largest / (fresh.size / fresh.nlist);
      })();
      console.log(
        `${pct}% | ${kind} | ${grown.size} | ${recallOf(grown, queries, nq).toFixed(4)} | ${recallOf(fresh, queries, nq).toFixed(4)} | ${drift.cellImbalance.toFixed(1)} / ${freshImb.toFixed(1)} | ${drift.probeRecall.toFixed(3)} | ${Math.round(appendMs)} (${Math.round(appendCpuMs)} CPU) | ${Math.round(freshMs)} | ${drift.reasons.length ? drift.reasons.join('; ') : 'no'}`,
      );
    }
  }
}

void main();
