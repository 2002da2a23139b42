import { UMAP } from 'umap-js';
import type { Generation } from './generation';
import type { CooperativeScheduler } from './ivf/cooperative';
import type { IvfIndex } from './ivf/ivf-index';
import { SeededRandom } from '@polyphony/vectors';
import { TopK } from './ivf/top-k';
import { projectPoint } from './projection';
import { startModuleWorker } from './worker-thread';

/**
 * Server-side UMAP layout of the catalogue map (`/api/map`), computed once per index generation at build
 * time and persisted with it (`index.map_projections`, method 'umap').
 *
 * Reference: `UMAP(n_neighbors=15, init=random, n_epochs=100)`, centred and scaled to [-1, 1], PCA below
 * `UMAP_MIN_SAMPLES` (docs/reference-implementation "Map"). The layout library is umap-js (PAIR, Apache-2.0),
 * the JavaScript port of McInnes, Healy & Melville, "UMAP: Uniform Manifold Approximation and Projection
 * for Dimension Reduction" (2018), whose default `init` is random like the reference's.
 *
 * Bounded time: UMAP is fitted on a uniform sample of at most `UMAP_FIT_ROWS` rows; every other row is
 * placed the way UMAP's own `transform` initialises new points: the membership-weighted mean of the 2-D
 * positions of its `UMAP_NEIGHBOURS` nearest sample rows. Candidates for those neighbours are the sample
 * rows of the row's IVF cell and of the `PLACE_CELLS - 1` cells whose centroids are nearest to it, so the
 * placement costs O(rows * candidates * dim) instead of O(rows * sample * dim). Measured figures are in
 * services/index/README.md ("Map projection").
 *
 * Deterministic: the sample is a stride over canonical row order, the neighbour lists are exact (ties by
 * row) and umap-js draws its random numbers from a SeededRandom(`UMAP_SEED`).
 */

/** Below this many rows the map is a PCA projection: UMAP's 15-neighbour graph is degenerate on a handful of songs. */
export const UMAP_MIN_SAMPLES = 100;
/** Rows UMAP is fitted on (uniform stride sample); the rest are placed against them. */
export const UMAP_FIT_ROWS = 4000;
/** Reference `n_neighbors`. */
export const UMAP_NEIGHBOURS = 15;
/** Reference `n_epochs`. */
export const UMAP_EPOCHS = 100;
/** Seed of umap-js's random source (random initial layout and negative sampling). */
export const UMAP_SEED = 0x756d_6170;
/** Cells searched when placing a row that was not in the fit sample (its own plus the nearest others). */
export const PLACE_CELLS = 6;

/**
 * Map coordinates of every row (2 floats per row, row order, in [-1, 1] on both axes), or undefined when
 * the index has fewer than `UMAP_MIN_SAMPLES` rows (the caller then uses PCA). `options.fitRows` overrides
 * `UMAP_FIT_ROWS` (tests and benchmarks); `options.inThread` fits in this thread (cooperatively) instead of a
 * worker thread (`umap-worker.ts`); both give the same coordinates.
 * Yields to the event loop through `scheduler` (and stops with its abort signal) between slices of work.
 */
export async function umapLayout(index: IvfIndex, scheduler?: CooperativeScheduler, options: { fitRows?: number; inThread?: boolean } = {}): Promise<Float32Array | undefined> {
  const size = index.size;
  const dim = index.dim;
  if (size < UMAP_MIN_SAMPLES) return undefined;
  const stride = Math.max(1, Math.ceil(size / (options.fitRows ?? UMAP_FIT_ROWS)));
  const sampleRows: number[] = [];
  for (let r = 0; r < size; r += stride) sampleRows.push(r);
  const m = sampleRows.length;
  const sample = new Float32Array(m * dim);
  sampleRows.forEach((r, i) => sample.set(index.getVector(r), i * dim));

  // 1-2. the fit (exact sample k-NN + umap-js), in a worker thread unless asked otherwise: umap-js's graph
  // set-up is one synchronous stretch of seconds, which would stall every query of this replica.
  const flat = options.inThread ? await fitSample(sample, m, dim, scheduler) : await fitSampleInWorker(sample, m, dim);
  scheduler?.throwIfAborted();
  const embedding: number[][] = [];
  for (let i = 0; i < m; i++) embedding.push([flat[2 * i]!, flat[2 * i + 1]!]);
  const raw = new Float32Array(size * 2);
  const placed = new Uint8Array(size);
  sampleRows.forEach((r, i) => {
    raw[2 * r] = embedding[i]![0]!;
    raw[2 * r + 1] = embedding[i]![1]!;
    placed[r] = 1;
  });

  // 3. the other rows, against their nearest sample rows (candidates from nearby IVF cells).
  if (m < size) await placeRest(index, sample, sampleRows, embedding, raw, placed, scheduler);

  // 4. centre and scale to [-1, 1] on both axes (the reference's frame).
  return frame(raw);
}

