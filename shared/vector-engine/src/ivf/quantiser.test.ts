import { IvfInputError } from './errors';
import { ProductQuantiser, ScalarQuantiser } from './quantiser';
import { createHash } from 'node:crypto';
import { SeededRandom, unitClusters } from '@polyphony/vectors';
import before from './__fixtures__/pq-codebooks-before-engine.json';

function gaussianMatrix(n: number, dim: number, seed: number, scale = 0.1): Float32Array {
  const rng = new SeededRandom(seed);
  const out = new Float32Array(n * dim);
  for (let i = 0; i < out.length; i++) out[i] = rng.nextGaussian() * scale * (1 + (i % dim) / dim);
  return out;
}

function dotF(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

describe('ScalarQuantiser (8-bit, per-dimension min/step)', () => {
  const dim = 40;
  const n = 2000;
  const data = gaussianMatrix(n, dim, 7);
  const sq = ScalarQuantiser.train(data, n, dim);

  it('round-trips every trained vector within half a step per component', () => {
    const code = new Uint8Array(dim);
    const back = new Float32Array(dim);
    let worst = 0;
    for (let i = 0; i < n; i++) {
      sq.encode(data, i * dim, code, 0);
      sq.decode(code, 0, back, 0);
      for (let d = 0; d < dim; d++) worst = Math.max(worst, Math.abs(back[d]! - data[i * dim + d]!) / sq.step[d]!);
    }
    expect(worst).toBeLessThanOrEqual(0.5 + 1e-3);
    expect(worst).toBeGreaterThan(0.3); // the bound is reached, i.e. the test measures something
  });

  it('clamps values outside the trained range to the range ends', () => {
    const x = new Float32Array(dim).fill(1e3);
    const code = new Uint8Array(dim);
    sq.encode(x, 0, code, 0);
    expect([...code].every((c) => c === 255)).toBe(true);
    x.fill(-1e3);
    sq.encode(x, 0, code, 0);
    expect([...code].every((c) => c === 0)).toBe(true);
  });

  it('scores codes with the ADC table exactly like the dot product with the decoded vector', () => {
    const q = gaussianMatrix(1, dim, 99, 1);
    const table = new Float32Array(sq.tableSize);
    const constant = sq.prepare(q, table);
    const codes = new Uint8Array(10 * dim);
    for (let i = 0; i < 10; i++) sq.encode(data, i * dim, codes, i * dim);
    const out = new Float64Array(10);
    sq.scoreRange(codes, 0, 10, table, out);
    const back = new Float32Array(dim);
    for (let i = 0; i < 10; i++) {
      sq.decode(codes, i * dim, back, 0);
      expect(constant + out[i]!).toBeCloseTo(dotF(q, back), 4);
    }
  });

  it('survives a parameter round trip', () => {
    const again = ScalarQuantiser.fromParams(dim, sq.toParams());
    expect([...again.min]).toEqual([...sq.min]);
    expect([...again.step]).toEqual([...sq.step]);
    expect(() => ScalarQuantiser.fromParams(dim, new Float32Array(3))).toThrow(IvfInputError);
  });
});

describe('ProductQuantiser (m sub-spaces x 256 centroids)', () => {
  const dim = 32;
  const n = 3000;
  const data = gaussianMatrix(n, dim, 11);
  let pq: ProductQuantiser;
  beforeAll(async () => {
    pq = await ProductQuantiser.train(data, n, dim, 8, { seed: 1, iterations: 8 });
  });

  it('reconstructs far better than the mean vector (relative squared error bound)', () => {
    const code = new Uint8Array(pq.codeSize);
    const back = new Float32Array(dim);
    let err = 0;
    let energy = 0;
    for (let i = 0; i < n; i++) {
      pq.encode(data, i * dim, code, 0);
      pq.decode(code, 0, back, 0);
      for (let d = 0; d < dim; d++) {
        err += (back[d]! - data[i * dim + d]!) ** 2;
        energy += data[i * dim + d]! ** 2;
      }
    }
    // 256 centroids in 4-d Gaussian sub-spaces: distortion ~ 0.1-0.2 of the variance (measured 0.15).
    expect(err / energy).toBeLessThan(0.25);
  });

  it('encodes to the nearest centroid of every sub-space', () => {
    const code = new Uint8Array(pq.codeSize);
    pq.encode(data, 0, code, 0);
    for (let j = 0; j < pq.m; j++) {
      let best = -1;
      let bestD = Infinity;
      for (let k = 0; k < 256; k++) {
        let d2 = 0;
        for (let t = 0; t < pq.dsub; t++) d2 += (data[j * pq.dsub + t]! - pq.codebooks[(j * 256 + k) * pq.dsub + t]!) ** 2;
        if (d2 < bestD) [bestD, best] = [d2, k];
      }
      expect(code[j]).toBe(best);
    }
  });

  it('ADC table scores equal the dot product with the decoded vector', () => {
    const q = gaussianMatrix(1, dim, 5, 1);
    const table = new Float32Array(pq.tableSize);
    const constant = pq.prepare(q, table);
    const codes = new Uint8Array(5 * pq.codeSize);
    for (let i = 0; i < 5; i++) pq.encode(data, i * dim, codes, i * pq.codeSize);
    const out = new Float64Array(5);
    pq.scoreRange(codes, 0, 5, table, out);
    const back = new Float32Array(dim);
    for (let i = 0; i < 5; i++) {
      pq.decode(codes, i * pq.codeSize, back, 0);
      expect(constant + out[i]!).toBeCloseTo(dotF(q, back), 4);
    }
  });

  it('is deterministic for a seed and round-trips its parameters', async () => {
    const again = await ProductQuantiser.train(data, n, dim, 8, { seed: 1, iterations: 8 });
    expect(Buffer.from(again.codebooks.buffer).equals(Buffer.from(pq.codebooks.buffer))).toBe(true);
    const back = ProductQuantiser.fromParams(dim, pq.toParams());
    expect(back.m).toBe(8);
    expect(Buffer.from(back.codebooks.buffer).equals(Buffer.from(pq.codebooks.buffer))).toBe(true);
  });

  it('rejects an m that does not divide dim and a sample smaller than 256', async () => {
    await expect(ProductQuantiser.train(data, n, dim, 7)).rejects.toThrow(IvfInputError);
    await expect(ProductQuantiser.train(data, 100, dim, 8)).rejects.toThrow(IvfInputError);
  });
});

describe('ProductQuantiser training on the shared k-means engine', () => {
  it('When seeded samples are trained (samples barely over 256 included, where centroids go empty), then the codebooks are bit-identical to the loop the engine replaced', async () => {
    for (const { shape, sha256 } of before.cases) {
      const [clusters, perCluster, dim, noise, seed, m, iterations] = shape as [number, number, number, number, number, number, number];
      const { data } = unitClusters(clusters, perCluster, dim, noise, seed);
      const pq = await ProductQuantiser.train(data, clusters * perCluster, dim, m, { seed, iterations });
      expect(createHash('sha256').update(Buffer.from(pq.codebooks.buffer, pq.codebooks.byteOffset, pq.codebooks.byteLength)).digest('hex')).toBe(sha256);
    }
  });
});
