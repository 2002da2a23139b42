import type { Landmarks } from './extract';

/**
 * Compact per-song storage of landmarks (what the catalogue keeps for each song).
 *
 * The version names the layout and the extraction the landmarks came from: a print of another version is not
 * decoded (the index skips it, the analysis run's backfill re-makes it). Version 1: target zone 40 frames;
 * version 2 (session 19): the same layout, target zone 50 frames (`LANDMARK_PARAMS.maxDt`).
 *
 * Layout (version 2): byte 0 = 2 (version), then a LEB128 varint count, then for each landmark in (time, hash)
 * order 3 bytes little-endian holding `hash | min(dtime, 15) << 20` (dtime = frames since the previous
 * landmark's time, the first counted from 0) and, only when dtime >= 15, a varint of `dtime - 15`. Landmarks
 * come ~5-10 per second and usually share or follow their predecessor's frame, so a landmark takes ~3 bytes:
 * a 4-minute song stores in ~4-8 KB (8,171 bytes on average over the bench's 94 songs; package README).
 */
export const LANDMARK_CODEC_VERSION = 2;

/** Encodes landmarks sorted by time (as `extractLandmarks` returns them); throws on unsorted input or a hash over 20 bits. */
export function encodeLandmarks(lm: Landmarks): Uint8Array {
  const n = lm.hashes.length;
  const out = new Uint8Array(1 + 5 + n * 6);
  let p = 0;
  out[p++] = LANDMARK_CODEC_VERSION;
  p = writeVarint(out, p, n);
  let prev = 0;
  for (let i = 0; i < n; i++) {
    const h = lm.hashes[i]!;
    const t = lm.times[i]!;
    if (h >>> 20 !== 0) throw new RangeError(`landmark hash ${h} exceeds 20 bits`);
    const dt = t - prev;
    if (dt < 0) throw new RangeError('landmarks must be sorted by time');
    prev = t;
    const small = Math.min(dt, 15);
    const word = h | (small << 20);
    out[p++] = word & 0xff;
    out[p++] = (word >>> 8) & 0xff;
    out[p++] = (word >>> 16) & 0xff;
    if (small === 15) p = writeVarint(out, p, dt - 15);
  }
  return out.slice(0, p);
}

/** Decodes {@link encodeLandmarks}' bytes; throws on an unknown version or a truncated buffer. */
export function decodeLandmarks(bytes: Uint8Array): Landmarks {
  if (bytes.length === 0 || bytes[0] !== LANDMARK_CODEC_VERSION) throw new RangeError(`unknown landmark codec version ${bytes[0]}`);
  let p = 1;
  const [n, p1] = readVarint(bytes, p);
  p = p1;
  const hashes = new Uint32Array(n);
  const times = new Uint16Array(n);
  let t = 0;
  for (let i = 0; i < n; i++) {
    if (p + 3 > bytes.length) throw new RangeError('truncated landmark buffer');
    const word = bytes[p]! | (bytes[p + 1]! << 8) | (bytes[p + 2]! << 16);
    p += 3;
    let dt = word >>> 20;
    if (dt === 15) {
      const [extra, p2] = readVarint(bytes, p);
      dt += extra;
      p = p2;
    }
    t += dt;
    hashes[i] = word & 0xfffff;
    times[i] = t;
  }
  return { hashes, times };
}

/** Number of landmarks in an encoded buffer, without decoding it. */
export function landmarkCount(bytes: Uint8Array): number {
  return readVarint(bytes, 1)[0];
}

function writeVarint(out: Uint8Array, p: number, value: number): number {
  let v = value;
  while (v >= 0x80) {
    out[p++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 128);
  }
  out[p++] = v;
  return p;
}

function readVarint(bytes: Uint8Array, start: number): [number, number] {
  let value = 0;
  let scale = 1;
  let p = start;
  for (;;) {
    if (p >= bytes.length) throw new RangeError('truncated varint');
    const b = bytes[p++]!;
    value += (b & 0x7f) * scale;
    if (b < 0x80) return [value, p];
    scale *= 128;
    if (scale > 2 ** 35) throw new RangeError('varint too long');
  }
}