/**
 * The UMAP fit of a sample (`m` rows of `dim` floats, row-major): exact k-nearest neighbours (euclidean on
 * unit vectors; ties by index) handed to umap-js with the reference parameters and a seeded random source.
 * Returns 2 floats per sample row (umap-js's raw embedding). Deterministic.
 */
export async function fitSample(sample: Float32Array, m: number, dim: number, scheduler?: CooperativeScheduler): Promise<Float32Array> {
  const k = Math.min(UMAP_NEIGHBOURS, m - 1);
  const knnIndices: number[][] = [];
  const knnDistances: number[][] = [];
  const d2 = new Float64Array(m);
  for (let i = 0; i < m; i++) {
    squaredDistancesTo(sample, i * dim, sample, m, dim, d2);
    const nearest = smallest(d2, m, k + 1);
    // umap-js expects the point itself first (distance 0), like pynndescent's output.
    const idx = [i, ...nearest.filter((j) => j !== i).slice(0, k)];
    knnIndices.push(idx);
    knnDistances.push(idx.map((j) => (j === i ? 0 : Math.sqrt(Math.max(0, d2[j]!)))));
    if ((i & 63) === 63) await scheduler?.maybeYield();
  }
  const rng = new SeededRandom(UMAP_SEED);
  const umap = new UMAP({ nComponents: 2, nNeighbors: k, nEpochs: UMAP_EPOCHS, random: () => rng.nextFloat() });
  umap.setPrecomputedKNN(knnIndices, knnDistances);
  const sampleVectors: number[][] = [];
  for (let i = 0; i < m; i++) sampleVectors.push(Array.from(sample.subarray(i * dim, (i + 1) * dim)));
  const epochs = umap.initializeFit(sampleVectors);
  await scheduler?.maybeYield();
  for (let e = 0; e < epochs; e++) {
    umap.step();
    await scheduler?.maybeYield();
  }
  const embedding = umap.getEmbedding();
  const out = new Float32Array(2 * m);
  for (let i = 0; i < m; i++) {
    out[2 * i] = embedding[i]![0]!;
    out[2 * i + 1] = embedding[i]![1]!;
  }
  return out;
}

/**
 * `fitSample` in a one-shot worker thread (`umap-worker.ts`; under ts-jest the worker transpiles the
 * TypeScript sources on the fly, as the IVF build pool does). @throws the worker's error
 */
export function fitSampleInWorker(sample: Float32Array, m: number, dim: number): Promise<Float32Array> {
  const worker = startModuleWorker(__dirname, 'umap-worker');
  return new Promise<Float32Array>((resolve, reject) => {
    worker.once('message', (reply: { embedding?: Float32Array; error?: string }) => {
      if (reply.embedding) resolve(reply.embedding);
      else reject(new Error(`map layout worker: ${reply.error ?? 'no answer'}`));
      void worker.terminate();
    });
    worker.once('error', (err) => {
      reject(err);
      void worker.terminate();
    });
    worker.postMessage({ sample, m, dim });
  });
}

