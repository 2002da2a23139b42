import { SyntheticMixture } from '@polyphony/testkit';
import { buildIvfIndex, type VectorBatch } from './ivf-build';
import { CooperativeScheduler } from './cooperative';
import { quantiseIndex } from './quantised-store';

/**
 * `IvfIndex.exactSearchMany` (the live library's drift probes): several queries in one pass over the rows give, per
 * query, exactly what `exactSearch` gives (rows, distances, order, excluded rows left out), on a float generation and
 * on an int8 one (scanned from its disk copy), and the scan yields to the scheduler between chunks.
 */
const N = 9000;
const DIM = 24;

function batches(): VectorBatch[] {
  const out: VectorBatch[] = [];
  for (const b of new SyntheticMixture({ seed: 5, dim: DIM }).batches(N, 3000)) out.push({ ids: b.ids, vectors: b.vectors });
  return out;
}

describe('IvfIndex.exactSearchMany', () => {
  jest.setTimeout(120_000);

  it.each(['float', 'int8'] as const)('When %s probes are searched together, then each answer equals exactSearch of that probe alone', async (mode) => {
    const float = (await buildIvfIndex(batches(), { expectedCount: N, dim: DIM })).index;
    const index = mode === 'float' ? float : await quantiseIndex(float, { mode: 'int8', sampleSize: 2000 });
    const probes = [0, 17, 4096, 4097, 8999, 1234];
    const queries = new Float32Array(probes.length * DIM);
    probes.forEach((r, j) => queries.set(index.getVector(r), j * DIM));
    const excludes = probes.map((r, j) => (j % 2 === 0 ? [r] : undefined));
    let yields = 0;
    const scheduler = new CooperativeScheduler(0);
    const counted = { maybeYield: async () => void (yields++, await scheduler.maybeYield()) };
    const many = await index.exactSearchMany(queries, 10, excludes, counted);
    expect(yields).toBe(Math.ceil(N / 4096));
    probes.forEach((r, j) => {
      const alone = index.exactSearch(queries.subarray(j * DIM, (j + 1) * DIM), { k: 10, ...(excludes[j] ? { exclude: excludes[j] } : {}) });
      expect(many[j]).toEqual(alone);
      expect(many[j]!.some((h) => h.row === r)).toBe(excludes[j] === undefined);
    });
    await expect(index.exactSearchMany(new Float32Array(DIM + 1), 10)).rejects.toThrow(/multiple of/);
  });
});
