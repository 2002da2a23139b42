/**
 * MusiCNN track analysis: log-mel front end (mel.ts) + the MSD network, and the MTT network when its file
 * is installed, run with ONNX Runtime (onnx-network.ts, native CPU code) when onnxruntime-node loads, else
 * with TensorFlow.js (tf-runtime.ts: tfjs-node when installed, else wasm). Per track the
 * analyser returns the per-patch outputs of each network; learned.ts turns them into tags, moods and the
 * "other features", embedding.ts into the stored embedding.
 *
 * Model files live under `<MODELS_DIR>/musicnn/` (MSD_musicnn.h5 required, MTT_musicnn.h5 optional) and are
 * checked against the pinned sha256 of upstream musicnn_keras (MUSICNN_FILES).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as Tf from '@tensorflow/tfjs';
import { MUSICNN_INPUT, MusicnnMelFrontend } from './mel';
import { musicnnInput, type MusicnnInput } from './input';
import { MusicnnNetwork, POOLED_DIM, type PatchNetwork, type PatchOutputs } from './network';
import { MUSICNN_INT8_CALIBRATION } from './int8-calibration';
import type { MusicnnPrecision } from './onnx-graph';
import { OnnxMusicnnNetwork, loadOnnxRuntime } from './onnx-network';
import { type ModuleLoader, type NeuralBackend, type TfRuntime, ensureBackend, loadTfRuntime } from './tf-runtime';
import { MusicnnModelError, loadMusicnnFile } from './weights';
import { referenceVectorOf, type DenseHead } from './reference-vector';

/**
 * Upstream files (github.com/Quint-e/musicnn_keras, commit 8e2d042f3a7bc560f825626144ae0f4ee20199ae,
 * musicnn_keras/keras_checkpoints/) and their sha256 (../shared/models/musicnn/README.md). scripts/setup.sh
 * pins the same values.
 */
export const MUSICNN_FILES = Object.freeze({
  msd: { file: 'MSD_musicnn.h5', sha256: '412a832c8527a813e084ba6f2cc7d068ecbbf1b68bda8c1de2e7de0d1f5fe7d1' },
  mtt: { file: 'MTT_musicnn.h5', sha256: '1a66a2e58e862e894c088bd7789b05874becf994f275c54d9575dab83fab4ebe' },
});

/** Where the model files are expected, for messages: `<modelsDir>/musicnn/MSD_musicnn.h5`. */
export function musicnnPath(modelsDir: string, which: keyof typeof MUSICNN_FILES): string {
  return join(modelsDir, 'musicnn', MUSICNN_FILES[which].file);
}

export type { MusicnnPrecision };

/**
 * Whether the int8 path is safe on this CPU. On x86, ONNX Runtime's uint8 x int8 kernels without VNNI (plain AVX2 /
 * AVX-512) use VPMADDUBSW, whose 16-bit pair sums can saturate with full-range 8-bit inputs and weights (ONNX Runtime's
 * quantization documentation, "reduce_range"); with AVX512-VNNI or AVX-VNNI (VPDPBUSD, 32-bit sums) they cannot. Other
 * architectures (arm64: different kernels) run float: the int8 path's accuracy and speed were measured on x86 with
 * VNNI only (docs/musicnn.md, Cost), and float is the path checked against the numpy oracle. Linux reads
 * /proc/cpuinfo; an x86 host whose flags cannot be read is treated as unsafe (float).
 * @param cpuinfo the text of /proc/cpuinfo (tests); default read from the system
 * @param arch process.arch (tests)
 */
export function int8Supported(cpuinfo?: string, arch: string = process.arch): boolean {
  if (arch !== 'x64' && arch !== 'ia32') return false;
  let text = cpuinfo;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/cpuinfo', 'utf8');
    } catch {
      return false;
    }
  }
  const flags = /^flags\s*:(.*)$/m.exec(text)?.[1]?.split(/\s+/) ?? [];
  return flags.includes('avx512_vnni') || flags.includes('avx_vnni');
}

/** Where the network runs: ONNX Runtime or a TensorFlow.js backend. */
export type MusicnnBackend = 'onnxruntime' | NeuralBackend;
/** `auto` tries onnxruntime, then the TensorFlow.js order (tensorflow, wasm, cpu). */
export type MusicnnBackendPreference = 'auto' | MusicnnBackend;

