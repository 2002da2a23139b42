/**
 * Encodings between the domain's in-memory types and PostgreSQL columns.
 *
 * - Embeddings: `bytea` of little-endian float32 values (the contract's SnapshotTrack.embedding is the
 *   base64 of the same bytes).
 * - Signatures: `bit(200)`; written as the text 'x' + 50 hex (bit_in's hexadecimal input form),
 *   read back as 200 '0'/'1' characters, dimension 0 first (the big-endian order of signature.ts).
 */
import { SIGNATURE_WORDS, type SignatureCode, signatureToHex } from '../domain/identity/signature';

/** Float32 little-endian bytes of a vector (values are rounded to float32). */
export function encodeVector(values: ArrayLike<number>): Buffer {
  const buf = Buffer.allocUnsafe(values.length * 4);
  for (let i = 0; i < values.length; i++) buf.writeFloatLE(values[i] as number, i * 4);
  return buf;
}

/**
 * Vector from float32 little-endian bytes.
 * @throws RangeError when the byte length is not a multiple of 4.
 */
export function decodeVector(bytes: Buffer): Float32Array {
  if (bytes.length % 4 !== 0) throw new RangeError(`vector bytes must be a multiple of 4, got ${bytes.length}`);
  const out = new Float32Array(bytes.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
  return out;
}

/** Parameter text for a bit(200) column: 'x' + 50 hex. */
export function signatureParam(code: SignatureCode): string {
  return `x${signatureToHex(code)}`;
}

/**
 * Signature from a bit(200) value as node-postgres returns it (200 '0'/'1' characters).
 * @throws RangeError for any other text.
 */
export function signatureFromBits(bits: string): SignatureCode {
  if (bits.length !== 200 || !/^[01]+$/.test(bits)) throw new RangeError('signature must be 200 bits');
  const code = new Uint32Array(SIGNATURE_WORDS);
  for (let d = 0; d < 200; d++) if (bits.charCodeAt(d) === 49) code[d >>> 5] = ((code[d >>> 5] as number) | (1 << (31 - (d & 31)))) >>> 0;
  return code;
}

/** Raw Chromaprint words as signed int4 values (the column type); fpcalc prints unsigned words. */
export function chromaprintParam(words: ArrayLike<number>): number[] {
  return Array.from(words, (w) => w | 0);
}
