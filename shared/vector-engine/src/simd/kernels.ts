import { readEnv } from '@polyphony/platform';
import { KERNELS_WASM_BASE64 } from './kernels-wasm';

/**
 * WebAssembly SIMD kernels of the IVF index (source `kernels.wat`, issue 19): float32 dot products of a
 * vector against a block of rows, nearest centroid of 4 points at a time (build: k-means and assignment),
 * the integer ADC of the int8 mode (u8 codes x i16 query table, exact i32 sums) and the PQ table look-ups.
 *
 * Measured on the 2-core build machine (see the README's kernel table): the float kernels run ~4-5x the
 * multiply-adds per second of the unrolled JavaScript (`@polyphony/vectors` `nearestOfFour`), the int8
 * kernel ~8x the float-table JavaScript loop (`ScalarQuantiser.scoreRange`).
 *
 * The kernels read and write one `WebAssembly.Memory` (`KernelMemory`); callers copy their operands into it
 * (`alloc` + the typed views) or keep their data there (the quantised index holds its codes in one).
 * Node 20 enables 128-bit SIMD by default; `simdKernelsAvailable()` is false where the module does not
 * compile, and every caller then uses its JavaScript path.
 */

interface KernelExports {
  dots(x: number, c: number, k: number, dim: number, out: number): void;
  dotsF64(x: number, c: number, k: number, dim: number, out: number): void;
  nearest4(x: number, n: number, c: number, k: number, dim: number, outIdx: number, outScore: number): void;
  dotU8I16(codes: number, count: number, dim: number, table: number, out: number): void;
  pqScores(codes: number, count: number, m: number, table: number, out: number): void;
}

/** The part of the WebAssembly JS API used here (the project compiles without the DOM lib that declares it). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
  Memory: new (descriptor: { initial: number; maximum?: number }) => WasmMemory;
}
const Wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

let compiled: object | null | undefined;

function kernelModule(): object | null {
  if (compiled === undefined) {
    try {
      compiled = new Wasm.Module(Buffer.from(KERNELS_WASM_BASE64, 'base64'));
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

/** `IVF_SIMD=0` in the environment (read once per thread, so worker threads follow it too) disables the kernels. */
let enabled = readEnv().IVF_SIMD !== '0';

/** Whether the SIMD kernels run in this thread. */
export function simdKernelsAvailable(): boolean {
  return enabled && kernelModule() !== null;
}

/**
 * Turns the kernels off or on in this thread (tests and benchmarks compare both paths; worker threads keep
 * the environment's setting). Generations built meanwhile keep the layout they were built with.
 */
export function setSimdKernelsEnabled(on: boolean): void {
  enabled = on;
}

const PAGE = 65536;

/**
 * One WebAssembly memory with the kernels bound to it and a bump allocator (16-byte aligned blocks).
 * `mark()` / `release(mark)` free everything allocated after a mark (scratch of one call).
 * The typed views (`f32`, `f64`, `i32`, `u8`, `i16`) are replaced when the memory grows: re-read them after
 * `alloc`, never keep them across an `alloc`. Pointers are byte offsets.
 */
export class KernelMemory {
  readonly memory: WasmMemory;
  private readonly k: KernelExports;
  private top = 16;
  f32!: Float32Array;
  f64!: Float64Array;
  i32!: Int32Array;
  i16!: Int16Array;
  u8!: Uint8Array;

  /** @param bytes initial capacity (grows on demand). @throws Error when the kernels are unavailable */
  constructor(bytes = PAGE) {
    const mod = kernelModule();
    if (!mod) throw new Error('WebAssembly SIMD kernels are not available in this runtime');
    this.memory = new Wasm.Memory({ initial: Math.max(1, Math.ceil(bytes / PAGE)) });
    this.k = new Wasm.Instance(mod, { env: { memory: this.memory } }).exports as unknown as KernelExports;
    this.refreshViews();
  }

  /** Bytes currently reserved (capacity of the memory). */
  get capacity(): number {
    return this.memory.buffer.byteLength;
  }

  /** Reserves `bytes` (rounded up to 16) and returns the pointer; grows the memory when needed. */
  alloc(bytes: number): number {
    const p = this.top;
    const end = p + Math.ceil(bytes / 16) * 16;
    if (end > this.memory.buffer.byteLength) {
      this.memory.grow(Math.ceil((end - this.memory.buffer.byteLength) / PAGE));
      this.refreshViews();
    }
    this.top = end;
    return p;
  }

  mark(): number {
    return this.top;
  }

  release(mark: number): void {
    this.top = mark;
  }

  /** Allocates room for all of `src` and copies it there. @returns the pointer */
  allocF32(src: Float32Array): number {
    const ptr = this.alloc(src.length * 4);
    this.putF32(ptr, src, 0, src.length);
    return ptr;
  }

  /** Copies `n` floats of `src` from `so` into the memory at byte pointer `ptr`. */
  putF32(ptr: number, src: Float32Array, so: number, n: number): void {
    this.f32.set(src.subarray(so, so + n), ptr >> 2);
  }