/** Options of {@link MusicnnAnalyser.load}. */
export interface MusicnnOptions {
  /** MODELS_DIR: the folder holding `musicnn/`. */
  modelsDir: string;
  /** Runtime (default 'auto': ONNX Runtime when onnxruntime-node loads, else TensorFlow.js). */
  backend?: MusicnnBackendPreference;
  /** Module loader (tests simulate a missing onnxruntime-node); default `require`. */
  load?: ModuleLoader;
  /** Patches run per track, spread evenly (mel.ts patchStarts); default all. */
  maxPatches?: number;
  /** Load the MTT network too when its file is present (default true, as the worker's MUSICNN_MTT). */
  useMtt?: boolean;
  /** Also return the 1506-d pooled layer per patch (benchmarks; default false). */
  withPooled?: boolean;
  /**
   * Precision of the timbral convolutions on ONNX Runtime (MUSICNN_PRECISION): 'float' (default here; matches the
   * numpy oracle) or 'int8' (QLinearConv with the measured ranges of int8-calibration.ts, about half the CPU per
   * patch; docs/musicnn.md, Cost). TensorFlow.js always runs float, and so does an x86 CPU without VNNI
   * (int8Supported); the analyser's `precision` says which ran.
   */
  precision?: MusicnnPrecision;
  /** Whether int8 is safe on this host (tests simulate a CPU without VNNI); default int8Supported. */
  int8Check?: () => boolean;
}

/** Per-track outputs of the networks. */
export interface MusicnnTrackOutputs {
  /** Start frames of the patches run. */
  starts: number[];
  msd: PatchOutputs;
  mtt?: PatchOutputs;
  /** Milliseconds spent in the front end and in the networks. */
  melMs: number;
  networkMs: number;
  /** Of networkMs, the MTT network's share (0 without MTT). */
  mttMs: number;
  /**
   * The same three stages in CPU ms of this process (process.cpuUsage, user + system): front end, MSD
   * network, MTT network (0 without MTT). Meaningful on a loaded machine where wall time is not. Always set
   * by the analyser (optional for hand-made outputs in tests). For an input computed on a CPU thread
   * (`analyseInput`) the front end's figure is its wall time there (Node 20 has no per-thread CPU clock).
   */
  cpu?: { melMs: number; msdMs: number; mttMs: number };
}

