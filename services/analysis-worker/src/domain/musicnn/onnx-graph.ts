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
 */
import type { DenseWeights, FoldedBatchNorm, MusicnnWeights } from './weights';

const FLOAT = 1;
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

/** TensorProto with raw little-endian data. */
function tensor(name: string, dims: number[], data: Float32Array | BigInt64Array): Message {
  const t = new Message();
  for (const d of dims) t.int(1, d);
  t.int(2, data instanceof Float32Array ? FLOAT : INT64);
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

  constant(dims: number[], data: Float32Array): string {
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

/**
 * Builds the ONNX model of one MusiCNN checkpoint.
 * @param w the checkpoint's arrays (weights.ts)
 * @returns serialized ModelProto (input `x` [n, 1, 187, 96]; outputs `tags`, `penultimate`, `pooled`)
 */
export function musicnnOnnxModel(w: MusicnnWeights): Uint8Array {
  const g = new GraphBuilder();
  const x0 = g.op('Add', [g.op('Mul', ['x', g.constant([1], w.inputBn.scale)]), g.constant([1], w.inputBn.shift)]);
  const branches = w.frontConv.map((c, j) => {
    const kh = c.shape[0]!;
    const before = j < 2 ? 3 : Math.floor((kh - 1) / 2);
    const after = j < 2 ? 3 : kh - 1 - before;
    const bn = w.frontBn[j]!;
    const sign = bn.scale.map((s) => (s >= 0 ? 1 : -1));
    const padded = g.op('Pad', [x0, g.ints([0, 0, before, 0, 0, 0, after, 0])]);
    // Filters padded with zero kernels to a multiple of 16 and the max over the bands taken as a MaxPool
    // over the whole width: ONNX Runtime then keeps conv and pool in its blocked (NCHWc) layout and
    // reorders only the pooled [n, F, 187] back instead of the [n, F, 187, W] conv output (that reorder
    // was a quarter of the CPU); the padding filters are dropped after the pool.
    const filters = c.shape[3]!;
    const padded16 = Math.ceil(filters / 16) * 16;
    const kernel = new Float32Array(padded16 * kh * c.shape[1]!);
    kernel.set(frontKernel(c, sign));
    const z = g.op('Conv', [padded, g.constant([padded16, 1, kh, c.shape[1]!], kernel)], { kernel_shape: [kh, c.shape[1]!] });
    const width = 96 - c.shape[1]! + 1;
    const pooled16 = g.op('Reshape', [g.op('MaxPool', [z], { kernel_shape: [1, width] }), g.ints([0, padded16, 187])]);
    const m = g.op('Slice', [pooled16, g.ints([0]), g.ints([filters]), g.ints([1])]);
    const pre = g.op('Mul', [g.op('Add', [m, channelVector(g, c.bias.map((b, o) => b * sign[o]!))]), channelVector(g, sign)]);
    return batchNorm(g, g.op('Relu', [pre]), bn);
  });
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
  return new Message()
    .int(1, 8) // ir_version
    .bytes(2, 'polyphony')
    .bytes(7, graph)
    .bytes(8, new Message().bytes(1, '').int(2, 17))
    .finish();
}
