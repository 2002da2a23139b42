/**
 * Retrieval benchmark of MusiCNN embedding variants against dsp-v1 (issue 13): same-soundtrack precision@5
 * (5 nearest other tracks by cosine distance, ties by name; queries from groups of >= MIN_GROUP tracks in
 * the cached corpus, smaller groups are distractors).
 *
 * Split (fixed before tuning, corpus.ts isHeldOut): a track is HELD-OUT when the first byte of sha256(name)
 * is odd, else it is a TUNING track. Every constant (z-score mean/std, PCA basis, whitening shrinkage, fusion
 * weight) is fitted on tuning tracks only, and the variant to ship is picked by its tuning figure (tuning
 * queries ranked among tuning tracks). Held-out queries are ranked against the whole corpus (a catalogue
 * holds both parts; no held-out track shaped any constant). The held-out figures, per group, are the ones
 * to quote.
 *
 * Patches: the cache keeps REFERENCE_PATCHES (8) evenly spaced patches per track (musicnn-cache.ts); a budget
 * of 4 / 2 / 1 patches takes every 2nd / 4th / 8th of them (still spread over the track).
 *
 * Features: `pen` = the 200-d penultimate dense layer; `pooled` = the 1506-d layer before it (max and mean
 * over time of the 753 front/mid-end channels, interleaved; channels 561..752 are the mid-end's);
 * `tags` = sigmoid outputs. Pooling over patches: mean / max / std per dimension.
 *
 * 200-d fusions (the stored embedding must stay 200-d: catalogue signature, identity, index): MSD+MTT
 * penultimate mean z projected by PCA to k values and dsp-v1 z projected to 200 - k, each block unit length,
 * weight w / 1 - w (domain/musicnn/embedding.ts). k, w and whether the MusiCNN PCA is fitted on tuning tracks or
 * on their patches are chosen by tuning P@5; each variant is evaluated through FusionEmbedder with its
 * quantised constants, i.e. exactly as the worker computes it, at the 8 reference patches and at the worker's
 * default of 4.
 *
 * Run: node bench/dist/analysis-worker/musicnn-retrieval.js [--cached] [--markdown] [--fusion-only]
 *      [--write-constants <file.ts>]
 *   --cached: only tracks already in the cache (musicnn-cache.js fills it); --markdown prints the table rows
 *   of docs/musicnn.md; --fusion-only: only the baselines and the 200-d fusions; --write-constants: writes the
 *   picked fusion's constants as domain/musicnn/embedding-constants.ts.
 */
import { writeFileSync } from 'node:fs';
import { PCA } from 'ml-pca';
import { cosineDistance } from '@polyphony/vectors';
import { DefaultEmbedder, FusionEmbedder, LEARNED_EMBEDDER_VERSION, quantise, type FusionConstants } from '@polyphony/analysis-worker/engine';
import { isHeldOut, loadCorpus } from './corpus';
import { corpusFeatures } from './feature-cache';
import { musicnnCorpus, REFERENCE_PATCHES, type MusicnnTrackCache } from './musicnn-cache';

type Pool = 'mean' | 'max' | 'std';
export type Rows = number[][];

/** Largest vector the index takes for a learned embedding (issue 13). */
const MAX_DIMS = 512;

/** Pools patch vectors (rows) into mean / max / std per dimension, concatenated in the order given. */
export function pool(rows: Rows, kinds: readonly Pool[]): number[] {
  const dim = rows[0]!.length;
  const out: number[] = [];
  for (const k of kinds) {
    for (let d = 0; d < dim; d++) {
      let v: number;
      if (k === 'max') v = rows.reduce((m, r) => Math.max(m, r[d]!), -Infinity);
      else {
        const m = rows.reduce((s, r) => s + r[d]!, 0) / rows.length;
        v = k === 'mean' ? m : Math.sqrt(rows.reduce((s, r) => s + (r[d]! - m) ** 2, 0) / rows.length);
      }
      out.push(v);
    }
  }
  return out;
}

