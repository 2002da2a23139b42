/**
 * Calibration of the identity gate for the learned embedding (`tfjs:musicnn-fusion-v1`, domain/musicnn/embedding.ts),
 * the way identity-calibration.ts calibrated dsp-v1's: the 41 Wesnoth tracks and their five copies (MP3 128k, AAC
 * 128k, Opus 96k, FLAC, FLAC cut by 1.5 s; same transcodes and scratch directory), each analysed as the worker does
 * (decode, dsp-v1, MusiCNN MSD + MTT with the worker's MUSICNN_PATCHES patches, default 4), then
 *   - cosine distance original -> copy per format (max, p95, median) and between different tracks (min, p1),
 *   - signature Hamming distances (the catalogue's candidate radius is 16 bits),
 *   - the threshold at the geometric mean of the worst re-encoding and the closest different pair, and its factor
 *     on the dsp-v1 setting (0.04; catalogue constants.ts EMBEDDER_COSINE_THRESHOLD_FACTOR).
 * Per file the inputs of the embedding (400 MusiCNN values, the dsp-v1 vector) are cached, so a refit of the
 * embedding's constants re-runs in seconds.
 *
 * Run: MODELS_DIR=... [CALIBRATION_COPIES=n] node bench/dist/analysis-worker/learned-identity-calibration.js
 *   CALIBRATION_COPIES: copies are made of the first n tracks only (default all 41); the different-song pairs
 *   always use every original (MusiCNN on 246 files is ~40 min of CPU on the shared machine).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cosineDistance } from '@polyphony/vectors';
import { decodeToPcm, DefaultEmbedder, MusicnnAnalyser, FusionEmbedder, penultimateMean } from '@polyphony/analysis-worker/engine';
import { BENCH_SCRATCH_DIR, wesnothTracks } from './corpus';
import { VARIANTS, hamming, quantile, signatureBits, summary, transcode } from './identity-calibration';
import { benchModelsDir } from './musicnn-cache';

/** The dsp-v1 threshold setting the factor is relative to (catalogue DUPLICATE_DISTANCE_THRESHOLD_COSINE). */
const DSP_V1_THRESHOLD = 0.04;

interface Inputs {
  musicnn: number[];
  dsp: number[];
  duration: number;
}

