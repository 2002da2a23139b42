import type { SnapshotTrack } from './catalogue';

/**
 * Binary representation of a `GET /internal/snapshot/tracks` page (issue 19 "Builds at 1M"), served when the
 * caller's `Accept` asks for `SNAPSHOT_PAGE_BINARY_TYPE`; JSON (`SnapshotPage`) stays the default. Same rows,
 * same order, same `next`; the only difference is where the embedding travels: as raw little-endian float32
 * bytes instead of a base64 string inside the JSON (at 1M songs ~1.07 GB of base64 text through
 * `JSON.stringify`/`JSON.parse` and a base64 encode and decode, against 0.8 GB of bytes copied once).
 *
 * Layout (all integers unsigned 32-bit little-endian):
 * ```
 * 0   magic "PSP1" (ASCII)
 * 4   n           number of tracks
 * 8   h           byte length of the header
 * 12  header      UTF-8 JSON {"next": string|null, "total"?: number, "tracks": [SnapshotTrack without `embedding`, ...]} (n tracks)
 *     padding     0-3 zero bytes, so the next field starts at a multiple of 4
 *     lengths     n x u32: byte length of each track's embedding (800 for 200-d)
 *     vectors     the embeddings in track order, each followed by 0-3 zero bytes to a multiple of 4
 * ```
 * Uses only Uint8Array/DataView/TextEncoder (no Buffer): the contracts package is also bundled for the browser.
 */
export const SNAPSHOT_PAGE_BINARY_TYPE = 'application/vnd.polyphony.snapshot-page';

const MAGIC = [0x50, 0x53, 0x50, 0x31]; // "PSP1"

/** A snapshot track with its embedding as raw bytes (little-endian float32) instead of base64. */
export type SnapshotTrackBytes = Omit<SnapshotTrack, 'embedding'> & { vector: Uint8Array };

/** What `decodeSnapshotPageBinary` returns: the header as parsed JSON (not validated: the caller checks it with its schema) and one byte view per track. */
export interface DecodedSnapshotPage {
  /** The header's `next` (unchecked). */
  next: unknown;
  /** The header's `total` (unchecked; absent except on a first page). */
  total: unknown;
  /** The header's tracks, without `embedding` (unchecked). */
  tracks: unknown[];
  /** Embedding bytes of each track (views into the input, not copies). */
  vectors: Uint8Array[];
}

/** Thrown by `decodeSnapshotPageBinary` on a body that is not a well-formed page. */
export class SnapshotBinaryError extends Error {}

const pad4 = (n: number) => (4 - (n & 3)) & 3;

/**
 * Encodes one page. `header` is the JSON text of `{ next, tracks }` with the tracks' other fields; callers that
 * hold `SnapshotTrackBytes` use `encodeSnapshotPage`.
 * @returns the whole body (a fresh Uint8Array)
 */
export function encodeSnapshotPageParts(headerJson: string, vectors: readonly Uint8Array[]): Uint8Array {
  const header = new TextEncoder().encode(headerJson);
  const n = vectors.length;
  let size = 12 + header.length + pad4(header.length) + 4 * n;
  for (const v of vectors) size += v.length + pad4(v.length);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  out.set(MAGIC, 0);
  view.setUint32(4, n, true);
  view.setUint32(8, header.length, true);
  out.set(header, 12);
  let at = 12 + header.length + pad4(header.length);
  for (let i = 0; i < n; i++) view.setUint32(at + 4 * i, vectors[i]!.length, true);
  at += 4 * n;
  for (const v of vectors) {
    out.set(v, at);
    at += v.length + pad4(v.length);
  }
  return out;
}

/** Encodes a page of tracks that carry their embedding as bytes (see the layout above). */
export function encodeSnapshotPage(page: { tracks: readonly SnapshotTrackBytes[]; next: string | null; total?: number }): Uint8Array {
  const rest = page.tracks.map(({ vector: _vector, ...t }) => t);
  return encodeSnapshotPageParts(JSON.stringify({ next: page.next, ...(page.total !== undefined ? { total: page.total } : {}), tracks: rest }), page.tracks.map((t) => t.vector));
}

/**
 * Decodes one page body. Checks the framing (magic, lengths within the body, header track count = n) and
 * that the header is JSON; the header's fields are left to the caller's schema.
 * @throws SnapshotBinaryError on a malformed body
 */
