import { IvfCorruptStoreError, IvfDuplicateIdError } from './errors';
import { IdTableBuilder } from './id-table';

describe(IdTableBuilder.name, () => {
  it('When ids are added in any order beyond the capacity hint, then both directions resolve', () => {
    const builder = new IdTableBuilder(4);
    const n = 5000;
    const order = Array.from({ length: n }, (_, i) => (i * 7) % n);
    for (const row of order) builder.set(row, `fp_4${row.toString(16).padStart(50, '0')}`);
    const table = builder.finish(n);
    for (let row = 0; row < n; row += 97) {
      const id = `fp_4${row.toString(16).padStart(50, '0')}`;
      expect(table.idOf(row)).toBe(id);
      expect(table.rowOf(id)).toBe(row);
    }
    expect(table.rowOf('fp_4missing')).toBe(-1);
  });

  it('When ids contain non-ASCII characters, then they round-trip and do not collide with look-alikes', () => {
    const builder = new IdTableBuilder();
    const ids = ['jellyfin:Ä', 'jellyfin:A', 'plex:日本語', 'emoji:🎵', 'é', 'e\u0301'];
    ids.forEach((id, row) => builder.set(row, id));
    const table = builder.finish(ids.length);
    ids.forEach((id, row) => {
      expect(table.idOf(row)).toBe(id);
      expect(table.rowOf(id)).toBe(row);
    });
    expect(table.rowOf('plex:日本')).toBe(-1);
  });

  it('When an id repeats, then set throws IvfDuplicateIdError', () => {
    const builder = new IdTableBuilder();
    builder.set(0, 'a');
    expect(() => builder.set(1, 'a')).toThrow(IvfDuplicateIdError);
  });

  it('When a row is left without an id, then finish throws IvfCorruptStoreError', () => {
    const builder = new IdTableBuilder();
    builder.set(0, 'a');
    builder.set(2, 'c');
    expect(() => builder.finish(3)).toThrow(IvfCorruptStoreError);
  });
});
