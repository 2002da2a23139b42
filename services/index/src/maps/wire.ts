import { LearnedFeatures, MSD_TAGS, MTT_TAGS, SNAPSHOT_PAGE_BINARY_TYPE, SnapshotBinaryError, SnapshotPage, SnapshotStreamReader, SnapshotTrack, decodeSnapshotPageBinary, type SnapshotTrackBytes, type TagScores } from '@polyphony/contracts';
import { UpstreamUnavailableError } from '@polyphony/platform';
import { z } from 'zod';

/**
 * Hand-written checks of the two mapping payloads (shapes: MappingRowsPage / MappingChangesPage in
 * shared/contracts/src/catalogue.ts). They carry up to 20000 rows per page and 3M rows per full load, where
 * a zod tuple parse per row would cost seconds; these loops check the same types.
 * @throws UpstreamUnavailableError (502) when the catalogue answered something else
 */
export function parseMappingRows(body: unknown): { seq: number; rows: Array<[string, string, string]>; next: string | null } {
  const b = body as { seq?: unknown; rows?: unknown; next?: unknown } | null;
  if (!b || !Number.isInteger(b.seq) || !Array.isArray(b.rows) || !(b.next === null || typeof b.next === 'string')) throw bad('mapping rows');
  for (const r of b.rows as unknown[]) {
    if (!Array.isArray(r) || r.length !== 3 || typeof r[0] !== 'string' || typeof r[1] !== 'string' || typeof r[2] !== 'string') throw bad('mapping row');
  }
  return b as { seq: number; rows: Array<[string, string, string]>; next: string | null };
}

/** @see parseMappingRows */
export function parseMappingChanges(body: unknown): { reset: boolean; seq: number; more: boolean; changes: Array<[number, string, string, string | null]> } {
  const b = body as { reset?: unknown; seq?: unknown; more?: unknown; changes?: unknown } | null;
  if (!b || typeof b.reset !== 'boolean' || !Number.isInteger(b.seq) || typeof b.more !== 'boolean' || !Array.isArray(b.changes)) throw bad('mapping changes');
  for (const c of b.changes as unknown[]) {
    if (!Array.isArray(c) || c.length !== 4 || !Number.isInteger(c[0]) || typeof c[1] !== 'string' || typeof c[2] !== 'string' || !(c[3] === null || typeof c[3] === 'string')) {
      throw bad('mapping change');
    }
  }
  return b as { reset: boolean; seq: number; more: boolean; changes: Array<[number, string, string, string | null]> };
}

function bad(what: string): UpstreamUnavailableError {
  return new UpstreamUnavailableError(`the catalogue answered a malformed ${what}`, 502);
}

/** A probability as the contract's `TagScores` accepts it: a number in [0, 1] (NaN fails both comparisons). */
function isProbabilities(v: unknown, length: number): boolean {
  if (!Array.isArray(v) || v.length !== length) return false;
  for (const x of v) if (typeof x !== 'number' || !(x >= 0 && x <= 1)) return false;
  return true;
}

/** `TagScores` (contracts learned.ts) checked by a loop: `msd` = MSD_TAGS.length probabilities, `mtt` absent or MTT_TAGS.length of them. */
function isTagScores(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const t = v as { msd?: unknown; mtt?: unknown };
  return isProbabilities(t.msd, MSD_TAGS.length) && (t.mtt === undefined || isProbabilities(t.mtt, MTT_TAGS.length));
}

/**
 * The snapshot page schema (`SnapshotPage`, shared/contracts/src/catalogue.ts) with each song's tag probabilities
 * checked by a loop instead of one zod number parse per value: same acceptance (test); a 5,000-song page with
 * learned features parsed in 86-96 ms of CPU against 122-146 ms with the contract schema (interleaved runs, load ~16;
 * docs/architecture.md "Measured figures"). The tags object is passed through as received (zod would copy it and drop
 * unknown keys; the index reads only `msd` and `mtt`).
 */
export const SnapshotPageChecked = SnapshotPage.extend({
  tracks: z.array(SnapshotTrack.extend({ learned: LearnedFeatures.extend({ tags: z.custom<TagScores>(isTagScores, { message: 'expected MSD (and MTT) tag probabilities in [0, 1]' }) }).nullish() })),
});

