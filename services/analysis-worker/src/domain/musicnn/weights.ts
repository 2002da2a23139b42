/**
 * Reads the MusiCNN Keras HDF5 checkpoints (musicnn_keras, ../shared/models/musicnn/README.md) with jsfive,
 * a maintained pure-JavaScript HDF5 reader. Only the arrays are read; the graph is fixed in network.ts and
 * the layer names below are the ones the published files use (both MSD and MTT share them).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { AppError } from '@polyphony/platform';

/** The model file is missing, unreadable, or not a MusiCNN checkpoint. */
export class MusicnnModelError extends AppError {
  constructor(message: string) {
    super('model_unavailable', message, 503);
  }
}

/** One BatchNormalization folded to y = x * scale + shift (epsilon 0.001, as every layer of the file). */
export interface FoldedBatchNorm {
  scale: Float32Array;
  shift: Float32Array;
}

/** Conv or dense layer: kernel in Keras layout ([kh, kw, in, out] or [in, out]) and bias. */
export interface DenseWeights {
  kernel: Float32Array;
  shape: number[];
  bias: Float32Array;
}

/** Every array of the network, by role. */
export interface MusicnnWeights {
  inputBn: FoldedBatchNorm;
  /** timbral 7x38 and 7x67, temporal 128x1, 64x1, 32x1 (Keras conv2d .. conv2d_4). */
  frontConv: DenseWeights[];
  /** BatchNorms after the five front-end convolutions (batch_normalization_1 .. _5). */
  frontBn: FoldedBatchNorm[];
  midConv: DenseWeights[];
  midBn: FoldedBatchNorm[];
  flatBn: FoldedBatchNorm;
  dense: DenseWeights;
  denseBn: FoldedBatchNorm;
  out: DenseWeights;
}

/** The file's sha256 (hex) and its arrays. */
export interface LoadedMusicnn {
  sha256: string;
  weights: MusicnnWeights;
}

/** Keras BatchNormalization epsilon of every layer in the published files (model_config). */
export const BN_EPSILON = 0.001;

interface H5Node {
  keys?: string[];
  get(name: string): H5Node | undefined;
  value?: ArrayLike<number>;
  shape?: number[];
}

function group(f: H5Node, layer: string): H5Node {
  const g = f.get(`model_weights/${layer}/${layer}`);
  if (!g || !Array.isArray(g.keys)) throw new MusicnnModelError(`model file has no layer '${layer}'`);
  return g;
}

function array(g: H5Node, layer: string, role: string): { data: Float32Array; shape: number[] } {
  const key = g.keys!.find((k) => k === `${role}:0` || k === `${role}_1:0`);
  const d = key ? g.get(key) : undefined;
  if (!d || !d.value || !d.shape) throw new MusicnnModelError(`model file layer '${layer}' has no ${role}`);
  return { data: Float32Array.from(d.value), shape: d.shape };
}

function bn(f: H5Node, layer: string): FoldedBatchNorm {
  const g = group(f, layer);
  const gamma = array(g, layer, 'gamma').data;
  const beta = array(g, layer, 'beta').data;
  const mean = array(g, layer, 'moving_mean').data;
  const variance = array(g, layer, 'moving_variance').data;
  const scale = new Float32Array(gamma.length);
  const shift = new Float32Array(gamma.length);
  for (let i = 0; i < gamma.length; i++) {
    const s = gamma[i]! / Math.sqrt(variance[i]! + BN_EPSILON);
    scale[i] = s;
    shift[i] = beta[i]! - mean[i]! * s;
  }
  return { scale, shift };
}

function dense(f: H5Node, layer: string, expected: number[]): DenseWeights {
  const g = group(f, layer);
  const k = array(g, layer, 'kernel');
  if (k.shape.join('x') !== expected.join('x')) throw new MusicnnModelError(`layer '${layer}' kernel is ${k.shape.join('x')}, expected ${expected.join('x')}`);
  return { kernel: k.data, shape: k.shape, bias: array(g, layer, 'bias').data };
}

/**
 * Parses a MusiCNN checkpoint.
 * @param bytes the .h5 file
 * @throws MusicnnModelError when a layer is missing or has another shape (not a MusiCNN file)
 */
export function parseMusicnnH5(bytes: Uint8Array): MusicnnWeights {
  // jsfive ships CommonJS (index.js) and ESM builds; require keeps jest and the compiled service on one path.
  const hdf5 = require('jsfive') as { File: new (buf: ArrayBuffer, name: string) => H5Node };
  let f: H5Node;
  try {
    f = new hdf5.File(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer, 'musicnn.h5');
  } catch (err) {
    throw new MusicnnModelError(`not an HDF5 file: ${(err as Error).message}`);
  }
  return {
    inputBn: bn(f, 'batch_normalization'),
    frontConv: [
      dense(f, 'conv2d', [7, 38, 1, 204]),
      dense(f, 'conv2d_1', [7, 67, 1, 204]),
      dense(f, 'conv2d_2', [128, 1, 1, 51]),
      dense(f, 'conv2d_3', [64, 1, 1, 51]),
      dense(f, 'conv2d_4', [32, 1, 1, 51]),
    ],
    frontBn: [1, 2, 3, 4, 5].map((i) => bn(f, `batch_normalization_${i}`)),
    midConv: [dense(f, 'midend_conv1', [7, 561, 1, 64]), dense(f, 'midend_conv2', [7, 64, 1, 64]), dense(f, 'midend_conv3', [7, 64, 1, 64])],
    midBn: [1, 2, 3].map((i) => bn(f, `bn_midend_conv${i}`)),
    flatBn: bn(f, 'bn_flatpool'),
    dense: dense(f, 'dense', [1506, 200]),
    denseBn: bn(f, 'bn_dense'),
    out: dense(f, 'dense_1', [200, 50]),
  };
}

/**
 * Reads and parses a checkpoint file.
 * @param expectedSha256 when given, the file must have this sha256 (hex) or MusicnnModelError is thrown
 */
export async function loadMusicnnFile(path: string, expectedSha256?: string): Promise<LoadedMusicnn> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    throw new MusicnnModelError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  if (expectedSha256 && sha256 !== expectedSha256) throw new MusicnnModelError(`${path} has sha256 ${sha256}, expected ${expectedSha256}`);
  return { sha256, weights: parseMusicnnH5(bytes) };
}
