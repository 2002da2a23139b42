/**
 * Text search over pre-sorted postings (threshold algorithm) must answer exactly what scoring every row answers:
 * the same rows, scores and tie order, with masks, metadata matches, descriptors and several terms; a posting cut
 * too short to decide must say so (the service then scans).
 */
import { OTHER_FEATURE_LABELS } from '@polyphony/contracts';
import { mulberry32 as rng } from '@polyphony/vectors';
import type { Generation } from '../core/generation';
import { bytePosting, floatPosting, thresholdTopK, type Channel } from './postings';
import { SemanticTable, type SemanticRowSource } from './semantic-table';
import { conceptChannel, scanTopK } from './semantic.service';
import { parseQuery } from './vocabulary';
import { OTHER_OFFSET } from './vocabulary';

function table(n: number, seed: number): SemanticTable {
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
  const gen = { generation: 1, index: { size: n, rowOf: (id: string) => Number(id.slice(2)), getVector: (r: number) => vectors[r]! } } as unknown as Generation;
  return SemanticTable.build(gen, rows);
}

const idOf = (row: number) => `id${String(row).padStart(6, '0')}`;

/** The channels the service makes for a query, metadata matches given as row sets per term. */
function channelsOf(t: SemanticTable, query: string, meta: Record<string, number[]> = {}): Channel[] {
  const { concepts, words } = parseQuery(query);
  const out: Channel[] = [];
  for (const c of concepts) {
    const concept = conceptChannel(t, c);
    const rows = new Set(meta[c.term] ?? []);
    out.push(rows.size ? { score: (r) => (rows.has(r) ? 1 : concept.score(r)), sources: [{ rows: Int32Array.from(rows).sort(), complete: true, value: () => 1 }, ...concept.sources] } : concept);
  }
  for (const w of words) {
    const rows = new Set(meta[w] ?? []);
    if (rows.size) out.push({ score: (r) => (rows.has(r) ? 1 : 0), sources: [{ rows: Int32Array.from(rows).sort(), complete: true, value: () => 1 }] });
  }
  return out;
}

describe('text search postings', () => {
  const n = 6000;
  const t = table(n, 7);

  it('When a byte column is posted, then its rows come by descending byte and only tagged rows appear', () => {
    const bytes = Uint8Array.from({ length: 50 }, (_, i) => (i * 37) % 256);
    const p = bytePosting(bytes, 50, (r) => r % 5 !== 0, 10);
    expect(p.rows.length).toBe(10);
    expect(p.complete).toBe(false);
    for (let i = 1; i < p.rows.length; i++) expect(bytes[p.rows[i - 1]!]!).toBeGreaterThanOrEqual(bytes[p.rows[i]!]!);
    expect([...p.rows].every((r) => r % 5 !== 0)).toBe(true);
    const all = [...bytes.keys()].filter((r) => r % 5 !== 0).map((r) => bytes[r]!).sort((a, b) => b - a);
    expect([...p.rows].map((r) => bytes[r]!)).toEqual(all.slice(0, 10));
    const f = floatPosting(Float32Array.from([3, Number.NaN, 1, 2]), 4, () => true, 10, false);
    expect([...f.rows]).toEqual([2, 3, 0]);
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
    const cut = bytePosting(bytes, 100, () => true, 5);
    const score = (r: number) => bytes[r]! / 255;
    const channels: Channel[] = [{ score, sources: [{ ...cut, value: score }] }];
    expect(thresholdTopK(channels, 100, 10, () => true, String).top).toBeUndefined();
    expect(thresholdTopK(channels, 100, 3, () => true, String).top?.map((x) => x.row)).toEqual([0, 1, 2]);
  });
});
