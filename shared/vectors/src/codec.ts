/**
 * Embedding vectors as the catalogue snapshot carries them: base64 of little-endian float32 values
 * (200 for the current embedder).
 */

/**
 * Decodes base64 little-endian float32 values into a fresh Float32Array.
 * Returns undefined for an empty value, a byte length that is not a multiple of 4, or any NaN/Infinity.
 */
export function decodeEmbedding(base64: string): Float32Array | undefined {
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length === 0 || bytes.length % 4 !== 0) return undefined;
  const out = new Float32Array(bytes.length / 4);
  for (let i = 0; i < out.length; i++) {
    const v = bytes.readFloatLE(i * 4);
    if (!Number.isFinite(v)) return undefined;
    out[i] = v;
  }
  return out;
}
