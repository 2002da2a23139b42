/**
 * Per-patch MusiCNN outputs of the corpus, computed once and cached in the bench scratch directory
 * (`musicnn-<patches>/<group>__<stem>.json`): for every track, REFERENCE_PATCHES patches spread evenly over
 * the whole track (mel.ts patchStarts; all patches when the track has fewer), MSD and MTT penultimate
 * vectors and tag probabilities per patch, and the mean/std of the 96 MusiCNN log-mel bands over all frames.
 * Subsets of these patches (every 2nd, 4th ...) stand for smaller patch budgets in the benchmark.
 *
 * Run standalone to fill the cache: node bench/dist/analysis-worker/musicnn-cache.js
 * (MODELS_DIR, else ../shared/models relative to the repository root).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEFAULT_MUSICNN_PRECISION, MusicnnAnalyser, type MusicnnBackendPreference, type MusicnnOptions, type MusicnnPrecision, MUSICNN_INPUT, MusicnnMelFrontend, centredFrameCount } from '@polyphony/analysis-worker/engine';
import { BENCH_SCRATCH_DIR, decodeCorpusTrack, interleaved, loadCorpus, type CorpusTrack } from './corpus';

export { interleaved };

/** Patches kept per track (the "reference" budget of the benchmark, CPU-bounded on the shared machine). */
export const REFERENCE_PATCHES = 8;

/** Cached outputs of one track. */
export interface MusicnnTrackCache {
  name: string;
  group: string;
  durationSeconds: number;
  /** Patches in the track (non-overlapping) and the start frames of those kept. */
  totalPatches: number;
  starts: number[];
  msdPen: number[][];
  mttPen: number[][];
  msdTags: number[][];
  mttTags: number[][];
  /** The 1506-d pooled layer (network.ts) per patch, MSD then MTT, rounded to 1e-4. */
  msdPooled: number[][];
  mttPooled: number[][];
  /** mean of the 96 log-mel bands then their std, over all frames. */
  melStats: number[];
  timings: { decodeMs: number; melMs: number; msdMs: number; mttMs: number };
}

/** The runtime benchmarks use: MUSICNN_BACKEND (onnxruntime, wasm, tensorflow, cpu), else auto. */
export function benchBackend(): MusicnnBackendPreference {
  return (process.env.MUSICNN_BACKEND as MusicnnBackendPreference | undefined) ?? 'auto';
}

/**
 * The precision of the benchmarks that measure the worker as it runs (musicnn-cost, musicnn-rss, musicnn-variants-cache):
 * MUSICNN_PRECISION (int8, float), else the worker's default. The other benchmarks' caches were filled in float and
 * stay float (the analyser's default).
 */
export function benchPrecision(): MusicnnPrecision {
  const p = process.env.MUSICNN_PRECISION;
  if (p !== undefined && p !== 'int8' && p !== 'float') throw new Error(`MUSICNN_PRECISION must be int8 or float, not ${p}`);
  return p ?? DEFAULT_MUSICNN_PRECISION;
}

/**
 * A cache folder of results computed at `precision`: `base` for float (the layout of the float caches is unchanged),
 * `base-int8` for int8, so both coexist.
 */
export function precisionCacheFolder(base: string, precision: MusicnnPrecision): string {
  return precision === 'float' ? base : `${base}-${precision}`;
}

/**
 * Loads the analyser a precision-keyed cache is filled with (benchModelsDir, benchBackend) and checks that it runs
 * at `precision`: a cache must not mix precisions.
 * @throws Error when the runtime runs another precision (TensorFlow.js, or a CPU without int8 support: int8Supported)
 */
export async function loadPrecisionAnalyser(precision: MusicnnPrecision, opts: Omit<MusicnnOptions, 'modelsDir' | 'backend' | 'precision'> = {}): Promise<MusicnnAnalyser> {
  const net = await MusicnnAnalyser.load({ ...opts, modelsDir: benchModelsDir(), backend: benchBackend(), precision });
  if (net.precision !== precision) throw new Error(`the ${precision} cache needs ONNX Runtime on a CPU that runs it (the ${net.backend} backend runs ${net.precision})`);
  return net;
}

/** The weights folder benchmarks use: MODELS_DIR, else <repo>/../shared/models. */
export function benchModelsDir(): string {
  return process.env.MODELS_DIR ? resolve(process.env.MODELS_DIR) : resolve(__dirname, '../../../..', 'shared', 'models');
}

