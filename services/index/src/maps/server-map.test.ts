import { ServerMap } from './server-map';

describe('ServerMap', () => {
  it('When provider ids are set, moved and removed, then input, output and the availability bitset follow', () => {
    const m = new ServerMap(100);
    m.set('p-1', 5);
    m.set('p-2', 5); // a second file of the same song
    m.set('p-3', 7);
    expect(m.rowOf('p-1')).toBe(5);
    expect(m.rowOf('p-3')).toBe(7);
    expect(m.rowOf('nope')).toBe(-1);
    expect(m.providerOf(5)).toBe('p-1'); // smallest in byte order
    expect(m.available).toBe(2);
    const mask1 = m.mask();
    expect(m.mask()).toBe(mask1); // same object while nothing changed
    expect(mask1.toRows()).toEqual(Int32Array.from([5, 7]));
    m.remove('p-1');
    expect(m.providerOf(5)).toBe('p-2');
    expect(m.has(5)).toBe(true);
    m.set('p-2', 9); // re-pointed to another song
    expect(m.has(5)).toBe(false);
    expect(m.providerOf(9)).toBe('p-2');
    m.set('p-3', -1); // its song left the generation
    expect(m.rowOf('p-3')).toBe(-1);
    expect(m.has(7)).toBe(false);
    const mask2 = m.mask();
    expect(mask2).not.toBe(mask1);
    expect(mask2.toRows()).toEqual(Int32Array.from([9]));
    expect(mask1.toRows()).toEqual(Int32Array.from([5, 7])); // snapshots are immutable
    m.set('p-2', 9); // idempotent
    expect(m.mappings).toBe(1);
  });

  it('When many ids are added and most removed (compaction), then the survivors and non-ASCII ids still resolve', () => {
    const m = new ServerMap(50_000);
    for (let i = 0; i < 50_000; i++) m.set(`id-${i}-é`, i);
    for (let i = 0; i < 50_000; i++) if (i % 10 !== 0) m.remove(`id-${i}-é`);
    expect(m.mappings).toBe(5000);
    expect(m.available).toBe(5000);
    for (let i = 0; i < 50_000; i += 997) expect(m.rowOf(`id-${i}-é`)).toBe(i % 10 === 0 ? i : -1);
    expect(m.providerOf(40)).toBe('id-40-é');
    expect(m.mask().count).toBe(5000);
  });

  it('When a bulk-loaded map is trimmed, then it holds less and answers and changes exactly as before', () => {
    const m = new ServerMap(3000);
    for (let i = 0; i < 2100; i++) m.set(`prov-${i}`, i % 3000);
    const before = m.memoryBytes;
    m.trim();
    expect(m.memoryBytes).toBeLessThan(before);
    for (let i = 0; i < 2100; i += 7) expect(m.rowOf(`prov-${i}`)).toBe(i);
    expect(m.providerOf(2099)).toBe('prov-2099');
    // Changes after the trim grow the arrays again.
    for (let i = 2100; i < 3000; i++) m.set(`later-${i}`, i);
    m.remove('prov-5');
    expect(m.rowOf('later-2999')).toBe(2999);
    expect(m.rowOf('prov-5')).toBe(-1);
    expect(m.available).toBe(2999);
    expect(m.mappings).toBe(2999);
  });
});
