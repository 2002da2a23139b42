/**
 * Radix-2 FFT of a real signal on typed arrays.
 *
 * Method: the classic "two-for-one" real transform (Cooley & Tukey 1965 for the radix-2 complex FFT;
 * the real-input packing is in Press et al., Numerical Recipes, 3rd ed., section 12.3.2 "FFT of real
 * functions"). A real frame x[0..n) is packed into the complex sequence z[j] = x[2j] + i x[2j+1] of length
 * m = n/2, transformed with an iterative in-place decimation-in-time complex FFT, and split into the n/2+1
 * non-redundant bins of X with
 *   X[k] = E[k] + W^k O[k],  E[k] = (Z[k] + conj Z[m-k]) / 2,  O[k] = (Z[k] - conj Z[m-k]) / 2i,
 *   W = exp(-2 pi i / n).
 * Twiddles, the bit-reversal permutation and the work buffers are allocated once per instance, so a frame
 * loop allocates nothing. Arithmetic is float64 and the operation order is fixed, so results are
 * bit-identical between runs on the same platform.
 *
 * Sign convention: X[k] = sum_t x[t] exp(-2 pi i k t / n) (no scaling), the same as numpy.fft.rfft.
 */
export class RealFft {
  /** Transform length n (samples), a power of two >= 4. */
  readonly size: number;
  /** Number of output bins, n/2 + 1 (0 Hz .. Nyquist). */
  readonly bins: number;

  private readonly half: number;
  private readonly bitReverse: Uint32Array;
  private readonly cosTable: Float64Array; // cos(2 pi j / m), j < m/2
  private readonly sinTable: Float64Array; // sin(2 pi j / m), j < m/2
  private readonly splitCos: Float64Array; // cos(2 pi k / n), k <= m
  private readonly splitSin: Float64Array; // sin(2 pi k / n), k <= m
  private readonly workRe: Float64Array;
  private readonly workIm: Float64Array;
  /** Spectrum scratch of {@link power} (n/2 + 1 bins each). */
  private readonly specRe: Float64Array;
  private readonly specIm: Float64Array;

  /**
   * @param size transform length in samples; must be a power of two >= 4.
   * @throws RangeError when size is not a power of two >= 4.
   */
  constructor(size: number) {
    if (!Number.isInteger(size) || size < 4 || (size & (size - 1)) !== 0) {
      throw new RangeError(`RealFft size must be a power of two >= 4, got ${size}`);
    }
    this.size = size;
    this.bins = size / 2 + 1;
    const m = size / 2;
    this.half = m;
    this.bitReverse = new Uint32Array(m);
    const bits = Math.round(Math.log2(m));
    for (let i = 0; i < m; i++) {
      let r = 0;
      for (let b = 0; b < bits; b++) r |= ((i >>> b) & 1) << (bits - 1 - b);
      this.bitReverse[i] = r;
    }
    this.cosTable = new Float64Array(Math.max(1, m / 2));
    this.sinTable = new Float64Array(Math.max(1, m / 2));
    for (let j = 0; j < m / 2; j++) {
      this.cosTable[j] = Math.cos((2 * Math.PI * j) / m);
      this.sinTable[j] = Math.sin((2 * Math.PI * j) / m);
    }
    this.splitCos = new Float64Array(m + 1);
    this.splitSin = new Float64Array(m + 1);
    for (let k = 0; k <= m; k++) {
      this.splitCos[k] = Math.cos((2 * Math.PI * k) / size);
      this.splitSin[k] = Math.sin((2 * Math.PI * k) / size);
    }
    this.workRe = new Float64Array(m);
    this.workIm = new Float64Array(m);
    this.specRe = new Float64Array(m + 1);
    this.specIm = new Float64Array(m + 1);
  }

