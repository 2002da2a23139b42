/**
 * Text search over pre-sorted postings (threshold algorithm) must answer exactly what scoring every row answers:
 * the same rows, scores and tie order, with masks, metadata matches, descriptors and several terms; a posting cut
 * too short to decide must say so (the service then scans).
 */
import { OTHER_FEATURE_LABELS } from '@polyphony/contracts';
import { mulberry32 as rng } from '@polyphony/vectors';
import type { Generation } from '../core/generation';
import { bytePosting, scorePosting, thresholdTopK, type Channel } from './postings';
import { SemanticTable, type SemanticRowSource } from './semantic-table';
import { conceptChannel, scanTopK } from './semantic.service';
import { parseQuery } from './vocabulary';
import { OTHER_OFFSET } from './vocabulary';

function table(n: number, seed: number, idOf: (row: number) => string): Promise<SemanticTable> {
  const rand = rng(seed);
  const rows: SemanticRowSource[] = [];
  for (let i = 0; i < n; i++) {
    const tagged = i % 11 !== 4;
    // Coarse bytes (multiples of 16) make many exact ties, as real tags clamped at the 99th percentile do.
    const tags = tagged ? Buffer.from(Array.from({ length: OTHER_OFFSET }, () => Math.floor(rand() ** 3 * 16) * 16)) : null;
    const other = tagged ? OTHER_FEATURE_LABELS.map(() => Math.round(rand() * 20) / 20) : null;
    rows.push({ itemId: `id${String(i).padStart(6, '0')}`, tags, other, tempo: i % 13 === 0 ? null : 60 + Math.floor(rand() * 120), energy: i % 17 === 0 ? null : -30 + rand() * 25 });
  }
  const vectors = Array.from({ length: n }, () => Float32Array.from({ length: 8 }, () => rand() - 0.5));
  const gen = { generation: 1, index: { size: n, idOf, rowOf: (id: string) => Number(id.slice(2)), getVector: (r: number) => vectors[r]! } } as unknown as Generation;
  return SemanticTable.build(gen, rows);
}

const inOrder = (row: number) => `id${String(row).padStart(6, '0')}`;
/** Ids against row order (as after rows were appended to a generation): ties are then not listed by id. */
const reversed = (row: number) => `id${String(999_999 - row).padStart(6, '0')}`;

/** The channels the service makes for a query, metadata matches given as row sets per term. */
function channelsOf(t: SemanticTable, query: string, meta: Record<string, number[]> = {}): Channel[] {
  const { concepts, words } = parseQuery(query);
  const out: Channel[] = [];
  for (const c of concepts) {
    const concept = conceptChannel(t, c);
    const rows = new Set(meta[c.term] ?? []);
    out.push(rows.size ? { score: (r) => (rows.has(r) ? 1 : concept.score(r)), sources: [{ rows: Int32Array.from(rows).sort(), complete: true, tiesById: t.rowsInIdOrder, value: () => 1 }, ...concept.sources] } : concept);
  }
  for (const w of words) {
    const rows = new Set(meta[w] ?? []);
    if (rows.size) out.push({ score: (r) => (rows.has(r) ? 1 : 0), sources: [{ rows: Int32Array.from(rows).sort(), complete: true, tiesById: t.rowsInIdOrder, value: () => 1 }] });
  }
  return out;
}

describe.each([
  ['in id order', inOrder],
  ['not in id order', reversed],
])('text search postings, rows %s', (_, idOf) => {
  const n = 6000;
  let t: SemanticTable;
  beforeAll(async () => {
    t = await table(n, 7, idOf);
  });

  it('When the table is built, then it knows whether its rows are in id order', () => {
    expect(t.rowsInIdOrder).toBe(idOf === inOrder);
  });

  it('When a byte column is posted, then rows come by descending score, equal scores in row order, only rows that have it and score above 0', () => {
    const bytes = Uint8Array.from({ length: 50 }, (_, i) => (i * 37) % 256);
    const score = (b: number) => Math.max(0, Math.min(1, (b - 40) / 100)); // clamps: many ties at 0 and 1
    const p = bytePosting(bytes, 50, (r) => r % 5 !== 0, score, 10);
    expect(p.rows.length).toBe(10);
    expect(p.complete).toBe(false);
    const want = [...bytes.keys()].filter((r) => r % 5 !== 0 && score(bytes[r]!) > 0).sort((a, b) => score(bytes[b]!) - score(bytes[a]!) || a - b);
    expect([...p.rows]).toEqual(want.slice(0, 10));
    const f = scorePosting(4, () => true, (r) => [3, 0, 1, 3][r]!, 10);
    expect([...f.rows]).toEqual([0, 3, 2]);
    expect(f.complete).toBe(true);
  });

  it.each([
    ['rock', {}],
    ['calm', {}],
    ['upbeat', {}],
    ['rock jazz', {}],
    ['slow sad piano', {}],
    ['rock', { rock: [5, 17, 4000, 4001] }],
    ['guitar chillout Zeppelin', { zeppelin: [1, 2, 3, 900] }],
    ['energetic loud quiet', {}],
  ] as Array<[string, Record<string, number[]>]>)('When the query is "%s", then the postings answer what scoring every row answers', (query, meta) => {
    const channels = channelsOf(t, query, meta);
    expect(channels.length).toBeGreaterThan(0);
    for (const k of [1, 20, 200]) {
      for (const allowed of [() => true, (r: number) => r % 3 !== 1, (r: number) => r % 50 === 0]) {
        const want = scanTopK(channels, n, k, allowed, idOf);
        const got = thresholdTopK(channels, n, k, allowed, idOf);
        if (got.top !== undefined) expect(got.top).toEqual(want);
        else expect(allowed(1)).toBe(false); // only the sparse masks may need the full scan at this size
      }
    }
    // Unmasked and small k: decided by the postings, reading fewer rows than the table holds.
    const decided = thresholdTopK(channels, n, 20, () => true, idOf);
    expect(decided.top).toEqual(scanTopK(channels, n, 20, () => true, idOf));
    expect(decided.scored).toBeLessThan(n);
  });

  it('When a posting is cut before the answer is decided, then the result is undecided rather than wrong', () => {
    const bytes = Uint8Array.from({ length: 100 }, (_, r) => 255 - r);
    const cut = bytePosting(bytes, 100, () => true, (b) => b / 255, 5);
    const score = (r: number) => bytes[r]! / 255;
    const channels: Channel[] = [{ score, sources: [{ ...cut, value: score }] }];
    expect(thresholdTopK(channels, 100, 10, () => true, idOf).top).toBeUndefined();
    expect(thresholdTopK(channels, 100, 3, () => true, idOf).top?.map((x) => x.row)).toEqual([0, 1, 2]);
  });
});
