import { endianness } from 'node:os';

/**
 * Binary encodings of the index schema: float32 and int32 arrays stored as bytea in little-endian
 * order (the order of every platform Node supports in practice; checked once at load, since a
 * big-endian host would read the catalogue's little-endian embeddings wrongly).
 */
if (endianness() !== 'LE') throw new Error('polyphony index: a little-endian host is required');

/** Bytes of a typed array (no copy). */
export function typedToBuffer(arr: Float32Array | Int32Array | Float64Array): Buffer {
  return Buffer.from(arr.buffer, arr.byteOffset, arr.byteLength);
}

/** float32 values of a little-endian byte buffer (copied, so the result is aligned). @throws RangeError when the length is not a multiple of 4. */
export function bufferToF32(buf: Uint8Array): Float32Array {
  if (buf.byteLength % 4 !== 0) throw new RangeError(`float32 buffer of ${buf.byteLength} bytes`);
  const out = new Float32Array(buf.byteLength / 4);
  new Uint8Array(out.buffer).set(buf);
  return out;
}

/** int32 values of a little-endian byte buffer (copied). @throws RangeError when the length is not a multiple of 4. */
export function bufferToI32(buf: Uint8Array): Int32Array {
  if (buf.byteLength % 4 !== 0) throw new RangeError(`int32 buffer of ${buf.byteLength} bytes`);
  const out = new Int32Array(buf.byteLength / 4);
  new Uint8Array(out.buffer).set(buf);
  return out;
}

/** float64 values of a little-endian byte buffer (copied). */
export function bufferToF64(buf: Uint8Array): Float64Array {
  if (buf.byteLength % 8 !== 0) throw new RangeError(`float64 buffer of ${buf.byteLength} bytes`);
  const out = new Float64Array(buf.byteLength / 8);
  new Uint8Array(out.buffer).set(buf);
  return out;
}

/**
 * Several byte strings packed into one buffer plus 1-based offsets and lengths, so a multi-row INSERT can
 * take them as one binary parameter (node-postgres sends a top-level Buffer in binary format; a bytea[]
 * would be hex-escaped element by element) and cut them apart with `substring(blob FROM off FOR len)`.
 * Parts that already lie end to end in one buffer (consecutive IVF cells are consecutive slots of the built index)
 * are not copied: the blob is a view of that span.
 */
export function packBlobs(parts: readonly Uint8Array[]): { blob: Buffer; offsets: number[]; lengths: number[] } {
  const offsets: number[] = [];
  const lengths: number[] = [];
  let pos = 0;
  let adjacent = parts.length > 0;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    offsets.push(pos + 1);
    lengths.push(p.byteLength);
    pos += p.byteLength;
    if (i > 0 && (p.buffer !== parts[0]!.buffer || p.byteOffset !== parts[i - 1]!.byteOffset + parts[i - 1]!.byteLength)) adjacent = false;
  }
  if (adjacent) return { blob: Buffer.from(parts[0]!.buffer, parts[0]!.byteOffset, pos), offsets, lengths };
  const blob = Buffer.allocUnsafe(pos);
  pos = 0;
  for (const p of parts) {
    blob.set(p, pos);
    pos += p.byteLength;
  }
  return { blob, offsets, lengths };
}

/** Bytes of a typed array as a Uint8Array view (no copy). */
export function bytesOf(arr: Float32Array | Int32Array | Float64Array): Uint8Array {
  return new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
}
