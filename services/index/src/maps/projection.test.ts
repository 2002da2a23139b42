import { buildIvfIndex } from '@polyphony/vector-engine';
import { SeededRandom } from '@polyphony/vectors';
import { decodeBasis, encodeBasis, fitPca, projectAll, projectPoint } from './projection';

const DIM = 16;

/** Points spread mostly along dimension 3, less along 7, little elsewhere (then normalised by the index). */
async function elongatedIndex(n: number) {
  const rng = new SeededRandom(5);
  const ids: string[] = [];
  const vectors = new Float32Array(n * DIM);
  for (let i = 0; i < n; i++) {
    ids.push(`id-${i}`);
    for (let d = 0; d < DIM; d++) vectors[i * DIM + d] = 0.05 * rng.nextGaussian();
    vectors[i * DIM + 0] = 10; // common offset keeps every vector near the same direction
    vectors[i * DIM + 3] = vectors[i * DIM + 3]! + 3 * rng.nextGaussian();
    vectors[i * DIM + 7] = vectors[i * DIM + 7]! + 1 * rng.nextGaussian();
  }
  return (await buildIvfIndex([{ ids, vectors }], { dim: DIM })).index;
}

describe('fitPca', () => {
  it('When the data is elongated along one axis, then the first principal axis follows it and the second the next', async () => {
    const index = await elongatedIndex(2000);
    const basis = (await fitPca(index))!;
    expect(Math.abs(basis.axes[3]!)).toBeGreaterThan(0.9);
    expect(Math.abs(basis.axes[DIM + 7]!)).toBeGreaterThan(0.9);
    // Per-dimension variance: dimension 3 dominates.
    expect(basis.variance[3]!).toBeGreaterThan(10 * basis.variance[5]!);
  });

  it('When every row is projected, then coordinates fall in about [-1, 1] and match projectPoint', async () => {
    const index = await elongatedIndex(500);
    const basis = (await fitPca(index))!;
    const coords = await projectAll(index, basis);
    expect(coords).toHaveLength(1000);
    let max = 0;
    for (const c of coords) max = Math.max(max, Math.abs(c));
    expect(max).toBeLessThanOrEqual(1.0001);
    expect(max).toBeGreaterThan(0.9);
    const [x, y] = projectPoint(basis, index.getVector(17));
    expect(coords[34]).toBeCloseTo(x, 5);
    expect(coords[35]).toBeCloseTo(y, 5);
  });

  it('When a basis is encoded and decoded, then it is unchanged; a malformed array throws', async () => {
    const basis = (await fitPca(await elongatedIndex(100)))!;
    const back = decodeBasis(encodeBasis(basis));
    expect(back).toEqual(basis);
    expect(() => decodeBasis(new Float32Array([3, 1, 2]))).toThrow(RangeError);
  });

  it('When the index is empty, then there is no basis', async () => {
    const empty = (await buildIvfIndex([], { dim: DIM })).index;
    expect(await fitPca(empty)).toBeUndefined();
  });
});