/** Per-dimension mean and std fitted on `fit` rows (std floor 1e-6). */
export function zFit(fit: Rows): { mean: number[]; std: number[] } {
  const dim = fit[0]!.length;
  const mean = new Array<number>(dim).fill(0);
  const std = new Array<number>(dim).fill(0);
  for (const r of fit) for (let d = 0; d < dim; d++) mean[d]! += r[d]! / fit.length;
  for (const r of fit) for (let d = 0; d < dim; d++) std[d]! += (r[d]! - mean[d]!) ** 2 / fit.length;
  return { mean, std: std.map((v) => Math.max(1e-6, Math.sqrt(v))) };
}

/** Rows z-scored with the constants of {@link zFit}. */
export function zApply(rows: Rows, c: { mean: number[]; std: number[] }): Rows {
  return rows.map((r) => r.map((v, d) => (v - c.mean[d]!) / c.std[d]!));
}

function unit(v: number[]): number[] {
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => x / n);
}

/** Two blocks fused: each row's blocks scaled to unit length, weight a on `m`, 1-a on `o`. */
export function fuseBlocks(m: Rows, o: Rows, a: number): Rows {
  return m.map((v, i) => [...unit(v).map((x) => x * a), ...unit(o[i]!).map((x) => x * (1 - a))]);
}

/** Queries come from groups with at least this many tracks in the whole (cached) corpus. */
const MIN_GROUP = Number(process.env.MIN_GROUP ?? 6);

/** precision@5: mean over queries and per group. */
export interface Eval {
  mean: number;
  byGroup: Map<string, number>;
  queries: number;
}

/** precision@5 of `queries`, each ranked against the tracks `poolIdx` (the query itself excluded). */
export function evalOn(tracks: ReadonlyArray<{ name: string; group: string }>, vectors: Rows, queries: number[], poolIdx: number[]): Eval {
  const corpusSizes = new Map<string, number>();
  for (const t of tracks) corpusSizes.set(t.group, (corpusSizes.get(t.group) ?? 0) + 1);
  const per = new Map<string, number[]>();
  for (const q of queries) {
    const g = tracks[q]!.group;
    if ((corpusSizes.get(g) ?? 0) < MIN_GROUP) continue;
    const ranked = poolIdx
      .filter((i) => i !== q)
      .map((i) => ({ i, d: cosineDistance(vectors[q]!, vectors[i]!) }))
      .sort((a, b) => a.d - b.d || (tracks[a.i]!.name < tracks[b.i]!.name ? -1 : 1))
      .slice(0, 5);
    per.set(g, [...(per.get(g) ?? []), ranked.filter((x) => tracks[x.i]!.group === g).length / 5]);
  }
  const all = [...per.values()].flat();
  const byGroup = new Map([...per.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([g, l]) => [g, l.reduce((a, b) => a + b, 0) / l.length] as [string, number]));
  return { mean: all.reduce((a, b) => a + b, 0) / all.length, byGroup, queries: all.length };
}

/** Every `step`-th cached patch of a per-patch feature. */
function rowsOf(c: MusicnnTrackCache, which: 'msdPen' | 'mttPen' | 'msdTags' | 'mttTags' | 'msdPooled' | 'mttPooled', step: number): Rows {
  return c[which].filter((_, i) => i % step === 0);
}

/** The mid-end part (channels 561..752, max and mean) of pooled rows: 384 values. */
function midEnd(rows: Rows): Rows {
  return rows.map((r) => r.slice(2 * 561));
}

/** Signed square root (power normalisation), applied per value. */
function ssqrt(v: number[]): number[] {
  return v.map((x) => Math.sign(x) * Math.sqrt(Math.abs(x)));
}