/** Loaded MusiCNN networks. One per process (tfjs is process-global); analyse() calls are serialised. */
export class MusicnnAnalyser {
  private readonly mel = new MusicnnMelFrontend();
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    /** The tfjs runtime, or undefined on ONNX Runtime. */
    private readonly rt: TfRuntime | undefined,
    private readonly msd: PatchNetwork,
    private readonly mtt: PatchNetwork | undefined,
    /** `musicnn-msd@<sha8>[+mtt@<sha8>]`: the tags_model stored with the features. */
    readonly modelId: string,
    readonly maxPatches: number,
    private readonly withPooled = false,
    /** The precision the networks run at ('float' on TensorFlow.js whatever was asked). */
    readonly precision: MusicnnPrecision = 'float',
    /** The MSD checkpoint's BN + dense weights after the pooling (the reference's vector, reference-vector.ts). */
    private readonly msdHead?: DenseHead,
  ) {}

  /** The runtime in use ('onnxruntime', or the tfjs backend 'tensorflow', 'wasm' or 'cpu'). */
  get backend(): MusicnnBackend {
    return this.rt?.backend ?? 'onnxruntime';
  }

  /** True when the MTT network is loaded. */
  get hasMtt(): boolean {
    return this.mtt !== undefined;
  }

  /**
   * Loads the networks.
   * @throws MusicnnModelError when MSD_musicnn.h5 is missing, unreadable or has another sha256
   */
  static async load(opts: MusicnnOptions): Promise<MusicnnAnalyser> {
    const msdPath = musicnnPath(opts.modelsDir, 'msd');
    if (!existsSync(msdPath)) throw new MusicnnModelError(`${msdPath} is missing`);
    const msd = await loadMusicnnFile(msdPath, MUSICNN_FILES.msd.sha256);
    const mttPath = musicnnPath(opts.modelsDir, 'mtt');
    const mtt = opts.useMtt !== false && existsSync(mttPath) ? await loadMusicnnFile(mttPath, MUSICNN_FILES.mtt.sha256) : undefined;
    const id = `musicnn-msd@${msd.sha256.slice(0, 8)}${mtt ? `+mtt@${mtt.sha256.slice(0, 8)}` : ''}`;
    const preference = opts.backend ?? 'auto';
    // int8 only where the CPU's kernels are exact (int8Supported); elsewhere float, which `precision` then reports
    const precision: MusicnnPrecision = opts.precision === 'int8' && (opts.int8Check ?? int8Supported)() ? 'int8' : 'float';
    const make = (rt: TfRuntime | undefined, msdNet: PatchNetwork, mttNet: PatchNetwork | undefined) =>
      new MusicnnAnalyser(rt, msdNet, mttNet, id, opts.maxPatches ?? Infinity, opts.withPooled ?? false, rt ? 'float' : precision, { flatBn: msd.weights.flatBn, dense: msd.weights.dense });
    if (preference === 'auto' || preference === 'onnxruntime') {
      const ort = loadOnnxRuntime(opts.load);
      if (ort) {
        try {
          // the calibration belongs to the pinned checkpoints (loadMusicnnFile checked their sha256)
          const graph = (which: 'msd' | 'mtt') => (precision === 'int8' ? { precision, int8: MUSICNN_INT8_CALIBRATION[which] } : {});
          const msdNet = await OnnxMusicnnNetwork.create(ort, msd.weights, graph('msd'));
          return make(undefined, msdNet, mtt ? await OnnxMusicnnNetwork.create(ort, mtt.weights, graph('mtt')) : undefined);
        } catch (err) {
          if (preference === 'onnxruntime') throw new MusicnnModelError(`ONNX Runtime rejected the MusiCNN graph: ${(err as Error).message}`);
        }
      } else if (preference === 'onnxruntime') {
        throw new MusicnnModelError('onnxruntime-node is not available in this installation');
      }
    }
    const rt = await loadTfRuntime(preference === 'auto' ? 'auto' : (preference as NeuralBackend), opts.load);
    return make(rt, new MusicnnNetwork(rt.tf, msd.weights), mtt ? new MusicnnNetwork(rt.tf, mtt.weights) : undefined);
  }

  /** The tfjs namespace (tests and benchmarks); undefined on ONNX Runtime. */
  get tf(): typeof Tf | undefined {
    return this.rt?.tf;
  }

  /**
   * Runs the networks on a track, computing its input (the log-mel front end) inline on this thread. The analysis
   * worker computes the input on a CPU thread instead and calls {@link analyseInput}.
   * @param pcm mono float PCM at 16 kHz (more than 256 samples; shorter than one patch is tiled)
   * @param maxPatches overrides the analyser's patch budget for this call
   * @throws RangeError when the audio has 256 samples or fewer
   */
  analyse(pcm: Float32Array, maxPatches = this.maxPatches): Promise<MusicnnTrackOutputs> {
    return this.serialised(() => {
      const c0 = process.cpuUsage();
      const input = musicnnInput(this.mel, pcm, { variant: 'tags', maxPatches });
      const used = process.cpuUsage(c0);
      return this.runNetworks(input, (used.user + used.system) / 1000);
    });
  }

  /**
   * Runs the networks on an input computed elsewhere (musicnnInput, variant `tags`: the worker's CPU threads), so
   * only the networks' work, which ONNX Runtime does on its own threads, happens here. Same outputs as `analyse` on
   * the same PCM and patch budget.
   * @throws RangeError when the input is not a `tags` input
   */
  analyseInput(input: MusicnnInput): Promise<MusicnnTrackOutputs> {
    if (input.variant !== 'tags') return Promise.reject(new RangeError(`analyseInput needs a tags input, got ${input.variant}`));
    return this.serialised(() => this.runNetworks(input, input.melMs));
  }

  /**
   * The reference implementation's song vector (`audiomuse:musicnn-msd-200`, reference-vector.ts): the MSD network's
   * `model/dense/BiasAdd` (the 200-d dense layer before its ReLU), mean over every non-overlapping 3 s patch of the
   * uncentred mel of the first 600 s. Runs the MSD network only, at this analyser's precision (int8 where chosen: use a
   * float analyser to compare with the reference). Cost: one network pass per 3 s of audio (up to 200 patches).
   * @param pcm mono float PCM at 16 kHz, at least 512 samples, or its `reference` input computed elsewhere (musicnnInput)
   * @returns the vector and the number of complete patches it averages (0: shorter than one patch, tiled)
   * @throws RangeError when the audio is shorter than one STFT frame, or the input is not a `reference` input
   */
  referenceVector(pcm: Float32Array | MusicnnInput): Promise<{ vector: Float32Array; patches: number }> {
    return this.serialised(async () => {
      if (!this.msdHead) throw new RangeError('this analyser holds no MSD dense weights');
      const input = pcm instanceof Float32Array ? musicnnInput(this.mel, pcm, { variant: 'reference' }) : pcm;
      if (input.variant !== 'reference') throw new RangeError(`referenceVector needs a reference input, got ${input.variant}`);
      if (this.rt) await ensureBackend(this.rt);
      const msd = await this.batched(this.msd, input.input, input.starts.length, true);
      return { vector: referenceVectorOf(msd, this.msdHead), patches: input.complete };
    });
  }

  /** Runs `work` after every call queued before it (the networks and the front end's buffers are used one call at a time). */
  private serialised<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** The networks on a `tags` input; `melCpuMs` is the CPU time its front end took (reported in `cpu.melMs`). */
  private async runNetworks({ starts, input, melMs }: MusicnnInput, melCpuMs: number): Promise<MusicnnTrackOutputs> {
    const t1 = performance.now();
    const c1 = process.cpuUsage();
    if (this.rt) await ensureBackend(this.rt);
    const msd = await this.batched(this.msd, input, starts.length);
    const t2 = performance.now();
    const c2 = process.cpuUsage();
    const mtt = this.mtt ? await this.batched(this.mtt, input, starts.length) : undefined;
    const t3 = performance.now();
    const c3 = process.cpuUsage();
    const ms = (a: NodeJS.CpuUsage, b: NodeJS.CpuUsage) => (b.user - a.user + b.system - a.system) / 1000;
    const cpu = { melMs: melCpuMs, msdMs: ms(c1, c2), mttMs: this.mtt ? ms(c2, c3) : 0 };
    return { starts, msd, mtt, melMs, networkMs: t3 - t1, mttMs: t3 - t2, cpu };
  }

  /** Runs the network in batches of BATCH patches (bounds peak memory: the largest activation is 18 MB per patch). */
  private async batched(net: PatchNetwork, input: Float32Array, n: number, withPooled = this.withPooled): Promise<PatchOutputs> {
    const per = MUSICNN_INPUT.patchFrames * MUSICNN_INPUT.nMels;
    const tags = new Float32Array(n * 50);
    const pen = new Float32Array(n * 200);
    const pooled = withPooled ? new Float32Array(n * POOLED_DIM) : undefined;
    for (let i = 0; i < n; i += BATCH) {
      const m = Math.min(BATCH, n - i);
      const out = await net.predict(input.subarray(i * per, (i + m) * per), m, pooled !== undefined);
      tags.set(out.tags, i * 50);
      pen.set(out.penultimate, i * 200);
      if (pooled && out.pooled) pooled.set(out.pooled, i * POOLED_DIM);
    }
    return pooled ? { patches: n, tags, penultimate: pen, pooled } : { patches: n, tags, penultimate: pen };
  }

  /** Frees the networks' tensors. */
  dispose(): void {
    this.msd.dispose();
    this.mtt?.dispose();
  }
}

/**
 * Patches per network call. Measured (docs/musicnn.md, Cost): CPU per patch is the same for batches of
 * 1-8 (213-222 ms MSD on wasm SIMD), while the wasm heap keeps the high-water mark of the largest batch
 * (RSS 239 / 279 / 340 / 472 MB after batches of 1 / 2 / 4 / 8), so one patch at a time.
 */
const BATCH = 1;
