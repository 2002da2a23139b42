import { ColumnFill, SemanticRows } from './column-fill';
import type { SemanticRowSource } from './semantic-table';

/** Rows of every kind: tagged with other scores (some out of [0, 1]), untagged, wrong tag length, null tempo/energy. */
function rowsOf(n: number): SemanticRowSource[] {
  return Array.from({ length: n }, (_, i) => ({
    itemId: `id-${String(i).padStart(4, '0')}`,
    tags: i % 3 === 0 ? null : Buffer.from(Array.from({ length: i % 17 === 0 ? 99 : 100 }, (_, k) => (i * 7 + k) % 256)),
    other: i % 5 === 0 ? null : [0.1, 0.2, 1.5, -0.25, i / n, 0.6],
    tempo: i % 4 === 0 ? null : 60 + i * 0.1234567,
    energy: i % 6 === 0 ? null : -i / 7,
  }));
}

function arrays(f: ColumnFill) {
  return { tagBytes: Array.from(f.tagBytes), others: Array.from(f.others), tagged: Array.from(f.tagged), tempo: Array.from(f.tempo), energy: Array.from(f.energy), taggedCount: f.taggedCount };
}

describe('SemanticRows (the text-search columns a build fills from the snapshot pages)', () => {
  test('When rows arrive in build order past the expected count (arrays grown), then the columns equal those filled from the copy rows by id', () => {
    const rows = rowsOf(300);
    const byId = new ColumnFill(rows.length, (id) => Number(id.slice(3)));
    byId.add(rows);
    const seeded = new SemanticRows(20);
    rows.forEach((r, i) => seeded.set(i, r.tags, r.other, r.tempo, r.energy));
    expect(seeded.size).toBe(300);
    expect(arrays(seeded.columnsOf(300))).toEqual(arrays(byId));
  });

  test('When the expected count was too high, then the columns are cut to the rows set (tagged count of the dropped capacity is 0)', () => {
    const rows = rowsOf(50);
    const byId = new ColumnFill(rows.length, (id) => Number(id.slice(3)));
    byId.add(rows);
    const seeded = new SemanticRows(1000);
    rows.forEach((r, i) => seeded.set(i, r.tags, r.other, r.tempo, r.energy));
    const cut = seeded.columnsOf(50);
    expect(cut.capacity).toBe(50);
    expect(arrays(cut)).toEqual(arrays(byId));
  });
});
