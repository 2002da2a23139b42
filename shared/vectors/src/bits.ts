/**
 * Bit counting shared by the binary codes: Chromaprint fingerprints (analysis, catalogue identity) and
 * the identity's 200-bit similarity signatures.
 */

/**
 * Number of set bits of a 32-bit word (SWAR popcount, Warren, "Hacker's Delight", 2nd ed. 2012,
 * figure 5-2). Any number is read as its low 32 bits (`x >>> 0`), so signed and unsigned words agree.
 * @returns an integer in [0, 32]
 */
export function popcount32(x: number): number {
  let v = x >>> 0;
  v = v - ((v >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  v = (v + (v >>> 4)) & 0x0f0f0f0f;
  return Math.imul(v, 0x01010101) >>> 24;
}
