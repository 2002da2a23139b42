/**
 * A TensorFlow.js IOHandler over a local directory (`model.json` + weight shards), for `@tensorflow/tfjs`
 * which, unlike tfjs-node, registers no `file://` loader. No network access is ever made.
 *
 * Only types are imported from tfjs, so this module does not load TensorFlow.js by itself.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { io } from '@tensorflow/tfjs';
import { AppError } from '@polyphony/platform';

/** The model directory is missing, unreadable or not a TensorFlow.js model (HTTP 500: a deployment problem). */
export class NeuralModelError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('neural_model_invalid', message, 500, undefined, options);
  }
}

/** Name of the topology file inside a model directory (what tfjs converters and `model.save` write). */
export const MODEL_JSON = 'model.json';

/** Everything read from a model directory in one pass. */
export interface LoadedModelFiles {
  /** Artifacts ready for `tf.loadLayersModel` / `tf.loadGraphModel` (through {@link fileSystemIOHandler}). */
  readonly artifacts: io.ModelArtifacts;
  /** 'layers-model' or 'graph-model' (from `format`, or inferred from the topology when absent). */
  readonly format: 'layers-model' | 'graph-model';
  /** Hex sha256 over model.json bytes, then every shard's bytes in manifest order. */
  readonly sha256: string;
}

function toOwnArrayBuffer(b: Uint8Array): ArrayBuffer {
  // Copy: fs Buffers may share a pooled ArrayBuffer, and under jest they come from another realm.
  const out = new ArrayBuffer(b.byteLength);
  new Uint8Array(out).set(b);
  return out;
}

function resolveInside(dir: string, rel: string): string {
  const full = resolve(dir, rel);
  const r = relative(dir, full);
  if (r === '' || r.startsWith('..') || isAbsolute(r)) throw new NeuralModelError(`weight path '${rel}' escapes the model directory`);
  return full;
}

/**
 * Reads `<dir>/model.json` and all weight shards it lists (paths relative to `dir`; shards of a group are
 * concatenated in order, as the tfjs HTTP loader does).
 * @throws NeuralModelError when a file is missing or unreadable, the JSON is invalid, a shard path points
 *   outside `dir`, or the shard bytes do not add up to the sizes declared by the weight specs.
 */
export function readModelDirectory(dir: string): LoadedModelFiles {
  const root = resolve(dir);
  let jsonBytes: Buffer;
  try {
    jsonBytes = readFileSync(join(root, MODEL_JSON));
  } catch (err) {
    throw new NeuralModelError(`cannot read ${MODEL_JSON} in model directory ${root}`, { cause: err });
  }
  let modelJson: io.ModelJSON;
  try {
    modelJson = JSON.parse(jsonBytes.toString('utf8')) as io.ModelJSON;
  } catch (err) {
    throw new NeuralModelError(`${join(root, MODEL_JSON)} is not valid JSON`, { cause: err });
  }
  if (modelJson === null || typeof modelJson !== 'object' || modelJson.modelTopology == null) {
    throw new NeuralModelError(`${join(root, MODEL_JSON)} has no modelTopology`);
  }
  const hash = createHash('sha256').update(jsonBytes);
  const specs: io.WeightsManifestEntry[] = [];
  const parts: Buffer[] = [];
  for (const group of modelJson.weightsManifest ?? []) {
    for (const p of group.paths) {
      const full = resolveInside(root, p);
      let bytes: Buffer;
      try {
        bytes = readFileSync(full);
      } catch (err) {
        throw new NeuralModelError(`cannot read weight shard ${full}`, { cause: err });
      }
      hash.update(bytes);
      parts.push(bytes);
    }
    specs.push(...group.weights);
  }
  const total = parts.reduce((s, b) => s + b.byteLength, 0);
  const weightData = new Uint8Array(total);
  let off = 0;
  for (const b of parts) {
    weightData.set(b, off);
    off += b.byteLength;
  }
  const expected = specs.reduce((s, w) => s + weightSpecBytes(w), 0);
  if (expected !== total) throw new NeuralModelError(`weight shards hold ${total} bytes but the manifest declares ${expected}`);

  const topology = modelJson.modelTopology as { node?: unknown; class_name?: unknown };
  const format: LoadedModelFiles['format'] =
    modelJson.format === 'graph-model' || (modelJson.format == null && Array.isArray(topology.node)) ? 'graph-model' : 'layers-model';
  const artifacts: io.ModelArtifacts = {
    modelTopology: modelJson.modelTopology,
    format: modelJson.format,
    generatedBy: modelJson.generatedBy,
    convertedBy: modelJson.convertedBy ?? undefined,
    ...(modelJson.weightsManifest != null ? { weightSpecs: specs, weightData: toOwnArrayBuffer(weightData) } : {}),
    ...(modelJson.trainingConfig != null ? { trainingConfig: modelJson.trainingConfig } : {}),
    ...(modelJson.signature != null ? { signature: modelJson.signature } : {}),
    ...(modelJson.userDefinedMetadata != null ? { userDefinedMetadata: modelJson.userDefinedMetadata } : {}),
    ...(modelJson.modelInitializer != null ? { modelInitializer: modelJson.modelInitializer } : {}),
  };
  return { artifacts, format, sha256: hash.digest('hex') };
}

