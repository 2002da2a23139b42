/**
 * Benchmark: time to embed 30 s of 16 kHz audio (10 MusiCNN patches) with {@link NeuralEmbedder}, per model
 * and tfjs backend, plus the typed-array mel front end alone.
 *
 * Models (random weights, saved to a temp dir and loaded back through the fs IOHandler like a real model):
 * - tiny: the unit-test model (conv 7x96 x 8 filters -> dense 200 -> dense 50);
 * - musicnn-sized: roughly MusiCNN's compute (see synthetic-model.ts).
 *
 * Run: `npx tsc -b services/analysis-worker && node services/analysis-worker/dist/bench/neural-embed.js
 *   [--models tiny,musicnn-sized] [--backends wasm,cpu] [--runs 3]`
 * Without --models/--backends it runs tiny on wasm and cpu and musicnn-sized on wasm only: musicnn-sized on
 * the plain cpu backend takes over a minute per 30 s (pass `--backends wasm,cpu` to include it).
 * The embed figure includes the front end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import * as tf from '@tensorflow/tfjs';
import { fileSystemIOHandler } from '../domain/neural/fs-io-handler';
import { MusicnnMelFrontend } from '../domain/neural/mel-frontend';
import { NeuralEmbedder } from '../domain/neural/neural-embedder';
import { buildMusicnnSizedModel, buildTinyPatchModel } from '../domain/neural/synthetic-model';
import type { NeuralBackend } from '../domain/neural/tf-runtime';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function thirtySeconds(): Float32Array {
  let seed = 12345;
  return Float32Array.from({ length: 30 * 16000 }, (_, i) => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    const t = i / 16000;
    return 0.4 * Math.sin(2 * Math.PI * 220 * t) + 0.2 * Math.sin(2 * Math.PI * 2750 * t) + 0.1 * (seed / 2 ** 32 - 0.5);
  });
}

async function main(): Promise<void> {
  const explicit = process.argv.includes('--models') || process.argv.includes('--backends');
  const models = arg('models', 'tiny,musicnn-sized').split(',');
  const backendList = arg('backends', 'wasm,cpu').split(',') as NeuralBackend[];
  const backendsFor = (model: string): NeuralBackend[] => (explicit || model === 'tiny' ? backendList : backendList.filter((b) => b !== 'cpu'));
  const runs = Number(arg('runs', '3'));
  tf.env().set('PROD', true);
  const pcm = thirtySeconds();

  const frontend = new MusicnnMelFrontend();
  frontend.logMel(pcm);
  const feTimes: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    frontend.logMel(pcm);
    feTimes.push(performance.now() - t0);
  }
  console.log(`mel front end (typed-array FFT): ${median(feTimes).toFixed(1)} ms per 30 s (1874 frames x 96 bands, median of 5)`);

  const root = mkdtempSync(join(tmpdir(), 'neural-bench-'));
  try {
    await tf.setBackend('cpu');
    for (const name of models) {
      const dir = join(root, name);
      const model = name === 'tiny' ? buildTinyPatchModel(tf) : name === 'musicnn-sized' ? buildMusicnnSizedModel(tf) : undefined;
      if (!model) throw new Error(`unknown model '${name}'`);
      await model.save(fileSystemIOHandler(dir));
      const params = model.countParams();
      model.dispose();
      for (const backend of backendsFor(name)) {
        const t0 = performance.now();
        const embedder = await NeuralEmbedder.load({ modelDir: dir, backend, outputName: 'embedding' });
        const loadMs = performance.now() - t0;
        await embedder.embed(pcm, 16000); // warm-up at the batch shapes used (8 + 2 patches)
        const times: number[] = [];
        for (let r = 0; r < runs; r++) {
          const t1 = performance.now();
          await embedder.embed(pcm, 16000);
          times.push(performance.now() - t1);
        }
        embedder.dispose();
        console.log(
          `${name.padEnd(14)} ${String(params).padStart(8)} params  ${backend.padEnd(10)} load+warm ${loadMs.toFixed(0).padStart(6)} ms   ` +
            `embed 30 s: ${median(times).toFixed(0).padStart(6)} ms (median of ${runs}, ${(median(times) / 10).toFixed(1)} ms/patch)`,
        );
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
