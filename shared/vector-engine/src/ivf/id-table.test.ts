import fc from 'fast-check';
import { IvfCorruptStoreError, IvfDuplicateIdError } from './errors';
import { IdTableBuilder, decodeId, encodeId } from './id-table';

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

describe('encodeId / decodeId', () => {
  const encoded = (id: string): Uint8Array => {
    const out = new Uint8Array(id.length * 3 + 1);
    return out.slice(0, encodeId(id, out, 0));
  };
  // Ids as they occur: canonical `fp_4` + hex, provider ids, and arbitrary text with hex-looking tails.
  const hex = (minLength: number, maxLength: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength, maxLength });
  const unicode = (maxLength: number) => fc.string({ unit: 'binary', maxLength });
  const idArb = fc.oneof(
    hex(0, 60).map((h) => `fp_4${h.toLowerCase()}`),
    fc.tuple(fc.string({ maxLength: 8 }), hex(0, 40)).map(([p, h]) => p + h),
    unicode(30),
    fc.tuple(unicode(140), hex(8, 20)).map(([p, h]) => p + h.toLowerCase()),
  );

  it('round-trips every string and packs canonical ids to 30 bytes (fast-check)', () => {
    fc.assert(
      fc.property(idArb, (id) => {
        const bytes = encoded(id);
        expect(decodeId(bytes, 0, bytes.length)).toBe(id);
      }),
      { numRuns: 2000 },
    );
    expect(encoded(`fp_4${'0123456789abcdef'.repeat(3)}ab`).length).toBe(30);
  });

  it('gives different strings different bytes (fast-check)', () => {
    fc.assert(
      fc.property(idArb, idArb, (a, b) => {
        fc.pre(a !== b);
        expect(Buffer.compare(Buffer.from(encoded(a)), Buffer.from(encoded(b)))).not.toBe(0);
      }),
      { numRuns: 2000 },
    );
  });

  it('a table over random ids resolves each of them, and look-alikes (case, odd hex tail, prefix shift) are absent (fast-check)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(idArb.filter((id) => id.length > 0), { minLength: 1, maxLength: 60 }), (ids) => {
        const builder = new IdTableBuilder(2);
        ids.forEach((id, row) => builder.set(row, id));
        const table = builder.finish(ids.length);
        const known = new Set(ids);
        ids.forEach((id, row) => {
          expect(table.idOf(row)).toBe(id);
          expect(table.rowOf(id)).toBe(row);
          for (const other of [id.toUpperCase(), `0${id}`, `${id}0`, id.slice(1)]) if (!known.has(other)) expect(table.rowOf(other)).toBe(-1);
        });
      }),
      { numRuns: 300 },
    );
  });
  it('ids in increasing encoded byte order drop the hash table (binary search) and answer as the hashed table (fast-check)', () => {
    const encoded = (id: string): Buffer => {
      const out = new Uint8Array(id.length * 3 + 1);
      return Buffer.from(out.subarray(0, encodeId(id, out, 0)));
    };
    fc.assert(
      fc.property(fc.uniqueArray(idArb.filter((id) => id.length > 0), { minLength: 2, maxLength: 60 }), (raw) => {
        const ids = [...raw].sort((a, b) => Buffer.compare(encoded(a), encoded(b)));
        const build = (list: string[]) => {
          const builder = new IdTableBuilder(2);
          list.forEach((id, row) => builder.set(row, id));
          return builder.finish(list.length);
        };
        const sorted = build(ids);
        const hashed = build([...ids].reverse());
        expect(sorted.sorted).toBe(true);
        expect(hashed.sorted).toBe(false);
        expect(sorted.bytes).toBeLessThan(hashed.bytes);
        const n = ids.length;
        const known = new Set(ids);
        ids.forEach((id, row) => {
          expect(sorted.rowOf(id)).toBe(row);
          expect(hashed.rowOf(id)).toBe(n - 1 - row);
          // Absent look-alikes, including ids that sort before the first, between two and after the last.
          for (const other of [id.toUpperCase(), `0${id}`, `${id}0`, id.slice(1), '', '\u0000', '\uffff']) {
            if (!known.has(other)) {
              expect(sorted.rowOf(other)).toBe(-1);
              expect(hashed.rowOf(other)).toBe(-1);
            }
          }
        });
      }),
      { numRuns: 300 },
    );
    expect(new IdTableBuilder(1).finish(0).rowOf('x')).toBe(-1);
  });

  it('sorted canonical ids of one encoded length keep neither hash slots nor offsets (30 bytes an id) and resolve both ways', () => {
    const n = 3000;
    const id = (i: number) => `fp_4${(i * 3).toString(16).padStart(50, '0')}`;
    const builder = new IdTableBuilder(n);
    for (let i = 0; i < n; i++) builder.set(i, id(i));
    const table = builder.finish(n);
    expect(table.sorted).toBe(true);
    expect(table.bytes).toBe(n * 30);
    for (let i = 0; i < n; i++) {
      expect(table.idOf(i)).toBe(id(i));
      expect(table.rowOf(id(i))).toBe(i);
      expect(table.rowOf(`fp_4${(i * 3 + 1).toString(16).padStart(50, '0')}`)).toBe(-1);
    }
    expect(table.rowOf(`fp_4${'f'.repeat(50)}`)).toBe(-1);
    expect(table.rowOf('fp_4')).toBe(-1);
    expect(() => table.idOf(n)).toThrow();
  });
});

