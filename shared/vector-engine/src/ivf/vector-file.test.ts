import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IvfInputError } from './errors';
import { VectorFile } from './vector-file';

describe('VectorFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vector-file-test-'));
  const dim = 4;
  const count = 10;
  const rows = Float32Array.from({ length: count * dim }, (_, i) => Math.fround(i * 0.37 - 3));

  function filled(residentMaxBytes?: number): VectorFile {
    const f = new VectorFile(dim, count, dir, residentMaxBytes);
    f.writeRows(0, rows, 0, 6);
    f.writeRows(6, rows, 6 * dim, 4);
    return f;
  }

  it('keeps a resident copy only when the file fits the budget, and reads it without read calls', () => {
    const onDisk = filled();
    const resident = filled(count * dim * 4);
    const over = filled(count * dim * 4 - 1);
    expect(onDisk.resident).toBeUndefined();
    expect(over.resident).toBeUndefined();
    expect(resident.residentBytes).toBe(count * dim * 4);
    expect([...resident.resident!]).toEqual([...rows]);
    const a = new Float32Array(dim);
    const b = new Float32Array(dim);
    for (let r = 0; r < count; r++) {
      onDisk.readRow(r, a);
      resident.readRow(r, b);
      expect([...b]).toEqual([...a]);
      expect([...a]).toEqual([...rows.subarray(r * dim, (r + 1) * dim)]);
    }
    const block = new Float32Array(3 * dim + 1);
    resident.readRows(4, 3, block, 1);
    expect([...block.subarray(1)]).toEqual([...rows.subarray(4 * dim, 7 * dim)]);
    expect(resident.reads).toBe(0);
    expect(onDisk.reads).toBe(count);
    expect(() => resident.readRow(count, b)).toThrow(IvfInputError);
    for (const f of [onDisk, resident, over]) f.close();
  });

  it('drops the resident copy when closed; later reads throw', () => {
    const f = filled(1 << 20);
    f.close();
    expect(f.resident).toBeUndefined();
    expect(() => f.readRow(0, new Float32Array(dim))).toThrow(IvfInputError);
  });
});