const DTYPE_BYTES: Record<string, number> = { float32: 4, int32: 4, bool: 1, string: 0, complex64: 8 };

function weightSpecBytes(w: io.WeightsManifestEntry): number {
  const n = w.shape.reduce((a, b) => a * b, 1);
  if (w.quantization) {
    // uint8 -> 1 byte, uint16 and float16 -> 2 bytes (tfjs converter quantisation)
    return n * (w.quantization.dtype === 'uint8' ? 1 : 2);
  }
  const per = DTYPE_BYTES[w.dtype];
  if (per === undefined || per === 0) throw new NeuralModelError(`unsupported weight dtype '${w.dtype}' for ${w.name}`);
  return n * per;
}

/** Options for saving through {@link fileSystemIOHandler}. */
export interface SaveOptions {
  /** Maximum bytes per weight shard file (default 4 MiB, the tfjs converter's default). */
  readonly shardBytes?: number;
}

/**
 * IOHandler for a local directory.
 * - `load()`: reads `model.json` and its shards ({@link readModelDirectory}).
 * - `save(artifacts)`: creates the directory and writes `model.json` plus `group1-shard<i>of<n>.bin`
 *   (weights concatenated, then split every `shardBytes`), in the layout the tfjs converter produces.
 * Use as `tf.loadLayersModel(fileSystemIOHandler(dir))`, `tf.loadGraphModel(...)` or `model.save(...)`.
 */
export function fileSystemIOHandler(dir: string, options: SaveOptions = {}): io.IOHandler {
  const root = resolve(dir);
  const shardBytes = options.shardBytes ?? 4 * 1024 * 1024;
  if (!Number.isInteger(shardBytes) || shardBytes < 1) throw new RangeError(`shardBytes must be a positive integer, got ${shardBytes}`);
  return {
    load: async () => readModelDirectory(root).artifacts,
    save: async (artifacts: io.ModelArtifacts): Promise<io.SaveResult> => {
      if (artifacts.modelTopology instanceof ArrayBuffer || artifacts.modelTopology == null) {
        throw new NeuralModelError('only JSON model topologies can be saved');
      }
      mkdirSync(root, { recursive: true });
      const chunks = artifacts.weightData == null ? [] : Array.isArray(artifacts.weightData) ? artifacts.weightData : [artifacts.weightData];
      const total = chunks.reduce((s, c) => s + c.byteLength, 0);
      const all = new Uint8Array(total);
      let off = 0;
      for (const c of chunks) {
        all.set(new Uint8Array(c), off);
        off += c.byteLength;
      }
      const nShards = Math.max(1, Math.ceil(total / shardBytes));
      const paths: string[] = [];
      for (let i = 0; i < nShards; i++) {
        const name = `group1-shard${i + 1}of${nShards}.bin`;
        writeFileSync(join(root, name), all.subarray(i * shardBytes, Math.min(total, (i + 1) * shardBytes)));
        paths.push(name);
      }
      const modelJson: io.ModelJSON = {
        modelTopology: artifacts.modelTopology,
        format: artifacts.format,
        generatedBy: artifacts.generatedBy,
        convertedBy: artifacts.convertedBy,
        weightsManifest: [{ paths, weights: artifacts.weightSpecs ?? [] }],
        ...(artifacts.trainingConfig != null ? { trainingConfig: artifacts.trainingConfig } : {}),
        ...(artifacts.signature != null ? { signature: artifacts.signature } : {}),
        ...(artifacts.userDefinedMetadata != null ? { userDefinedMetadata: artifacts.userDefinedMetadata } : {}),
      };
      const text = JSON.stringify(modelJson);
      writeFileSync(join(root, MODEL_JSON), text);
      return {
        modelArtifactsInfo: {
          dateSaved: new Date(),
          modelTopologyType: 'JSON',
          modelTopologyBytes: Buffer.byteLength(JSON.stringify(artifacts.modelTopology)),
          weightSpecsBytes: Buffer.byteLength(JSON.stringify(artifacts.weightSpecs ?? [])),
          weightDataBytes: total,
        },
      };
    },
  };
}