/** The binary page's header (contracts snapshot-binary.ts): the checked page without the tracks' `embedding`. */
const SnapshotHeaderChecked = SnapshotPageChecked.extend({ tracks: z.array(SnapshotPageChecked.shape.tracks.element.omit({ embedding: true })) });

/** One snapshot page as the index reads it: every track's embedding as little-endian float32 bytes. */
export interface SnapshotPageBytes {
  tracks: SnapshotTrackBytes[];
  next: string | null;
  /** First page only, when the catalogue sends it: songs in the snapshot (capacity hint). */
  total?: number;
}

/**
 * A `GET /internal/snapshot/tracks` answer in either representation the route serves (content negotiation): the
 * binary page (`SNAPSHOT_PAGE_BINARY_TYPE`: framing decoded, header checked with `SnapshotPageChecked` minus the
 * embedding) or JSON (`SnapshotPageChecked`, each base64 embedding decoded to bytes). Same result for the same page.
 * @throws UpstreamUnavailableError (502) on a malformed answer or another media type
 */
export function parseSnapshotAnswer(contentType: string, body: Uint8Array): SnapshotPageBytes {
  if (contentType === SNAPSHOT_PAGE_BINARY_TYPE) {
    let decoded: ReturnType<typeof decodeSnapshotPageBinary>;
    try {
      decoded = decodeSnapshotPageBinary(body);
    } catch (err) {
      throw new UpstreamUnavailableError(`the catalogue answered a malformed snapshot page: ${(err as Error).message}`, 502);
    }
    const header = SnapshotHeaderChecked.safeParse({ next: decoded.next, total: decoded.total, tracks: decoded.tracks });
    if (!header.success) throw new UpstreamUnavailableError(`the catalogue answered a snapshot page with an unexpected shape: ${header.error.issues[0]?.message ?? 'invalid'}`, 502);
    const page = header.data;
    return { tracks: page.tracks.map((t, i) => ({ ...t, vector: decoded.vectors[i]! })), next: page.next, ...(page.total !== undefined ? { total: page.total } : {}) };
  }
  if (contentType !== 'application/json') throw new UpstreamUnavailableError(`the catalogue answered the snapshot as ${contentType || 'no media type'}`, 502);
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch {
    throw bad('snapshot page (not JSON)');
  }
  const parsed = SnapshotPageChecked.safeParse(json);
  if (!parsed.success) throw new UpstreamUnavailableError(`the catalogue answered a snapshot page with an unexpected shape: ${parsed.error.issues[0]?.message ?? 'invalid'}`, 502);
  const page = parsed.data;
  return {
    tracks: page.tracks.map(({ embedding, ...t }) => ({ ...t, vector: Buffer.from(embedding, 'base64') })),
    next: page.next,
    ...(page.total !== undefined ? { total: page.total } : {}),
  };
}

/**
 * The pages of a snapshot stream (`SNAPSHOT_STREAM_TYPE`) as its chunks arrive, each parsed like a binary page
 * (`parseSnapshotAnswer`). Ends after the page with `next: null`.
 * @throws UpstreamUnavailableError 503 (transient: the reader resumes after its last page) when the stream ends
 *   before that page (the catalogue stopped or failed mid-way); 502 on a malformed frame or page
 */
export async function* readSnapshotStream(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<SnapshotPageBytes> {
  const reader = new SnapshotStreamReader();
  for await (const chunk of chunks) {
    let bodies: Uint8Array[];
    try {
      bodies = reader.push(chunk);
    } catch (err) {
      throw new UpstreamUnavailableError(`the catalogue answered a malformed snapshot stream: ${(err as SnapshotBinaryError).message}`, 502);
    }
    for (const body of bodies) {
      const page = parseSnapshotAnswer(SNAPSHOT_PAGE_BINARY_TYPE, body);
      yield page;
      if (page.next === null || page.tracks.length === 0) return;
    }
  }
  throw new UpstreamUnavailableError(`the catalogue's snapshot stream ended before its last page (${reader.pendingBytes} bytes of a page cut off)`, 503);
}
