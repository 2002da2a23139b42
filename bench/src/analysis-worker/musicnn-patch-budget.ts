/**
 * Patch budget of MusiCNN (issue 13, cost goal): how many evenly spaced patches per track keep same-soundtrack
 * precision@5 within 2 % of "all patches".
 *
 * Cache (`musicnn-all-<CAP>/<group>__<stem>.json` in the bench scratch directory): per track the MSD and MTT
 * penultimate vectors of every non-overlapping 187-frame patch (mel.ts patchStarts(frames)), at most CAP
 * (128, a 6.4-minute track) evenly spaced ones for longer tracks. A budget of k patches takes exactly the
 * starts the worker uses with MUSICNN_PATCHES=k (patchStarts(frames, k), which lie on the same grid); for
 * the few tracks over CAP patches the nearest cached patch stands in. "All patches" = every cached patch.
 *
 * Precision@5 and the tuning / held-out split are those of musicnn-retrieval.ts (z-score constants fitted
 * on tuning tracks; held-out queries ranked against the whole corpus). The loss is reported both in P@5
 * points and relative to the all-patches figure; the 2 % budget is read as relative (0.02 x P@5(all)).
 *
 * Run: node bench/dist/analysis-worker/musicnn-patch-budget.js [--cached]
 *   fills the cache (ONNX Runtime by default, MUSICNN_BACKEND to change) then prints the table;
 *   --cached uses the cached tracks only. MUSICNN_PRECISION (int8, float; default the worker's, musicnn-cache.ts
 *   benchPrecision): int8 uses its own cache `musicnn-all-<CAP>-int8`, float the plain one.
 */
import { DefaultEmbedder, FusionEmbedder, LEARNED_EMBEDDER_VERSION, patchStarts } from '@polyphony/analysis-worker/engine';
import type { MusicnnAnalyser } from '@polyphony/analysis-worker/engine';
import { decodeCorpusTrack, interleaved, isHeldOut, loadCorpus, type CorpusTrack } from './corpus';
import { corpusFeatures } from './feature-cache';
import { benchPrecision, cachedPerTrack, loadPrecisionAnalyser, precisionCacheFolder, roundedRows } from './musicnn-cache';
import { evalOn, fuseBlocks, pool, zFit, zApply, type Rows } from './musicnn-retrieval';

/** Most patches cached per track. */
const CAP = 128;
/** Budgets evaluated (patches per track). */
const BUDGETS = [1, 2, 4, 6, 8, 10, 12, 16, 24, 32];

interface AllPatchesCache {
  name: string;
  group: string;
  durationSeconds: number;
  frames: number;
  starts: number[];
  msdPen: number[][];
  mttPen: number[][];
  cpuMs: { decode: number; mel: number; msd: number; mtt: number };
}

async function fill(tracks: CorpusTrack[], cachedOnly: boolean, log: (l: string) => void): Promise<AllPatchesCache[]> {
  let net: MusicnnAnalyser | undefined;
  const precision = benchPrecision();
  const out = await cachedPerTrack<AllPatchesCache>(precisionCacheFolder(`musicnn-all-${CAP}`, precision), tracks, cachedOnly, async (t, position) => {
    net ??= await loadPrecisionAnalyser(precision);
    const c0 = process.cpuUsage();
    const pcm = await decodeCorpusTrack(t, log, position);
    if (!pcm) return undefined;
    const c1 = process.cpuUsage(c0);
    const a = await net.analyse(pcm.samples, CAP);
    const cpu = a.cpu!;
    log(`${position} ${t.name} ${pcm.durationSeconds.toFixed(0)} s, ${a.starts.length} patches, cpu mel ${cpu.melMs.toFixed(0)} msd ${cpu.msdMs.toFixed(0)} mtt ${cpu.mttMs.toFixed(0)} ms, rss ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`);
    return {
      name: t.name,
      group: t.group,
      durationSeconds: pcm.durationSeconds,
      frames: 1 + Math.floor(pcm.samples.length / 256),
      starts: a.starts,
      msdPen: roundedRows(a.msd.penultimate, a.starts.length, 200),
      mttPen: roundedRows(a.mtt!.penultimate, a.starts.length, 200),
      cpuMs: { decode: (c1.user + c1.system) / 1000, mel: cpu.melMs, msd: cpu.msdMs, mtt: cpu.mttMs },
    };
  });
  net?.dispose();
  return out;
}

/** Indices into `c.starts` of the patches the worker runs with a budget of k (nearest cached start). */
export function budgetIndices(cached: readonly number[], frames: number, k: number): number[] {
  if (!Number.isFinite(k)) return cached.map((_, i) => i);
  return patchStarts(frames, k).map((s) => {
    let best = 0;
    for (let i = 1; i < cached.length; i++) if (Math.abs(cached[i]! - s) < Math.abs(cached[best]! - s)) best = i;
    return best;
  });
}