export function decodeSnapshotPageBinary(body: Uint8Array): DecodedSnapshotPage {
  if (body.length < 12 || MAGIC.some((b, i) => body[i] !== b)) throw new SnapshotBinaryError('not a snapshot page (bad magic)');
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const n = view.getUint32(4, true);
  const h = view.getUint32(8, true);
  let at = 12 + h + pad4(h);
  if (at + 4 * n > body.length) throw new SnapshotBinaryError('snapshot page truncated (header or lengths)');
  let header: { next?: unknown; total?: unknown; tracks?: unknown };
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body.subarray(12, 12 + h))) as { next?: unknown; total?: unknown; tracks?: unknown };
  } catch (err) {
    throw new SnapshotBinaryError(`snapshot page header is not UTF-8 JSON: ${(err as Error).message}`);
  }
  if (typeof header !== 'object' || header === null || !Array.isArray(header.tracks) || header.tracks.length !== n) throw new SnapshotBinaryError(`snapshot page header does not hold ${n} tracks`);
  const lengths = new Array<number>(n);
  for (let i = 0; i < n; i++) lengths[i] = view.getUint32(at + 4 * i, true);
  at += 4 * n;
  const vectors: Uint8Array[] = new Array<Uint8Array>(n);
  for (let i = 0; i < n; i++) {
    const len = lengths[i]!;
    if (at + len > body.length) throw new SnapshotBinaryError('snapshot page truncated (vectors)');
    vectors[i] = body.subarray(at, at + len);
    at += len + pad4(len);
  }
  if (at !== body.length) throw new SnapshotBinaryError(`snapshot page has ${body.length - at} trailing bytes`);
  return { next: header.next, total: header.total, tracks: header.tracks as unknown[], vectors };
}

/**
 * The whole snapshot in one response (issue 35 "the whole generation at 1M"): the route streams its binary pages
 * one after the other when the caller's `Accept` prefers this type, so the catalogue reads its next pages while the
 * index works on the previous ones instead of waiting for a request per page. Each page is one frame:
 * ```
 * 0   length      u32 little-endian: byte length of the page
 * 4   page        one binary page (`SNAPSHOT_PAGE_BINARY_TYPE` layout above), `next` = its last id
 * ```
 * The last frame's page has `next: null`; a stream that ends before it (the catalogue stopped or failed mid-way)
 * is truncated, and the reader resumes with `after` = the last complete page's `next`. Callers that do not ask for
 * it get the single page (binary or JSON) as before.
 */
export const SNAPSHOT_STREAM_TYPE = 'application/vnd.polyphony.snapshot-stream';

/** Largest page frame a reader accepts (a 5,000-song page with learned features is ~10 MB). */
export const SNAPSHOT_FRAME_MAX_BYTES = 256 * 1024 * 1024;

/** The 4-byte length prefix of one stream frame holding `page` (write it, then the page itself: no copy of the page). */
export function snapshotFramePrefix(page: Uint8Array): Uint8Array {
  const prefix = new Uint8Array(4);
  new DataView(prefix.buffer).setUint32(0, page.length, true);
  return prefix;
}

/**
 * Cuts a snapshot stream (`SNAPSHOT_STREAM_TYPE`) into its page bodies as chunks of it arrive, whatever the chunk
 * boundaries. Keeps only the bytes of the frame under way.
 */
export class SnapshotStreamReader {
  private chunks: Uint8Array[] = [];
  private buffered = 0;
  private need = -1;

  /**
   * Adds one chunk of the response body.
   * @returns the page bodies completed by it, in order (each one page for `decodeSnapshotPageBinary`)
   * @throws SnapshotBinaryError when a frame announces more than SNAPSHOT_FRAME_MAX_BYTES
   */
  push(chunk: Uint8Array): Uint8Array[] {
    const out: Uint8Array[] = [];
    if (chunk.length) {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
    }
    for (;;) {
      if (this.need < 0) {
        if (this.buffered < 4) return out;
        const head = this.take(4);
        const n = new DataView(head.buffer, head.byteOffset, 4).getUint32(0, true);
        if (n > SNAPSHOT_FRAME_MAX_BYTES) throw new SnapshotBinaryError(`snapshot stream frame of ${n} bytes (at most ${SNAPSHOT_FRAME_MAX_BYTES})`);
        this.need = n;
      }
      if (this.buffered < this.need) return out;
      out.push(this.take(this.need));
      this.need = -1;
    }
  }

  /** Bytes received of a frame not complete yet (0 at a frame boundary: a stream that ends here was cut between pages). */
  get pendingBytes(): number {
    return this.need < 0 ? this.buffered : this.buffered + 4;
  }

  /** Removes the first `n` buffered bytes (one view when they lie in one chunk, else one copy). */
  private take(n: number): Uint8Array {
    this.buffered -= n;
    const first = this.chunks[0];
    if (first && first.length >= n) {
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = new Uint8Array(n);
    let at = 0;
    while (at < n) {
      const c = this.chunks[0]!;
      const k = Math.min(c.length, n - at);
      out.set(c.subarray(0, k), at);
      at += k;
      if (k === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(k);
    }
    return out;
  }
}
