/**
 * What the Poincaré radius means on real music (issue 32, "Hyperbolic exploration"; docs/architecture.md).
 *
 * Corpus: the 41 Wesnoth tracks (Debian wesnoth-1.16-music), analysed as the analysis worker does it: decode
 * (ffmpeg), dsp-v1 embedding, MusiCNN MSD + MTT over MUSICNN_PATCHES patches (default 8 here to spare the shared
 * CPU; the worker's default is 24) at the worker's default precision, the stored 200-d fusion embedding
 * (`tfjs:musicnn-fusion-v1`) and the 50 MSD / 50 MTT track tag probabilities. Per-track results are cached in
 * the bench scratch directory (`hyperbolic-<patches>/`). HYPER_CORPUS=all adds every other installed soundtrack
 * of the benchmark corpus (corpus.ts).
 *
 * The ball is built by the index's own code (`buildPoincareBall`, services/index/src/hyperbolic/ball.ts) from the
 * fusion vectors. Printed, with Spearman's rank correlation and a two-sided permutation p-value (10 000 seeded
 * shuffles):
 *  - radius vs tag entropy: Shannon entropy (bits) of the track's MSD tag probabilities normalised to sum 1
 *    (and of the MTT ones): a generic song spreads its probability over many tags;
 *  - radius vs local sparsity: mean cosine distance to the k = 5 nearest other tracks in the 200-d embedding
 *    (a large value = a sparse, niche region);
 *  - radius vs the strongest tag probability (a confident, specific tagging);
 *  - neighbourhood preservation: mean overlap of the 5 nearest tracks by Poincaré distance and by cosine distance.
 * The radius is derived from the distance to the centroid only: entropy and kNN distance are independent checks.
 *
 * Usage: npm run build && node bench/dist/index/hyperbolic-radius.js   (MODELS_DIR, else ../shared/models)
 */
import { MSD_TAGS } from '@polyphony/contracts';
import { DefaultEmbedder, DEFAULT_MUSICNN_PRECISION, FusionEmbedder, MusicnnAnalyser, trackTags } from '@polyphony/analysis-worker/engine';
import { ballPoint, ballRadius, buildPoincareBall, poincareDistance } from '@polyphony/index';
import { cachedPerTrack, benchBackend, benchModelsDir } from '../analysis-worker/musicnn-cache';
import { decodeCorpusTrack, loadCorpus } from '../analysis-worker/corpus';
import { cosineDistance } from '@polyphony/vectors';

interface Rec {
  name: string;
  group: string;
  embedding: number[];
  msd: number[];
  mtt: number[];
}

const PATCHES = Number(process.env.MUSICNN_PATCHES ?? 8);
const K = 5;

/** Ranks (1-based, ties averaged). */
export function ranks(x: readonly number[]): number[] {
  const idx = x.map((v, i) => [v, i] as const).sort((a, b) => a[0] - b[0]);
  const out = new Array<number>(x.length);
  for (let i = 0; i < idx.length; ) {
    let j = i;
    while (j + 1 < idx.length && idx[j + 1]![0] === idx[i]![0]) j++;
    for (let m = i; m <= j; m++) out[idx[m]![1]] = (i + j) / 2 + 1;
    i = j + 1;
  }
  return out;
}

function pearson(a: readonly number[], b: readonly number[]): number {
  const n = a.length;
  const ma = a.reduce((s, v) => s + v, 0) / n;
  const mb = b.reduce((s, v) => s + v, 0) / n;
  let sab = 0;
  let saa = 0;
  let sbb = 0;
  for (let i = 0; i < n; i++) {
    sab += (a[i]! - ma) * (b[i]! - mb);
    saa += (a[i]! - ma) ** 2;
    sbb += (b[i]! - mb) ** 2;
  }
  return saa > 0 && sbb > 0 ? sab / Math.sqrt(saa * sbb) : 0;
}

/** Spearman's rho and a two-sided permutation p-value (seeded LCG shuffles). */
function spearman(a: readonly number[], b: readonly number[], shuffles = 10_000): { rho: number; p: number } {
  const ra = ranks(a);
  const rb = ranks(b);
  const rho = pearson(ra, rb);
  let seed = 0x9e3779b9;
  const rand = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  const perm = rb.slice();
  let hits = 0;
  for (let s = 0; s < shuffles; s++) {
    for (let i = perm.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [perm[i], perm[j]] = [perm[j]!, perm[i]!];
    }
    if (Math.abs(pearson(ra, perm)) >= Math.abs(rho) - 1e-12) hits++;
  }
  return { rho, p: (hits + 1) / (shuffles + 1) };
}

function entropyBits(p: readonly number[]): number {
  const s = p.reduce((a, v) => a + v, 0);
  let h = 0;
  for (const v of p) if (v > 0) h -= (v / s) * Math.log2(v / s);
  return h;
}


