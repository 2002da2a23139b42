/**
 * In-memory {@link RelabelRowSource} and a reference application of relabel plans, for unit tests and
 * benchmarks. {@link applyRelabelPlans} is the executable form of the "how a store applies the plans"
 * contract in relabel.ts.
 */
import type { RelabelChunkPlan, RelabelRow, RelabelRowSource, RowSelection } from './relabel';
import { isCurrentId } from './relabel';
import type { SchemeVersion } from './scheme';

/** Rows held in an array, scanned in array order. */
export class InMemoryRelabelSource implements RelabelRowSource {
  private readonly byId: Map<string, RelabelRow>;
  /** Rows handed out by loadRows (for tests). */
  loadedRows = 0;

  /** @param rows score rows; old ids must be unique. @throws RangeError on a duplicate id. */
  constructor(private readonly rows: readonly RelabelRow[]) {
    this.byId = new Map(rows.map((r) => [r.oldId, r]));
    if (this.byId.size !== rows.length) throw new RangeError('duplicate oldId in relabel rows');
  }

  /** Rows of the requested selection in array order, `chunkSize` at a time. */
  async *scan(request: { readonly selection: RowSelection; readonly targetVersion: SchemeVersion; readonly chunkSize: number }): AsyncIterable<readonly RelabelRow[]> {
    const wanted = request.selection === 'current';
    let chunk: RelabelRow[] = [];
    for (const row of this.rows) {
      if (isCurrentId(row.oldId, request.targetVersion) !== wanted) continue;
      chunk.push(row);
      if (chunk.length >= request.chunkSize) {
        yield chunk;
        chunk = [];
      }
    }
    if (chunk.length > 0) yield chunk;
  }

  /** Rows with the given ids, skipping unknown ones. */
  async loadRows(oldIds: readonly string[]): Promise<readonly RelabelRow[]> {
    const out: RelabelRow[] = [];
    for (const id of oldIds) {
      const row = this.byId.get(id);
      if (row) out.push(row);
    }
    this.loadedRows += out.length;
    return out;
  }
}

/**
 * Applies plans to rows as a store would: relabelled rows take their new id, merged rows disappear
 * into their target (their kept mappings move there), detached mappings are removed.
 * @returns the rows after the relabel, in the original order (merged rows left out).
 * @throws Error when a merge names a target id that no row carries.
 */
export function applyRelabelPlans(rows: readonly RelabelRow[], plans: readonly RelabelChunkPlan[]): RelabelRow[] {
  const entryOf = new Map<string, { newId: string; kind: string }>();
  const detached = new Set<string>();
  for (const plan of plans) {
    for (const r of plan.relabels) entryOf.set(r.oldId, r);
    for (const d of plan.detached) detached.add(`${d.oldId}\0${d.serverId}\0${d.providerId}`);
  }
  const out: RelabelRow[] = [];
  const byNewId = new Map<string, number>();
  const merges: { targetId: string; mappings: RelabelRow['mappings'] }[] = [];
  for (const row of rows) {
    const mappings = row.mappings.filter((m) => !detached.has(`${row.oldId}\0${m.serverId}\0${m.providerId}`));
    const entry = entryOf.get(row.oldId);
    if (entry?.kind === 'merge') {
      merges.push({ targetId: entry.newId, mappings });
      continue;
    }
    const id = entry ? entry.newId : row.oldId;
    byNewId.set(id, out.length);
    out.push({ ...row, oldId: id, mappings });
  }
  for (const m of merges) {
    const i = byNewId.get(m.targetId);
    if (i === undefined) throw new Error(`merge target ${m.targetId} not found`);
    const target = out[i] as RelabelRow;
    out[i] = { ...target, mappings: [...target.mappings, ...m.mappings] };
  }
  return out;
}
