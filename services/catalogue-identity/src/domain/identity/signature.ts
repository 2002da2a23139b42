/**
 * The 200-bit content signature of a song and its canonical id text (spec "Content identity" 1,
 * "Limits": 200 bits = 50 hex characters after the version prefix).
 *
 * Signature: bit d is set when embedding[d] is strictly above the mean of the song's own 200 values,
 * computed in float64 (reference-implementation.md 2.6). Encoding is big-endian: dimension 0 is the
 * most significant bit of the first hex character, dimension 199 the least significant bit of the
 * 50th.
 *
 * In memory a signature is a {@link SignatureCode}: a Uint32Array of 7 words holding the 200 bits in
 * the same big-endian order (word 0 bit 31 = dimension 0, ..., word 6 bits 31..24 = dimensions
 * 192..199, word 6 bits 23..0 always zero). Hamming distance is then 7 XOR + popcount steps.
 *
 * Canonical id grammar (every id this module mints matches {@link CANONICAL_ID_PATTERN}):
 *   fp_<v><50 lowercase hex>   v = one decimal digit
 *   - v = 2..9: a signature id minted under scheme version v. The 50 hex are the song's signature,
 *     or, when that id was already taken by different audio, the signature plus k (k >= 1, the
 *     first free one, arithmetic modulo 2^200; see {@link nextCode} and decide.ts mintCanonicalId).
 *     So the hex of an id is NOT always the song's signature: stores and lookups must index the
 *     signature computed from the embedding, never parse it back out of the id.
 *   - v = 0: reserved for unsignable tracks (invalid embedding). The 50 hex are the first 50 hex of
 *     sha256(serverId + "\0" + providerId) of the provider file, so such a track is kept apart per
 *     file and can never collide with a signature id (signature ids never use version 0).
 * Keeping version-0 ids in the same fp_<digit><50 hex> shape means every canonical id fits the spec's
 * item_id format and one fixed-width column (54 characters).
 */
import { createHash } from 'node:crypto';
import { popcount32 } from '@polyphony/vectors';

/** Embedding length the signature is defined for (spec: 200-bit code, one bit per dimension). */
export const EMBEDDING_DIMENSION = 200;
/** Bits in a signature. */
export const SIGNATURE_BITS = 200;
/** Hex characters in the encoded signature. */
export const SIGNATURE_HEX_LENGTH = 50;
/** 32-bit words in a {@link SignatureCode}. */
export const SIGNATURE_WORDS = 7;
/** Id-scheme version reserved for unsignable tracks. */
export const UNSIGNABLE_VERSION = 0;
/** Length of every canonical id: "fp_" + 1 digit + 50 hex. */
export const CANONICAL_ID_LENGTH = 54;
/** Grammar of a canonical id; group 1 = version digit, group 2 = 50 hex. */
export const CANONICAL_ID_PATTERN = /^fp_([0-9])([0-9a-f]{50})$/;

/** 200 bits, big-endian, in 7 Uint32 words (see module docs). Treat as immutable once built. */
export type SignatureCode = Uint32Array;

/** Why an embedding has no signature. */
export type UnsignableReason = 'wrong-dimension' | 'non-finite' | 'constant';

/** Result of {@link computeSignature}. */
export type SignatureResult =
  | { readonly ok: true; readonly code: SignatureCode }
  | { readonly ok: false; readonly reason: UnsignableReason };

/**
 * Signature of one embedding.
 *
 * @param embedding 200 numbers (Float32Array, Float64Array or number[]).
 * @returns `{ ok: true, code }`, or `{ ok: false, reason }` when the embedding has not exactly 200
 *   values ('wrong-dimension'), holds NaN/Infinity or its sum overflows float64 ('non-finite'), or
 *   all its values are equal ('constant': the mean test would give an arbitrary code).
 */