async function main(): Promise<void> {
  const all = loadCorpus();
  const tracks = process.env.HYPER_CORPUS === 'all' ? all : all.filter((t) => t.group === 'wesnoth');
  let net: MusicnnAnalyser | undefined;
  const dsp = new DefaultEmbedder();
  const fusion = new FusionEmbedder();
  const cpu0 = process.cpuUsage();
  const recs = await cachedPerTrack<Rec>(`hyperbolic-${PATCHES}`, tracks, false, async (t, position) => {
    net ??= await MusicnnAnalyser.load({ modelsDir: benchModelsDir(), backend: benchBackend(), precision: DEFAULT_MUSICNN_PRECISION, maxPatches: PATCHES });
    const pcm = await decodeCorpusTrack(t, (l) => console.error(l), position);
    if (!pcm) return undefined;
    const a = dsp.analyseTrack(pcm.samples, pcm.sampleRate);
    const out = await net.analyse(pcm.samples);
    const v = fusion.embedTrack(out, a.embedding);
    console.error(`${position} ${t.name} analysed (${net.precision}, ${out.starts.length} patches)`);
    return { name: t.name, group: t.group, embedding: Array.from(v, (x) => Math.round(x * 1e7) / 1e7), msd: trackTags(out.msd), mtt: out.mtt ? trackTags(out.mtt) : [] };
  });
  const cpu = process.cpuUsage(cpu0);
  const n = recs.length;
  if (n < 3) throw new Error(`only ${n} tracks analysed`);
  const dim = recs[0]!.embedding.length;
  const vectors = recs.map((r) => Float32Array.from(r.embedding));
  const t0 = process.cpuUsage();
  const ball = await buildPoincareBall({ size: n, dim, getVector: (row) => vectors[row]! });
  const buildCpu = process.cpuUsage(t0);
  const radius = Array.from({ length: n }, (_, r) => ballRadius(ball, r));
  const point = (i: number) => Array.from(ballPoint(ball, i));
  const entMsd = recs.map((r) => entropyBits(r.msd));
  const entMtt = recs.map((r) => (r.mtt.length ? entropyBits(r.mtt) : NaN));
  const maxTag = recs.map((r) => Math.max(...r.msd));
  const cos = recs.map((a) => recs.map((b) => cosineDistance(a.embedding, b.embedding)));
  const knn = cos.map((row, i) => row.map((d, j) => [d, j] as const).filter(([, j]) => j !== i).sort((x, y) => x[0] - y[0]).slice(0, K));
  const knnDist = knn.map((nb) => nb.reduce((s, [d]) => s + d, 0) / nb.length);
  let overlap = 0;
  for (let i = 0; i < n; i++) {
    const hyp = recs.map((_, j) => [j === i ? Infinity : poincareDistance(point(i), point(j)), j] as const).sort((x, y) => x[0] - y[0]).slice(0, K);
    const want = new Set(knn[i]!.map(([, j]) => j));
    overlap += hyp.filter(([, j]) => want.has(j)).length / K;
  }
  const fmt = (x: { rho: number; p: number }) => `rho = ${x.rho.toFixed(3)} (p = ${x.p.toFixed(4)})`;
  console.log(`hyperbolic radius on ${n} tracks (${[...new Set(recs.map((r) => r.group))].join(', ')}), MusiCNN ${PATCHES} patches, fusion embedding ${dim}-d`);
  console.log(`analysis CPU this run: ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s (0 when every track was cached); ball build CPU: ${((buildCpu.user + buildCpu.system) / 1e3).toFixed(1)} ms`);
  console.log(`ball: ${ball.dim}-d, principal axes hold ${(ball.explainedVariance * 100).toFixed(1)} % of the variance; radius min ${Math.min(...radius).toFixed(3)} median ${[...radius].sort((a, b) => a - b)[Math.floor(n / 2)]!.toFixed(3)} max ${Math.max(...radius).toFixed(3)}`);
  console.log(`Spearman radius vs MSD tag entropy:        ${fmt(spearman(radius, entMsd))}`);
  if (entMtt.every((v) => Number.isFinite(v))) console.log(`Spearman radius vs MTT tag entropy:        ${fmt(spearman(radius, entMtt))}`);
  console.log(`Spearman radius vs strongest MSD tag prob: ${fmt(spearman(radius, maxTag))}`);
  console.log(`Spearman radius vs mean ${K}-NN cosine distance: ${fmt(spearman(radius, knnDist))}`);
  console.log(`neighbourhood preservation: ${(100 * overlap / n).toFixed(1)} % of the ${K} nearest by cosine are among the ${K} nearest by Poincaré distance (chance ${(100 * K / (n - 1)).toFixed(1)} %)`);
  const order = radius.map((r, i) => [r, i] as const).sort((a, b) => a[0] - b[0]);
  const top = (i: number) => MSD_TAGS.map((t, j) => [t, recs[i]!.msd[j]!] as const).sort((a, b) => b[1] - a[1]).slice(0, 3).map(([t, p]) => `${t} ${p.toFixed(2)}`).join(', ');
  console.log('most generic (centre):');
  for (const [r, i] of order.slice(0, 3)) console.log(`  r=${r.toFixed(3)} ${recs[i]!.name}  H=${entMsd[i]!.toFixed(2)} bits  [${top(i)}]`);
  console.log('most niche (rim):');
  for (const [r, i] of order.slice(-3).reverse()) console.log(`  r=${r.toFixed(3)} ${recs[i]!.name}  H=${entMsd[i]!.toFixed(2)} bits  [${top(i)}]`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
