import { mulberry32 } from '@polyphony/vectors';
import { topRows } from './matcher';

describe('topRows (candidate rows of a query)', () => {
  it('When rows have random hit counts with many ties, then the kept set is the first k of sorting by count desc then row asc', () => {
    const rnd = mulberry32(7);
    for (let trial = 0; trial < 200; trial++) {
      const rows = 1 + Math.floor(rnd() * 3000);
      const count = new Uint32Array(rows + 10);
      const touched: number[] = [];
      for (let r = 0; r < rows; r++) {
        if (rnd() < 0.3) continue;
        count[r] = 1 + Math.floor(rnd() * rnd() * 12);
        touched.push(r);
      }
      for (let i = touched.length - 1; i > 0; i--) {
        const j = Math.floor(rnd() * (i + 1));
        [touched[i], touched[j]] = [touched[j]!, touched[i]!];
      }
      const k = 1 + Math.floor(rnd() * 40);
      const expected = [...touched].sort((a, b) => count[b]! - count[a]! || a - b).slice(0, k);
      expect(topRows(touched, count, k).sort((a, b) => a - b)).toEqual(expected.sort((a, b) => a - b));
    }
  });

  it('When fewer rows than k were touched, then all are kept', () => {
    const count = Uint32Array.from([0, 3, 1]);
    expect(topRows([2, 1], count, 32).sort()).toEqual([1, 2]);
  });
});