  /**
   * Forward transform of one real frame.
   * @param input n real samples (read from `input[offset]` to `input[offset + n - 1]`; the caller pads).
   * @param outRe receives Re X[k] for k = 0..n/2 (length >= n/2 + 1).
   * @param outIm receives Im X[k] for k = 0..n/2 (length >= n/2 + 1).
   * @param offset index of the first sample in `input` (default 0).
   */
  forward(input: ArrayLike<number>, outRe: Float64Array, outIm: Float64Array, offset = 0): void {
    this.complexPass(input, offset);
    const m = this.half;
    const zr = this.workRe;
    const zi = this.workIm;
    const wc = this.splitCos;
    const ws = this.splitSin;
    for (let k = 0; k <= m; k++) {
      const kk = k & (m - 1); // k mod m: Z[m] = Z[0]
      const a = zr[kk]!;
      const b = zi[kk]!;
      const j = (m - k) & (m - 1); // (m - k) mod m
      const c = zr[j]!;
      const d = zi[j]!;
      const er = 0.5 * (a + c);
      const ei = 0.5 * (b - d);
      const or = 0.5 * (b + d);
      const oi = -0.5 * (a - c);
      const cr = wc[k]!;
      const ci = -ws[k]!;
      outRe[k] = er + cr * or - ci * oi;
      outIm[k] = ei + cr * oi + ci * or;
    }
  }

  /**
   * Power spectrum |X[k]|^2 (unscaled) of one real frame, k = 0..n/2.
   * @param input n real samples starting at `offset`.
   * @param out receives n/2 + 1 values.
   */
  power(input: ArrayLike<number>, out: Float64Array, offset = 0): void {
    const re = this.specRe;
    const im = this.specIm;
    this.forward(input, re, im, offset);
    for (let k = 0; k <= this.half; k++) out[k] = re[k]! * re[k]! + im[k]! * im[k]!;
  }

  /** Packs x into z[j] = x[2j] + i x[2j+1] in bit-reversed order and runs the radix-2 butterflies. */
  private complexPass(input: ArrayLike<number>, offset: number): void {
    const m = this.half;
    const re = this.workRe;
    const im = this.workIm;
    const rev = this.bitReverse;
    for (let j = 0; j < m; j++) {
      const r = rev[j]!;
      re[r] = input[offset + 2 * j]!;
      im[r] = input[offset + 2 * j + 1]!;
    }
    // Stage 1 (length-2 butterflies, twiddle 1) and stage 2 (length 4, twiddles 1 and -i) without multiplies.
    for (let p = 0; p + 1 < m; p += 2) {
      const ar = re[p]!;
      const ai = im[p]!;
      const br = re[p + 1]!;
      const bi = im[p + 1]!;
      re[p] = ar + br;
      im[p] = ai + bi;
      re[p + 1] = ar - br;
      im[p + 1] = ai - bi;
    }
    if (m >= 4) {
      for (let p = 0; p < m; p += 4) {
        const ar = re[p]!;
        const ai = im[p]!;
        const cr = re[p + 2]!;
        const ci = im[p + 2]!;
        re[p] = ar + cr;
        im[p] = ai + ci;
        re[p + 2] = ar - cr;
        im[p + 2] = ai - ci;
        // Twiddle exp(-i pi/2) = -i: (x + iy)(-i) = y - ix.
        const br = re[p + 1]!;
        const bi = im[p + 1]!;
        const dr = im[p + 3]!;
        const di = -re[p + 3]!;
        re[p + 1] = br + dr;
        im[p + 1] = bi + di;
        re[p + 3] = br - dr;
        im[p + 3] = bi - di;
      }
    }
    const cosT = this.cosTable;
    const sinT = this.sinTable;
    for (let len = 8; len <= m; len <<= 1) {
      const halfLen = len >>> 1;
      const step = m / len;
      for (let start = 0; start < m; start += len) {
        for (let t = 0, w = 0; t < halfLen; t++, w += step) {
          const cr = cosT[w]!;
          const ci = -sinT[w]!;
          const p = start + t;
          const q = p + halfLen;
          const qr = re[q]!;
          const qi = im[q]!;
          const tr = cr * qr - ci * qi;
          const ti = cr * qi + ci * qr;
          const pr = re[p]!;
          const pi = im[p]!;
          re[q] = pr - tr;
          im[q] = pi - ti;
          re[p] = pr + tr;
          im[p] = pi + ti;
        }
      }
    }
  }
}

/**
 * Periodic Hann window of length n: w[t] = 0.5 - 0.5 cos(2 pi t / n) (scipy.signal.get_window('hann', n),
 * what librosa uses for STFTs).
 */
export function hannWindow(n: number): Float64Array {
  const w = new Float64Array(n);
  for (let t = 0; t < n; t++) w[t] = 0.5 - 0.5 * Math.cos((2 * Math.PI * t) / n);
  return w;
}
