/**
 * Optional neural track embedder: a TensorFlow.js model (e.g. MusiCNN converted to a tfjs graph model) read
 * from a local directory and applied per 3-second mel patch; the track embedding is the mean of the patch
 * embeddings (reference implementation, MusiCNN section: "track embedding = mean over patches").
 *
 * Pipeline: 16 kHz mono PCM -> {@link MusicnnMelFrontend} (96 Slaney mel bands, n_fft 512, hop 256,
 * log10(1 + 10000 mel)) -> non-overlapping 187-frame patches (trailing partial patch dropped) -> model in
 * batches of 8 patches -> one vector per patch (output flattened to D values) -> arithmetic mean.
 *
 * Output layer: by default the model's first output. For MusiCNN (msd-musicnn) pass
 * `outputName: 'model/dense/BiasAdd'`, the 200-d penultimate dense layer that the reference implementation
 * reads (ONNX output `model/dense/BiasAdd:0`), rather than the 50 tag sigmoids (`model/Sigmoid`).
 */
import { basename, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import type * as Tf from '@tensorflow/tfjs';
import { AppError, ValidationError } from '@polyphony/platform';
import { NeuralModelError, readModelDirectory } from './fs-io-handler';
import { MUSICNN_FRONTEND, MusicnnMelFrontend, toPatches } from './mel-frontend';
import { type BackendPreference, type ModuleLoader, type NeuralBackend, type TfRuntime, ensureBackend, loadTfRuntime } from './tf-runtime';

/**
 * Track embedder contract shared with the DSP embedder (declared here too so this folder stands alone).
 * `version` identifies model + front end: vectors with different versions are not comparable.
 */
export interface Embedder {
  readonly version: string;
  readonly dimensions: number;
  embed(pcm: Float32Array, sampleRate: number): Float32Array | Promise<Float32Array>;
}

/** The audio holds fewer samples than one 187-frame patch (48 128 samples at 16 kHz, about 3 s): no embedding. */
export class AudioTooShortError extends AppError {
  constructor(samples: number, needed: number) {
    super('audio_too_short', `audio has ${samples} samples, at least ${needed} (one patch at 16 kHz) are needed`, 422);
  }
}

/**
 * How a patch is laid out in the model input. 'time-mel': [batch, 187, 96] (MusiCNN's `model/Placeholder`),
 * 'mel-time': [batch, 96, 187]. A trailing channel axis of size 1 is added when the model's input has rank 4.
 */
export type InputLayout = 'time-mel' | 'mel-time';

/** Options for {@link NeuralEmbedder.load}. */
export interface NeuralEmbedderOptions {
  /** Local directory holding `model.json` and its weight shards. */
  readonly modelDir: string;
  /** Backend choice (default 'auto': tfjs-node, else wasm, else cpu). */
  readonly backend?: BackendPreference;
  /** Layers model: layer name; graph model: node name. Default: the model's first output. */
  readonly outputName?: string;
  /** Overrides the layout inferred from the model's declared input shape (needed only if that is unknown). */
  readonly inputLayout?: InputLayout;
  /** Patches per model call (default 8, the reference implementation's MUSICNN_BATCH_SIZE). */
  readonly batchPatches?: number;
  /** When set, loading fails unless the selected output has exactly this many values per patch (e.g. 200). */
  readonly expectedDimensions?: number;
  /** Name used in the version id (default: the model directory's base name). */
  readonly name?: string;
  /** Module loader for tfjs packages (tests use it to simulate a missing package). */
  readonly moduleLoader?: ModuleLoader;
}

/** Per-patch output of {@link NeuralEmbedder.embedPatches}. */
export interface PatchEmbeddingResult {
  /** Mean of the patch embeddings, length `dimensions`. */
  readonly embedding: Float32Array;
  /** Number of patches the audio yielded. */
  readonly patchCount: number;
  /** Patch embeddings, patch-major [patchCount][dimensions]. */
  readonly patchEmbeddings: Float32Array;
}

type Runner = (x: Tf.Tensor) => Promise<Tf.Tensor>;

/** Layout and rank of the tensor fed to the model. */
export interface InputSpec {
  readonly layout: InputLayout;
  readonly rank: 3 | 4;
}

const { patchFrames, nMels, sampleRateHz } = MUSICNN_FRONTEND;

function inferInputSpec(shape: readonly (number | null | undefined)[] | undefined, override?: InputLayout): InputSpec {
  const dims = shape ? shape.slice(1).map((d) => (d == null || d < 0 ? undefined : d)) : undefined;
  const rank: 3 | 4 = dims?.length === 3 ? 4 : 3;
  if (dims && !(dims.length === 2 || (dims.length === 3 && (dims[2] === 1 || dims[2] === undefined)))) {
    throw new NeuralModelError(`unsupported model input shape [${shape!.join(', ')}]: expected [batch, 187, 96] or [batch, 96, 187] (+ channel 1)`);
  }
  if (override) return { layout: override, rank };
  const [a, b] = dims ?? [];
  if (a === patchFrames && b === nMels) return { layout: 'time-mel', rank };
  if (a === nMels && b === patchFrames) return { layout: 'mel-time', rank };
  if (a === undefined && b === undefined) return { layout: 'time-mel', rank }; // MusiCNN's convention
  if ((a === undefined || a === patchFrames) && (b === undefined || b === nMels)) return { layout: 'time-mel', rank };
  if ((a === undefined || a === nMels) && (b === undefined || b === patchFrames)) return { layout: 'mel-time', rank };
  throw new NeuralModelError(`model input shape [${shape!.join(', ')}] does not take 187-frame x 96-band patches`);
}

function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, '_') || 'model';
}

