import { UMAP } from 'umap-js';
import type { Generation } from '../core/generation';
import { type CooperativeScheduler, type IvfIndex, TopK, startModuleWorker, acquireKernelMemory, releaseKernelMemory, type KernelMemory } from '@polyphony/vector-engine';
import { SeededRandom } from '@polyphony/vectors';
import { projectPoint } from './projection';

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
 * rows of the row's IVF cell and of the `PLACE_CELLS - 1` cells whose centroids are nearest to it (more
 * cells while they hold fewer than `PLACE_MIN_CANDIDATES` sample rows), so the placement costs
 * O(rows * candidates * dim + nlist² * dim) instead of O(rows * sample * dim). (Taking instead the 64-160 sample
 * rows nearest to the cell's centroid measured a lower map quality: 0.634-0.640 against 0.666 at 100k songs.)
 * Dot products (the fit's exact k-NN, centroid x sample, row x candidates) run in the WebAssembly SIMD kernel
 * (`ivf/simd/kernels.ts`, float32 sums; JavaScript when the kernels are off); distances of unit vectors are
 * `sqrt(2 - 2 dot)`. Measured figures are in services/index/README.md ("Map projection").
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
/** ... and further nearest cells until their sample rows number at least this many. */
export const PLACE_MIN_CANDIDATES = 4 * UMAP_NEIGHBOURS;

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
  const dots = new BlockDots(sample, m, dim);
  try {
    for (let i = 0; i < m; i++) {
      dots.squaredDistances(sample, i * dim, d2);
      const nearest = smallest(d2, m, k + 1);
      // umap-js expects the point itself first (distance 0), like pynndescent's output.
      const idx = [i, ...nearest.filter((j) => j !== i).slice(0, k)];
      knnIndices.push(idx);
      knnDistances.push(idx.map((j) => (j === i ? 0 : Math.sqrt(d2[j]!))));
      if ((i & 63) === 63) await scheduler?.maybeYield();
    }
  } finally {
    dots.release();
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
  // Nearest cells are looked for among the `firstCells` nearest first (all of them when those hold too few sample rows).
  const firstCells = Math.min(nlist, Math.max(4 * PLACE_CELLS, Math.ceil((8 * PLACE_MIN_CANDIDATES * nlist) / Math.max(1, m))));
  const toCentroid = new BlockDots(centroids, nlist, dim);
  const cd = new Float64Array(nlist);
  const d2 = new Float64Array(m);
  const cand = new Float32Array(m * dim);
  const v = new Float32Array(dim);
  const nearD = new Float64Array(UMAP_NEIGHBOURS);
  const nearJ = new Int32Array(UMAP_NEIGHBOURS);
  let done = 0;
  try {
    for (let c = 0; c < nlist; c++) {
      const rows = index.cellRows(c);
      if (rows.every((r) => placed[r])) continue;
      // The own cell (distance 0) first, then the nearest others; more cells while too few sample rows.
      toCentroid.squaredDistances(centroids, c * dim, cd);
      cd[c] = -1;
      let near = smallest(cd, nlist, firstCells);
      const enough = (cells: number[]) => cells.reduce((t, x) => t + samplesOfCell[x]!.length, 0) >= PLACE_MIN_CANDIDATES;
      if (near.length < nlist && !enough(near)) near = smallest(cd, nlist, nlist);
      const candOf: number[] = [];
      for (let j = 0; j < near.length && (j < PLACE_CELLS || candOf.length < PLACE_MIN_CANDIDATES); j++) candOf.push(...samplesOfCell[near[j]!]!);
      if (candOf.length === 0) continue;
      candOf.forEach((j, i) => cand.set(sample.subarray(j * dim, (j + 1) * dim), i * dim));
      const toCand = new BlockDots(cand, candOf.length, dim);
      try {
        for (const r of rows) {
          if (placed[r]) continue;
          v.set(index.getVector(r));
          toCand.squaredDistances(v, 0, d2);
          const k = smallestInto(d2, candOf.length, nearD, nearJ);
          const distances: number[] = [];
          const positions: number[][] = [];
          for (let i = 0; i < k; i++) {
            distances.push(Math.sqrt(nearD[i]!));
            positions.push(embedding[candOf[nearJ[i]!]!]!);
          }
          const [x, y] = membershipWeightedMean(distances, positions);
          raw[2 * r] = x;
          raw[2 * r + 1] = y;
          placed[r] = 1;
          if ((++done & 1023) === 1023) await scheduler?.maybeYield();
        }
      } finally {
        toCand.release();
      }
      if ((c & 15) === 15) await scheduler?.maybeYield();
    }
  } finally {
    toCentroid.release();
  }
}

/**
 * Squared euclidean distances from one unit vector to every row of a fixed block of unit vectors, as
 * `max(0, 2 - 2 dot)`: the block is copied once into a WebAssembly kernel memory and each call is one `dots`
 * kernel call (float32 sums), or a JavaScript loop (float64 sums) when the kernels are unavailable or off.
 * Call `release` when done (the kernel memory goes back to this thread's pool).
 */
class BlockDots {
  private readonly km: KernelMemory | undefined;
  private readonly x: number = 0;
  private readonly rows: number = 0;
  private readonly out: number = 0;

  constructor(
    private readonly block: Float32Array,
    private readonly n: number,
    private readonly dim: number,
  ) {
    this.km = dim % 4 === 0 ? acquireKernelMemory((n + 1) * dim * 4 + n * 4 + 64) : undefined;
    if (this.km) {
      this.rows = this.km.alloc(n * dim * 4);
      this.km.putF32(this.rows, block, 0, n * dim);
      this.x = this.km.alloc(dim * 4);
      this.out = this.km.alloc(n * 4);
    }
  }

  /** `out[j]` = squared distance from `src[offset..offset+dim)` to block row j, for j < n. */
  squaredDistances(src: Float32Array, offset: number, out: Float64Array): void {
    const { n, dim, km } = this;
    if (km) {
      km.putF32(this.x, src, offset, dim);
      km.dots(this.x, this.rows, n, dim, this.out);
      const f = km.f32;
      const o = this.out >> 2;
      for (let j = 0; j < n; j++) out[j] = Math.max(0, 2 - 2 * f[o + j]!);
      return;
    }
    const b = this.block;
    for (let j = 0; j < n; j++) {
      const bo = j * dim;
      let s = 0;
      for (let d = 0; d < dim; d++) s += src[offset + d]! * b[bo + d]!;
      out[j] = Math.max(0, 2 - 2 * s);
    }
  }

  release(): void {
    releaseKernelMemory(this.km);
  }
}

/**
 * The (at most `outD.length`) smallest of `key[0..n)` into `outD` (values) and `outJ` (indices), ascending,
 * ties to the smaller index; insertion into a short sorted list, no allocation. @returns how many were written
 */
function smallestInto(key: Float64Array, n: number, outD: Float64Array, outJ: Int32Array): number {
  const cap = outD.length;
  let len = 0;
  for (let j = 0; j < n; j++) {
    const d = key[j]!;
    if (len === cap && d >= outD[len - 1]!) continue;
    let i = len < cap ? len++ : len - 1;
    while (i > 0 && outD[i - 1]! > d) {
      outD[i] = outD[i - 1]!;
      outJ[i] = outJ[i - 1]!;
      i--;
    }
    outD[i] = d;
    outJ[i] = j;
  }
  return len;
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
 * `nprobe`: cells searched (default: the index's); a build placing its changed rows on a reused map uses fewer.
 */
export function placeOnUmap(index: IvfIndex, coords: Float32Array, v: Float32Array, nprobe?: number): [number, number] {
  if (index.size === 0 || coords.length < 2 * index.size) return [0, 0];
  const hits = index.search(v, { k: Math.min(UMAP_NEIGHBOURS, index.size), ...(nprobe !== undefined ? { nprobe } : {}) });
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
