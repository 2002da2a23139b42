/**
 * Decodes and analyses corpus tracks once and caches the raw 'dsp-v1' descriptor and the mel-statistics
 * baseline per track in the bench scratch directory. The cache key hashes the compiled audio modules that
 * determine the raw features, so any change to the analysis invalidates it automatically.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ANALYSIS_PARAMS, AudioAnalysis, FrameAnalyser, dspV1RawFeatures } from '@polyphony/analysis-worker/engine';
import { BENCH_SCRATCH_DIR, CorpusTrack, decodeCorpusTrack, interleaved, loadCorpus } from './corpus';

/** Cached features of one track. */
export interface TrackFeatures {
  name: string;
  group: string;
  path: string;
  durationSeconds: number;
  /** Raw (un-normalised) dsp-v1 descriptor, 200 values. */
  raw: number[];
  /** Baseline: mean and standard deviation of each of the 64 log-mel bands over all frames, 128 values. */
  melStats: number[];
  /** Raw descriptors of the first and of the second half of the PCM, each analysed as a track of its own. */
  halves: [number[], number[]];
}

const FEATURE_MODULES = ['feature-cache', 'analysis', 'chroma', 'fft', 'mel', 'rhythm', 'track-summary', 'dsp-features', 'decode'];

function cacheKey(): string {
  const h = createHash('sha256');
  for (const m of FEATURE_MODULES) h.update(readFileSync(m === 'feature-cache' ? __filename : join(dirname(require.resolve('@polyphony/analysis-worker/engine')), 'domain', 'audio', `${m}.js`)));
  h.update(JSON.stringify(ANALYSIS_PARAMS));
  return h.digest('hex').slice(0, 16) + (noHalves() ? '-nohalves' : '');
}

/** BENCH_NO_HALVES=1: skip the two half-track analyses (identity calibration only; 2/3 of the cost). */
function noHalves(): boolean {
  return process.env.BENCH_NO_HALVES === '1';
}

/**
 * Plain mel-band statistics: per band, mean and standard deviation of log-mel (dB) over all analysed frames.
 * This is the "raw spectral statistics" baseline of the retrieval benchmark.
 */
export function melBandStatistics(analysis: AudioAnalysis): number[] {
  return bandMeanStd(
    ANALYSIS_PARAMS.nMels,
    analysis.regions.map((r) => ({ data: r.logMel, from: 0, to: r.nFrames })),
  );
}

/**
 * Mean then standard deviation (population) of each of `nBands` bands over the frames `[from, to)` of frame-major
 * blocks (`data[t * nBands + b]`), all blocks pooled; 0s when there is no frame. 2 * nBands values.
 */
export function bandMeanStd(nBands: number, blocks: ReadonlyArray<{ data: ArrayLike<number>; from: number; to: number }>): number[] {
  const sum = new Float64Array(nBands);
  const sq = new Float64Array(nBands);
  let n = 0;
  for (const { data, from, to } of blocks) {
    for (let t = from; t < to; t++) {
      for (let b = 0; b < nBands; b++) {
        const v = data[t * nBands + b]!;
        sum[b] = sum[b]! + v;
        sq[b] = sq[b]! + v * v;
      }
      n++;
    }
  }
  const out: number[] = [];
  for (let b = 0; b < nBands; b++) out.push(n > 0 ? sum[b]! / n : 0);
  for (let b = 0; b < nBands; b++) {
    const m = n > 0 ? sum[b]! / n : 0;
    out.push(n > 0 ? Math.sqrt(Math.max(0, sq[b]! / n - m * m)) : 0);
  }
  return out;
}

function halfFeatures(analyser: FrameAnalyser, samples: Float32Array): number[] {
  return Array.from(dspV1RawFeatures(analyser.analyse(samples, ANALYSIS_PARAMS.sampleRateHz)));
}

/**
 * Features of every track, computed on demand and cached on disk.
 * @param log progress lines
 * @param cachedOnly return only the tracks already cached (compute nothing)
 */
export async function corpusFeatures(tracks: CorpusTrack[], log: (line: string) => void = () => undefined, cachedOnly = false): Promise<TrackFeatures[]> {
  mkdirSync(BENCH_SCRATCH_DIR, { recursive: true });
  const file = join(BENCH_SCRATCH_DIR, `features-${cacheKey()}.json`);
  const cache: Record<string, TrackFeatures & { stamp: string }> = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  const analyser = new FrameAnalyser();
  const out: TrackFeatures[] = [];
  let dirty = false;
  for (const [i, t] of tracks.entries()) {
    const st = statSync(t.path);
    const stamp = `${st.size}:${st.mtimeMs}`;
    const hit = cache[t.path];
    if (hit && hit.stamp === stamp) {
      out.push({ ...hit, name: t.name, group: t.group });
      continue;
    }
    if (cachedOnly) continue;
    const pcm = await decodeCorpusTrack(t, log, `[${i + 1}/${tracks.length}]`);
    if (!pcm) continue;
    const analysis = analyser.analyse(pcm.samples, pcm.sampleRate);
    const f: TrackFeatures = {
      name: t.name,
      group: t.group,
      path: t.path,
      durationSeconds: pcm.durationSeconds,
      raw: Array.from(dspV1RawFeatures(analysis)),
      melStats: melBandStatistics(analysis),
      halves: noHalves() ? [[], []] : [halfFeatures(analyser, pcm.samples.subarray(0, pcm.samples.length >> 1)), halfFeatures(analyser, pcm.samples.subarray(pcm.samples.length >> 1))],
    };
    cache[t.path] = { ...f, stamp };
    dirty = true;
    out.push(f);
    log(`[${i + 1}/${tracks.length}] ${t.name} ${pcm.durationSeconds.toFixed(1)} s`);
    // Saved every 20 new tracks too, so an interrupted fill of a large corpus keeps its work.
    if (out.length % 20 === 0) {
      writeFileSync(file, JSON.stringify(cache));
      dirty = false;
    }
  }
  if (dirty) writeFileSync(file, JSON.stringify(cache));
  return out;
}

if (require.main === module) {
  // Fills the cache for the whole corpus (round-robin over the soundtracks): node bench/dist/analysis-worker/feature-cache.js
  corpusFeatures(interleaved(loadCorpus()), (l) => process.stderr.write(`${l}\n`)).catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