/**
 * Neural {@link Embedder} over a local TensorFlow.js model. Create with {@link NeuralEmbedder.load}.
 * Not safe for concurrent `embed` calls on different tfjs backends in one process (the backend is global).
 */
export class NeuralEmbedder implements Embedder {
  private readonly frontend = new MusicnnMelFrontend();

  private constructor(
    /** `tfjs:<name>:<16 hex of sha256(model.json, shards, output name)>`. */
    readonly version: string,
    /** Embedding length D (flattened size of the selected output per patch). */
    readonly dimensions: number,
    /** Backend the model runs on. */
    readonly backend: NeuralBackend,
    /** Layout fed to the model. */
    readonly input: InputSpec,
    private readonly runtime: TfRuntime,
    private readonly run: Runner,
    private readonly disposeModel: () => void,
    private readonly batchPatches: number,
  ) {}

  /**
   * Reads the model directory, loads the model on the chosen backend and runs one all-zero patch to learn
   * the output size (and warm the backend up).
   * @throws NeuralModelError for a missing/invalid directory, an unknown output name, an input shape that
   *   does not take [187, 96] patches, an output size other than `expectedDimensions`, or an unavailable
   *   explicit backend
   */
  static async load(options: NeuralEmbedderOptions): Promise<NeuralEmbedder> {
    const batchPatches = options.batchPatches ?? 8;
    if (!Number.isInteger(batchPatches) || batchPatches < 1) throw new RangeError(`batchPatches must be a positive integer, got ${batchPatches}`);
    const dir = resolve(options.modelDir);
    const files = readModelDirectory(dir);
    const runtime = await loadTfRuntime(options.backend ?? 'auto', options.moduleLoader);
    const { tf } = runtime;
    // Hand tfjs the artifacts already read (and hashed), so the bytes that are hashed are the bytes loaded.
    const fromFiles: Tf.io.IOHandler = { load: async () => files.artifacts };

    let run: Runner;
    let disposeModel: () => void;
    let inputShape: readonly (number | null | undefined)[] | undefined;
    try {
      if (files.format === 'graph-model') {
        const model = await tf.loadGraphModel(fromFiles);
        if (model.inputs.length !== 1) throw new NeuralModelError(`graph model has ${model.inputs.length} inputs, expected 1`);
        inputShape = model.inputs[0]!.shape;
        const out = options.outputName ?? model.outputs[0]?.name;
        if (out === undefined) throw new NeuralModelError('graph model declares no output');
        // execute() is synchronous and throws for graphs with control flow or dynamic shapes; those
        // (not MusiCNN) need executeAsync(), remembered after the first failure.
        let needsAsync = false;
        run = async (x) => {
          let y: Tf.Tensor | Tf.Tensor[] | undefined;
          if (!needsAsync) {
            try {
              y = model.execute(x, out);
            } catch (err) {
              if (!/executeAsync/.test((err as Error).message)) throw err;
              needsAsync = true;
            }
          }
          y ??= await model.executeAsync(x, out);
          return Array.isArray(y) ? y[0]! : y;
        };
        disposeModel = () => model.dispose();
      } else {
        const full = await tf.loadLayersModel(fromFiles);
        if (full.inputs.length !== 1) throw new NeuralModelError(`layers model has ${full.inputs.length} inputs, expected 1`);
        inputShape = full.inputs[0]!.shape;
        let model: Tf.LayersModel = full;
        if (options.outputName !== undefined) {
          let layer: Tf.layers.Layer;
          try {
            layer = full.getLayer(options.outputName);
          } catch (err) {
            throw new NeuralModelError(`layers model has no layer '${options.outputName}'`, { cause: err });
          }
          model = tf.model({ inputs: full.inputs, outputs: layer.output as Tf.SymbolicTensor });
        }
        run = async (x) => {
          const y = model.predict(x);
          return Array.isArray(y) ? y[0]! : y;
        };
        disposeModel = () => full.dispose();
      }
    } catch (err) {
      if (err instanceof NeuralModelError) throw err;
      throw new NeuralModelError(`cannot load TensorFlow.js model from ${dir}: ${(err as Error).message}`, { cause: err });
    }

    const input = inferInputSpec(inputShape, options.inputLayout);
    const versionHash = createHash('sha256').update(files.sha256).update('\0output=').update(options.outputName ?? '').digest('hex');
    const version = `tfjs:${safeName(options.name ?? basename(dir))}:${versionHash.slice(0, 16)}`;
    const probe = new NeuralEmbedder(version, 0, runtime.backend, input, runtime, run, disposeModel, batchPatches);
    let dimensions: number;
    try {
      const warm = await probe.runBatch(new Float32Array(patchFrames * nMels), 1);
      dimensions = warm.length;
    } catch (err) {
      disposeModel();
      throw new NeuralModelError(`model in ${dir} failed on a [1, 187, 96] patch: ${(err as Error).message}`, { cause: err });
    }
    if (dimensions < 1 || (options.expectedDimensions !== undefined && dimensions !== options.expectedDimensions)) {
      disposeModel();
      throw new NeuralModelError(`model in ${dir} gives ${dimensions} values per patch, expected ${options.expectedDimensions ?? 'at least 1'}`);
    }
    return new NeuralEmbedder(version, dimensions, runtime.backend, input, runtime, run, disposeModel, batchPatches);
  }

