import { dbscanCosine, gmmDiagonal, reduceWithPca, scoreClustering, searchClustering, type SongLabels } from './cluster-algorithms';

/** Three well separated groups of unit vectors in 8-d (plus, for DBSCAN, one stray point). */
function blobs(perGroup: number, stray = false): { vectors: Float32Array; n: number; dim: number; truth: number[] } {
  const dim = 8;
  const rows: number[][] = [];
  const truth: number[] = [];
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 - 0.5) * 0.05;
  for (let g = 0; g < 3; g++) for (let i = 0; i < perGroup; i++) {
    const v = Array.from({ length: dim }, (_x, j) => (j === g * 2 ? 1 : 0) + rand());
    rows.push(v);
    truth.push(g);
  }
  if (stray) {
    rows.push(Array.from({ length: dim }, (_x, j) => (j === 7 ? 1 : 0)));
    truth.push(-1);
  }
  const vectors = new Float32Array(rows.length * dim);
  rows.forEach((r, i) => {
    const norm = Math.hypot(...r);
    r.forEach((x, j) => (vectors[i * dim + j] = x / norm));
  });
  return { vectors, n: rows.length, dim, truth };
}

/** Same partition up to relabelling. */
function samePartition(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  const map = new Map<number, number>();
  for (let i = 0; i < a.length; i++) {
    const m = map.get(a[i]!);
    if (m === undefined) map.set(a[i]!, b[i]!);
    else if (m !== b[i]) return false;
  }
  return new Set(map.values()).size === map.size;
}

describe('clustering algorithms', () => {
  it('When three separated groups are clustered by GMM, then the groups come back exactly', async () => {
    const { vectors, n, dim, truth } = blobs(20);
    const g = await gmmDiagonal(vectors, n, dim, 3, 1);
    expect(samePartition(g.assignments, truth)).toBe(true);
    expect(Array.from(g.distances).every((d) => Number.isFinite(d))).toBe(true);
  });

  it('When DBSCAN runs with a radius tighter than the gaps, then the groups come back and the stray point is noise', () => {
    const { vectors, n, dim, truth } = blobs(10, true);
    const d = dbscanCosine(vectors, n, dim, 0.05, 3);
    expect(d.k).toBe(3);
    expect(d.assignments[n - 1]).toBe(-1);
    expect(samePartition(Array.from(d.assignments).slice(0, n - 1), truth.slice(0, n - 1))).toBe(true);
  });

  it('When clusterings are scored, then pure and diverse beats mixed, and one cluster scores 0', () => {
    const labels: SongLabels[] = [0, 0, 1, 1, 2, 2].map((t) => ({ topTag: t, profile: 'x' }));
    const pure = scoreClustering(Int32Array.from([0, 0, 1, 1, 2, 2]), labels);
    const mixed = scoreClustering(Int32Array.from([0, 1, 0, 1, 0, 1]), labels);
    expect(pure).toEqual({ score: 3, purity: 1, diversity: 1 });
    expect(mixed.score).toBeLessThan(pure.score);
    expect(scoreClustering(Int32Array.from([0, 0, 0, 0, 0, 0]), labels).score).toBe(0);
  });

  it('When k is searched, then the k matching the labelled groups wins within the run budget', async () => {
    const { vectors, n, dim, truth } = blobs(15);
    const labels = truth.map((t) => ({ topTag: t, profile: String(t) }));
    const { best, tried } = await searchClustering(vectors, n, dim, labels, { algorithm: 'kmeans', minK: 2, maxK: 8, maxRuns: 6, seed: 3 });
    expect(best.k).toBe(3);
    expect(tried).toBeLessThanOrEqual(6);
  });

  it('When PCA keeps 2 components, then vectors are 2-d unit vectors', () => {
    const { vectors, n, dim } = blobs(5);
    const r = reduceWithPca(vectors, n, dim, 2);
    expect(r.dim).toBe(2);
    for (let i = 0; i < n; i++) expect(Math.hypot(r.vectors[i * 2]!, r.vectors[i * 2 + 1]!)).toBeCloseTo(1, 5);
  });
});
