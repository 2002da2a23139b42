import fc from 'fast-check';
import { TopScored } from './top-scored';

describe('TopScored', () => {
  it('keeps exactly the first k rows of a full sort by score descending, then id ascending (many ties)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 300 }), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 1000 }), (levels, k, salt) => {
        // Scores on few levels (ties everywhere), ids in an order unrelated to the rows.
        const idOf = (row: number) => `id-${((row * 7919 + salt) % 100_003).toString(36)}`;
        const rows = levels.map((l, row) => ({ row, s: l / 6 }));
        const top = new TopScored(k, idOf);
        for (const r of rows) top.offer(r.row, r.s);
        const want = [...rows].sort((a, b) => b.s - a.s || (idOf(a.row) < idOf(b.row) ? -1 : 1)).slice(0, k);
        expect(top.sorted()).toEqual(want);
      }),
      { numRuns: 500 },
    );
  });
});
