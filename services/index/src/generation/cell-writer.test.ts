import { bytesOf, packBlobs } from '../core/codec';
import { BackgroundStores, CellWriter } from './cell-writer';
import type { CellRecord } from './ports';

/** `n` cells of `rows` rows each, as views of one arranged array (the way the IVF build emits them). */
function cellsOf(n: number, rows: number, dim = 4): { cells: CellRecord[]; vectors: Float32Array } {
  const vectors = Float32Array.from({ length: n * rows * dim }, (_, i) => i);
  const rowIds = Int32Array.from({ length: n * rows }, (_, i) => i);
  const cells = Array.from({ length: n }, (_, c) => ({
    cellId: c,
    rowIds: rowIds.subarray(c * rows, (c + 1) * rows),
    ids: Array.from({ length: rows }, (_, r) => `id-${c * rows + r}`),
    vectors: vectors.subarray(c * rows * dim, (c + 1) * rows * dim),
  }));
  return { cells, vectors };
}

describe('CellWriter', () => {
  it('writes every cell once, in emit order, in batches of about flushBytes, while the caller goes on', async () => {
    const written: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const w = new CellWriter(async (cells) => {
      await gate;
      written.push(cells.map((c) => c.cellId));
    }, 3 * 2 * 4 * 4 + 1); // a batch closes after three cells of 2 rows x 4 dims (+ row ids)
    const { cells } = cellsOf(8, 2);
    for (const c of cells) w.add(c);
    // Nothing has been written yet (the save is blocked) and add() never waited for it.
    expect(written).toEqual([]);
    release();
    await w.done();
    expect(written).toEqual([[0, 1, 2], [3, 4, 5], [6, 7]]);
    expect(w.batches).toBe(3);
  });

  it('stops at the first failed write: later batches are not written, add and done throw it', async () => {
    const written: number[] = [];
    let calls = 0;
    const w = new CellWriter(async (cells) => {
      if (++calls === 2) throw new Error('disk full');
      written.push(...cells.map((c) => c.cellId));
    }, 1);
    const { cells } = cellsOf(4, 1);
    w.add(cells[0]!);
    w.add(cells[1]!);
    w.add(cells[2]!);
    await expect(w.done()).rejects.toThrow('disk full');
    expect(written).toEqual([0]);
    expect(() => w.add(cells[3]!)).toThrow('disk full');
  });

  it('settle waits for the started writes, drops the queued cells and never throws', async () => {
    const written: number[] = [];
    const w = new CellWriter(async (cells) => {
      await new Promise((r) => setTimeout(r, 5));
      written.push(...cells.map((c) => c.cellId));
    }, 1e9);
    const { cells } = cellsOf(3, 1);
    w.add(cells[0]!);
    w.add(cells[1]!);
    await w.settle(); // nothing was flushed: both are dropped
    expect(written).toEqual([]);
    const failing = new CellWriter(async () => Promise.reject(new Error('gone')), 1);
    failing.add(cells[2]!);
    await expect(failing.settle()).resolves.toBeUndefined();
  });
});

describe('packBlobs', () => {
  it('gives a view of the span when the parts lie end to end in one buffer, else a copy; same bytes either way', () => {
    const { cells, vectors } = cellsOf(3, 2);
    const adjacent = packBlobs(cells.map((c) => bytesOf(c.vectors)));
    expect(adjacent.blob.buffer).toBe(vectors.buffer);
    const apart = packBlobs([bytesOf(cells[0]!.vectors), bytesOf(cells[2]!.vectors)]);
    expect(apart.blob.buffer).not.toBe(vectors.buffer);
    for (const packed of [adjacent, apart]) {
      const parts = packed === adjacent ? [0, 1, 2] : [0, 2];
      parts.forEach((c, i) => {
        const cut = packed.blob.subarray(packed.offsets[i]! - 1, packed.offsets[i]! - 1 + packed.lengths[i]!);
        expect(Buffer.compare(cut, Buffer.from(bytesOf(cells[c]!.vectors)))).toBe(0);
      });
    }
    expect(packBlobs([]).blob.length).toBe(0);
  });
});

describe('BackgroundStores', () => {
  it('waits for every write, reports the first failure from done() and none from settle()', async () => {
    const order: string[] = [];
    const stores = new BackgroundStores();
    stores.add(new Promise((r) => setTimeout(() => r(order.push('slow')), 20)));
    stores.add(Promise.reject(new Error('first')));
    stores.add(new Promise((_, reject) => setTimeout(() => reject(new Error('second')), 5)));
    await expect(stores.done()).rejects.toThrow('first');
    expect(order).toEqual(['slow']); // done() returned only after the slow write
    await expect(stores.settle()).resolves.toBeUndefined();
    const ok = new BackgroundStores();
    ok.add(Promise.resolve(1));
    await expect(ok.done()).resolves.toBeUndefined();
  });
});

describe('CellWriter after settle', () => {
  it('skips the batches queued behind the one being written (a failed build does not write on)', async () => {
    const written: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const w = new CellWriter(async (cells) => {
      await gate;
      written.push(...cells.map((c) => c.cellId));
    }, 1);
    const { cells } = cellsOf(4, 1);
    for (const c of cells) w.add(c); // four batches chained
    await new Promise((r) => setImmediate(r)); // the first one has started (and waits on the gate)
    const settled = w.settle();
    release();
    await settled;
    expect(written).toEqual([0]);
  });
});
