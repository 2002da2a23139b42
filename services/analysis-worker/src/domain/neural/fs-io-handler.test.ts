import { mkdtempSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileSystemIOHandler, NeuralModelError, readModelDirectory } from './fs-io-handler';

describe(fileSystemIOHandler.name, () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'fs-io-handler-'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const weightBytes = Uint8Array.from({ length: 40 }, (_, i) => i * 3);
  const artifacts = {
    modelTopology: { class_name: 'Sequential', config: { layers: [] } },
    format: 'layers-model',
    generatedBy: 'test',
    convertedBy: null,
    weightSpecs: [
      { name: 'a', shape: [2, 3], dtype: 'float32' as const },
      { name: 'b', shape: [4], dtype: 'int32' as const },
    ],
    weightData: [weightBytes.buffer.slice(0, 15), weightBytes.buffer.slice(15)],
  };

  it('When artifacts are saved with small shards and read back, then topology, specs and bytes round-trip', async () => {
    const dir = join(root, 'roundtrip');
    await fileSystemIOHandler(dir, { shardBytes: 16 }).save!(artifacts);
    expect(readdirSync(dir).sort()).toEqual(['group1-shard1of3.bin', 'group1-shard2of3.bin', 'group1-shard3of3.bin', 'model.json']);
    const loaded = await fileSystemIOHandler(dir).load!();
    expect(loaded.modelTopology).toEqual(artifacts.modelTopology);
    expect(loaded.weightSpecs).toEqual(artifacts.weightSpecs);
    expect(Array.from(new Uint8Array(loaded.weightData as ArrayBuffer))).toEqual(Array.from(weightBytes));
    const files = readModelDirectory(dir);
    expect(files.format).toBe('layers-model');
    expect(files.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('When a shard path leaves the model directory, then loading is refused', () => {
    const dir = join(root, 'escape');
    mkdirSync(dir);
    writeFileSync(join(root, 'outside.bin'), Buffer.alloc(4));
    writeFileSync(
      join(dir, 'model.json'),
      JSON.stringify({ modelTopology: { node: [] }, weightsManifest: [{ paths: ['../outside.bin'], weights: [{ name: 'w', shape: [1], dtype: 'float32' }] }] }),
    );
    expect(() => readModelDirectory(dir)).toThrow(NeuralModelError);
    expect(() => readModelDirectory(dir)).toThrow(/escapes the model directory/);
  });

  it('When model.json lacks a format but holds a GraphDef, then it is read as a graph model', () => {
    const dir = join(root, 'graph-noformat');
    mkdirSync(dir);
    writeFileSync(join(dir, 'model.json'), JSON.stringify({ modelTopology: { node: [] } }));
    expect(readModelDirectory(dir).format).toBe('graph-model');
  });
});
