import { AvailabilityMask } from './availability-mask';
import { IvfInputError } from './errors';

describe(AvailabilityMask.name, () => {
  it('When built from rows, then exactly those rows are available and counted once', () => {
    const mask = AvailabilityMask.fromRows(100, [0, 31, 32, 63, 64, 99, 31]);
    expect(mask.count).toBe(6);
    expect([...mask.toRows()]).toEqual([0, 31, 32, 63, 64, 99]);
    for (let r = 0; r < 100; r++) expect(mask.has(r)).toBe([0, 31, 32, 63, 64, 99].includes(r));
    expect(mask.has(-1)).toBe(false);
    expect(mask.has(100)).toBe(false);
    expect(mask.density).toBeCloseTo(0.06);
  });

  it('When all() is used on a size that is not a multiple of 32, then no bit beyond the size is set', () => {
    const mask = AvailabilityMask.all(70);
    expect(mask.count).toBe(70);
    expect(mask.toRows().length).toBe(70);
    expect(mask.has(69)).toBe(true);
    expect(mask.has(70)).toBe(false);
  });

  it('When a row is out of range, then fromRows throws', () => {
    expect(() => AvailabilityMask.fromRows(10, [10])).toThrow(IvfInputError);
    expect(() => AvailabilityMask.fromRows(10, [1.5])).toThrow(IvfInputError);
  });

  it('When exported and re-imported as words, then the mask is identical and stray bits are rejected', () => {
    const rows = Array.from({ length: 500 }, (_, i) => (i * 7919) % 1000);
    const mask = AvailabilityMask.fromRows(1000, rows);
    const copy = AvailabilityMask.fromWords(1000, mask.toWords());
    expect([...copy.toRows()]).toEqual([...mask.toRows()]);
    const words = new Uint32Array(Math.ceil(33 / 32));
    words[1] = 2; // bit 33 of a 33-row mask
    expect(() => AvailabilityMask.fromWords(33, words)).toThrow(IvfInputError);
    expect(() => AvailabilityMask.fromWords(64, new Uint32Array(1))).toThrow(IvfInputError);
  });

  it('When forEachRow runs, then rows come in increasing order', () => {
    const mask = AvailabilityMask.fromRows(300, [299, 5, 200, 31, 32]);
    const seen: number[] = [];
    mask.forEachRow((r) => seen.push(r));
    expect(seen).toEqual([5, 31, 32, 200, 299]);
  });
});
