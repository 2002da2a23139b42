import { normaliseInto } from './kernels';

/**
 * Seeded pseudo-random numbers: the IVF build, k-means seeding and the synthetic benchmark data.
 *
 * Generator: xoshiro128** (Blackman & Vigna, "Scrambled linear pseudorandom number generators",
 * ACM TOMS 2021; reference C code at https://prng.di.unimi.it/xoshiro128starstar.c), seeded from one
 * 32-bit integer through splitmix32 so that nearby seeds give unrelated streams.
 * Not cryptographic. Identical seeds give identical sequences on every platform (integer arithmetic only,
 * floats are derived from the top 24 bits).
 */
export class SeededRandom {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;
  private spareGaussian: number | null = null;

  /** @param seed any 32-bit integer (other numbers are truncated with `>>> 0`). */
  constructor(seed: number) {
    let x = seed >>> 0;
    const next = (): number => {
      // splitmix32 step (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014).
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1; // the all-zero state is a fixed point
  }

  /** Next unsigned 32-bit integer in [0, 2^32). */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform float in [0, 1) with 24 bits of resolution. */
  nextFloat(): number {
    return (this.nextUint32() >>> 8) / 16777216;
  }

  /**
   * Uniform integer in [0, n), unbiased (rejection sampling).
   * @throws RangeError when n is not an integer in [1, 2^32].
   */
  nextInt(n: number): number {
    if (!Number.isInteger(n) || n < 1 || n > 4294967296) throw new RangeError(`nextInt bound must be an integer in [1, 2^32], got ${n}`);
    const limit = 4294967296 - (4294967296 % n);
    for (;;) {
      const r = this.nextUint32();
      if (r < limit) return r % n;
    }
  }

  /** Standard normal deviate N(0, 1) by the Box-Muller transform (one spare value is cached). */
  nextGaussian(): number {
    if (this.spareGaussian !== null) {
      const g = this.spareGaussian;
      this.spareGaussian = null;
      return g;
    }
    let u = 0;
    while (u === 0) u = this.nextFloat();
    const v = this.nextFloat();
    const r = Math.sqrt(-2 * Math.log(u));
    this.spareGaussian = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/**
 * 32-bit FNV-1a hash of a string's UTF-16 code units, mixed with a seed and finalised with the
 * murmur3 fmix32 avalanche step. Used to pick the deterministic k-means training sample
 * (the rows whose ids have the smallest keys) and by the id table's hash lookup.
 * FNV-1a: Fowler, Noll & Vo, http://www.isthe.com/chongo/tech/comp/fnv/ ; fmix32: Appleby, MurmurHash3.
 */
export function hashString32(text: string, seed = 0): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h);
}

/** murmur3's 32-bit finaliser (fmix32, Appleby, MurmurHash3): a cheap, well-mixed integer hash, unsigned. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * mulberry32 (Tommy Ettinger, 2017): a 32-bit-state generator returning floats in [0, 1).
 * Good enough for seeding and sampling; not for cryptography.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Synthetic clustered unit vectors (tests and benchmarks of clustering): `clusters` centres drawn as
 * normalised standard-normal vectors of `dim` values, then `clusters * perCluster` points, point `i`
 * belonging to cluster `i % clusters` (interleaved), each its centre plus `noise` times standard-normal
 * noise, normalised. Everything from one `SeededRandom(seed)`, so the data repeats exactly.
 * @returns the points (row-major, `dim` wide) and the cluster of every point
 */
export function unitClusters(clusters: number, perCluster: number, dim: number, noise: number, seed: number): { data: Float32Array; labels: Int32Array } {
  const rng = new SeededRandom(seed);
  const centres = new Float32Array(clusters * dim);
  for (let c = 0; c < clusters; c++) {
    for (let d = 0; d < dim; d++) centres[c * dim + d] = rng.nextGaussian();
    normaliseInto(centres, c * dim, centres, c * dim, dim);
  }
  const n = clusters * perCluster;
  const data = new Float32Array(n * dim);
  const labels = new Int32Array(n);
  const raw = new Float32Array(dim);
  for (let i = 0; i < n; i++) {
    const c = i % clusters;
    labels[i] = c;
    for (let d = 0; d < dim; d++) raw[d] = centres[c * dim + d]! + noise * rng.nextGaussian();
    normaliseInto(raw, 0, data, i * dim, dim);
  }
  return { data, labels };
}
