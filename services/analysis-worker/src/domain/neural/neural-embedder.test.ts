import { mkdtempSync, mkdirSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { ValidationError } from '@polyphony/platform';
import { fileSystemIOHandler, NeuralModelError } from './fs-io-handler';
import { MusicnnMelFrontend, samplesForPatches } from './mel-frontend';
import { AudioTooShortError, NeuralEmbedder } from './neural-embedder';
import { buildTinyPatchModel } from './synthetic-model';
import type { ModuleLoader } from './tf-runtime';

tf.env().set('PROD', true);

/** Deterministic noisy multi-tone audio; `seed` changes tones and noise. */
function audio(samples: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const rand = (): number => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
  const f1 = 100 + 900 * rand();
  const f2 = 1000 + 5000 * rand();
  return Float32Array.from({ length: samples }, (_, i) => {
    const t = i / 16000;
    return 0.4 * Math.sin(2 * Math.PI * f1 * t) + 0.2 * Math.sin(2 * Math.PI * f2 * t) * Math.sin(2 * Math.PI * 0.7 * t) + 0.1 * (rand() * 2 - 1);
  });
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

function maxAbs(a: Float32Array): number {
  return a.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
}

const cpuOnly: ModuleLoader = (id) => {
  if (id !== '@tensorflow/tfjs') throw new Error(`Cannot find module '${id}'`);
  return require(id) as unknown;
};
const noTfjsNode: ModuleLoader = (id) => {
  if (id === '@tensorflow/tfjs-node') throw new Error(`Cannot find module '${id}'`);
  return require(id) as unknown;
};

describe(NeuralEmbedder.name, () => {
  let root: string;
  let tinyDir: string;
  let tiny: tf.LayersModel;
  let cpu: NeuralEmbedder;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'neural-embedder-'));
    await tf.setBackend('cpu');
    tiny = buildTinyPatchModel(tf, { seed: 1 });
    tinyDir = join(root, 'a', 'tiny');
    // 256 KiB shards: the ~1.2 MB of weights are split over several files, as the tfjs converter does.
    await tiny.save(fileSystemIOHandler(tinyDir, { shardBytes: 256 * 1024 }));
    cpu = await NeuralEmbedder.load({ modelDir: tinyDir, backend: 'cpu', outputName: 'embedding', expectedDimensions: 200 });
  });

  afterAll(() => {
    cpu?.dispose();
    tiny?.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  it('When a saved model directory is loaded, then its shards are read and the output layer sets the dimensions', async () => {
    expect(readdirSync(tinyDir).filter((f) => f.endsWith('.bin')).length).toBeGreaterThan(1);
    expect(cpu.dimensions).toBe(200);
    expect(cpu.backend).toBe('cpu');
    expect(cpu.version).toMatch(/^tfjs:tiny:[0-9a-f]{16}$/);
    const tags = await NeuralEmbedder.load({ modelDir: tinyDir, backend: 'cpu' });
    try {
      expect(tags.dimensions).toBe(50); // default: the model's final output
      expect(tags.version).not.toBe(cpu.version); // another output layer is another embedding space
    } finally {
      tags.dispose();
    }
  });

  it('When the weights differ under the same directory name, then the version differs', async () => {
    const other = buildTinyPatchModel(tf, { seed: 99 });
    const dir = join(root, 'b', 'tiny');
    await other.save(fileSystemIOHandler(dir));
    other.dispose();
    const e = await NeuralEmbedder.load({ modelDir: dir, backend: 'cpu', outputName: 'embedding' });
    try {
      expect(e.version).toMatch(/^tfjs:tiny:/);
      expect(e.version).not.toBe(cpu.version);
    } finally {
      e.dispose();
    }
  });

  it('When embedding 3 patches of audio, then the result is a finite 200-d vector that matches the in-memory model', async () => {
    const pcm = audio(samplesForPatches(3), 1);
    const r = await cpu.embedPatches(pcm, 16000);
    expect(r.patchCount).toBe(3);
    expect(r.embedding).toBeInstanceOf(Float32Array);
    expect(r.embedding.length).toBe(200);
    expect(r.embedding.every(Number.isFinite)).toBe(true);
    expect(maxAbs(r.embedding)).toBeGreaterThan(1e-3);

    // Independent path: the original (never saved) model's 'embedding' layer on the front-end patches.
    const spec = new MusicnnMelFrontend().logMel(pcm);
    const sub = tf.model({ inputs: tiny.inputs, outputs: tiny.getLayer('embedding').output as tf.SymbolicTensor });
    const expected = tf.tidy(() => (sub.predict(tf.tensor4d(spec.data.subarray(0, 3 * 187 * 96), [3, 187, 96, 1])) as tf.Tensor).dataSync() as Float32Array);
    expect(maxAbsDiff(r.patchEmbeddings, expected)).toBeLessThan(1e-5);
  });

  it('When the same audio is embedded twice or by a freshly loaded embedder, then the vectors are identical', async () => {
    const pcm = audio(samplesForPatches(2) + 5000, 2);
    const a = await cpu.embed(pcm, 16000);
    const tensorsBefore = tf.memory().numTensors;
    const b = await cpu.embed(pcm, 16000);
    expect(tf.memory().numTensors).toBe(tensorsBefore); // no tensor leaks per call
    const again = await NeuralEmbedder.load({ modelDir: tinyDir, backend: 'cpu', outputName: 'embedding' });
    try {
      const c = await again.embed(pcm, 16000);
      expect(Buffer.from(b.buffer).equals(Buffer.from(a.buffer))).toBe(true);
      expect(Buffer.from(c.buffer).equals(Buffer.from(a.buffer))).toBe(true);
      expect(again.version).toBe(cpu.version);
    } finally {
      again.dispose();
    }
  });

  it('When the audio differs, then the embeddings differ', async () => {
    const a = await cpu.embed(audio(samplesForPatches(2), 3), 16000);
    const b = await cpu.embed(audio(samplesForPatches(2), 4), 16000);
    expect(maxAbsDiff(a, b)).toBeGreaterThan(0.05 * maxAbs(a));
  });

  it('When the audio holds exactly 2 patches, then the embedding is the mean of the two single-patch embeddings', async () => {
    const n = samplesForPatches(2); // 96 000 samples = 374 frames
    const pcm = audio(n, 5);
    const one = samplesForPatches(1); // 48 128 samples = 187 frames
    const secondStart = 187 * 256; // frame 187 begins here
    const first = await cpu.embed(pcm.subarray(0, one), 16000);
    const second = await cpu.embed(pcm.subarray(secondStart, secondStart + one), 16000);
    expect(second.length).toBe(200);
    expect(maxAbsDiff(first, second)).toBeGreaterThan(1e-3);

    const both = await cpu.embedPatches(pcm, 16000);
    expect(both.patchCount).toBe(2);
    const mean = first.map((v, i) => (v + second[i]!) / 2);
    expect(maxAbsDiff(both.embedding, mean)).toBeLessThan(1e-5);
    // A trailing partial patch (here 186 extra frames) is ignored.
    const longer = new Float32Array(n + 186 * 256);
    longer.set(pcm);
    longer.set(audio(186 * 256, 6), n);
    expect(maxAbsDiff(await cpu.embed(longer, 16000), both.embedding)).toBe(0);
  });

  it('When more patches than one batch are embedded, then batching does not change the result', async () => {
    const pcm = audio(samplesForPatches(10), 7);
    const batched = await cpu.embedPatches(pcm, 16000); // batches of 8 + 2
    const single = await NeuralEmbedder.load({ modelDir: tinyDir, backend: 'cpu', outputName: 'embedding', batchPatches: 1 });
    try {
      const r = await single.embedPatches(pcm, 16000);
      expect(r.patchCount).toBe(10);
      expect(maxAbsDiff(r.patchEmbeddings, batched.patchEmbeddings)).toBeLessThan(1e-5);
    } finally {
      single.dispose();
    }
  });

  it('When the model takes mel-major [96, 187, 1] patches, then the input is transposed to match', async () => {
    // Same weights as `tiny`, with the conv kernel transposed to the mel x time orientation.
    const [kernel, ...rest] = tiny.getWeights();
    const transposed = tf.sequential();
    transposed.add(tf.layers.conv2d({ inputShape: [96, 187, 1], filters: 8, kernelSize: [96, 7], activation: 'relu' }));
    transposed.add(tf.layers.flatten());
    transposed.add(tf.layers.dense({ units: 200, name: 'embedding' }));
    transposed.add(tf.layers.dense({ units: 50, activation: 'sigmoid', name: 'tags' }));
    transposed.setWeights([tf.transpose(kernel!, [1, 0, 2, 3]), ...rest]);
    const dir = join(root, 'transposed');
    await transposed.save(fileSystemIOHandler(dir));
    transposed.dispose();
    const e = await NeuralEmbedder.load({ modelDir: dir, backend: 'cpu', outputName: 'embedding' });
    try {
      expect(e.input).toEqual({ layout: 'mel-time', rank: 4 });
      const pcm = audio(samplesForPatches(2), 8);
      expect(maxAbsDiff(await e.embed(pcm, 16000), await cpu.embed(pcm, 16000))).toBeLessThan(1e-4);
    } finally {
      e.dispose();
    }
  });

  it('When a graph model (converter layout) is loaded, then the named node is read and the default is the final output', async () => {
    // GraphDef: out = sigmoid(mean_over_time(x) @ W + b), x: [batch, 187, 96] like MusiCNN's model/Placeholder.
    const dir = join(root, 'graph');
    mkdirSync(dir);
    const W = Float32Array.from({ length: 96 * 4 }, (_, i) => Math.sin(i * 0.37) * 0.1);
    const bias = Float32Array.from([0.1, -0.2, 0.3, 0]);
    const axis = Int32Array.from([1]);
    const shapeAttr = (dims: number[]): unknown => ({ shape: { dim: dims.map((d) => ({ size: String(d) })) } });
    const constNode = (name: string, dtype: string, dims: number[]): unknown => ({
      name,
      op: 'Const',
      attr: { value: { tensor: { dtype, tensorShape: { dim: dims.map((d) => ({ size: String(d) })) } } }, dtype: { type: dtype } },
    });
    const modelJson = {
      format: 'graph-model',
      generatedBy: 'test',
      convertedBy: 'hand-written',
      modelTopology: {
        node: [
          { name: 'model/Placeholder', op: 'Placeholder', attr: { dtype: { type: 'DT_FLOAT' }, shape: shapeAttr([-1, 187, 96]) } },
          constNode('model/axis', 'DT_INT32', [1]),
          constNode('model/dense/kernel', 'DT_FLOAT', [96, 4]),
          constNode('model/dense/bias', 'DT_FLOAT', [4]),
          { name: 'model/Mean', op: 'Mean', input: ['model/Placeholder', 'model/axis'], attr: { keep_dims: { b: false }, T: { type: 'DT_FLOAT' }, Tidx: { type: 'DT_INT32' } } },
          { name: 'model/dense/MatMul', op: 'MatMul', input: ['model/Mean', 'model/dense/kernel'], attr: { transpose_a: { b: false }, transpose_b: { b: false }, T: { type: 'DT_FLOAT' } } },
          { name: 'model/dense/BiasAdd', op: 'BiasAdd', input: ['model/dense/MatMul', 'model/dense/bias'], attr: { T: { type: 'DT_FLOAT' } } },
          { name: 'model/Sigmoid', op: 'Sigmoid', input: ['model/dense/BiasAdd'], attr: { T: { type: 'DT_FLOAT' } } },
        ],
        library: {},
        versions: { producer: 1 },
      },
      weightsManifest: [
        {
          paths: ['group1-shard1of2.bin', 'group1-shard2of2.bin'],
          weights: [
            { name: 'model/axis', shape: [1], dtype: 'int32' },
            { name: 'model/dense/kernel', shape: [96, 4], dtype: 'float32' },
            { name: 'model/dense/bias', shape: [4], dtype: 'float32' },
          ],
        },
      ],
    };
    const bytes = Buffer.concat([Buffer.from(axis.buffer), Buffer.from(W.buffer), Buffer.from(bias.buffer)]);
    writeFileSync(join(dir, 'group1-shard1of2.bin'), bytes.subarray(0, 1000));
    writeFileSync(join(dir, 'group1-shard2of2.bin'), bytes.subarray(1000));
    writeFileSync(join(dir, 'model.json'), JSON.stringify(modelJson));

    const pcm = audio(samplesForPatches(2), 9);
    // Expected from first principles: per patch, mean over 187 frames of the log-mel, times W, plus b.
    const spec = new MusicnnMelFrontend().logMel(pcm);
    const expected = new Float32Array(4);
    for (let p = 0; p < 2; p++) {
      for (let j = 0; j < 4; j++) {
        let acc = 0;
        for (let t = 0; t < 187; t++) for (let m = 0; m < 96; m++) acc += (spec.data[(p * 187 + t) * 96 + m]! / 187) * W[m * 4 + j]!;
        expected[j]! += (acc + bias[j]!) / 2;
      }
    }
    const emb = await NeuralEmbedder.load({ modelDir: dir, backend: 'cpu', outputName: 'model/dense/BiasAdd' });
    const tags = await NeuralEmbedder.load({ modelDir: dir, backend: 'cpu' });
    try {
      expect(emb.dimensions).toBe(4);
      expect(emb.input).toEqual({ layout: 'time-mel', rank: 3 });
      expect(maxAbsDiff(await emb.embed(pcm, 16000), expected)).toBeLessThan(1e-4);
      const sig = await tags.embedPatches(pcm, 16000);
      // default output is the sigmoid: every value in (0, 1) and not equal to the linear layer's
      expect(sig.patchEmbeddings.every((v) => v > 0 && v < 1)).toBe(true);
      expect(tags.version).not.toBe(emb.version);
    } finally {
      emb.dispose();
      tags.dispose();
    }
  });

  it('When the audio is shorter than one patch or not 16 kHz, then typed errors are thrown', async () => {
    await expect(cpu.embed(new Float32Array(samplesForPatches(1) - 1), 16000)).rejects.toBeInstanceOf(AudioTooShortError);
    await expect(cpu.embed(audio(samplesForPatches(1), 1), 44100)).rejects.toBeInstanceOf(ValidationError);
  });

  it('When the directory, a shard, the output layer or its size is wrong, then NeuralModelError is thrown', async () => {
    await expect(NeuralEmbedder.load({ modelDir: join(root, 'missing'), backend: 'cpu' })).rejects.toBeInstanceOf(NeuralModelError);
    await expect(NeuralEmbedder.load({ modelDir: tinyDir, backend: 'cpu', outputName: 'no_such_layer' })).rejects.toThrow(/no layer 'no_such_layer'/);
    await expect(NeuralEmbedder.load({ modelDir: tinyDir, backend: 'cpu', expectedDimensions: 200 })).rejects.toThrow(/gives 50 values per patch, expected 200/);
    const broken = join(root, 'broken');
    await tiny.save(fileSystemIOHandler(broken));
    truncateSync(join(broken, 'group1-shard1of1.bin'), 1000);
    await expect(NeuralEmbedder.load({ modelDir: broken, backend: 'cpu' })).rejects.toThrow(/weight shards hold 1000 bytes/);
  });

  describe('backends', () => {
    it('When tfjs-node is absent, then auto selects wasm, and without wasm it falls back to cpu', async () => {
      const auto = await NeuralEmbedder.load({ modelDir: tinyDir, outputName: 'embedding', moduleLoader: noTfjsNode });
      const fallback = await NeuralEmbedder.load({ modelDir: tinyDir, backend: 'auto', outputName: 'embedding', moduleLoader: cpuOnly });
      try {
        expect(auto.backend).toBe('wasm');
        expect(fallback.backend).toBe('cpu');
      } finally {
        auto.dispose();
        fallback.dispose();
      }
      await expect(NeuralEmbedder.load({ modelDir: tinyDir, backend: 'tensorflow', moduleLoader: noTfjsNode })).rejects.toBeInstanceOf(NeuralModelError);
    });

    it('When the same model runs on wasm and cpu, then the embeddings agree within 1e-4', async () => {
      const wasm = await NeuralEmbedder.load({ modelDir: tinyDir, backend: 'wasm', outputName: 'embedding' });
      try {
        expect(wasm.backend).toBe('wasm');
        expect(wasm.version).toBe(cpu.version);
        const pcm = audio(samplesForPatches(3), 10);
        const onWasm = await wasm.embed(pcm, 16000);
        expect(tf.getBackend()).toBe('wasm');
        const onCpu = await cpu.embed(pcm, 16000); // switches the global backend back to cpu
        expect(tf.getBackend()).toBe('cpu');
        expect(maxAbsDiff(onWasm, onCpu)).toBeLessThan(1e-4);
      } finally {
        wasm.dispose();
      }
    });
  });
});