async function main(): Promise<void> {
  const log = (l: string) => process.stderr.write(`${l}\n`);
  // dsp-v1 features without the half-track analyses (identity calibration only): a third of the cost.
  process.env.BENCH_NO_HALVES ??= '1';
  const cachedOnly = process.argv.includes('--cached');
  const markdown = process.argv.includes('--markdown');
  const fusionOnly = process.argv.includes('--fusion-only');
  const corpusAll = loadCorpus(log);
  const mnAll = await musicnnCorpus(corpusAll, log, cachedOnly);
  const byName = new Map(corpusAll.map((t) => [t.name, t]));
  // --cached: the tracks present in both caches (MusiCNN outputs and dsp-v1 features).
  const dsp = await corpusFeatures(mnAll.map((c) => byName.get(c.name)!), log, cachedOnly);
  const dspNames = new Set(dsp.map((d) => d.name));
  const mn = mnAll.filter((c) => dspNames.has(c.name));
  const corpus = mn.map((c) => byName.get(c.name)!);
  const tracks = corpus.map((t) => ({ name: t.name, group: t.group }));
  const allIdx = tracks.map((_, i) => i);
  const tune = allIdx.filter((i) => !isHeldOut(tracks[i]!.name));
  const held = allIdx.filter((i) => isHeldOut(tracks[i]!.name));
  const embedder = new DefaultEmbedder();
  const dspVec = dsp.map((f) => Array.from(embedder.normalise(Float64Array.from(f.raw))));
  const out: string[] = [];
  const sizes = (subset: number[]) => {
    const m = new Map<string, number>();
    for (const i of subset) m.set(tracks[i]!.group, (m.get(tracks[i]!.group) ?? 0) + 1);
    return new Map([...m.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
  };
  const full = sizes(allIdx);
  const heldQ = held.filter((i) => (full.get(tracks[i]!.group) ?? 0) >= MIN_GROUP);
  const chance = heldQ.reduce((a, i) => a + (full.get(tracks[i]!.group)! - 1) / (tracks.length - 1), 0) / heldQ.length;
  out.push(`corpus ${tracks.length} of ${corpusAll.length} tracks cached (${[...full.entries()].map(([g, n]) => `${g} ${n}`).join(', ')})`);
  out.push(`tuning ${tune.length}, held-out ${held.length} (${heldQ.length} held-out queries; chance P@5 ${chance.toFixed(3)}); held-out queries ranked against the whole corpus, tuning queries against tuning tracks`);
  out.push(`held-out per group: ${[...sizes(heldQ).entries()].map(([g, n]) => `${g} ${n}`).join(', ')}`);

  const results: Array<{ name: string; dims: number; tune: number; held: Eval }> = [];
  const report = (name: string, vectors: Rows) => {
    const r = { name, dims: vectors[0]!.length, tune: evalOn(tracks, vectors, tune, tune).mean, held: evalOn(tracks, vectors, held, allIdx) };
    results.push(r);
    const groups = [...r.held.byGroup.entries()].map(([g, p]) => `${g} ${p.toFixed(2)}`).join(', ');
    out.push(`${name.padEnd(60)} ${String(r.dims).padStart(5)}  tune ${r.tune.toFixed(3)}  held ${r.held.mean.toFixed(3)}  (${groups})`);
    log(out[out.length - 1]!);
    return r;
  };
  /** z-scored track vectors (mean/std fitted on the tuning tracks). */
  const z = (raw: Rows) => zApply(raw, zFit(tune.map((i) => raw[i]!)));
  /**
   * PCA fitted on the z-scored tuning tracks, k components; whitening divides component j by
   * sqrt(eigenvalue_j + shrink * mean eigenvalue) (shrink 0 = plain whitening, Infinity = no whitening).
   */
  const pca = (raw: Rows, k: number, shrink: number) => {
    const zc = zFit(tune.map((i) => raw[i]!));
    const zs = zApply(raw, zc);
    const model = new PCA(tune.map((i) => zs[i]!), { center: true, scale: false });
    const kk = Math.min(k, tune.length - 1);
    const ev = model.getEigenvalues().slice(0, kk);
    const meanEv = ev.reduce((a, b) => a + b, 0) / ev.length;
    const proj = model.predict(zs, { nComponents: kk }).to2DArray();
    return proj.map((r) => r.map((x, j) => (Number.isFinite(shrink) ? x / Math.sqrt(ev[j]! + shrink * meanEv) : x)));
  };
  const fuse = fuseBlocks;
  const tuneFusion = (label: string, m: Rows, o: Rows, oLabel: string) => {
    let best = { a: 1, p: -1 };
    for (const a of [0.4, 0.5, 0.6, 0.7, 0.8, 0.9]) {
      const p = evalOn(tracks, fuse(m, o, a), tune, tune).mean;
      if (p > best.p) best = { a, p };
    }
    return report(`${label} + ${oLabel}, a=${best.a} (tuned)`, fuse(m, o, best.a));
  };

  const feat = (step: number) => ({
    msdMean: mn.map((c) => pool(rowsOf(c, 'msdPen', step), ['mean'])),
    both: (kinds: Pool[]) => mn.map((c) => [...pool(rowsOf(c, 'msdPen', step), kinds), ...pool(rowsOf(c, 'mttPen', step), kinds)]),
    pooledMid: (which: 'msdPooled' | 'mttPooled') => mn.map((c) => pool(midEnd(rowsOf(c, which, step)), ['mean'])),
    pooledAll: (which: 'msdPooled' | 'mttPooled') => mn.map((c) => pool(rowsOf(c, which, step), ['mean'])),
  });
  const f8 = feat(1);
  const dspZ = z(dspVec);

  report('dsp-v1 (committed constants)', dspVec);
  report('dsp-v1, z (tuning)', dspZ);
  if (fusionOnly) {
    report('MSD+MTT penultimate mean, z', z(f8.both(['mean'])));
  } else {
    report('MusiCNN log-mel band mean/std, z', z(mn.map((c) => c.melStats)));
    report('MSD penultimate mean, z', z(f8.msdMean));
    report('MTT penultimate mean, z', z(mn.map((c) => pool(rowsOf(c, 'mttPen', 1), ['mean']))));
    report('MSD+MTT tags mean, z', z(mn.map((c) => [...pool(rowsOf(c, 'msdTags', 1), ['mean']), ...pool(rowsOf(c, 'mttTags', 1), ['mean'])])));
    const bothMean = z(f8.both(['mean']));
    report('MSD+MTT penultimate mean, z', bothMean);
    report('MSD+MTT penultimate mean, ssqrt, z', z(f8.both(['mean']).map(ssqrt)));
    report('MSD+MTT penultimate mean+max, z', z(f8.both(['mean', 'max'])));
    report('MSD+MTT penultimate mean+std, z', z(f8.both(['mean', 'std'])));
    report('MSD+MTT penultimate mean+max+std, z', z(f8.both(['mean', 'max', 'std'])));
    report('MSD+MTT penultimate mean+max+std, z -> PCA 256', pca(f8.both(['mean', 'max', 'std']), 256, Infinity));
    const msdMid = z(f8.pooledMid('msdPooled'));
    report('MSD pooled mid-end mean, z', msdMid);
    report('MTT pooled mid-end mean, z', z(f8.pooledMid('mttPooled')));
    const bothMidRaw = f8.pooledMid('msdPooled').map((v, i) => [...v, ...f8.pooledMid('mttPooled')[i]!]);
    report('MSD+MTT pooled mid-end mean, z (768, over budget)', z(bothMidRaw));
    report('MSD+MTT pooled mid-end mean, z -> PCA 256', pca(bothMidRaw, 256, Infinity));
    const msdAll = f8.pooledAll('msdPooled');
    report('MSD pooled 1506 mean, z (over budget)', z(msdAll));
    report('MSD pooled 1506 mean, z -> PCA 256', pca(msdAll, 256, Infinity));
    report('MSD pooled 1506 mean, z -> PCA 256, ssqrt first', pca(msdAll.map(ssqrt), 256, Infinity));
    const bothAll = msdAll.map((v, i) => [...v, ...f8.pooledAll('mttPooled')[i]!]);
    report('MSD+MTT pooled 3012 mean, z -> PCA 256', pca(bothAll, 256, Infinity));
    for (const shrink of [0, 0.1, 0.5, 1]) report(`MSD+MTT penultimate mean, z -> PCA 256 whitened (shrink ${shrink})`, pca(f8.both(['mean']), 256, shrink));
    for (const shrink of [0.1, 0.5]) report(`MSD+MTT pooled 3012 mean, z -> PCA 256 whitened (shrink ${shrink})`, pca(bothAll, 256, shrink));
    tuneFusion('MSD+MTT penultimate mean z', bothMean, dspZ, 'dsp-v1 z');
    tuneFusion('MSD+MTT penultimate mean z', bothMean, z(mn.map((c) => c.melStats)), 'log-mel stats z');
    tuneFusion('MSD pooled mid-end mean z', msdMid, dspZ, 'dsp-v1 z');
    tuneFusion('MSD penultimate mean z', z(f8.msdMean), dspZ, 'dsp-v1 z');
    tuneFusion('MTT penultimate mean z', z(mn.map((c) => pool(rowsOf(c, 'mttPen', 1), ['mean']))), dspZ, 'dsp-v1 z');
  }

  // 200-d fusions (module docs).
  const penMean = (step: number) => mn.map((c) => [...pool(rowsOf(c, 'msdPen', step), ['mean']), ...pool(rowsOf(c, 'mttPen', step), ['mean'])]);
  const m8 = penMean(1);
  const m4 = penMean(2);
  /** Mean/std on tuning rows, then PCA (k components) of the z-scored `fitRows`; the PCA mean is folded into the z mean. */
  const fitBlock = (trackRows: Rows, fitRows: Rows, k: number) => {
    const zc = zFit(tune.map((i) => trackRows[i]!));
    const model = new PCA(zApply(fitRows, zc), { center: true, scale: false });
    const pcaMean = (model.toJSON() as { means: number[] }).means;
    const loadings = model.getLoadings().to2DArray().slice(0, k);
    return { mean: zc.mean.map((m, d) => m + pcaMean[d]! * zc.std[d]!), std: zc.std, proj: quantise(loadings) };
  };
  const tunePatches = (step: number) => tune.flatMap((i) => [...Array(rowsOf(mn[i]!, 'msdPen', step).length).keys()].map((p) => [...rowsOf(mn[i]!, 'msdPen', step)[p]!, ...rowsOf(mn[i]!, 'mttPen', step)[p]!]));
  const patchRows8 = tunePatches(1);
  const fusionCandidates: Array<{ name: string; constants: FusionConstants; tune: number }> = [];
  for (const level of ['track', 'patch'] as const) {
    for (const k of [60, 80, 100, 120, 140]) {
      // PCA gives at most (fitted rows - 1) components.
      if (200 - k > tune.length - 1 || (level === 'track' && k > tune.length - 1)) continue;
      const mb = fitBlock(m8, level === 'track' ? tune.map((i) => m8[i]!) : patchRows8, k);
      const db = fitBlock(dspVec, tune.map((i) => dspVec[i]!), 200 - k);
      let best: { w: number; p: number; constants?: FusionConstants } = { w: 0, p: -1 };
      for (const w of [0.4, 0.5, 0.6, 0.7, 0.8]) {
        const constants: FusionConstants = { version: LEARNED_EMBEDDER_VERSION, w, mMean: mb.mean, mStd: mb.std, dMean: db.mean, dStd: db.std, pm: mb.proj, pd: db.proj };
        const fe = new FusionEmbedder(constants);
        const vecs = m8.map((m, i) => Array.from(fe.embed(m, dspVec[i]!)));
        const p = evalOn(tracks, vecs, tune, tune).mean;
        if (p > best.p) best = { w, p, constants };
      }
      fusionCandidates.push({ name: `fusion 200: MSD+MTT pen mean z -> PCA ${k} (${level}) + dsp-v1 z -> PCA ${200 - k}, w=${best.w}`, constants: best.constants!, tune: best.p });
    }
  }
  for (const f of fusionCandidates) {
    const fe = new FusionEmbedder(f.constants);
    report(`${f.name}, 8 patches`, m8.map((m, i) => Array.from(fe.embed(m, dspVec[i]!))));
  }
  const pickedFusion = fusionCandidates.reduce((a, b) => (b.tune > a.tune ? b : a));
  out.push(`picked on tuning (200-d fusion): ${pickedFusion.name} (tuning ${pickedFusion.tune.toFixed(3)})`);
  {
    const fe = new FusionEmbedder(pickedFusion.constants);
    report(`${pickedFusion.name}, 4 patches (worker default)`, m4.map((m, i) => Array.from(fe.embed(m, dspVec[i]!))));
    report(`${pickedFusion.name}, 2 patches`, penMean(4).map((m, i) => Array.from(fe.embed(m, dspVec[i]!))));
  }
  const constantsFile = process.argv[process.argv.indexOf('--write-constants') + 1];
  if (process.argv.includes('--write-constants') && constantsFile) {
    const c = pickedFusion.constants;
    const r6 = (v: number[]) => v.map((x) => Number(x.toPrecision(6)));
    const json = JSON.stringify({ ...c, mMean: r6(c.mMean), mStd: r6(c.mStd), dMean: r6(c.dMean), dStd: r6(c.dStd), pm: { ...c.pm, scale: r6(c.pm.scale) }, pd: { ...c.pd, scale: r6(c.pd.scale) } });
    writeFileSync(
      constantsFile,
      `/**\n * Constants of the ${c.version} embedding (embedding.ts), written by bench/musicnn-retrieval.ts --write-constants on\n * ${new Date().toISOString().slice(0, 16)} UTC from the tuning tracks (${tune.length}) of the retrieval corpus: ${pickedFusion.name}.\n * Fitted on MusiCNN and dsp-v1 outputs of our corpus (our measurements, not model weights). Do not edit by hand.\n */\nimport type { FusionConstants } from './fusion-constants';\n\n// prettier-ignore\nexport const FUSION_V1: FusionConstants = ${json};\n`,
    );
    out.push(`constants written to ${constantsFile}`);
  }
  if (fusionOnly) {
    process.stdout.write(`${out.join('\n')}\n`);
    if (markdown) printMarkdown(results);
    return;
  }

  // The leader by tuning P@5 among variants within the size budget, then its patch budgets.
  const eligible = results.filter((r) => r.dims <= MAX_DIMS && !r.name.includes('patches'));
  const leader = eligible.reduce((a, b) => (b.tune > a.tune ? b : a));
  out.push(`picked on tuning (<= ${MAX_DIMS} dims): ${leader.name} (tuning ${leader.tune.toFixed(3)}, held-out ${leader.held.mean.toFixed(3)})`);
  for (const s of [2, 4, 8]) {
    const fs = feat(s);
    report(`MSD+MTT penultimate mean z, ${REFERENCE_PATCHES / s} patches`, z(fs.both(['mean'])));
    report(`MSD penultimate mean z, ${REFERENCE_PATCHES / s} patches`, z(fs.msdMean));
    report(`MSD+MTT penultimate mean z + dsp-v1 z a=0.6, ${REFERENCE_PATCHES / s} patches`, fuse(z(fs.both(['mean'])), dspZ, 0.6));
  }
  process.stdout.write(`${out.join('\n')}\n`);
  if (markdown) printMarkdown(results);
}

/** The docs/musicnn.md table rows of `results`. */
function printMarkdown(results: ReadonlyArray<{ name: string; dims: number; tune: number; held: Eval }>): void {
  const groups = [...new Set(results.flatMap((r) => [...r.held.byGroup.keys()]))].sort();
  process.stdout.write(`\n| variant | dims | P@5 tuning | P@5 held-out | ${groups.join(' | ')} |\n|---|---|---|---|${groups.map(() => '---|').join('')}\n`);
  for (const r of results) process.stdout.write(`| ${r.name} | ${r.dims} | ${r.tune.toFixed(3)} | **${r.held.mean.toFixed(3)}** | ${groups.map((g) => r.held.byGroup.get(g)?.toFixed(2) ?? '-').join(' | ')} |\n`);
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
