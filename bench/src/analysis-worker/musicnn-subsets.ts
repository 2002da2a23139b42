/**
 * Same-soundtrack precision@5 of the shipped embedding on benchmarks shaped like the (issue 13: "118 tracks of
 * 3 soundtracks, chance 0.35"), without picking which soundtracks: every 3-group subset of the corpus is a
 * benchmark, and the figures are the mean, median and spread over all of them (560 subsets of the 16 groups up to session 9; BENCH_CORPUS=session9 restricts the corpus to them), next to the
 * full 16-group figure of musicnn-retrieval.ts / musicnn-patch-budget.ts.
 *
 * Per track, computed as the worker computes it (track-processor.ts): ffmpeg decode to 16 kHz mono, dsp-v1
 * (DefaultEmbedder.embed, committed constants), MusiCNN MSD + MTT on DEFAULT_MUSICNN_PATCHES evenly spaced patches
 * (the worker's default), and the stored `tfjs:musicnn-fusion-v1` vector (FusionEmbedder, committed constants fitted
 * on tuning tracks only). Cached per track in `musicnn-subsets-<patches>/` of the bench scratch directory.
 *
 * Split and precision: those of musicnn-retrieval.ts (held-out = odd first sha256 byte of the track name, fixed before
 * any tuning; a held-out query is ranked against every track of its benchmark, itself excluded). Within a subset the
 * chance level is the mean over its held-out queries of (group size - 1) / (subset size - 1).
 *
 * Run: node bench/dist/analysis-worker/musicnn-subsets.js [--cached]
 *   (MODELS_DIR, else ../shared/models; MUSICNN_BACKEND; the corpus packages of corpus.ts installed)
 */
import { loadavg } from 'node:os';
import { DEFAULT_MUSICNN_PATCHES, DefaultEmbedder, MusicnnAnalyser, FusionEmbedder, penultimateMean } from '@polyphony/analysis-worker/engine';
import { decodeCorpusTrack, interleaved, isHeldOut, loadCorpus } from './corpus';
import { benchBackend, benchModelsDir, cachedPerTrack } from './musicnn-cache';
import { evalOn, type Rows } from './musicnn-retrieval';

interface SubsetCache {
  name: string;
  group: string;
  /** MSD then MTT penultimate means over the patches (400 values). */
  musicnn: number[];
  /** The dsp-v1 embedding (200 values). */
  dsp: number[];
}

/** All k-element subsets of `items`, in lexicographic order. */
export function combinations<T>(items: readonly T[], k: number): T[][] {
  const out: T[][] = [];
  const pick = (start: number, acc: T[]) => {
    if (acc.length === k) return void out.push([...acc]);
    for (let i = start; i <= items.length - (k - acc.length); i++) pick(i + 1, [...acc, items[i]!]);
  };
  pick(0, []);
  return out;
}