export function computeSignature(embedding: ArrayLike<number>): SignatureResult {
  if (embedding.length !== EMBEDDING_DIMENSION) return { ok: false, reason: 'wrong-dimension' };
  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  for (let d = 0; d < EMBEDDING_DIMENSION; d++) {
    const v = embedding[d] as number;
    if (!Number.isFinite(v)) return { ok: false, reason: 'non-finite' };
    sum += v;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (min === max) return { ok: false, reason: 'constant' };
  const mean = sum / EMBEDDING_DIMENSION;
  if (!Number.isFinite(mean)) return { ok: false, reason: 'non-finite' };
  const code = new Uint32Array(SIGNATURE_WORDS);
  for (let d = 0; d < EMBEDDING_DIMENSION; d++) {
    // (x - mean) > 0 and x > mean agree for finite doubles; the reference states the former.
    if ((embedding[d] as number) > mean) code[d >>> 5] = ((code[d >>> 5] as number) | (1 << (31 - (d & 31)))) >>> 0;
  }
  return { ok: true, code };
}

/** Bit of dimension `d` (0..199) of a code: 0 or 1. */
export function signatureBit(code: SignatureCode, d: number): number {
  return ((code[d >>> 5] as number) >>> (31 - (d & 31))) & 1;
}

/** The 50 lowercase hex characters of a code, dimension 0 first (big-endian). */
export function signatureToHex(code: SignatureCode): string {
  let hex = '';
  for (let w = 0; w < 6; w++) hex += (code[w] as number).toString(16).padStart(8, '0');
  hex += ((code[6] as number) >>> 24).toString(16).padStart(2, '0');
  return hex;
}

/**
 * Code from 50 hex characters (either case).
 * @throws RangeError when the text is not exactly 50 hex characters.
 */
export function signatureFromHex(hex: string): SignatureCode {
  if (!/^[0-9a-fA-F]{50}$/.test(hex)) throw new RangeError(`signature must be 50 hex characters, got ${JSON.stringify(hex)}`);
  const code = new Uint32Array(SIGNATURE_WORDS);
  for (let w = 0; w < 6; w++) code[w] = parseInt(hex.slice(w * 8, w * 8 + 8), 16) >>> 0;
  code[6] = (parseInt(hex.slice(48, 50), 16) << 24) >>> 0;
  return code;
}

/** Hamming distance in bits (0..200) between two codes. */
export function hammingDistance(a: SignatureCode, b: SignatureCode): number {
  return (
    popcount32(((a[0] as number) ^ (b[0] as number)) >>> 0) +
    popcount32(((a[1] as number) ^ (b[1] as number)) >>> 0) +
    popcount32(((a[2] as number) ^ (b[2] as number)) >>> 0) +
    popcount32(((a[3] as number) ^ (b[3] as number)) >>> 0) +
    popcount32(((a[4] as number) ^ (b[4] as number)) >>> 0) +
    popcount32(((a[5] as number) ^ (b[5] as number)) >>> 0) +
    popcount32(((a[6] as number) ^ (b[6] as number)) >>> 0)
  );
}

/**
 * Hamming distance between the code stored at word offset `offset` of a packed array (7 words per
 * code) and `q`; the inner loop of the in-memory band index.
 */
export function hammingDistancePacked(packed: Uint32Array, offset: number, q: SignatureCode): number {
  return (
    popcount32(((packed[offset] as number) ^ (q[0] as number)) >>> 0) +
    popcount32(((packed[offset + 1] as number) ^ (q[1] as number)) >>> 0) +
    popcount32(((packed[offset + 2] as number) ^ (q[2] as number)) >>> 0) +
    popcount32(((packed[offset + 3] as number) ^ (q[3] as number)) >>> 0) +
    popcount32(((packed[offset + 4] as number) ^ (q[4] as number)) >>> 0) +
    popcount32(((packed[offset + 5] as number) ^ (q[5] as number)) >>> 0) +
    popcount32(((packed[offset + 6] as number) ^ (q[6] as number)) >>> 0)
  );
}

/**
 * The code plus one, as a 200-bit unsigned integer modulo 2^200 (the least significant bit is
 * dimension 199). Used to walk to the next free id on a collision. Returns a new array.
 */
export function nextCode(code: SignatureCode): SignatureCode {
  const out = Uint32Array.from(code);
  // Word 6 holds the low 8 bits of the integer in its top byte.
  const low = ((out[6] as number) >>> 24) + 1;
  if (low < 256) {
    out[6] = (low << 24) >>> 0;
    return out;
  }
  out[6] = 0;
  for (let w = 5; w >= 0; w--) {
    const v = (out[w] as number) + 1;
    if (v <= 0xffffffff) {
      out[w] = v;
      return out;
    }
    out[w] = 0; // carry on; past word 0 the value wraps to zero
  }
  return out;
}

/**
 * Canonical id text `fp_<version><50 hex>`.
 * @param version 0 (unsignable) or a scheme version 2..9.
 * @throws RangeError for a version outside 0..9.
 */
export function formatCanonicalId(version: number, code: SignatureCode): string {
  if (!Number.isInteger(version) || version < 0 || version > 9) throw new RangeError(`id version must be a digit, got ${version}`);
  return `fp_${version}${signatureToHex(code)}`;
}

/** Parsed canonical id: its version digit and its 200-bit code (see module docs on what the code means). */
export interface ParsedCanonicalId {
  readonly version: number;
  readonly code: SignatureCode;
}

/** Parses a canonical id; null when the text does not match {@link CANONICAL_ID_PATTERN} (e.g. a legacy provider id). */
export function parseCanonicalId(id: string): ParsedCanonicalId | null {
  const m = CANONICAL_ID_PATTERN.exec(id);
  if (!m) return null;
  return { version: Number(m[1]), code: signatureFromHex(m[2] as string) };
}

/** Version digit of a canonical id, or null for anything else. Cheaper than {@link parseCanonicalId}. */
export function canonicalIdVersion(id: string): number | null {
  return CANONICAL_ID_PATTERN.test(id) ? id.charCodeAt(3) - 48 : null;
}

/** Whether the id belongs to the unsignable namespace (version 0). */
export function isUnsignableId(id: string): boolean {
  return canonicalIdVersion(id) === UNSIGNABLE_VERSION;
}

/**
 * Id of an unsignable track: `fp_0` + first 50 hex of sha256(serverId + "\0" + providerId). Stable
 * per provider file, so re-analysing the same file finds the same id; never equal to a signature id.
 */
export function unsignableCanonicalId(serverId: string, providerId: string): string {
  return unsignableIdFromKey(`${serverId}\0${providerId}`);
}

/** `fp_0` + first 50 hex of sha256(key). The building block of {@link unsignableCanonicalId}. */
export function unsignableIdFromKey(key: string): string {
  return `fp_${UNSIGNABLE_VERSION}${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, SIGNATURE_HEX_LENGTH)}`;
}
