/**
 * Comparison of raw Chromaprint fingerprints (the integer list `fpcalc -raw` prints).
 *
 * A raw fingerprint is a sequence of 32-bit items, one per ~0.124 s of audio (Chromaprint's default
 * algorithm: 11025 Hz, 4096-sample frames with 2/3 overlap). Two prints of one recording agree in
 * nearly every bit once aligned; two different recordings agree in about half of them. The
 * similarity of two prints is the best bit agreement over small alignment offsets:
 *
 *   agreement(o) = 1 - popcount(a[i] XOR b[i+o]) summed over the overlap / (32 * overlap)
 *
 * for o in -maxOffset..+maxOffset, counting only offsets whose overlap has at least minOverlap items.
 * No qualifying offset -> null (the gate abstains). This is the usual popcount-of-XOR bit error rate
 * used by AcoustID-style matchers; alignment range and minimum overlap follow the reference's
 * defaults (reference-implementation.md 2.6, see constants.ts).
 */
import { popcount32 } from './signature';

/** Best alignment of two prints. */
export interface ChromaprintMatch {
  /** Fraction of equal bits at the best offset, 0..1. */
  readonly similarity: number;
  /** Offset o of the best alignment: item i of `a` faces item i + o of `b`. */
  readonly offset: number;
  /** Items compared at that offset. */
  readonly overlap: number;
}

/** Alignment search parameters, in fingerprint items. */
export interface ChromaprintCompareOptions {
  /** Largest |offset| tried (>= 0). */
  readonly maxOffset: number;
  /** Fewest overlapping items for an offset to count (>= 1). */
  readonly minOverlap: number;
}

/**
 * Best bit agreement of two raw fingerprints over offsets -maxOffset..+maxOffset.
 *
 * @param a raw items (signed or unsigned 32-bit integers; both print as the same bits).
 * @param b raw items.
 * @returns the best {@link ChromaprintMatch} (ties: smaller |offset|, then the negative one), or
 *   null when no offset overlaps by at least minOverlap items.
 */
export function chromaprintSimilarity(a: ArrayLike<number>, b: ArrayLike<number>, options: ChromaprintCompareOptions): ChromaprintMatch | null {
  const { maxOffset, minOverlap } = options;
  let best: ChromaprintMatch | null = null;
  // Try offsets in order 0, -1, +1, -2, +2, ... so ties keep the smallest shift.
  for (let k = 0; k <= 2 * maxOffset; k++) {
    const o = k === 0 ? 0 : k % 2 === 1 ? -((k + 1) >> 1) : k >> 1;
    const start = Math.max(0, -o);
    const end = Math.min(a.length, b.length - o);
    const overlap = end - start;
    if (overlap < Math.max(1, minOverlap)) continue;
    let errors = 0;
    for (let i = start; i < end; i++) errors += popcount32(((a[i] as number) ^ (b[i + o] as number)) >>> 0);
    const similarity = 1 - errors / (32 * overlap);
    if (best === null || similarity > best.similarity) best = { similarity, offset: o, overlap };
  }
  return best;
}

/**
 * Parses the output of `fpcalc -raw` (lines `DURATION=<s>` and `FINGERPRINT=<i,i,...>`) or a bare
 * comma-separated list into an Int32Array (unsigned values are stored as their signed 32-bit twin).
 * @throws RangeError when there is no fingerprint or an item is not an integer.
 */
export function parseFpcalcRaw(output: string): Int32Array {
  const line = output.split(/\r?\n/).find((l) => l.startsWith('FINGERPRINT=')) ?? (output.includes('=') ? undefined : output);
  if (line === undefined) throw new RangeError('no FINGERPRINT= line in fpcalc output');
  const body = line.startsWith('FINGERPRINT=') ? line.slice('FINGERPRINT='.length) : line;
  const items = body.trim() === '' ? [] : body.trim().split(',');
  if (items.length === 0) throw new RangeError('empty fingerprint');
  const out = new Int32Array(items.length);
  items.forEach((s, i) => {
    if (!/^-?\d+$/.test(s.trim())) throw new RangeError(`fingerprint item ${i} is not an integer: ${JSON.stringify(s)}`);
    out[i] = Number(s.trim()) | 0;
  });
  return out;
}
