/**
 * Comparison of raw Chromaprint fingerprints (the integer list `fpcalc -raw` prints), shared by the
 * analysis worker (which computes prints) and the catalogue identity (whose duplicate gate compares them).
 *
 * A raw fingerprint is a sequence of 32-bit words, one per ~0.1238 s of audio (Chromaprint's default
 * algorithm 2: 11025 Hz audio, 4096-sample frames with a hop of 4096/3 samples); each bit is the sign of
 * one of 16 learned filters on the chroma image, 2 bits per filter (L. Lukas, "How does Chromaprint
 * work?", 2011, https://oxygene.sk/2011/01/how-does-chromaprint-work/). Two prints of one recording
 * agree in nearly every bit once aligned; two different recordings agree in about half of them. The
 * similarity of two prints is the best bit agreement over small alignment offsets,
 *
 *   agreement(o) = 1 - Σ popcount(a[i] XOR b[i+o]) over the overlap / (32 * overlap),
 *
 * for o in -maxOffset..+maxOffset, counting only offsets whose overlap has at least minOverlap words:
 * the popcount-of-XOR bit error rate AcoustID's server and pg_acoustid's `acoustid_compare` use, with the
 * reference implementation's alignment range and minimum overlap (reference-implementation.md 2.6).
 * No qualifying offset: null (the caller abstains).
 */
import { popcount32 } from './bits';

/** Alignment search parameters, in fingerprint words (1 word ~ 0.124 s). */
export interface ChromaprintCompareOptions {
  /** Largest |offset| tried (>= 0). Default 20 (~2.5 s). */
  readonly maxOffset?: number;
  /** Fewest overlapping words an offset must have to count (>= 1). Default 40 (~5 s). */
  readonly minOverlap?: number;
}

/** Best alignment of two prints. */
export interface ChromaprintAlignment {
  /** Fraction of equal bits over the overlap at the best offset, in [0, 1]; ~0.5 for unrelated audio. */
  readonly similarity: number;
  /** Best shift: word i of `a` is compared with word i + offset of `b`. */
  readonly offset: number;
  /** Words compared at that offset. */
  readonly overlap: number;
}

/**
 * Tries every shift in [-maxOffset, maxOffset] and keeps the one with the highest agreement (module
 * comment). Ties keep the smallest |offset|, then the negative one, so the result is deterministic.
 * @param a raw words, signed or unsigned 32-bit integers (both stand for the same bits)
 * @param b raw words
 * @returns the best alignment, or null when no shift overlaps by at least `minOverlap` words
 * Cost: O((2 maxOffset + 1) * min(|a|, |b|)).
 */
export function chromaprintAlignment(a: ArrayLike<number>, b: ArrayLike<number>, options: ChromaprintCompareOptions = {}): ChromaprintAlignment | null {
  const maxOffset = options.maxOffset ?? 20;
  const minOverlap = Math.max(1, options.minOverlap ?? 40);
  let best: ChromaprintAlignment | null = null;
  for (let step = 0; step <= 2 * maxOffset; step++) {
    // 0, -1, +1, -2, +2, ... so ties resolve toward the smallest shift.
    const offset = step === 0 ? 0 : step % 2 === 1 ? -((step + 1) >> 1) : step >> 1;
    const start = Math.max(0, -offset);
    const end = Math.min(a.length, b.length - offset);
    const overlap = end - start;
    if (overlap < minOverlap) continue;
    let differing = 0;
    for (let i = start; i < end; i++) differing += popcount32(a[i]! ^ b[i + offset]!);
    const similarity = 1 - differing / (32 * overlap);
    if (best === null || similarity > best.similarity) best = { similarity, offset, overlap };
  }
  return best;
}

/**
 * The similarity of {@link chromaprintAlignment} alone.
 * @returns a value in [0, 1] (about 0.5 for unrelated audio, > 0.95 for the same recording in another
 *   encoding), or null when the prints overlap too little to judge
 */
export function chromaprintSimilarity(a: ArrayLike<number>, b: ArrayLike<number>, options: ChromaprintCompareOptions = {}): number | null {
  return chromaprintAlignment(a, b, options)?.similarity ?? null;
}
