import { UpstreamUnavailableError } from '@polyphony/platform';

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