/** `n` rows of `dim` values of a flat per-patch output, rounded to 1/scale (cache files stay small). */
export function roundedRows(flat: Float32Array, n: number, dim: number, scale = 1e5): number[][] {
  return Array.from({ length: n }, (_, i) => Array.from(flat.subarray(i * dim, (i + 1) * dim), (v) => Math.round(v * scale) / scale));
}

/**
 * A per-track JSON cache of the benchmarks, `<bench scratch>/<folder>/<group>__<stem>.json`: the records of `tracks` in
 * their order, read from the cache where present, else made by `compute` (given the track and its `[i/n]` position for
 * log lines; undefined = skipped, e.g. an undecodable file) and written. With `cachedOnly` missing tracks are left out.
 */
export async function cachedPerTrack<T>(folder: string, tracks: readonly CorpusTrack[], cachedOnly: boolean, compute: (t: CorpusTrack, position: string) => Promise<T | undefined>): Promise<T[]> {
  const dir = join(BENCH_SCRATCH_DIR, folder);
  mkdirSync(dir, { recursive: true });
  const out: T[] = [];
  for (const [i, t] of tracks.entries()) {
    const file = join(dir, `${t.name.replace('/', '__')}.json`);
    if (existsSync(file)) {
      out.push(JSON.parse(readFileSync(file, 'utf8')) as T);
      continue;
    }
    if (cachedOnly) continue;
    const rec = await compute(t, `[${i + 1}/${tracks.length}]`);
    if (rec === undefined) continue;
    writeFileSync(file, JSON.stringify(rec));
    out.push(rec);
  }
  return out;
}

/** Cached outputs for `tracks`, computing the missing ones (slow: about 2 x 8 network patches per track). */
export async function musicnnCorpus(tracks: CorpusTrack[], log: (line: string) => void = () => undefined, cachedOnly = false): Promise<MusicnnTrackCache[]> {
  let net: MusicnnAnalyser | undefined;
  const mel = new MusicnnMelFrontend();
  const out = await cachedPerTrack<MusicnnTrackCache>(`musicnn-${REFERENCE_PATCHES}-pooled`, tracks, cachedOnly, async (t, position) => {
    net ??= await MusicnnAnalyser.load({ modelsDir: benchModelsDir(), backend: benchBackend(), withPooled: true });
    const t0 = performance.now();
    const pcm = await decodeCorpusTrack(t, log, position);
    if (!pcm) return undefined;
    const t1 = performance.now();
    const full = mel.compute(pcm.samples);
    const sum = new Float64Array(96);
    const sq = new Float64Array(96);
    for (let f = 0; f < full.frames; f++) {
      for (let b = 0; b < 96; b++) {
        const v = full.data[f * 96 + b]!;
        sum[b]! += v;
        sq[b]! += v * v;
      }
    }
    const means = Array.from(sum, (s) => s / full.frames);
    const melStats = [...means, ...Array.from(sq, (s, b) => Math.sqrt(Math.max(0, s / full.frames - means[b]! ** 2)))];
    const a = await net.analyse(pcm.samples, REFERENCE_PATCHES);
    const n = a.starts.length;
    const rec: MusicnnTrackCache = {
      name: t.name,
      group: t.group,
      durationSeconds: pcm.durationSeconds,
      totalPatches: Math.max(1, Math.floor(centredFrameCount(pcm.samples.length) / MUSICNN_INPUT.patchFrames)),
      starts: a.starts,
      msdPen: roundedRows(a.msd.penultimate, n, 200),
      mttPen: roundedRows(a.mtt!.penultimate, n, 200),
      msdTags: roundedRows(a.msd.tags, n, 50),
      mttTags: roundedRows(a.mtt!.tags, n, 50),
      msdPooled: roundedRows(a.msd.pooled!, n, 1506, 1e4),
      mttPooled: roundedRows(a.mtt!.pooled!, n, 1506, 1e4),
      melStats,
      timings: { decodeMs: t1 - t0, melMs: a.melMs, msdMs: a.networkMs - a.mttMs, mttMs: a.mttMs },
    };
    const cpu = process.cpuUsage();
    log(`${position} ${t.name} cpu ${((cpu.user + cpu.system) / 1e6).toFixed(0)} s total, rss ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB, ${pcm.durationSeconds.toFixed(0)} s, ${n} patches, msd ${(a.networkMs - a.mttMs).toFixed(0)} ms, mtt ${a.mttMs.toFixed(0)} ms`);
    return rec;
  });
  net?.dispose();
  return out;
}

if (require.main === module) {
  musicnnCorpus(interleaved(loadCorpus()), (l) => process.stderr.write(`${l}\n`)).catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
