/**
 * Where tests find the MusiCNN weights: MODELS_DIR when set, else `../shared/models` relative to the
 * repository root (the build machines' shared data folder). Tests that need the weights skip, saying why,
 * only when that folder is absent.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** Repository root (this file is services/analysis-worker/src/domain/musicnn/__tests__/models.ts). */
export const REPO_ROOT = resolve(__dirname, '../../../../../..');

/** MODELS_DIR or <repo>/../shared/models. */
export function testModelsDir(): string {
  return process.env.MODELS_DIR ? resolve(process.env.MODELS_DIR) : resolve(REPO_ROOT, '..', 'shared', 'models');
}

/** True when `<models>/musicnn/MSD_musicnn.h5` exists; otherwise prints once why the suite is skipped. */
export function modelsPresent(suite: string): boolean {
  const file = join(testModelsDir(), 'musicnn', 'MSD_musicnn.h5');
  if (existsSync(file)) return true;
  console.warn(`${suite}: SKIPPED, MusiCNN weights not found at ${file} (set MODELS_DIR or provide ../shared/models)`);
  return false;
}

/** Oracle outputs for some patches of one PCM signal. */
export interface OracleResult {
  mel: number[][][];
  tags: number[][];
  penultimate: number[][];
  /** The dense layer before its ReLU (musicnn's `model/dense/BiasAdd`), per patch. */
  dense: number[][];
}

const ORACLE_DIR = join(__dirname, '..', '__oracle__');

/** Dumps a checkpoint's arrays with h5wasm (dump-weights.mjs) into a fresh temp folder; returns it. */
export function dumpWeights(h5: string): string {
  const out = mkdtempSync(join(tmpdir(), 'musicnn-weights-'));
  const r = spawnSync(process.execPath, [join(ORACLE_DIR, 'dump-weights.mjs'), h5, out], { encoding: 'utf8', cwd: REPO_ROOT });
  if (r.status !== 0) throw new Error(`dump-weights failed: ${r.stderr}`);
  return out;
}

/** Runs the numpy oracle (musicnn_oracle.py) on `pcm` for the patches starting at `starts` (`uncentred`: librosa center=False). */
export function runOracle(weightsDir: string, pcm: Float32Array, starts: number[], uncentred = false): OracleResult {
  const dir = mkdtempSync(join(tmpdir(), 'musicnn-oracle-'));
  const pcmFile = join(dir, 'pcm.f32');
  writeFileSync(pcmFile, Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
  const out = join(dir, 'out.json');
  const r = spawnSync('python3', [join(ORACLE_DIR, 'musicnn_oracle.py'), weightsDir, pcmFile, starts.join(','), out, ...(uncentred ? ['uncentred'] : [])], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`numpy oracle failed (python3 with numpy is required): ${r.stderr}`);
  return JSON.parse(readFileSync(out, 'utf8')) as OracleResult;
}
