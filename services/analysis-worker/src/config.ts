import { z } from 'zod';
import { envBool, loadServiceConfig, parseConfig, readEnv, type ServiceConfig } from '@polyphony/platform';
import type { MusicnnPrecision } from './domain/musicnn/analyser';

/** Analysis service configuration: connection settings, the learned-model folder and its patch budget. */
export interface AnalysisConfig extends ServiceConfig {
  /** MODELS_DIR: folder holding `musicnn/MSD_musicnn.h5` (+ MTT); undefined = learned model off. */
  modelsDir?: string;
  /** MUSICNN_PATCHES: 3-second patches run per track, spread evenly over it (docs/musicnn.md: cost and precision). */
  musicnnPatches: number;
  /** MUSICNN_MTT: also run the MTT network when its file is present (default on: MTT tags carry the instrument, tempo and loudness words of text search, precision@10 0.89 against 0.61 without; doubles network cost). */
  musicnnMtt: boolean;
  /** MUSICNN_PRECISION: 'int8' (timbral convolutions in int8 on ONNX Runtime) or 'float' (docs/musicnn.md, Cost). */
  musicnnPrecision: MusicnnPrecision;
  /**
   * ANALYSIS_CPU_THREADS: worker threads for the per-song DSP (dsp-v1 analysis, recording fingerprint; `AnalysisThreadPool`),
   * 1-64. Undefined = one per track processed at once (the consumer's prefetch, 2).
   */
  analysisCpuThreads?: number;
  /** How often the change detection looks for due servers, ms (default 1000; 0 = off in this process). Not an environment setting: the per-server setting lives in the registry. */
  changeWatchTickMs?: number;
}

/** Default patches per track (docs/musicnn.md, "Cost"). */
export const DEFAULT_MUSICNN_PATCHES = 24;

/** Default precision of the MusiCNN timbral convolutions on ONNX Runtime (docs/musicnn.md, Cost: "int8"). */
export const DEFAULT_MUSICNN_PRECISION: MusicnnPrecision = 'int8';

/** Analysis service configuration from the environment (tunables live in its settings table). */
export function loadAnalysisConfig(env: Record<string, string | undefined> = readEnv()): AnalysisConfig {
  const e = parseConfig(z.object({ MODELS_DIR: z.string().min(1).optional(), MUSICNN_PATCHES: z.coerce.number().int().min(1).max(1000).default(DEFAULT_MUSICNN_PATCHES), MUSICNN_MTT: envBool(true), MUSICNN_PRECISION: z.enum(['int8', 'float']).default(DEFAULT_MUSICNN_PRECISION), ANALYSIS_CPU_THREADS: z.coerce.number().int().min(1).max(64).optional() }), env);
  return { ...loadServiceConfig('analysis-worker', 'analysis', env), modelsDir: e.MODELS_DIR, musicnnPatches: e.MUSICNN_PATCHES, musicnnMtt: e.MUSICNN_MTT, musicnnPrecision: e.MUSICNN_PRECISION, analysisCpuThreads: e.ANALYSIS_CPU_THREADS };
}