  /** `out[j] = dot(x, c_j)` for the `k` rows of `dim` floats at `c`; `dim % 4 == 0`; float32 sums (see kernels.wat). */
  dots(x: number, c: number, k: number, dim: number, out: number): void {
    this.k.dots(x, c, k, dim, out);
  }

  /**
   * `out[j] = dot(x, c_j)` as float64 (at byte `out + 8j`, read through `f64`) for the `k` rows of `dim` floats at
   * `c`, any `dim`: bit-identical to `dot` of `@polyphony/vectors` (same exact float64 products, same eight
   * accumulators and order of sums; see kernels.wat). `out` must be 8-byte aligned (every `alloc` is).
   */
  dotsF64(x: number, c: number, k: number, dim: number, out: number): void {
    this.k.dotsF64(x, c, k, dim, out);
  }

  /** Nearest of `k` centroids at `c` for `n` rows at `x` (`n % 4 == 0`, `dim % 4 == 0`): index (i32) and dot (f32) per row. */
  nearest4(x: number, n: number, c: number, k: number, dim: number, outIdx: number, outScore: number): void {
    this.k.nearest4(x, n, c, k, dim, outIdx, outScore);
  }

  /** `out[i] = sum_d codes[i*dim+d] * table[d]` (u8 x i16 -> i32, exact), `dim % 8 == 0`. */
  dotU8I16(codes: number, count: number, dim: number, table: number, out: number): void {
    this.k.dotU8I16(codes, count, dim, table, out);
  }

  /** `out[i] = sum_j table[j*256 + codes[i*m+j]]` (float32, increasing j). */
  pqScores(codes: number, count: number, m: number, table: number, out: number): void {
    this.k.pqScores(codes, count, m, table, out);
  }

  private refreshViews(): void {
    const b = this.memory.buffer;
    this.f32 = new Float32Array(b);
    this.f64 = new Float64Array(b);
    this.i32 = new Int32Array(b);
    this.i16 = new Int16Array(b);
    this.u8 = new Uint8Array(b);
  }
}

const freeMemories: KernelMemory[] = [];
/** Memories larger than this are not kept for reuse. */
const POOL_MAX_BYTES = 64 << 20;

/**
 * A kernel memory of at least `bytes` from this thread's pool (empty allocator), or undefined when the kernels are
 * unavailable. Hand it back with `releaseKernelMemory`. Reuse matters: filling a fresh WebAssembly memory costs
 * ~15x more per byte than a reused one (first-touch page faults; measured 5.3 us against 0.35 us per 800-byte row).
 */
export function acquireKernelMemory(bytes: number): KernelMemory | undefined {
  if (!simdKernelsAvailable()) return undefined;
  const km = freeMemories.pop() ?? new KernelMemory(bytes);
  km.release(16);
  return km;
}

/** Returns a memory from `acquireKernelMemory` to the pool (at most 4 kept, none over 64 MiB). */
export function releaseKernelMemory(km: KernelMemory | undefined): void {
  if (km && freeMemories.length < 4 && km.capacity <= POOL_MAX_BYTES) freeMemories.push(km);
}

/**
 * Empties this thread's pool of kernel memories (`acquireKernelMemory`): the pooled memories become garbage and
 * their pages go back to the OS once collected (a WebAssembly memory never shrinks while it lives). For the end of
 * an index build, whose Lloyd runs in this thread leave up to 4 memories of up to 64 MiB each in the pool (issue 35,
 * builder replica RSS); the next build fills fresh memories (first-touch cost, see `acquireKernelMemory`).
 * @returns the bytes of the memories dropped
 */
export function drainKernelMemoryPool(): number {
  let bytes = 0;
  for (const km of freeMemories.splice(0)) bytes += km.capacity;
  return bytes;
}

let scratchMemory: KernelMemory | undefined;

/** This thread's scratch kernel memory (build kernels), or undefined when the kernels are unavailable. */
export function scratchKernels(): KernelMemory | undefined {
  if (!simdKernelsAvailable()) return undefined;
  scratchMemory ??= new KernelMemory(1 << 20);
  return scratchMemory;
}

/**
 * Plain reference of the float kernels' arithmetic (`dots`, `nearest4`): float32 products and sums in four
 * lanes (lane l takes dimensions d = l mod 4 in increasing d), lanes added as (l0 + l1) + (l2 + l3).
 * Bit-identical to the kernels; used by the tests. `dim % 4 == 0`.
 */
export function referenceDot(a: Float32Array, ao: number, b: Float32Array, bo: number, dim: number): number {
  const f = Math.fround;
  const lane = [0, 0, 0, 0];
  for (let d = 0; d < dim; d++) lane[d & 3] = f(lane[d & 3]! + f(a[ao + d]! * b[bo + d]!));
  return f(f(lane[0]! + lane[1]!) + f(lane[2]! + lane[3]!));
}

/**
 * Nearest centroid of `n` rows of `data` (listed in `rows`, offsets `rows[i] * dim`) among `k` unit centroids:
 * index into `outIdx[i]`, dot product into `outScore[i]`. Ties go to the lower centroid index. Uses the
 * SIMD kernel (`km`) when given and `dim % 4 == 0`, in blocks of 1024 rows copied into its memory;
 * callers without kernels use `nearestOfFour`.
 */
