import { SeededRandom } from '@polyphony/vectors';
import { TopK } from './top-k';

describe(TopK.name, () => {
  it('When fed random distances, then it keeps the k smallest in order, ties by row', () => {
    const rng = new SeededRandom(7);
    for (const k of [1, 3, 10, 50]) {
      const heap = new TopK(k);
      const all: { row: number; distance: number }[] = [];
      for (let row = 0; row < 1000; row++) {
        const distance = Math.floor(rng.nextFloat() * 200) / 100; // many ties
        all.push({ row, distance });
        heap.push(row, distance);
      }
      all.sort((a, b) => a.distance - b.distance || a.row - b.row);
      expect(heap.sorted()).toEqual(all.slice(0, k));
    }
  });

  it('When drained, then the rows come out in the order of sorted() and the heap is empty', () => {
    const rng = new SeededRandom(9);
    for (const k of [1, 2, 7, 64]) {
      const heap = new TopK(k);
      for (let row = 0; row < 500; row++) heap.push(row, Math.floor(rng.nextFloat() * 50) / 10); // many ties
      const want = heap.sorted().map((h) => h.row);
      expect([...heap.rowsHeld()].sort((a, b) => a - b)).toEqual([...want].sort((a, b) => a - b));
      expect([...heap.drainRows()]).toEqual(want);
      expect(heap.size).toBe(0);
    }
  });

  it('When fewer than k items are pushed, then the threshold stays infinite', () => {
    const heap = new TopK(5);
    heap.push(1, 0.5);
    expect(heap.threshold).toBe(Infinity);
    expect(heap.sorted()).toEqual([{ row: 1, distance: 0.5 }]);
  });
});