/** Places every row not in the sample (see the module comment); writes `raw`. */
async function placeRest(
  index: IvfIndex,
  sample: Float32Array,
  sampleRows: number[],
  embedding: number[][],
  raw: Float32Array,
  placed: Uint8Array,
  scheduler?: CooperativeScheduler,
): Promise<void> {
  const dim = index.dim;
  const nlist = index.nlist;
  const m = sampleRows.length;
  const sampleOfRow = new Map<number, number>();
  sampleRows.forEach((r, i) => sampleOfRow.set(r, i));
  const groups: Array<{ rows: Int32Array; candidates: Int32Array }> = [];
  if (nlist <= 1) {
    const all = new Int32Array(m).map((_, i) => i);
    const rows = new Int32Array(index.size).map((_, r) => r);
    groups.push({ rows, candidates: all });
  } else {
    const centroids = new Float32Array(nlist * dim);
    const samplesOfCell: number[][] = [];
    for (let c = 0; c < nlist; c++) {
      centroids.set(index.centroid(c), c * dim);
      const list: number[] = [];
      for (const r of index.cellRows(c)) {
        const s = sampleOfRow.get(r);
        if (s !== undefined) list.push(s);
      }
      samplesOfCell.push(list);
    }
    const cd = new Float64Array(nlist);
    const want = Math.min(PLACE_CELLS, nlist);
    for (let c = 0; c < nlist; c++) {
      squaredDistancesTo(centroids, c * dim, centroids, nlist, dim, cd);
      // The own cell (distance 0) first, then the nearest others; more cells while too few sample rows.
      const near = smallest(cd, nlist, nlist);
      const cand: number[] = [];
      for (let j = 0; j < near.length && (j < want || cand.length < 4 * UMAP_NEIGHBOURS); j++) cand.push(...samplesOfCell[near[j]!]!);
      groups.push({ rows: index.cellRows(c), candidates: Int32Array.from(cand) });
      if ((c & 15) === 15) await scheduler?.maybeYield();
    }
  }
  const d2 = new Float64Array(m);
  const v = new Float32Array(dim);
  let done = 0;
  for (const g of groups) {
    const cands = g.candidates;
    if (cands.length === 0) continue;
    for (const r of g.rows) {
      if (placed[r]) continue;
      v.set(index.getVector(r));
      for (let j = 0; j < cands.length; j++) {
        const o = cands[j]! * dim;
        let s = 0;
        for (let d = 0; d < dim; d++) {
          const t = v[d]! - sample[o + d]!;
          s += t * t;
        }
        d2[j] = s;
      }
      const nearest = smallest(d2, cands.length, UMAP_NEIGHBOURS);
      const [x, y] = membershipWeightedMean(nearest.map((j) => Math.sqrt(Math.max(0, d2[j]!))), nearest.map((j) => embedding[cands[j]!]!));
      raw[2 * r] = x;
      raw[2 * r + 1] = y;
      placed[r] = 1;
      if ((++done & 255) === 255) await scheduler?.maybeYield();
    }
  }
}

/**
 * Weighted mean of neighbour positions with UMAP's fuzzy membership weights `exp(-(d - rho) / sigma)`,
 * `rho` = distance to the nearest neighbour, `sigma` = mean of `d - rho` (a closed-form stand-in for
 * UMAP's binary search of sigma; the result is only the starting point UMAP's transform would refine).
 */
export function membershipWeightedMean(distances: number[], positions: ArrayLike<number>[]): [number, number] {
  if (distances.length === 0) return [0, 0];
  const rho = Math.min(...distances);
  const sigma = distances.reduce((a, d) => a + (d - rho), 0) / distances.length || 1;
  let wx = 0;
  let wy = 0;
  let w = 0;
  distances.forEach((d, j) => {
    const weight = Math.exp(-(d - rho) / sigma);
    wx += weight * positions[j]![0]!;
    wy += weight * positions[j]![1]!;
    w += weight;
  });
  return [wx / w, wy / w];
}

/** Squared euclidean distances from `src[offset..offset+dim)` to each of the `n` rows of `rows`, into `out`. */
function squaredDistancesTo(src: Float32Array, offset: number, rows: Float32Array, n: number, dim: number, out: Float64Array): void {
  for (let j = 0; j < n; j++) {
    const o = j * dim;
    let s = 0;
    for (let d = 0; d < dim; d++) {
      const t = src[offset + d]! - rows[o + d]!;
      s += t * t;
    }
    out[j] = s;
  }
}

