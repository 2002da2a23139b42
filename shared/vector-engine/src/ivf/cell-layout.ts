/**
 * Cell (slot) layout of an IVF generation: rows stored cell by cell, `cellOffsets[c]..cellOffsets[c+1]` the slots
 * of cell `c`. Split out of ivf-index.ts (`arrangeByCell` re-exported there unchanged).
 */
import type { AvailabilityMask } from './availability-mask';
import type { CooperativeScheduler } from './cooperative';

/**
 * Cell holding slot `slot`: binary search of the `nlist + 1` cell offsets (the last cell whose first slot is
 * <= slot), O(log nlist). The caller checks that `slot` is in [0, size).
 */
export function cellOfSlot(cellOffsets: Int32Array, nlist: number, slot: number): number {
  let lo = 0;
  let hi = nlist - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (cellOffsets[mid]! <= slot) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Slot maps of a cell layout: counting sort of rows `0..size-1` by `cellOfRow`, stable within a cell.
 * `cellOffsets` has `nlist + 1` entries (cell c holds slots `cellOffsets[c]..cellOffsets[c+1]`); `slotOfRow` and
 * `rowOfSlot` are inverse permutations. O(size + nlist); moves no vectors.
 */
export function slotMapsByCell(cellOfRow: Int32Array, size: number, nlist: number): { cellOffsets: Int32Array; rowOfSlot: Int32Array; slotOfRow: Int32Array } {
  const cellOffsets = new Int32Array(nlist + 1);
  for (let r = 0; r < size; r++) cellOffsets[cellOfRow[r]! + 1]!++;
  for (let c = 0; c < nlist; c++) cellOffsets[c + 1]! += cellOffsets[c]!;
  const fill = cellOffsets.slice(0, nlist);
  const slotOfRow = new Int32Array(size);
  const rowOfSlot = new Int32Array(size);
  for (let r = 0; r < size; r++) {
    const s = fill[cellOfRow[r]!]!++;
    slotOfRow[r] = s;
    rowOfSlot[s] = r;
  }
  return { cellOffsets, rowOfSlot, slotOfRow };
}

/**
 * Reorders a row-ordered vector matrix in place into cell order (counting sort by cell, stable within a
 * cell) and returns the slot maps. Memory: `size` bytes of visited flags + 2 vectors of scratch.
 * Permutation by cycle following: every vector moves exactly once. O(size * dim).
 * With a scheduler it yields to the event loop every 1024 moves (state lives in locals, nothing else touches
 * the matrix meanwhile).
 */
export async function arrangeByCell(
  vectors: Float32Array,
  size: number,
  dim: number,
  cellOfRow: Int32Array,
  nlist: number,
  scheduler?: CooperativeScheduler,
): Promise<{ cellOffsets: Int32Array; rowOfSlot: Int32Array; slotOfRow: Int32Array }> {
  const { cellOffsets, rowOfSlot, slotOfRow } = slotMapsByCell(cellOfRow, size, nlist);
  const done = new Uint8Array(size);
  let carry = new Float32Array(dim);
  let spare = new Float32Array(dim);
  for (let start = 0; start < size; start++) {
    if (done[start]) continue;
    if (scheduler && (start & 4095) === 0) await scheduler.maybeYield();
    done[start] = 1;
    if (slotOfRow[start] === start) continue;
    // Position p initially holds row p. Walk the cycle start -> slotOfRow[start] -> ...
    const so = start * dim;
    for (let d = 0; d < dim; d++) carry[d] = vectors[so + d]!;
    let r = start;
    let moves = 0;
    for (;;) {
      // A random permutation's longest cycle spans ~60% of the rows: yield inside cycles too.
      if (scheduler && (++moves & 1023) === 0) await scheduler.maybeYield();
      const t = slotOfRow[r]!;
      const to = t * dim;
      if (t === start) {
        for (let d = 0; d < dim; d++) vectors[to + d] = carry[d]!;
        break;
      }
      for (let d = 0; d < dim; d++) {
        spare[d] = vectors[to + d]!;
        vectors[to + d] = carry[d]!;
      }
      const tmp = carry;
      carry = spare;
      spare = tmp;
      done[t] = 1;
      r = t;
    }
  }
  return { cellOffsets, rowOfSlot, slotOfRow };
}

/**
 * The slots of a mask's rows in ascending slot order (so in cell order): `slotOfRow[row]` for every row the mask
 * holds, `mask.count` entries. Used to build a sparse mask's compact copy (rows, cells, vectors or codes).
 */
export function sortedSlotsOfMask(mask: AvailabilityMask, slotOfRow: Int32Array): Int32Array {
  const slots = new Int32Array(mask.count);
  let n = 0;
  mask.forEachRow((row) => {
    slots[n++] = slotOfRow[row]!;
  });
  return slots.sort();
}