async function fill(cachedOnly: boolean, log: (l: string) => void): Promise<SubsetCache[]> {
  const patches = DEFAULT_MUSICNN_PATCHES;
  const dsp = new DefaultEmbedder();
  let net: MusicnnAnalyser | undefined;
  let done = 0;
  const out = await cachedPerTrack<SubsetCache>(`musicnn-subsets-${patches}`, interleaved(loadCorpus(log)), cachedOnly, async (t, position) => {
    net ??= await MusicnnAnalyser.load({ modelsDir: benchModelsDir(), backend: benchBackend(), maxPatches: patches });
    if (!net.hasMtt) throw new Error('the shipped embedding needs MTT_musicnn.h5 beside MSD_musicnn.h5');
    const pcm = await decodeCorpusTrack(t, log, position);
    if (!pcm) return undefined;
    const a = await net.analyse(pcm.samples);
    if (++done % 20 === 0) log(`${position} ${done} computed (load ${loadavg()[0]!.toFixed(1)})`);
    return { name: t.name, group: t.group, musicnn: [...penultimateMean(a.msd), ...penultimateMean(a.mtt!)], dsp: Array.from(dsp.embed(pcm.samples, pcm.sampleRate)) };
  });
  net?.dispose();
  return out.sort((a, b) => (a.name < b.name ? -1 : 1));
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function main(): Promise<void> {
  const log = (l: string) => process.stderr.write(`${l}\n`);
  const cache = await fill(process.argv.includes('--cached'), log);
  const fusion = new FusionEmbedder();
  const variants: Array<{ label: string; rows: Rows }> = [
    { label: 'dsp-v1 (committed constants)', rows: cache.map((c) => c.dsp) },
    { label: `shipped ${fusion.version} (${DEFAULT_MUSICNN_PATCHES} patches)`, rows: cache.map((c) => Array.from(fusion.embed(c.musicnn, c.dsp))) },
  ];
  const groups = [...new Set(cache.map((c) => c.group))].sort();
  const held = cache.map((_, i) => i).filter((i) => isHeldOut(cache[i]!.name));
  process.stdout.write(`corpus ${cache.length} tracks in ${groups.length} groups (${held.length} held-out); load ${loadavg()[0]!.toFixed(1)}\n\n`);
  const subsets = combinations(groups, 3);
  const mean = (xs: number[]) => xs.reduce((acc, x) => acc + x, 0) / xs.length;
  // Per variant, per subset: held-out P@5, chance level, size (tracks) and whether it holds wesnoth.
  const results = variants.map((v) => {
    const all = evalOn(cache, v.rows, held, cache.map((_, i) => i)).mean;
    const figures: Array<{ p: number; chance: number; size: number; wesnoth: boolean }> = [];
    for (const s of subsets) {
      const idx = cache.map((_, i) => i).filter((i) => s.includes(cache[i]!.group));
      const sub = idx.map((i) => cache[i]!);
      const q = idx.map((_, j) => j).filter((j) => isHeldOut(sub[j]!.name));
      if (q.length === 0) continue;
      const size = (g: string) => sub.filter((t) => t.group === g).length;
      const chance = q.reduce((acc, j) => acc + (size(sub[j]!.group) - 1) / (sub.length - 1), 0) / q.length;
      figures.push({ p: evalOn(sub, idx.map((i) => v.rows[i]!), q, idx.map((_, j) => j)).mean, chance, size: sub.length, wesnoth: s.includes('wesnoth') });
    }
    return { label: v.label, all, figures };
  });
  process.stdout.write(`| variant | all ${groups.length} groups: held-out P@5 | 3-group benchmarks: mean | median | p10 / p90 | min / max | share >= 0.75 | mean chance | with wesnoth: mean | subsets |\n|---|---|---|---|---|---|---|---|---|---|\n`);
  for (const r of results) {
    const ps = r.figures.map((f) => f.p).sort((a, b) => a - b);
    const w = r.figures.filter((f) => f.wesnoth).map((f) => f.p);
    process.stdout.write(
      `| ${r.label} | ${r.all.toFixed(3)} | **${mean(ps).toFixed(3)}** | ${quantile(ps, 0.5).toFixed(3)} | ${quantile(ps, 0.1).toFixed(3)} / ${quantile(ps, 0.9).toFixed(3)} | ${ps[0]!.toFixed(3)} / ${ps[ps.length - 1]!.toFixed(3)} | ${(ps.filter((p) => p >= 0.75).length / ps.length).toFixed(2)} | ${mean(r.figures.map((f) => f.chance)).toFixed(3)} | ${w.length ? mean(w).toFixed(3) : '-'} | ${r.figures.length} |\n`,
    );
  }
  // Benchmarks as hard as the issue's, chosen without looking at the embedding under test: (a) by shape (chance
  // 0.30-0.40, 90-150 tracks, as "118 tracks of 3 soundtracks, chance 0.35"); (b) by the baseline (dsp-v1 held-out
  // P@5 within 0.05 of the 0.646 the issue measured for dsp-v1 on its benchmark).
  const base = results[0]!.figures;
  const matched: Array<[string, (i: number) => boolean]> = [
    ['shape: chance 0.30-0.40, 90-150 tracks', (i) => base[i]!.chance >= 0.3 && base[i]!.chance <= 0.4 && base[i]!.size >= 90 && base[i]!.size <= 150],
    ['baseline: dsp-v1 P@5 0.596-0.696', (i) => Math.abs(base[i]!.p - 0.646) <= 0.05],
  ];
  process.stdout.write(`\n| benchmarks matched to the issue's | subsets | ${results.map((r) => r.label).join(' | ')} |\n|---|---|${results.map(() => '---|').join('')}\n`);
  for (const [label, keep] of matched) {
    const ix = base.map((_, i) => i).filter(keep);
    process.stdout.write(`| ${label} | ${ix.length} | ${results.map((r) => (ix.length ? mean(ix.map((i) => r.figures[i]!.p)).toFixed(3) : '-')).join(' | ')} |\n`);
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