  /** Runs `count` patches (patch-major [count][187][96] time-mel) and returns [count][D] float32. */
  private async runBatch(patches: Float32Array, count: number): Promise<Float32Array> {
    const { tf } = this.runtime;
    const x = tf.tidy(() => {
      let t: Tf.Tensor = tf.tensor3d(patches, [count, patchFrames, nMels]);
      if (this.input.layout === 'mel-time') t = tf.transpose(t, [0, 2, 1]);
      return this.input.rank === 4 ? tf.expandDims(t, 3) : t;
    });
    let y: Tf.Tensor | undefined;
    try {
      y = await this.run(x);
      if (y.shape[0] !== count) throw new NeuralModelError(`model returned batch ${y.shape[0]} for ${count} patches`);
      const data = await y.data();
      if (!(data instanceof Float32Array)) return Float32Array.from(data as ArrayLike<number>);
      return data;
    } finally {
      x.dispose();
      y?.dispose();
    }
  }

  /**
   * Embeds every patch and their mean.
   * @param pcm mono samples, float in [-1, 1]
   * @param sampleRate must be 16000 Hz (decode with e.g. `ffmpeg -ac 1 -ar 16000 -f f32le`)
   * @throws ValidationError for another sample rate; AudioTooShortError for fewer than 48 128 samples
   */
  async embedPatches(pcm: Float32Array, sampleRate: number): Promise<PatchEmbeddingResult> {
    if (sampleRate !== sampleRateHz) throw new ValidationError(`neural embedder needs ${sampleRateHz} Hz audio, got ${sampleRate} Hz`);
    const patches = toPatches(this.frontend.logMel(pcm));
    if (patches.count === 0) throw new AudioTooShortError(pcm.length, MUSICNN_FRONTEND.nFft + (patchFrames - 1) * MUSICNN_FRONTEND.hopSamples);
    await ensureBackend(this.runtime);
    const d = this.dimensions;
    const per = new Float32Array(patches.count * d);
    const sum = new Float64Array(d);
    const patchSize = patchFrames * nMels;
    for (let p = 0; p < patches.count; p += this.batchPatches) {
      const b = Math.min(this.batchPatches, patches.count - p);
      const out = await this.runBatch(patches.data.subarray(p * patchSize, (p + b) * patchSize), b);
      if (out.length !== b * d) throw new NeuralModelError(`model output size changed: ${out.length / b} values per patch, expected ${d}`);
      per.set(out, p * d);
      for (let i = 0; i < out.length; i++) sum[i % d]! += out[i]!;
    }
    const embedding = new Float32Array(d);
    for (let i = 0; i < d; i++) embedding[i] = sum[i]! / patches.count;
    return { embedding, patchCount: patches.count, patchEmbeddings: per };
  }

  /**
   * Track embedding: mean over non-overlapping 187-frame patches of the per-patch model output.
   * @returns float32 vector of length {@link dimensions}
   * @throws see {@link embedPatches}
   */
  async embed(pcm: Float32Array, sampleRate: number): Promise<Float32Array> {
    return (await this.embedPatches(pcm, sampleRate)).embedding;
  }

  /** Frees the model's tensors; the embedder must not be used afterwards. */
  dispose(): void {
    this.disposeModel();
  }
}