async function main(): Promise<void> {
  const log = (l: string) => process.stderr.write(`${l}\n`);
  process.env.BENCH_NO_HALVES ??= '1';
  const cachedOnly = process.argv.includes('--cached');
  const corpusAll = loadCorpus(log);
  const cache = await fill(interleaved(corpusAll), cachedOnly, log);
  const byName = new Map(corpusAll.map((t) => [t.name, t]));
  const dsp = await corpusFeatures(cache.map((c) => byName.get(c.name)!), log, true);
  const dspByName = new Map(dsp.map((d) => [d.name, d]));
  const mn = cache.filter((c) => dspByName.has(c.name)).sort((a, b) => (a.name < b.name ? -1 : 1));
  const tracks = mn.map((c) => ({ name: c.name, group: c.group }));
  const allIdx = tracks.map((_, i) => i);
  const tune = allIdx.filter((i) => !isHeldOut(tracks[i]!.name));
  const held = allIdx.filter((i) => isHeldOut(tracks[i]!.name));
  const embedder = new DefaultEmbedder();
  const dspRows = mn.map((c) => Array.from(embedder.normalise(Float64Array.from(dspByName.get(c.name)!.raw))));
  const z = (raw: Rows) => zApply(raw, zFit(tune.map((i) => raw[i]!)));
  const dspZ = z(dspRows);
  const fusion = new FusionEmbedder();
  const patchesAll = mn.reduce((s, c) => s + c.starts.length, 0);
  process.stdout.write(`corpus ${mn.length} tracks (tuning ${tune.length}, held-out ${held.length}), ${patchesAll} cached patches (mean ${(patchesAll / mn.length).toFixed(1)} per track, cap ${CAP})\n`);

  const variants: Array<{ label: string; vectors: (k: number) => Rows }> = [
    { label: 'MSD+MTT penultimate mean, z', vectors: (k) => z(mn.map((c) => { const ix = budgetIndices(c.starts, c.frames, k); return [...pool(ix.map((i) => c.msdPen[i]!), ['mean']), ...pool(ix.map((i) => c.mttPen[i]!), ['mean'])]; })) },
    { label: 'MSD penultimate mean, z', vectors: (k) => z(mn.map((c) => pool(budgetIndices(c.starts, c.frames, k).map((i) => c.msdPen[i]!), ['mean']))) },
    { label: 'MTT penultimate mean z + dsp-v1 z, a=0.5', vectors: (k) => fuseBlocks(z(mn.map((c) => pool(budgetIndices(c.starts, c.frames, k).map((i) => c.mttPen[i]!), ['mean']))), dspZ, 0.5) },
    // The shipped embedding with its committed constants (embedding.ts; fitted on tuning tracks only).
    { label: `shipped ${LEARNED_EMBEDDER_VERSION} (committed constants)`, vectors: (k) => mn.map((c, t) => { const ix = budgetIndices(c.starts, c.frames, k); return Array.from(fusion.embed([...pool(ix.map((i) => c.msdPen[i]!), ['mean']), ...pool(ix.map((i) => c.mttPen[i]!), ['mean'])], dspRows[t]!)); }) },
    { label: 'MSD+MTT penultimate mean z + dsp-v1 z, a=0.5', vectors: (k) => fuseBlocks(z(mn.map((c) => { const ix = budgetIndices(c.starts, c.frames, k); return [...pool(ix.map((i) => c.msdPen[i]!), ['mean']), ...pool(ix.map((i) => c.mttPen[i]!), ['mean'])]; })), dspZ, 0.5) },
  ];
  // Every track as a query against the whole corpus: the patch budget fits no constant, so the tuning
  // queries add statistical power (one query moves the mean by 1/queries).
  process.stdout.write('\n| variant | patches | P@5 tuning | P@5 held-out | held-out loss vs all | P@5 all queries | all-queries loss vs all |\n|---|---|---|---|---|---|---|\n');
  const loss = (ref: number, p: number) => `${(ref - p).toFixed(3)} (${(((ref - p) / ref) * 100).toFixed(1)} %)`;
  for (const v of variants) {
    const all = v.vectors(Infinity);
    const refHeld = evalOn(tracks, all, held, allIdx).mean;
    const refAll = evalOn(tracks, all, allIdx, allIdx);
    for (const k of [...BUDGETS, Infinity]) {
      const vec = k === Infinity ? all : v.vectors(k);
      const h = evalOn(tracks, vec, held, allIdx).mean;
      const a = evalOn(tracks, vec, allIdx, allIdx);
      const t = evalOn(tracks, vec, tune, tune).mean;
      process.stdout.write(`| ${v.label} | ${k === Infinity ? `all (<= ${CAP})` : k} | ${t.toFixed(3)} | ${h.toFixed(3)} | ${loss(refHeld, h)} | ${a.mean.toFixed(3)} (${a.queries} q) | ${loss(refAll.mean, a.mean)} |\n`);
    }
  }
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
