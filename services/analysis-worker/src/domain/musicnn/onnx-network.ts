/**
 * MusiCNN run by ONNX Runtime (`onnxruntime-node`, the CPU library shipped inside the npm package; native
 * code with the host's AVX2/AVX-512 kernels) on the graph built in memory by onnx-graph.ts. Same outputs as
 * network.ts (tfjs) to float32 rounding, about 8x less CPU per patch (docs/musicnn.md, Cost).
 *
 * One thread per session (intra- and inter-op 1): the worker's budget is one core, and analysis scales
 * by running workers. The module is loaded with `require` at run time, so a build without it (or a
 * platform it has no binary for) falls back to TensorFlow.js (analyser.ts).
 */
import { MUSICNN_INPUT } from './mel';
import type { PatchNetwork, PatchOutputs } from './network';
import { type MusicnnGraphOptions, musicnnOnnxModel } from './onnx-graph';
import type { ModuleLoader } from './tf-runtime';
import type { MusicnnWeights } from './weights';

/** The part of the onnxruntime-node API used here (kept local so the types do not need the package). */
interface OrtTensor {
  readonly data: unknown;
}
interface OrtSession {
  run(feeds: Record<string, OrtTensor>, fetches: string[]): Promise<Record<string, OrtTensor>>;
  release(): Promise<void>;
}
/** onnxruntime-node's exports used by this module. */
export interface OrtModule {
  Tensor: new (type: 'float32', data: Float32Array, dims: number[]) => OrtTensor;
  InferenceSession: {
    create(model: Uint8Array, options: Record<string, unknown>): Promise<OrtSession>;
  };
}

const defaultLoader: ModuleLoader = (id) => require(id) as unknown;

/**
 * Loads onnxruntime-node.
 * @returns the module, or undefined when it is not installed or has no binary for this platform
 */
export function loadOnnxRuntime(load: ModuleLoader = defaultLoader): OrtModule | undefined {
  try {
    const ort = load('onnxruntime-node') as Partial<OrtModule>;
    return ort.InferenceSession && ort.Tensor ? (ort as OrtModule) : undefined;
  } catch {
    return undefined;
  }
}

/** Session options: one thread, all graph optimisations (conv + add fusion, constant folding). */
export const ONNX_SESSION_OPTIONS = Object.freeze({
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
});

/** One MusiCNN network as an ONNX Runtime session. Call dispose() to release it. */
export class OnnxMusicnnNetwork implements PatchNetwork {
  private constructor(
    private readonly ort: OrtModule,
    private session: OrtSession | undefined,
  ) {}

  /**
   * Builds the graph from the weights and opens a session on it.
   * @param graph precision (float by default, or int8 with its calibration; onnx-graph.ts)
   * @throws whatever ONNX Runtime throws when it rejects the model or cannot run it (analyser.ts then falls back to tfjs)
   */
  static async create(ort: OrtModule, w: MusicnnWeights, graph: MusicnnGraphOptions = {}): Promise<OnnxMusicnnNetwork> {
    const net = new OnnxMusicnnNetwork(ort, await ort.InferenceSession.create(musicnnOnnxModel(w, graph), { ...ONNX_SESSION_OPTIONS }));
    // One probe patch: a runtime that loads but cannot run here (e.g. Jest's sandbox, whose Float32Array
    // is not the native binding's) fails now, so the analyser falls back to tfjs instead of failing tracks.
    try {
      await net.predict(new Float32Array(MUSICNN_INPUT.patchFrames * MUSICNN_INPUT.nMels), 1);
    } catch (err) {
      net.dispose();
      throw err;
    }
    return net;
  }

  /**
   * Runs the network.
   * @param patches float32 [n][187][96] log-mel patches (mel.ts patchTensorData)
   * @param n number of patches
   * @param withPooled also return the 1506-d pooled layer
   */
  async predict(patches: Float32Array, n: number, withPooled = false): Promise<PatchOutputs> {
    const { patchFrames, nMels } = MUSICNN_INPUT;
    if (patches.length !== n * patchFrames * nMels) throw new RangeError(`expected ${n} patches of ${patchFrames}x${nMels}`);
    if (!this.session) throw new Error('ONNX MusiCNN network is disposed');
    const fetches = withPooled ? ['tags', 'penultimate', 'pooled'] : ['tags', 'penultimate'];
    const out = await this.session.run({ x: new this.ort.Tensor('float32', patches, [n, 1, patchFrames, nMels]) }, fetches);
    const result: PatchOutputs = { patches: n, tags: Float32Array.from(out.tags!.data as Float32Array), penultimate: Float32Array.from(out.penultimate!.data as Float32Array) };
    if (withPooled) result.pooled = Float32Array.from(out.pooled!.data as Float32Array);
    return result;
  }

  /** Releases the session (its weights and buffers). */
  dispose(): void {
    const s = this.session;
    this.session = undefined;
    void s?.release().catch(() => undefined);
  }
}
