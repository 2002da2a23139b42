import { mapNeighbourPurity } from '@polyphony/testkit';
import { buildIvfIndex } from '@polyphony/vector-engine';
import { SeededRandom } from '@polyphony/vectors';
import { mapPosition, placeAmong, UMAP_MIN_SAMPLES, umapLayout } from './umap-projection';

const DIM = 16;
const CLUSTERS = 4;

/** `n` points in CLUSTERS tight groups around random directions; row i belongs to cluster `label(i)`. */
async function clusteredIndex(n: number) {
  const rng = new SeededRandom(11);
  const centres = Array.from({ length: CLUSTERS }, () => Float32Array.from({ length: DIM }, () => rng.nextGaussian()));
  const ids: string[] = [];
  const vectors = new Float32Array(n * DIM);
  const labelOf = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const c = i % CLUSTERS;
    const id = `id-${String(i).padStart(6, '0')}`;
    ids.push(id);
    labelOf.set(id, c);
    for (let d = 0; d < DIM; d++) vectors[i * DIM + d] = centres[c]![d]! + 0.08 * rng.nextGaussian();
  }
  const index = (await buildIvfIndex([{ ids, vectors }], { dim: DIM })).index;
  const label = (row: number) => labelOf.get(index.idOf(row))!;
  return { index, label };
}

/** Share of rows whose nearest other point on the map (2-D) is in the same cluster. */
const neighbourPurity = (coords: Float32Array, label: (row: number) => number): number => mapNeighbourPurity(coords, label, Array.from({ length: coords.length / 2 }, (_, i) => i));

describe('umapLayout', () => {
  it('When the index is below UMAP_MIN_SAMPLES, then there is no UMAP layout (the caller uses PCA)', async () => {
    const { index } = await clusteredIndex(UMAP_MIN_SAMPLES - 1);
    expect(await umapLayout(index)).toBeUndefined();
  });

  it('When the songs form clusters, then the map keeps them apart, spans [-1, 1] and is the same on a second run', async () => {
    const { index, label } = await clusteredIndex(400);
    const coords = (await umapLayout(index))!;
    expect(coords).toHaveLength(800);
    const xs = coords.filter((_, i) => i % 2 === 0);
    const ys = coords.filter((_, i) => i % 2 === 1);
    expect(Math.min(...xs)).toBeCloseTo(-1, 5);
    expect(Math.max(...xs)).toBeCloseTo(1, 5);
    expect(Math.min(...ys)).toBeCloseTo(-1, 5);
    expect(Math.max(...ys)).toBeCloseTo(1, 5);
    expect(neighbourPurity(coords, label)).toBeGreaterThan(0.95);
    // In this thread (cooperative) or in the worker thread: the same map.
    expect(Array.from((await umapLayout(index, undefined, { inThread: true }))!)).toEqual(Array.from(coords));
  });

  it('When UMAP is fitted on a sample, then the other rows are placed beside their cluster', async () => {
    const { index, label } = await clusteredIndex(1200);
    const coords = (await umapLayout(index, undefined, { fitRows: 300 }))!;
    expect(coords.every((c) => Number.isFinite(c) && Math.abs(c) <= 1 + 1e-6)).toBe(true);
    expect(neighbourPurity(coords, label)).toBeGreaterThan(0.95);
  });

  it('When a vector that is no row is placed on a UMAP map, then it lands among the rows of its cluster', async () => {
    const { index, label } = await clusteredIndex(400);
    const coords = (await umapLayout(index))!;
    const gen = { index, coords, pca: undefined, mapMethod: 'umap' as const };
    const row = 8;
    const [x, y] = mapPosition(gen, index.getVector(row))!;
    // Nearest map point to the placed vector belongs to the row's cluster.
    let best = -1;
    let bestD = Infinity;
    for (let j = 0; j < index.size; j++) {
      const d = (coords[2 * j]! - x) ** 2 + (coords[2 * j + 1]! - y) ** 2;
      if (d < bestD) [best, bestD] = [j, d];
    }
    expect(label(best)).toBe(label(row));
    // Placed among the rows of its own cluster only (an artist component among its songs): inside their box.
    const own = Array.from({ length: index.size }, (_, r) => r).filter((r) => label(r) === label(row));
    const [ax, ay] = placeAmong(index, coords, index.getVector(row), own);
    const xs = own.map((r) => coords[2 * r]!);
    const ys = own.map((r) => coords[2 * r + 1]!);
    expect(ax).toBeGreaterThanOrEqual(Math.min(...xs));
    expect(ax).toBeLessThanOrEqual(Math.max(...xs));
    expect(ay).toBeGreaterThanOrEqual(Math.min(...ys));
    expect(ay).toBeLessThanOrEqual(Math.max(...ys));
    expect(placeAmong(index, coords, index.getVector(row), [])).toEqual([0, 0]);
  });
});
