import { SyntheticMixture } from '@polyphony/testkit';
import { IvfInputError } from './errors';
import { buildIvfIndex, type VectorBatch } from './ivf-build';
import { quantiseIndex } from './quantised-store';
import { quantiseKeepingCodes } from './quantise-kept';

function batches(count: number, seed: number, prefix: string): VectorBatch[] {
  const out: VectorBatch[] = [];
  for (const b of new SyntheticMixture({ seed }).batches(count, 1000)) out.push({ ids: b.ids.map((id) => `${prefix}${id}`), vectors: b.vectors });
  return out;
}

describe('quantiseKeepingCodes (issue 35 generation reuse)', () => {
  it.each(['int8', 'pq'] as const)('%s: copies the codes of kept rows, encodes the rest: the same bytes as encoding every row with the kept quantiser', async (mode) => {
    const old = await buildIvfIndex(batches(3000, 5, 'a'), {});
    const oldQ = await quantiseIndex(old.index, { mode, pqM: 25 });
    const oq = oldQ.parts().quantised!;
    const dim = old.index.dim;
    // New generation: old rows 0..2799 in their old cells, then 150 new rows placed at their nearest centroid.
    const kept = batches(3000, 5, 'a');
    kept[2] = { ids: kept[2]!.ids.slice(0, 800), vectors: kept[2]!.vectors.slice(0, 800 * dim) };
    const built = await buildIvfIndex([...kept, ...batches(150, 9, 'b')], {
      keptCells: (count) => {
        const cellOfRow = new Int32Array(count).fill(-1);
        for (let r = 0; r < 2800; r++) cellOfRow[r] = old.index.cellOf(r);
        return { nlist: old.index.nlist, centroids: old.index.parts().centroids, cellOfRow };
      },
    });
    const oldSlotOfRow = new Int32Array(2950).fill(-1);
    for (let r = 0; r < 2800; r++) oldSlotOfRow[r] = oldQ.parts().slotOfRow[r]!;
    const p = built.index.parts();
    const { index, encoded } = await quantiseKeepingCodes(built.index, { quantiser: oq.quantiser, codes: oq.codes, oldSlotOfRow }, { mode, pqM: 25 });
    expect(encoded).toBe(150);
    const q = index.parts().quantised!;
    expect(q.quantiser).toBe(oq.quantiser);
    // Reference: every slot's residual encoded with the kept quantiser.
    const cs = oq.quantiser.codeSize;
    const want = new Uint8Array(2950 * cs);
    const residual = new Float32Array(dim);
    for (let c = 0; c < p.nlist; c++) {
      for (let s = p.cellOffsets[c]!; s < p.cellOffsets[c + 1]!; s++) {
        for (let d = 0; d < dim; d++) residual[d] = p.vectors[s * dim + d]! - p.centroids[c * dim + d]!;
        oq.quantiser.encode(residual, 0, want, s * cs);
      }
    }
    expect(Buffer.from(q.codes.subarray(0, want.length)).equals(Buffer.from(want))).toBe(true);
    // The exact vectors are in the new file in row order; a kept row finds itself first.
    expect([...index.getVector(2900)]).toEqual([...built.index.getVector(2900)]);
    expect(index.search(index.getVector(42), { k: 1 })[0]!.row).toBe(42);
  });

  it('rejects another mode, or kept slots of the wrong length', async () => {
    const old = await buildIvfIndex(batches(600, 3, 'x'), {});
    const oq = (await quantiseIndex(old.index, { mode: 'int8' })).parts().quantised!;
    const again = await buildIvfIndex(batches(600, 3, 'x'), {});
    await expect(quantiseKeepingCodes(again.index, { quantiser: oq.quantiser, codes: oq.codes, oldSlotOfRow: new Int32Array(600) }, { mode: 'pq' })).rejects.toThrow(IvfInputError);
    await expect(quantiseKeepingCodes(again.index, { quantiser: oq.quantiser, codes: oq.codes, oldSlotOfRow: new Int32Array(599) }, { mode: 'int8' })).rejects.toThrow(IvfInputError);
  });
});