async function main(): Promise<void> {
  const patches = Number(process.env.MUSICNN_PATCHES ?? 4);
  const dir = join(BENCH_SCRATCH_DIR, 'transcodes');
  const cacheDir = join(BENCH_SCRATCH_DIR, `learned-identity-${patches}`);
  mkdirSync(dir, { recursive: true });
  mkdirSync(cacheDir, { recursive: true });
  const dsp = new DefaultEmbedder();
  let net: MusicnnAnalyser | undefined;
  const inputsOf = async (key: string, path: string): Promise<Inputs> => {
    const file = join(cacheDir, `${key}.json`);
    if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Inputs;
    net ??= await MusicnnAnalyser.load({ modelsDir: benchModelsDir(), backend: 'wasm', maxPatches: patches });
    const pcm = await decodeToPcm(path);
    const out = await net.analyse(pcm.samples);
    const rec: Inputs = { musicnn: [...penultimateMean(out.msd), ...penultimateMean(out.mtt!)], dsp: Array.from(dsp.embed(pcm.samples, pcm.sampleRate)), duration: pcm.durationSeconds };
    writeFileSync(file, JSON.stringify(rec));
    return rec;
  };
  const fusion = new FusionEmbedder();
  const tracks = wesnothTracks();
  process.stdout.write(`learned identity calibration: ${tracks.length} Wesnoth tracks (copies of the first ${Number(process.env.CALIBRATION_COPIES ?? tracks.length)}) x ${VARIANTS.length} copies, embedder ${fusion.version}, ${patches} patches\n`);
  const embed = (x: Inputs) => fusion.embed(x.musicnn, x.dsp);
  const originals: Array<{ name: string; v: Float32Array }> = [];
  const copies = new Map<string, Array<{ name: string; v: Float32Array }>>(VARIANTS.map((v) => [v.name, []]));
  const t0 = process.cpuUsage();
  const withCopies = Number(process.env.CALIBRATION_COPIES ?? tracks.length);
  const copyIndex = new Map<string, number>();
  for (const [i, t] of tracks.entries()) {
    const stem = t.name.split('/')[1]!;
    originals.push({ name: stem, v: embed(await inputsOf(`${stem}.orig`, t.path)) });
    if (i >= withCopies) continue;
    copyIndex.set(stem, i);
    for (const v of VARIANTS) {
      const target = join(dir, `${stem}.${v.name}.${v.ext}`);
      transcode(t.path, target, v);
      copies.get(v.name)!.push({ name: stem, v: embed(await inputsOf(`${stem}.${v.name}`, target)) });
    }
    const cpu = process.cpuUsage(t0);
    process.stderr.write(`[${i + 1}/${tracks.length}] ${stem} cpu ${((cpu.user + cpu.system) / 1e6).toFixed(0)} s\n`);
  }
  net?.dispose();

  const sameNoTrim: number[] = [];
  const sameHam: number[] = [];
  process.stdout.write('\n== original -> copy (same song) ==\n');
  for (const v of VARIANTS) {
    const list = copies.get(v.name)!;
    const cos = list.map((c) => cosineDistance(originals[copyIndex.get(c.name)!]!.v, c.v));
    const ham = list.map((c) => hamming(signatureBits(originals[copyIndex.get(c.name)!]!.v), signatureBits(c.v)));
    const worst = cos.indexOf(Math.max(...cos));
    process.stdout.write(`${v.name.padEnd(5)} cosine   ${summary(cos)}   (worst: ${list[worst]!.name})\n`);
    process.stdout.write(`${''.padEnd(5)} hamming  ${summary(ham, 0)}   (> 16 bits: ${ham.filter((h) => h > 16).length}/${list.length})\n`);
    if (v.name !== 'trim') sameNoTrim.push(...cos);
    sameHam.push(...ham);
  }
  const pairs: Array<{ a: string; b: string; cos: number; ham: number }> = [];
  for (let i = 0; i < originals.length; i++) {
    for (let j = i + 1; j < originals.length; j++) {
      const a = originals[i]!;
      const b = originals[j]!;
      pairs.push({ a: a.name, b: b.name, cos: cosineDistance(a.v, b.v), ham: hamming(signatureBits(a.v), signatureBits(b.v)) });
    }
  }
  pairs.sort((x, y) => x.cos - y.cos);
  const diff = pairs.map((p) => p.cos);
  process.stdout.write(`\n== different songs (${pairs.length} pairs) ==\n`);
  process.stdout.write(`cosine   ${summary(diff)}  p1 ${quantile(diff, 0.01).toFixed(5)}\n`);
  process.stdout.write(`hamming  ${summary(pairs.map((p) => p.ham), 0)}  (pairs within 16 bits: ${pairs.filter((p) => p.ham <= 16).length})\n`);
  for (const p of pairs.slice(0, 5)) process.stdout.write(`  ${p.a} / ${p.b}: cosine ${p.cos.toFixed(5)}, hamming ${p.ham}\n`);
  const maxSame = Math.max(...sameNoTrim);
  const minDiff = Math.min(...diff);
  process.stdout.write('\n== recommendation ==\n');
  process.stdout.write(`max re-encoding cosine distance: ${maxSame.toFixed(5)}; min different-song: ${minDiff.toFixed(5)}; max same-song Hamming ${Math.max(...sameHam)} bits\n`);
  if (maxSame < minDiff) {
    const threshold = Number(Math.sqrt(maxSame * minDiff).toPrecision(2));
    process.stdout.write(`threshold ${threshold} (x${(threshold / maxSame).toFixed(1)} above the worst re-encoding, x${(minDiff / threshold).toFixed(1)} below the closest different song): factor ${(threshold / DSP_V1_THRESHOLD).toFixed(3)} on the dsp-v1 setting ${DSP_V1_THRESHOLD}\n`);
  } else {
    process.stdout.write('re-encodings and different songs OVERLAP in cosine distance: the embedding alone cannot separate them\n');
  }
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
