import { LearnedFeatures, MSD_TAGS, MTT_TAGS, SnapshotPage, SnapshotTrack, type TagScores } from '@polyphony/contracts';
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
