/**
 * Derives the activation ranges of MusiCNN's int8 path (services/analysis-worker/src/domain/musicnn/int8-calibration.ts) from real, freely
 * licensed music: the corpus's tuning tracks (corpus.ts isHeldOut false, so the held-out retrieval figures stay
 * clean), at most PER_GROUP per soundtrack (round-robin over the groups), DEFAULT_MUSICNN_PATCHES evenly spaced
 * patches each, as the worker runs them. Per network (MSD, MTT) the float graph with its calibration output
 * (onnx-graph.ts `timbralMax`: per timbral channel, the max over time of relu(pre)) runs on every patch; a channel's
 * range is HEADROOM times its max over all those patches. The input range is [0, the largest log-mel value seen
 * times HEADROOM, rounded up to 0.1].
 *
 * Run: node bench/dist/analysis-worker/musicnn-int8-calibrate.js [perGroup=4] [--write]
 *   (MODELS_DIR, else ../shared/models). Prints the TypeScript module; --write replaces
 *   services/analysis-worker/src/domain/musicnn/int8-calibration.ts with it. The committed ranges were measured on the 16 soundtracks of
 *   session 9 (BENCH_CORPUS=session9 reproduces them; the grown corpus would pick other tracks).
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { DEFAULT_MUSICNN_PATCHES, MUSICNN_FILES, musicnnPath, MUSICNN_INPUT, MusicnnMelFrontend, centredFrameCount, patchFrameRanges, patchStarts, patchTensorData, musicnnOnnxModel, loadOnnxRuntime, ONNX_SESSION_OPTIONS, loadMusicnnFile } from '@polyphony/analysis-worker/engine';
import { decodeCorpusTrack, interleaved, isHeldOut, loadCorpus } from './corpus';
import { benchModelsDir } from './musicnn-cache';

/**
 * Ranges are the calibration maxima times this. Measured on Wesnoth (calibrated on half of the tracks, compared on
 * the other half): x1.2 keeps the penultimate as close to float as x1.0 (median cosine distance 2.6e-4 / 8.9e-5
 * MSD / MTT) and leaves room for louder music than the calibration set; the 99th percentile instead of the max
 * doubles the worst-case error (saturation).
 */
const HEADROOM = 1.2;

/** Four significant digits (the ranges set a quantisation step of range / 255, so this is far below it). */
const sig = (v: number): number => Number(v.toPrecision(4));

async function main(): Promise<void> {
  const perGroup = Number(process.argv[2] && !process.argv[2].startsWith('--') ? process.argv[2] : 4);
  const write = process.argv.includes('--write');
  const log = (l: string) => process.stderr.write(`${l}\n`);
  const ort = loadOnnxRuntime();
  if (!ort) throw new Error('onnxruntime-node is needed for the calibration');
  const sessions = await Promise.all(
    (['msd', 'mtt'] as const).map(async (which) => {
      const file = await loadMusicnnFile(musicnnPath(benchModelsDir(), which), MUSICNN_FILES[which].sha256);
      return ort.InferenceSession.create(musicnnOnnxModel(file.weights, { calibration: true }), { ...ONNX_SESSION_OPTIONS });
    }),
  );
  const counts = new Map<string, number>();
  const tracks = interleaved(loadCorpus(log)).filter((t) => {
    if (isHeldOut(t.name) || (counts.get(t.group) ?? 0) >= perGroup) return false;
    counts.set(t.group, (counts.get(t.group) ?? 0) + 1);
    return true;
  });
  const maxima = sessions.map(() => new Float32Array(408));
  const mel = new MusicnnMelFrontend();
  const per = MUSICNN_INPUT.patchFrames * MUSICNN_INPUT.nMels;
  let melMax = 0;
  let patches = 0;
  for (const [i, t] of tracks.entries()) {
    const pcm = await decodeCorpusTrack(t, log, `[${i + 1}/${tracks.length}]`);
    if (!pcm) continue;
    const starts = patchStarts(centredFrameCount(pcm.samples.length), DEFAULT_MUSICNN_PATCHES);
    const input = patchTensorData(mel.compute(pcm.samples, patchFrameRanges(starts)), starts);
    for (const v of input) melMax = Math.max(melMax, v);
    for (let p = 0; p < starts.length; p++) {
      const x = new ort.Tensor('float32', input.slice(p * per, (p + 1) * per), [1, 1, MUSICNN_INPUT.patchFrames, MUSICNN_INPUT.nMels]);
      for (const [s, session] of sessions.entries()) {
        const out = (await session.run({ x }, ['timbralMax'])).timbralMax!.data as Float32Array;
        const m = maxima[s]!;
        for (let c = 0; c < 408; c++) m[c] = Math.max(m[c]!, out[c]!);
      }
      patches++;
    }
    log(`[${i + 1}/${tracks.length}] ${t.name}: ${starts.length} patches, log-mel max so far ${melMax.toFixed(3)} (load ${loadavg()[0]!.toFixed(1)})`);
  }
  const groups = [...counts.keys()].join(', ');
  const inputHi = Math.ceil(melMax * HEADROOM * 10) / 10;
  const list = (m: Float32Array) => Array.from(m, (v) => sig(v * HEADROOM)).join(', ');
  const source = `/**
 * Measured activation ranges of MusiCNN's int8 path (onnx-graph.ts int8Branch). Measurements, not weights: written by
 * src/bench/musicnn-int8-calibrate.ts (${new Date().toISOString().slice(0, 10)}) from the float graph's \`timbralMax\` output on
 * ${patches} patches (${DEFAULT_MUSICNN_PATCHES} evenly spaced per track, as the worker) of ${tracks.length} tuning tracks of the corpus
 * (at most ${perGroup} per soundtrack: ${groups}; all freely licensed, Debian main). Each range is ${HEADROOM} x the largest
 * value seen; the input range ${HEADROOM} x the largest log-mel value seen (${melMax.toFixed(3)}), rounded up to 0.1.
 * They belong to the checkpoints with the sha256 below (analyser.ts MUSICNN_FILES).
 */
import type { MusicnnInt8Calibration } from './onnx-graph';

/** Log-mel values covered by the uint8 input (before the input BN). */
const INPUT_RANGE = [0, ${inputHi}] as const;

/** Per network: the checkpoint's sha256 and the 408 timbral ranges (7x38 filters 0-203, then 7x67). */
export const MUSICNN_INT8_CALIBRATION: Readonly<Record<'msd' | 'mtt', MusicnnInt8Calibration & { sha256: string }>> = Object.freeze({
  msd: {
    sha256: '${MUSICNN_FILES.msd.sha256}',
    inputRange: INPUT_RANGE,
    timbralRanges: [${list(maxima[0]!)}],
  },
  mtt: {
    sha256: '${MUSICNN_FILES.mtt.sha256}',
    inputRange: INPUT_RANGE,
    timbralRanges: [${list(maxima[1]!)}],
  },
});
`;
  if (write) {
    const target = resolve(__dirname, '../../../services/analysis-worker/src/domain/musicnn/int8-calibration.ts');
    writeFileSync(target, source);
    log(`wrote ${join(target)}`);
  } else {
    process.stdout.write(source);
  }
  for (const s of sessions) await s.release();
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
