/**
 * Per-track inputs of every embedding variant of the issue-13 retrieval study, at the worker's patch budget, cached
 * once so that variants (blocks, pooling, projections, fusion weights) are evaluated without running the networks
 * again: `<bench scratch>/musicnn-variants-<patches>[-int8]/<group>__<stem>.json` (variantCacheFolder; MUSICNN_PRECISION,
 * default the worker's: int8 fills the `-int8` folder, float the plain one).
 *
 * Per track, computed as the worker computes it (track-processor.ts): ffmpeg decode to 16 kHz mono; MusiCNN MSD + MTT
 * on DEFAULT_MUSICNN_PATCHES evenly spaced patches (mel.ts patchStarts); dsp-v1 from one FrameAnalyser pass (the raw
 * 200-d descriptor and the embedding with dsp-v1's committed constants, as DefaultEmbedder.embed). Kept:
 * - msdPen / mttPen: the 200-d penultimate vector per patch (rounded to 1e-5);
 * - msdTags / mttTags: the 50 tag probabilities per patch;
 * - patchMel: mean then std of the 96 MusiCNN log-mel bands over the frames of the patches run (what the worker has
 *   at no extra cost);
 * - patchLevel: per patch, the mean of its 96 log-mel bands (a loudness proxy for skipping near-silent patches);
 * - dspMel: mean then std of dsp-v1's 64 log-mel bands over the whole track (feature-cache.ts melBandStatistics,
 *   from the same analysis pass);
 * - dspRaw, dsp: dsp-v1's raw descriptor and its stored embedding.
 *
 * Run: node bench/dist/analysis-worker/musicnn-variants-cache.js [--shard i/n]
 *   (MODELS_DIR, else ../shared/models; MUSICNN_BACKEND); --shard i/n fills every n-th track of the interleaved
 *   corpus from the i-th (0-based), so two processes can fill one cache.
 */
import { loadavg } from 'node:os';
import { DEFAULT_MUSICNN_PATCHES, ANALYSIS_PARAMS, FrameAnalyser, dspV1RawFeatures, DefaultEmbedder, MUSICNN_INPUT, MusicnnMelFrontend, patchFrameRanges } from '@polyphony/analysis-worker/engine';
import type { MusicnnAnalyser, MusicnnPrecision } from '@polyphony/analysis-worker/engine';
import { decodeCorpusTrack, interleaved, loadCorpus, type CorpusTrack } from './corpus';
import { bandMeanStd, melBandStatistics } from './feature-cache';
import { benchPrecision, cachedPerTrack, loadPrecisionAnalyser, precisionCacheFolder, roundedRows } from './musicnn-cache';

/** Cached inputs of one track (see module docs). */
export interface VariantTrackCache {
  name: string;
  group: string;
  durationSeconds: number;
  starts: number[];
  msdPen: number[][];
  mttPen: number[][];
  msdTags: number[][];
  mttTags: number[][];
  patchMel: number[];
  /** Per patch: mean of the 96 MusiCNN log-mel bands over the patch's frames (0 = digital silence; added session 10). */
  patchLevel?: number[];
  dspMel: number[];
  dspRaw: number[];
  dsp: number[];
  cpuMs: { decode: number; dsp: number; mel: number; msd: number; mtt: number };
}

const round5 = (v: number) => Math.round(v * 1e5) / 1e5;

/** Mean then std of the 96 bands over the frames of `ranges` of a frame-major log-mel. */
function patchMelStats(data: Float32Array, frames: number, ranges: ReadonlyArray<readonly [number, number]>): number[] {
  return bandMeanStd(
    MUSICNN_INPUT.nMels,
    ranges.map(([a, b]) => ({ data, from: a, to: Math.min(b, frames) })),
  );
}

/**
 * The cache folder: `musicnn-variants-<patches>` for float (the layout of the float cache is unchanged), with `-int8`
 * appended for the int8 path, so both caches coexist.
 */
export function variantCacheFolder(patches: number, precision: MusicnnPrecision): string {
  return precisionCacheFolder(`musicnn-variants-${patches}`, precision);
}

/** Cached inputs of `tracks` at `patches` patches, computing the missing ones unless `cachedOnly`. */
export async function variantCorpus(tracks: CorpusTrack[], log: (l: string) => void, cachedOnly: boolean, patches = DEFAULT_MUSICNN_PATCHES): Promise<VariantTrackCache[]> {
  let net: MusicnnAnalyser | undefined;
  const frame = new FrameAnalyser();
  const embedder = new DefaultEmbedder();
  const mel = new MusicnnMelFrontend();
  let done = 0;
  const precision = benchPrecision();
  const out = await cachedPerTrack<VariantTrackCache>(variantCacheFolder(patches, precision), tracks, cachedOnly, async (t, position) => {
    net ??= await loadPrecisionAnalyser(precision, { maxPatches: patches });
    if (!net.hasMtt) throw new Error('the variants need MTT_musicnn.h5 beside MSD_musicnn.h5');
    const c0 = process.cpuUsage();
    const pcm = await decodeCorpusTrack(t, log, position);
    if (!pcm) return undefined;
    const c1 = process.cpuUsage();
    const analysis = frame.analyse(pcm.samples, ANALYSIS_PARAMS.sampleRateHz);
    const raw = dspV1RawFeatures(analysis);
    const c2 = process.cpuUsage();
    const a = await net.analyse(pcm.samples);
    const ranges = patchFrameRanges(a.starts);
    const m = mel.compute(pcm.samples, ranges);
    const n = a.starts.length;
    const ms = (x: NodeJS.CpuUsage, y: NodeJS.CpuUsage) => (y.user - x.user + y.system - x.system) / 1000;
    if (++done % 10 === 0) log(`${position} ${t.name}: ${done} computed (load ${loadavg()[0]!.toFixed(1)}, rss ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB)`);
    return {
      name: t.name,
      group: t.group,
      durationSeconds: pcm.durationSeconds,
      starts: a.starts,
      msdPen: roundedRows(a.msd.penultimate, n, 200),
      mttPen: roundedRows(a.mtt!.penultimate, n, 200),
      msdTags: roundedRows(a.msd.tags, n, 50),
      mttTags: roundedRows(a.mtt!.tags, n, 50),
      patchMel: patchMelStats(m.data, m.frames, ranges),
      patchLevel: ranges.map((r) => round5(patchMelStats(m.data, m.frames, [r]).slice(0, MUSICNN_INPUT.nMels).reduce((acc, v) => acc + v, 0) / MUSICNN_INPUT.nMels)),
      dspMel: melBandStatistics(analysis),
      dspRaw: Array.from(raw),
      dsp: Array.from(embedder.normalise(raw)),
      cpuMs: { decode: ms(c0, c1), dsp: ms(c1, c2), mel: a.cpu!.melMs, msd: a.cpu!.msdMs, mtt: a.cpu!.mttMs },
    };
  });
  net?.dispose();
  return out.sort((x, y) => (x.name < y.name ? -1 : 1));
}

if (require.main === module) {
  const log = (l: string) => process.stderr.write(`${l}\n`);
  const shardArg = process.argv.indexOf('--shard');
  const [i, n] = shardArg >= 0 ? process.argv[shardArg + 1]!.split('/').map(Number) : [0, 1];
  const tracks = interleaved(loadCorpus(log)).filter((_, k) => k % n! === i!);
  variantCorpus(tracks, log, false).then(
    (c) => log(`cached ${c.length} tracks`),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