export function nearestRowsSimd(
  km: KernelMemory,
  data: Float32Array,
  rows: Int32Array,
  from: number,
  to: number,
  centroids: Float32Array,
  k: number,
  dim: number,
  outIdx: Int32Array,
  outScore: Float64Array | Float32Array,
): void {
  const mark = km.mark();
  const cp = km.alloc(k * dim * 4);
  const BLOCK = 1024;
  const xp = km.alloc(BLOCK * dim * 4);
  const ip = km.alloc(BLOCK * 4);
  const sp = km.alloc(BLOCK * 4);
  km.putF32(cp, centroids, 0, k * dim);
  for (let b = from; b < to; b += BLOCK) {
    const m = Math.min(BLOCK, to - b);
    const padded = (m + 3) & ~3;
    const f32 = km.f32;
    const base = xp >> 2;
    for (let i = 0; i < padded; i++) {
      const r = rows[b + Math.min(i, m - 1)]!;
      f32.set(data.subarray(r * dim, r * dim + dim), base + i * dim);
    }
    km.nearest4(xp, padded, cp, k, dim, ip, sp);
    const i32 = km.i32;
    for (let i = 0; i < m; i++) {
      outIdx[b - from + i] = i32[(ip >> 2) + i]!;
      outScore[b - from + i] = f32[(sp >> 2) + i]!;
    }
  }
  km.release(mark);
}

/** Largest |entry| of an int16 ADC table for `dim` dimensions: `dim * 255 * max` must stay below 2^31 (i32 sums). */
export function int16TableLimit(dim: number): number {
  return Math.max(1, Math.min(32767, Math.floor(0x7fffffff / (255 * Math.max(1, dim)))));
}

/**
 * Quantises a float ADC table (`ScalarQuantiser.prepare`) to int16: `out[d] = round(table[d] * scale)` with
 * `scale = int16TableLimit(dim) / max|table|` (1 for an all-zero table), so `sum_d code_d * out[d]` fits an
 * i32 exactly and `/ scale` approximates the float score within `0.5 * sum_d code_d / scale`
 * (<= 0.5 * 255 * dim / scale). @returns scale
 */
export function quantiseTableInt16(table: Float32Array, dim: number, out: Int16Array, oo: number): number {
  let max = 0;
  for (let d = 0; d < dim; d++) max = Math.max(max, Math.abs(table[d]!));
  const scale = max > 0 ? int16TableLimit(dim) / max : 1;
  for (let d = 0; d < dim; d++) out[oo + d] = Math.round(table[d]! * scale);
  return scale;
}

/** Plain reference of `dotU8I16`: exact integer `sum_d codes[co + d] * table[to + d]`. */
export function referenceDotU8I16(codes: Uint8Array, co: number, table: Int16Array, to: number, dim: number): number {
  let s = 0;
  for (let d = 0; d < dim; d++) s += codes[co + d]! * table[to + d]!;
  return s;
}

/**
 * A quantised generation's int8 codes held in kernel memory, with the scratch its queries use, all reserved at
 * creation (the memory never grows afterwards, so the `codes` view stays valid). Queries are synchronous, so
 * one scratch per generation suffices.
 */
export interface CodeArena {
  readonly km: KernelMemory;
  /** Pointer of the codes (`count * codeSize` bytes, slot order). */
  readonly codes: number;
  /** Pointer of the int16 query table (`dim` entries). */
  readonly table: number;
  /** Pointer of `outRows` i32 scores. */
  readonly out: number;
  /** Pointer of `ARENA_BLOCK_ROWS * codeSize` bytes: codes copied from elsewhere (sparse masks). */
  readonly block: number;
  readonly outRows: number;
}

/** Rows scored per kernel call when the codes are copied in (sparse-mask scans). */
export const ARENA_BLOCK_ROWS = 1024;

/**
 * Allocates the codes of an int8 generation (`count` rows of `dim` bytes, largest cell `largestCell` rows) in
 * a fresh kernel memory; undefined when the kernels are unavailable or `dim % 8 != 0` (callers then keep their
 * codes in an ordinary Uint8Array and score them in JavaScript).
 */
export function createCodeArena(count: number, dim: number, largestCell: number): { arena: CodeArena; codes: Uint8Array } | undefined {
  if (dim % 8 !== 0 || !simdKernelsAvailable()) return undefined;
  const outRows = Math.max(largestCell, ARENA_BLOCK_ROWS);
  const bytes = count * dim + dim * 2 + outRows * 4 + ARENA_BLOCK_ROWS * dim + 256;
  const km = new KernelMemory(bytes);
  const codes = km.alloc(count * dim);
  const table = km.alloc(dim * 2);
  const out = km.alloc(outRows * 4);
  const block = km.alloc(ARENA_BLOCK_ROWS * dim);
  if (km.capacity !== Math.ceil(bytes / PAGE) * PAGE) throw new Error('code arena grew while being laid out');
  return { arena: { km, codes, table, out, block, outRows }, codes: km.u8.subarray(codes, codes + count * dim) };
}
