/**
 * The MusiCNN network (same graph as network.ts, see its header) written as an ONNX model, built in memory
 * from the arrays read by weights.ts and run by ONNX Runtime (onnx-network.ts). Nothing is written to disk:
 * the model bytes are derived from the weights at load time and live only in the process.
 *
 * Encoding: the ONNX protobuf messages (onnx/onnx.proto, IR version 8, default opset 17) are written by
 * the small protobuf writer below (only varints and length-delimited fields are needed). Layout is NCHW
 * with H = time (187 frames) and W = mel bands (96): input `x` [n, 1, 187, 96].
 *
 * Graph (per front-end branch j):
 *   x0 = x * s0 + t0                                     (input BatchNorm, one channel)
 *   z_j = Conv(Pad_time(x0), K'_j)                       [n, F_j, 187, W_j]
 *   m_j = MaxPool_W(z_j) (a max over all W)              [n, F_j, 187]
 *   S_j = BN_j(Relu(sign_j * (m_j + b'_j)))
 * where for channels with a negative BN scale the kernel and bias are negated (K' = sign K, b' = sign b):
 * max_W(-z) = -min_W z, so sign * (max_W(sign z) + sign b) = (max or min)_W z + b, and BN(relu(.)) of it
 * equals max_W BN(relu(z + b)) exactly (per-channel affine with scale s, relu monotone), as network.ts.
 *   F = Concat(S_j) [n, 561, 187]; m1..m3 = BN(Relu(Conv1d_7(F or m) + b)) with the residual adds;
 *   C = Concat(F, m1, m2, m3) [n, 753, 187]; pooled = interleave(ReduceMax_T C, ReduceMean_T C) [n, 1506];
 *   penultimate = BN(Relu(BN(pooled) x Wd + bd)); tags = Sigmoid(penultimate x Wo + bo).
 * Outputs: `tags` [n, 50], `penultimate` [n, 200], `pooled` [n, 1506].
 *
 * Precision int8 (MUSICNN_PRECISION=int8): the two timbral branches (7x38, 7x67: three quarters of the float CPU) run as
 * QuantizeLinear(x0) -> QLinearConv (uint8 input, int8 per-channel weights, int32 bias, uint8 output) -> uint8 MaxPool
 * over the bands -> Cast -> per-channel affine (int8Branch below), with the measured ranges of int8-calibration.ts;
 * everything else stays float. About half the CPU per patch; outputs within the tolerances of musicnn.int.test.ts
 * (docs/musicnn.md, Cost).
 */
import type { DenseWeights, FoldedBatchNorm, MusicnnWeights } from './weights';

/** TensorProto.DataType */
const FLOAT = 1;
const UINT8 = 2;
const INT8 = 3;
const INT32 = 6;
const INT64 = 7;
/** AttributeProto.AttributeType */
const ATTR_INT = 2;
const ATTR_INTS = 7;

/** Minimal protobuf writer: a message is a list of encoded fields. */
class Message {
  private readonly chunks: Uint8Array[] = [];
  private size = 0;

  private push(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.size += bytes.length;
  }