describe('IdTable.appended (live-library rows)', () => {
  const build = (ids: string[]) => {
    const b = new IdTableBuilder(ids.length);
    ids.forEach((id, r) => b.set(r, id));
    return b.finish(ids.length);
  };
  const canonical = (i: number) => `fp_4${(i * 2654435761 >>> 0).toString(16).padStart(8, '0')}${'a'.repeat(42)}`;
  const expectSame = (table: ReturnType<typeof build>, ids: string[]) => {
    expect(table.size).toBe(ids.length);
    ids.forEach((id, r) => {
      expect(table.idOf(r)).toBe(id);
      expect(table.rowOf(id)).toBe(r);
    });
    expect(table.rowOf('fp_4' + 'b'.repeat(50))).toBe(-1);
    expect(table.rowOf('not-there')).toBe(-1);
  };

  it.each([
    ['sorted canonical ids of one width', Array.from({ length: 3000 }, (_, i) => canonical(i)).sort()],
    ['sorted ids of several widths', Array.from({ length: 500 }, (_, i) => `song-${String(i).padStart(4, '0')}${i % 3 === 0 ? '-x' : ''}`).sort()],
    ['unsorted ids (hashed)', Array.from({ length: 700 }, (_, i) => `z${(i * 7919) % 1000}-${i}`)],
  ])('When rows are appended to a table of %s, batch after batch, then every id maps to its row both ways, as a table built with all of them', (_name, base) => {
    let table = build(base);
    const all = [...base];
    for (let b = 0; b < 12; b++) {
      const batch = Array.from({ length: b === 5 ? 900 : 37 }, (_, i) => (i % 2 ? canonical(100_000 + b * 1000 + i) : `new-${b}-${i}`));
      const before = table;
      table = table.appended(batch);
      all.push(...batch);
      expect(before.size).toBe(all.length - batch.length);
    }
    expectSame(table, all);
    expectSame(build(all), all);
  });

  it('When an appended id is already a row or repeats in the batch, then IvfDuplicateIdError and the table is unchanged', () => {
    const base = Array.from({ length: 50 }, (_, i) => canonical(i)).sort();
    const table = build(base).appended(['x-1']);
    expect(() => table.appended(['x-2', base[7]!])).toThrow(IvfDuplicateIdError);
    expect(() => table.appended(['x-1'])).toThrow(IvfDuplicateIdError);
    expect(() => table.appended(['x-3', 'x-3'])).toThrow(IvfDuplicateIdError);
    expect(table.appended([])).toBe(table);
    expectSame(table, [...base, 'x-1']);
  });
});
