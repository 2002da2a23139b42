import { sampleRows } from './alchemy.service';

const ranked = Array.from({ length: 50 }, (_, i) => ({ row: i, distance: i / 100 }));

describe('sampleRows', () => {
  it('When the temperature is 0, then the first n rows are taken', () => {
    expect(sampleRows(ranked, 5, 0, 1).map((r) => r.row)).toEqual([0, 1, 2, 3, 4]);
  });

  it('When a seed is given, then the sample is reproducible, sorted by distance and without repeats', () => {
    const a = sampleRows(ranked, 10, 1, 99);
    expect(sampleRows(ranked, 10, 1, 99)).toEqual(a);
    expect(new Set(a.map((r) => r.row)).size).toBe(10);
    const d = a.map((r) => r.distance);
    expect([...d].sort((x, y) => x - y)).toEqual(d);
  });

  it('When the temperature is low, then near rows are strongly preferred; when high, the sample spreads out', () => {
    let coldMean = 0;
    let hotMean = 0;
    for (let seed = 0; seed < 200; seed++) {
      coldMean += sampleRows(ranked, 5, 0.01, seed).reduce((s, r) => s + r.row, 0) / 5;
      hotMean += sampleRows(ranked, 5, 10, seed).reduce((s, r) => s + r.row, 0) / 5;
    }
    coldMean /= 200;
    hotMean /= 200;
    expect(coldMean).toBeLessThan(5);
    // Near-uniform over 50 rows: mean index about 24.5.
    expect(hotMean).toBeGreaterThan(20);
  });

  it('When fewer rows than n exist, then all are returned', () => {
    expect(sampleRows(ranked.slice(0, 3), 10, 1, 1)).toHaveLength(3);
  });
});
