import { CooperativeScheduler } from './cooperative';
import { IvfInputError } from './errors';
import { IvfIndex } from './ivf-index';
import type { Quantiser } from './quantiser';
import { codeStore, encodeSlot, writeVectorFile, type QuantiseOptions } from './quantised-store';

/**
 * The codes a quantised build takes over from the generation it replaces (issue 35, "int8 codes of unchanged rows
 * copied, not re-encoded (same quantiser)"). Valid only when the new float generation kept the old one's centroids
 * and the cell of every row marked here (`IvfBuildOptions.keptCells`): a code is the quantised residual to the cell's
 * centroid, so the same unit vector in the same cell under the same centroids and quantiser has the same code.
 */
export interface KeptCodes {
  /** The old generation's trained quantiser (kept: not trained again). */
  quantiser: Quantiser;
  /** The old generation's codes in its slot order (`quantiser.codeSize` bytes per slot). */
  codes: Uint8Array;
  /** Per new row: the old generation's slot of the same row (same vector, same cell), or -1 = encode it. */
  oldSlotOfRow: Int32Array;
}

/**
 * `quantiseIndex` with a kept quantiser: the unit vectors are written to a new vector file in row order as
 * `quantiseIndex` does; then every slot's code is copied from the old generation when its row is marked in
 * `kept.oldSlotOfRow`, else encoded with the kept quantiser (`encodeSlot`, the one encoding rule). No training. The
 * result is bitwise the index `quantiseIndex` would give if its quantiser were `kept.quantiser` (test
 * quantise-kept.test.ts). `options.mode` must be the kept quantiser's kind.
 * Cost: the file write, one code copy per kept row, `~3 * dim` (int8) / `256 * dim` (pq) per encoded row.
 * @returns the quantised index and how many rows were encoded (not copied)
 * @throws IvfInputError when `index` is already quantised, the kinds or sizes disagree, or an old slot is out of range
 */
export async function quantiseKeepingCodes(index: IvfIndex, kept: KeptCodes, options: QuantiseOptions): Promise<{ index: IvfIndex; encoded: number }> {
  const parts = index.parts();
  if (parts.quantised) throw new IvfInputError('index is already quantised');
  const { dim, nlist, centroids, cellOffsets, vectors, rowOfSlot } = parts;
  const size = rowOfSlot.length;
  const q = kept.quantiser;
  if (q.kind !== options.mode || q.dim !== dim) throw new IvfInputError(`kept ${q.kind} quantiser of ${q.dim} dimensions, building ${options.mode} of ${dim}`);
  if (kept.oldSlotOfRow.length !== size) throw new IvfInputError(`kept codes cover ${kept.oldSlotOfRow.length} rows, the generation holds ${size}`);
  const cs = q.codeSize;
  const oldSlots = kept.codes.length / cs;
  const scheduler = options.scheduler ?? new CooperativeScheduler(10);
  const file = await writeVectorFile(parts, options, scheduler);
  const store = codeStore(q, size, cellOffsets);
  const codes = store.codes;
  const residual = new Float32Array(dim);
  let encoded = 0;
  let done = 0;
  for (let c = 0; c < nlist; c++) {
    for (let s = cellOffsets[c]!; s < cellOffsets[c + 1]!; s++) {
      const old = kept.oldSlotOfRow[rowOfSlot[s]!]!;
      if (old >= 0) {
        if (old >= oldSlots) throw new IvfInputError(`kept slot ${old} outside [0, ${oldSlots})`);
        codes.set(kept.codes.subarray(old * cs, (old + 1) * cs), s * cs);
      } else {
        encodeSlot(vectors, centroids, dim, s, c, q, residual, codes, s * cs);
        encoded++;
      }
      if ((++done & 1023) === 0) {
        options.onProgress?.(done, size);
        await scheduler.maybeYield();
      }
    }
  }
  return { index: new IvfIndex({ ...parts, vectors: new Float32Array(0), quantised: { quantiser: q, ...store, file, rerank: options.rerank ?? 'file' } }), encoded };
}