/** Indices in [0, n) of the `k` smallest `key` values (ties: smaller index), ascending; O(n log k). */
function smallest(key: Float64Array, n: number, k: number): number[] {
  const heap = new TopK(Math.max(1, Math.min(k, n)));
  for (let j = 0; j < n; j++) heap.push(j, key[j]!);
  return heap.sorted().map((h) => h.row);
}

/** Centres the coordinates and scales each axis to [-1, 1] (in place; returns them). */
function frame(raw: Float32Array): Float32Array {
  let minX = Infinity;
  let maxX = -Infinity;
  let minY = Infinity;
  let maxY = -Infinity;
  for (let r = 0; r < raw.length; r += 2) {
    minX = Math.min(minX, raw[r]!);
    maxX = Math.max(maxX, raw[r]!);
    minY = Math.min(minY, raw[r + 1]!);
    maxY = Math.max(maxY, raw[r + 1]!);
  }
  const cx = (minX + maxX) / 2;
  const cy = (minY + maxY) / 2;
  const hx = Math.max((maxX - minX) / 2, 1e-9);
  const hy = Math.max((maxY - minY) / 2, 1e-9);
  for (let r = 0; r < raw.length; r += 2) {
    raw[r] = (raw[r]! - cx) / hx;
    raw[r + 1] = (raw[r + 1]! - cy) / hy;
  }
  return raw;
}

/**
 * Map position of a vector that is not a catalogue row (an alchemy anchor or centroid, an artist component
 * mean) on a UMAP map: the membership-weighted mean of the positions of its `UMAP_NEIGHBOURS` nearest rows
 * (IVF search), the same placement as the rows outside the fit sample. [0, 0] for an empty index.
 */
export function placeOnUmap(index: IvfIndex, coords: Float32Array, v: Float32Array): [number, number] {
  if (index.size === 0 || coords.length < 2 * index.size) return [0, 0];
  const hits = index.search(v, { k: Math.min(UMAP_NEIGHBOURS, index.size) });
  return membershipWeightedMean(
    // Cosine distance 1 - cos of unit vectors -> euclidean sqrt(2 (1 - cos)), the metric of the layout.
    hits.map((h) => Math.sqrt(Math.max(0, 2 * h.distance))),
    hits.map((h) => [coords[2 * h.row]!, coords[2 * h.row + 1]!]),
  );
}

/**
 * Map position of any unit vector in a generation's map space: UMAP maps place it among its nearest rows
 * (placeOnUmap), PCA maps project it on the basis. Undefined when the generation has no map (empty index).
 */
export function mapPosition(gen: Pick<Generation, 'index' | 'coords' | 'pca' | 'mapMethod'>, v: Float32Array): [number, number] | undefined {
  if (gen.mapMethod === 'umap') return placeOnUmap(gen.index, gen.coords, v);
  return gen.pca ? projectPoint(gen.pca, v) : undefined;
}

/**
 * Map position of a vector among given rows only (an artist mixture component among the songs it was fitted
 * on): the membership-weighted mean of the positions of its `UMAP_NEIGHBOURS` nearest rows of `rows`.
 * O(rows * dim), no index search, so every component of every artist is placed in about one pass over the
 * catalogue. [0, 0] when `rows` is empty.
 */
export function placeAmong(index: IvfIndex, coords: Float32Array, v: Float32Array, rows: ArrayLike<number>): [number, number] {
  const n = rows.length;
  if (n === 0 || coords.length < 2 * index.size) return [0, 0];
  const d2 = new Float64Array(n);
  for (let j = 0; j < n; j++) {
    const u = index.getVector(rows[j]!);
    let s = 0;
    for (let d = 0; d < u.length; d++) {
      const t = v[d]! - u[d]!;
      s += t * t;
    }
    d2[j] = s;
  }
  const nearest = smallest(d2, n, UMAP_NEIGHBOURS);
  return membershipWeightedMean(
    nearest.map((j) => Math.sqrt(d2[j]!)),
    nearest.map((j) => [coords[2 * rows[j]!]!, coords[2 * rows[j]! + 1]!]),
  );
}