  private static varint(value: number): Uint8Array {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`varint ${value}`);
    const out: number[] = [];
    let v = value;
    while (v >= 0x80) {
      out.push((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    out.push(v);
    return Uint8Array.from(out);
  }

  /** Varint field (int32, int64 >= 0, enum). */
  int(field: number, value: number): this {
    this.push(Message.varint(field * 8));
    this.push(Message.varint(value));
    return this;
  }

  /** Length-delimited field: bytes, string or an embedded message. */
  bytes(field: number, value: Uint8Array | string | Message): this {
    const data = typeof value === 'string' ? new TextEncoder().encode(value) : value instanceof Message ? value.finish() : value;
    this.push(Message.varint(field * 8 + 2));
    this.push(Message.varint(data.length));
    this.push(data);
    return this;
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.size);
    let o = 0;
    for (const c of this.chunks) {
      out.set(c, o);
      o += c.length;
    }
    return out;
  }
}

type TensorData = Float32Array | BigInt64Array | Uint8Array | Int8Array | Int32Array;

/** TensorProto.DataType of a typed array. */
function dataType(data: TensorData): number {
  if (data instanceof Float32Array) return FLOAT;
  if (data instanceof BigInt64Array) return INT64;
  if (data instanceof Uint8Array) return UINT8;
  if (data instanceof Int8Array) return INT8;
  return INT32;
}

/** TensorProto with raw little-endian data. */
function tensor(name: string, dims: number[], data: TensorData): Message {
  const t = new Message();
  for (const d of dims) t.int(1, d);
  t.int(2, dataType(data));
  t.bytes(8, name);
  t.bytes(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return t;
}

/** ValueInfoProto of a float tensor; a string dim is symbolic. */
function valueInfo(name: string, dims: Array<number | string>): Message {
  const shape = new Message();
  for (const d of dims) shape.bytes(1, typeof d === 'string' ? new Message().bytes(2, d) : new Message().int(1, d));
  const tensorType = new Message().int(1, FLOAT).bytes(2, shape);
  return new Message().bytes(1, name).bytes(2, new Message().bytes(1, tensorType));
}

/** Graph under construction: nodes and initializers with generated names. */
class GraphBuilder {
  readonly nodes: Message[] = [];
  readonly inits: Message[] = [];
  private counter = 0;

  private fresh(prefix: string): string {
    return `${prefix}_${this.counter++}`;
  }

  constant(dims: number[], data: TensorData): string {
    const name = this.fresh('w');
    this.inits.push(tensor(name, dims, data));
    return name;
  }

  ints(values: number[]): string {
    const name = this.fresh('i');
    this.inits.push(tensor(name, [values.length], BigInt64Array.from(values.map((v) => BigInt(v)))));
    return name;
  }

  /** Adds a node; attributes are ints or int lists. Returns the output name. */
  op(type: string, inputs: string[], attrs: Record<string, number | number[]> = {}, output?: string): string {
    const out = output ?? this.fresh(type.toLowerCase());
    const n = new Message();
    for (const i of inputs) n.bytes(1, i);
    n.bytes(2, out).bytes(3, out).bytes(4, type);
    for (const [key, value] of Object.entries(attrs)) {
      const a = new Message().bytes(1, key);
      if (Array.isArray(value)) {
        for (const v of value) a.int(8, v);
        a.int(20, ATTR_INTS);
      } else {
        a.int(3, value).int(20, ATTR_INT);
      }
      n.bytes(5, a);
    }
    this.nodes.push(n);
    return out;
  }
}

/** Per-channel vector shaped to broadcast over [n, C, T] (or [n, C] when `rank2`). */
function channelVector(g: GraphBuilder, v: Float32Array, rank2 = false): string {
  return g.constant(rank2 ? [v.length] : [v.length, 1], v);
}

function batchNorm(g: GraphBuilder, x: string, bn: FoldedBatchNorm, rank2 = false): string {
  return g.op('Add', [g.op('Mul', [x, channelVector(g, bn.scale, rank2)]), channelVector(g, bn.shift, rank2)]);
}

/** Keras conv2d kernel [kh, kw, 1, out] -> ONNX OIHW [out, 1, kh, kw], each output channel times sign[o]. */
function frontKernel(c: DenseWeights, sign: Float32Array): Float32Array {
  const [kh, kw, , out] = c.shape as [number, number, number, number];
  const k = new Float32Array(out * kh * kw);
  for (let i = 0; i < kh; i++) for (let j = 0; j < kw; j++) for (let o = 0; o < out; o++) k[(o * kh + i) * kw + j] = c.kernel[(i * kw + j) * out + o]! * sign[o]!;
  return k;
}

/** Keras mid-end conv2d kernel [7, in, 1, out] (a conv1d over `in` channels) -> ONNX [out, in, 7]. */
function midKernel(c: DenseWeights): Float32Array {
  const [kt, cin, , out] = c.shape as [number, number, number, number];
  const k = new Float32Array(out * cin * kt);
  for (let t = 0; t < kt; t++) for (let i = 0; i < cin; i++) for (let o = 0; o < out; o++) k[(o * cin + i) * kt + t] = c.kernel[(t * cin + i) * out + o]!;
  return k;
}

/** Numeric precision of the front-end convolutions: float32 throughout, or int8 (see {@link musicnnOnnxModel}). */
export type MusicnnPrecision = 'float' | 'int8';

/** Options of {@link musicnnOnnxModel}. */
export interface MusicnnGraphOptions {
  /** 'float' (default) or 'int8' (the two timbral convolutions quantised); int8 needs `int8`. */
  precision?: MusicnnPrecision;
  /** The int8 path's calibration (int8-calibration.ts). */
  int8?: MusicnnInt8Calibration;
  /**
   * Also output `timbralMax` [n, 408]: per channel of the two timbral branches (204 + 204), the max over time of
   * relu(pre), the rectified pre-BN output (float graph only; what int8-calibration.ts is measured from).
   */
  calibration?: boolean;
}

/** Measured ranges of the int8 path (int8-calibration.ts). */
export interface MusicnnInt8Calibration {
  /** The log-mel values (`x`, before the input BN) covered by the uint8 input, [lo, hi]; values outside saturate. */
  inputRange: readonly [number, number];
  /** Per channel of the two timbral branches (204 + 204), the upper end of relu(pre); larger values saturate at it. */
  timbralRanges: ArrayLike<number>;
}

/** The uint8 input of the quantised branches: QuantizeLinear(x0) and its scale and zero point. */
interface QuantisedInput {
  name: string;
  scale: string;
  zero: string;
  scaleValue: number;
}

/**
 * Max over the bands of a front-end conv output [n, padded16, 187, 96 - kw + 1] as a MaxPool over the whole width,
 * reshaped to [n, padded16, 187], then the first `filters` channels (the padding filters dropped). Shared by the float
 * and int8 branches (uint8 or float, MaxPool takes both).
 */
function bandMax(g: GraphBuilder, z: string, kw: number, padded16: number, filters: number): string {
  const pooled16 = g.op('Reshape', [g.op('MaxPool', [z], { kernel_shape: [1, 96 - kw + 1] }), g.ints([0, padded16, 187])]);
  return g.op('Slice', [pooled16, g.ints([0]), g.ints([filters]), g.ints([1])]);
}

/**
 * One front-end branch in int8 (QLinearConv + uint8 MaxPool), returning BN(relu(pre)) [n, F, 187] as the float
 * branch does. Per channel c with float kernel K_c, bias b_c, BN sign s_c and calibrated range h_c:
 *   the conv computes v_c = g_c (z_c + b_c) + o_c with g_c = s_c / h_c and o_c = (s_c < 0 ? 1 : 0), quantised with
 *   y_scale 1/255 and y_zero_point 0, so every channel spans the whole uint8 range and uint8 saturation clips v_c
 *   to [0, 1]. For s_c = +1: max_W clip(v) = clip(max_W z + b) / h = relu(pre) / h (clipped above at h).
 *   For s_c = -1: max_W clip(1 - (z + b) / h) = 1 - clip(min_W z + b) / h, i.e. relu(pre) = h (1 - q / 255).
 * The int8 kernel is g_c K_c over its per-channel scale (max |g_c K_c| / 127), the int32 bias (g_c b_c + o_c) over
 * x_scale times that scale (ONNX QLinearConv). After the pool: Cast, then one per-channel affine that undoes g, o
 * and applies the branch BN. Padding along time uses x's zero point, i.e. the float graph's zeros of x0.
 */
function int8Branch(g: GraphBuilder, xq: QuantisedInput, c: DenseWeights, bn: FoldedBatchNorm, ranges: ArrayLike<number>, before: number, after: number): string {
  const [kh, kw, , filters] = c.shape as [number, number, number, number];
  const padded16 = Math.ceil(filters / 16) * 16;
  const taps = kh * kw;
  const k = frontKernel(c, new Float32Array(filters).fill(1));
  const wq = new Int8Array(padded16 * taps);
  const ws = new Float32Array(padded16).fill(1);
  const bias = new Int32Array(padded16);
  const mul = new Float32Array(filters);
  const add = new Float32Array(filters);
  for (let o = 0; o < filters; o++) {
    const sign = bn.scale[o]! >= 0 ? 1 : -1;
    const h = Math.max(ranges[o]!, 1e-6);
    const gain = sign / h;
    let peak = 0;
    for (let i = 0; i < taps; i++) peak = Math.max(peak, Math.abs(gain * k[o * taps + i]!));
    const scale = peak > 0 ? peak / 127 : 1;
    ws[o] = scale;
    for (let i = 0; i < taps; i++) wq[o * taps + i] = Math.round((gain * k[o * taps + i]!) / scale);
    bias[o] = Math.round((gain * c.bias[o]! + (sign < 0 ? 1 : 0)) / (xq.scaleValue * scale));
    // relu(pre) = h q / 255 (sign +) or h - h q / 255 (sign -); then the branch BN: scale * relu(pre) + shift
    mul[o] = (bn.scale[o]! * h * sign) / 255;
    add[o] = bn.scale[o]! * (sign < 0 ? h : 0) + bn.shift[o]!;
  }
  const y = g.op(
    'QLinearConv',
    [xq.name, xq.scale, xq.zero, g.constant([padded16, 1, kh, kw], wq), g.constant([padded16], ws), g.constant([padded16], new Int8Array(padded16)), g.constant([], Float32Array.of(1 / 255)), g.constant([], Uint8Array.of(0)), g.constant([padded16], bias)],
    { kernel_shape: [kh, kw], pads: [before, 0, after, 0] },
  );
  const q = bandMax(g, y, kw, padded16, filters);
  return g.op('Add', [g.op('Mul', [g.op('Cast', [q], { to: FLOAT }), channelVector(g, mul)]), channelVector(g, add)]);
}

/**
 * Builds the ONNX model of one MusiCNN checkpoint.
 * @param w the checkpoint's arrays (weights.ts)
 * @param opts precision (float by default; int8 quantises the two timbral convolutions, see int8Branch) and
 *   the calibration output
 * @returns serialized ModelProto (input `x` [n, 1, 187, 96]; outputs `tags`, `penultimate`, `pooled`, and
 *   `timbralMax` with `calibration`)
 * @throws RangeError when int8 is asked for without its calibration
 */
export function musicnnOnnxModel(w: MusicnnWeights, opts: MusicnnGraphOptions = {}): Uint8Array {
  const g = new GraphBuilder();
  const x0 = g.op('Add', [g.op('Mul', ['x', g.constant([1], w.inputBn.scale)]), g.constant([1], w.inputBn.shift)]);
  let xq: QuantisedInput | undefined;
  if (opts.precision === 'int8') {
    if (!opts.int8 || opts.int8.timbralRanges.length !== 408) throw new RangeError('int8 MusiCNN needs its calibration (408 timbral ranges)');
    // x0 = s0 x + t0 over the covered log-mel range, widened to include 0 (the value of the time padding)
    const ends = opts.int8.inputRange.map((v) => w.inputBn.scale[0]! * v + w.inputBn.shift[0]!);
    const lo = Math.min(0, ...ends);
    const hi = Math.max(0, ...ends);
    const scaleValue = (hi - lo) / 255;
    const scale = g.constant([], Float32Array.of(scaleValue));
    const zero = g.constant([], Uint8Array.of(Math.round(-lo / scaleValue)));
    xq = { name: g.op('QuantizeLinear', [x0, scale, zero]), scale, zero, scaleValue };
  }
  // A channel whose range is 0 (never positive on the calibration music: most filters of negative BN sign, where
  // relu(min_W z + b) = 0) is clipped to 0 (int8Branch's 1e-6 floor). Measured: that clip is also what keeps the int8
  // rounding noise of z + b around 0 out of those channels; a floor of a quarter of the branch's median range let it
  // through (penultimate cosine distance median 1.0e-4 -> 5.9e-3 on MTT).
  const ranges = Array.from(opts.int8?.timbralRanges ?? []);
  const frontRelu: string[] = [];
  let offset = 0;
  const branches = w.frontConv.map((c, j) => {
    const kh = c.shape[0]!;
    const before = j < 2 ? 3 : Math.floor((kh - 1) / 2);
    const after = j < 2 ? 3 : kh - 1 - before;
    const bn = w.frontBn[j]!;
    const first = offset;
    offset += c.shape[3]!;
    // Only the timbral convolutions (three quarters of the CPU) go int8: QLinearConv on the temporal ones (128, 64,
    // 32 x 1) measured slower than float (docs/musicnn.md, Cost "int8").
    if (xq && j < 2) return int8Branch(g, xq, c, bn, ranges.slice(first, offset), before, after);
    const padded = g.op('Pad', [x0, g.ints([0, 0, before, 0, 0, 0, after, 0])]);
    const sign = bn.scale.map((s) => (s >= 0 ? 1 : -1));
    // Filters padded with zero kernels to a multiple of 16 and the max over the bands taken as a MaxPool
    // over the whole width: ONNX Runtime then keeps conv and pool in its blocked (NCHWc) layout and
    // reorders only the pooled [n, F, 187] back instead of the [n, F, 187, W] conv output (that reorder
    // was a quarter of the CPU); the padding filters are dropped after the pool.
    const filters = c.shape[3]!;
    const padded16 = Math.ceil(filters / 16) * 16;
    const kernel = new Float32Array(padded16 * kh * c.shape[1]!);
    kernel.set(frontKernel(c, sign));
    const z = g.op('Conv', [padded, g.constant([padded16, 1, kh, c.shape[1]!], kernel)], { kernel_shape: [kh, c.shape[1]!] });
    const m = bandMax(g, z, c.shape[1]!, padded16, filters);
    const pre = g.op('Mul', [g.op('Add', [m, channelVector(g, c.bias.map((b, o) => b * sign[o]!))]), channelVector(g, sign)]);
    const relu = g.op('Relu', [pre]);
    if (j < 2) frontRelu.push(relu);
    return batchNorm(g, relu, bn);
  });
  if (opts.calibration) {
    if (frontRelu.length !== 2) throw new RangeError('the calibration output needs the float graph');
    g.op('ReduceMax', [g.op('Concat', frontRelu, { axis: 1 })], { axes: [2], keepdims: 0 }, 'timbralMax');
  }
  const f = g.op('Concat', branches, { axis: 1 });
  const layers = [f];
  let prev = f;
  w.midConv.forEach((c, i) => {
    const conv = g.op('Conv', [prev, g.constant([c.shape[3]!, c.shape[1]!, c.shape[0]!], midKernel(c)), g.constant([c.bias.length], c.bias)], { kernel_shape: [7], pads: [3, 3] });
    const y = batchNorm(g, g.op('Relu', [conv]), w.midBn[i]!);
    prev = i === 0 ? y : g.op('Add', [y, prev]);
    layers.push(prev);
  });
  const all = g.op('Concat', layers, { axis: 1 }); // [n, 753, 187]
  const mx = g.op('ReduceMax', [all], { axes: [2], keepdims: 1 });
  const mean = g.op('ReduceMean', [all], { axes: [2], keepdims: 1 });
  const pooled = g.op('Reshape', [g.op('Concat', [mx, mean], { axis: 2 }), g.ints([0, 1506])], {}, 'pooled');
  const dense = g.op('Add', [g.op('MatMul', [batchNorm(g, pooled, w.flatBn, true), g.constant(w.dense.shape, w.dense.kernel)]), g.constant([w.dense.bias.length], w.dense.bias)]);
  const pen = g.op('Add', [g.op('Mul', [g.op('Relu', [dense]), channelVector(g, w.denseBn.scale, true)]), channelVector(g, w.denseBn.shift, true)], {}, 'penultimate');
  g.op('Sigmoid', [g.op('Add', [g.op('MatMul', [pen, g.constant(w.out.shape, w.out.kernel)]), g.constant([w.out.bias.length], w.out.bias)])], {}, 'tags');

  const graph = new Message();
  for (const n of g.nodes) graph.bytes(1, n);
  graph.bytes(2, 'musicnn');
  for (const t of g.inits) graph.bytes(5, t);
  graph.bytes(11, valueInfo('x', ['n', 1, 187, 96]));
  graph.bytes(12, valueInfo('tags', ['n', 50]));
  graph.bytes(12, valueInfo('penultimate', ['n', 200]));
  graph.bytes(12, valueInfo('pooled', ['n', 1506]));
  if (opts.calibration) graph.bytes(12, valueInfo('timbralMax', ['n', 408]));
  return new Message()
    .int(1, 8) // ir_version
    .bytes(2, 'polyphony')
    .bytes(7, graph)
    .bytes(8, new Message().bytes(1, '').int(2, 17))
    .finish();
}
