import fc from 'fast-check';
import { SeededRandom, dot } from '@polyphony/vectors';
import { ScalarQuantiser } from '../ivf/quantiser';
import {
  KernelMemory,
  acquireKernelMemory,
  drainKernelMemoryPool,
  releaseKernelMemory,
  int16TableLimit,
  quantiseTableInt16,
  referenceDot,
  referenceDotU8I16,
  simdKernelsAvailable,
} from './kernels';

// The kernels against plain references with the same arithmetic: bit-identical float32 results, exact integers.
describe('WebAssembly SIMD kernels', () => {
  const rng = new SeededRandom(11);
  const rand = (n: number): Float32Array => Float32Array.from({ length: n }, () => rng.nextFloat() * 2 - 1);

  it('compile and run in this Node', () => {
    expect(simdKernelsAvailable()).toBe(true);
  });

  it('dots equals the float32 four-lane reference bit for bit (fast-check: shapes and values)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 16 }).map((q) => q * 4),
        fc.integer({ min: 0, max: 23 }),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        (dim, k, seed) => {
          const r = new SeededRandom(seed);
          const x = Float32Array.from({ length: dim }, () => r.nextFloat() * 4 - 2);
          const c = Float32Array.from({ length: k * dim }, () => r.nextFloat() * 4 - 2);
          const km = new KernelMemory();
          const xp = km.allocF32(x);
          const cp = km.allocF32(c);
          const op = km.alloc(k * 4 + 4);
          km.dots(xp, cp, k, dim, op);
          for (let j = 0; j < k; j++) expect(km.f32[(op >> 2) + j]).toBe(referenceDot(x, 0, c, j * dim, dim));
        },
      ),
      { numRuns: 60, seed: 5 },
    );
  });

  it('dotsF64 equals the JavaScript dot of @polyphony/vectors bit for bit, any dim (fast-check: shapes, magnitudes, odd rows)', () => {
    let orderMatters = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 70 }),
        fc.integer({ min: 0, max: 9 }),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        (dim, k, seed) => {
          const r = new SeededRandom(seed);
          // Magnitudes over 2^-20 .. 2^20: the float64 sums round differently in any other order of additions.
          const value = () => Math.fround((r.nextFloat() * 4 - 2) * 2 ** (r.nextInt(41) - 20));
          const x = Float32Array.from({ length: dim }, value);
          const c = Float32Array.from({ length: k * dim }, value);
          const km = new KernelMemory();
          const xp = km.allocF32(x);
          const cp = km.allocF32(c);
          const op = km.alloc(k * 8 + 8);
          km.dotsF64(xp, cp, k, dim, op);
          for (let j = 0; j < k; j++) {
            const want = dot(c, j * dim, x, 0, dim);
            expect(km.f64[(op >> 3) + j]).toBe(want);
            let sequential = 0;
            for (let d = 0; d < dim; d++) sequential += c[j * dim + d]! * x[d]!;
            if (sequential !== want) orderMatters++;
          }
        },
      ),
      { numRuns: 200, seed: 7 },
    );
    // The data can tell summation orders apart (a kernel summing in another order would fail above).
    expect(orderMatters).toBeGreaterThan(50);
  });

  it('nearest4 returns the reference argmax (ties to the lower index) and its float32 score', () => {
    const dim = 200;
    const n = 64;
    const k = 37;
    const x = rand(n * dim);
    const c = rand(k * dim);
    // Two identical centroids: the lower index must win.
    c.set(c.subarray(5 * dim, 6 * dim), 20 * dim);
    x.set(c.subarray(5 * dim, 6 * dim), 3 * dim);
    const km = new KernelMemory();
    const xp = km.allocF32(x);
    const cp = km.allocF32(c);
    const ip = km.alloc(n * 4);
    const sp = km.alloc(n * 4);
    km.nearest4(xp, n, cp, k, dim, ip, sp);
    for (let i = 0; i < n; i++) {
      let best = -1;
      let bestScore = -Infinity;
      for (let j = 0; j < k; j++) {
        const s = referenceDot(x, i * dim, c, j * dim, dim);
        if (s > bestScore) {
          bestScore = s;
          best = j;
        }
      }
      expect(km.i32[(ip >> 2) + i]).toBe(best);
      expect(km.f32[(sp >> 2) + i]).toBe(bestScore);
    }
    expect(km.i32[(ip >> 2) + 3]).toBe(5);
  });

  it('dotU8I16 equals the exact integer reference, including the extreme codes and table entries (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }).map((q) => q * 8),
        fc.integer({ min: 0, max: 17 }),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.boolean(),
        (dim, count, seed, extreme) => {
          const r = new SeededRandom(seed);
          const limit = int16TableLimit(dim);
          const codes = Uint8Array.from({ length: count * dim }, () => (extreme ? 255 : r.nextInt(256)));
          const table = Int16Array.from({ length: dim }, () => (extreme ? (r.nextFloat() < 0.5 ? -limit : limit) : r.nextInt(2 * limit + 1) - limit));
          const km = new KernelMemory();
          const cp = km.alloc(codes.length);
          const tp = km.alloc(dim * 2);
          const op = km.alloc(count * 4 + 4);
          km.u8.set(codes, cp);
          km.i16.set(table, tp >> 1);
          km.dotU8I16(cp, count, dim, tp, op);
          for (let i = 0; i < count; i++) expect(km.i32[(op >> 2) + i]).toBe(referenceDotU8I16(codes, i * dim, table, 0, dim));
        },
      ),
      { numRuns: 80, seed: 9 },
    );
  });

  it('pqScores equals the float32 sequential sum of the table entries', () => {
    const m = 25;
    const count = 33;
    const table = rand(m * 256);
    const codes = Uint8Array.from({ length: count * m }, () => rng.nextInt(256));
    const km = new KernelMemory();
    const cp = km.alloc(codes.length);
    const tp = km.alloc(m * 256 * 4);
    const op = km.alloc(count * 4);
    km.u8.set(codes, cp);
    km.putF32(tp, table, 0, m * 256);
    km.pqScores(cp, count, m, tp, op);
    for (let i = 0; i < count; i++) {
      let s = 0;
      for (let j = 0; j < m; j++) s = Math.fround(s + table[j * 256 + codes[i * m + j]!]!);
      expect(km.f32[(op >> 2) + i]).toBe(s);
    }
  });

  it('the int16 table ranks codes like the float table within its rounding bound', () => {
    const dim = 200;
    const sq = ScalarQuantiser.train(rand(500 * dim).map((v) => v * 0.2), 500, dim);
    const table = new Float32Array(dim);
    sq.prepare(rand(dim), table);
    const t16 = new Int16Array(dim);
    const scale = quantiseTableInt16(table, dim, t16, 0);
    expect(Math.max(...Array.from(t16, Math.abs))).toBe(int16TableLimit(dim));
    const count = 300;
    const codes = Uint8Array.from({ length: count * dim }, () => rng.nextInt(256));
    const exact = new Float64Array(count);
    sq.scoreRange(codes, 0, count, table, exact);
    for (let i = 0; i < count; i++) {
      let codeSum = 0;
      for (let d = 0; d < dim; d++) codeSum += codes[i * dim + d]!;
      const approx = referenceDotU8I16(codes, i * dim, t16, 0, dim) / scale;
      expect(Math.abs(approx - exact[i]!)).toBeLessThanOrEqual((0.5 * codeSum) / scale + 1e-6);
    }
  });

  it('grows on demand and keeps earlier data', () => {
    const km = new KernelMemory(16);
    const a = km.alloc(8);
    km.i32[a >> 2] = 1234567;
    const b = km.alloc(300_000);
    expect(b).toBeGreaterThan(a);
    expect(km.capacity).toBeGreaterThanOrEqual(300_000);
    expect(km.i32[a >> 2]).toBe(1234567);
    const mark = km.mark();
    km.alloc(100);
    km.release(mark);
    expect(km.alloc(16)).toBe(mark);
  });

  it('the memory pool hands a released memory out again until it is drained (builds drain it when they end)', () => {
    drainKernelMemoryPool();
    const a = acquireKernelMemory(1 << 20)!;
    const b = acquireKernelMemory(2 << 20)!;
    releaseKernelMemory(a);
    releaseKernelMemory(b);
    expect(acquireKernelMemory(1 << 20)).toBe(b); // pooled: the last released first
    releaseKernelMemory(b);
    expect(drainKernelMemoryPool()).toBe(a.capacity + b.capacity);
    expect(drainKernelMemoryPool()).toBe(0);
    const c = acquireKernelMemory(1 << 20)!;
    expect(c).not.toBe(a);
    expect(c).not.toBe(b);
  });
});
