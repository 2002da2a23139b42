import { AMBIGUOUS, HASH, InternedColumn, KeyTable, NumberColumn, StringArena, hash64 } from './compact';

describe('compact storage of the sweep index', () => {
  it('When strings are packed, then each comes back as stored, absent values included, across blocks', () => {
    const a = new StringArena();
    const long = 'é'.repeat(700_000); // 1.4 MB of UTF-8: a block of its own
    const values = ['', 'plain', undefined, '/música/Björk/01 Jóga.flac', long, 'after'];
    const idx = values.map((v) => a.add(v));
    for (let k = 0; k < 3000; k++) a.add(`filler ${k} ${'x'.repeat(400)}`); // spills over several 1 MiB blocks
    a.trim();
    idx.forEach((i, k) => expect(a.get(i)).toBe(values[k]));
    expect(a.get(idx[5]! + 3000)).toBe('filler 2999 ' + 'x'.repeat(400));
    expect(a.equals(idx[3]!, '/música/Björk/01 Jóga.flac')).toBe(true);
    expect(a.equals(idx[3]!, '/musica/Bjork/01 Joga.flac')).toBe(false);
    expect(a.get(-1)).toBeUndefined();
  });

  it('When numbers and repeated names are stored, then absent values stay absent and names are shared', () => {
    const n = new NumberColumn(true);
    n.add(4.5);
    n.add(undefined);
    n.add(Number.NaN);
    expect([n.get(0), n.get(1), n.get(2)]).toEqual([4.5, undefined, undefined]);
    const c = new InternedColumn();
    ['A', undefined, 'A', 'B'].forEach((v) => c.add(v));
    expect([c.get(0), c.get(1), c.get(2), c.get(3)]).toEqual(['A', undefined, 'A', 'B']);
  });

  it('When keys repeat in a collapsing table, then one value stands for a key and differing values make it ambiguous', () => {
    const t = new KeyTable(true);
    t.add(5, 1, 10);
    t.add(1, 9, 3);
    t.add(5, 1, 10);
    t.add(2, 2, 7);
    t.add(2, 2, 8);
    expect(t.get(5, 1)).toBe(10);
    expect(t.get(1, 9)).toBe(3);
    expect(t.get(2, 2)).toBe(AMBIGUOUS);
    expect(t.get(2, 3)).toBeUndefined();
    expect(t.size).toBe(3);
    t.add(1, 9, 4); // appending after a lookup re-sorts on the next one
    expect(t.get(1, 9)).toBe(AMBIGUOUS);
  });

  it('When keys repeat in a plain table, then every value is kept and dropped values disappear on sealing', () => {
    const t = new KeyTable(false);
    t.add(0xffffffff, 0, 2);
    t.add(0xffffffff, 0, 1);
    t.add(0, 0xffffffff, 0);
    expect(t.values(0xffffffff, 0)).toEqual([1, 2]);
    expect(t.repeatedKeys()).toEqual([[1, 2]]);
    t.seal(Uint8Array.from([0, 0, 1]));
    expect(t.values(0xffffffff, 0)).toEqual([1]);
  });

  it('When strings are hashed, then the two lanes are stable 32-bit values and differ for different strings', () => {
    hash64('abc');
    const a = [HASH[0], HASH[1]];
    hash64('abc');
    expect([HASH[0], HASH[1]]).toEqual(a);
    hash64('abd');
    expect([HASH[0], HASH[1]]).not.toEqual(a);
    const seen = new Set<string>();
    for (let i = 0; i < 100_000; i++) {
      hash64(`key-${i}`);
      seen.add(`${HASH[0]}:${HASH[1]}`);
    }
    expect(seen.size).toBe(100_000);
  });
});
