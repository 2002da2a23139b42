import { mulberry32 } from '@polyphony/vectors';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ByteLog } from './byte-log';

describe('ByteLog', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'byte-log-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Appends ~3 MiB in pieces of 0 B to 300 kB (crossing the 1 MiB chunk and write-block edges) and checks random reads against the concatenation. */
  const exercise = (budget: number) => {
    const rand = mulberry32(budget + 1);
    const log = new ByteLog(dir, budget, 'test');
    const whole = Buffer.alloc(3_400_000); // the last piece may start just below 3,000,000
    const positions: Array<[number, number]> = [];
    let length = 0;
    while (length < 3_000_000) {
      const n = rand() < 0.1 ? Math.floor(rand() * 300_000) : Math.floor(rand() * 300);
      const piece = Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
      expect(log.append(piece)).toBe(length);
      piece.copy(whole, length);
      positions.push([length, n]);
      length += n;
      // Reads interleaved with appends (some from the unflushed tail of a spilled log).
      const [at, len] = positions[Math.floor(rand() * positions.length)]!;
      const out = Buffer.alloc(len);
      expect(log.read(at, len, out)).toBe(len);
      expect(out.equals(whole.subarray(at, at + len))).toBe(true);
    }
    expect(log.bytes).toBe(length);
    for (let i = 0; i < 200; i++) {
      const at = Math.floor(rand() * length);
      const len = Math.floor(rand() * 2_500_000);
      const out = Buffer.alloc(len + 3);
      const n = log.read(at, len, out, 3);
      expect(n).toBe(Math.min(len, length - at));
      expect(out.subarray(3, 3 + n).equals(whole.subarray(at, at + n))).toBe(true);
    }
    return log;
  };

  it('When it stays within its budget, then it holds the bytes in memory and reads them back exactly', () => {
    const log = exercise(Number.POSITIVE_INFINITY);
    expect(log.spilled).toBe(false);
    expect(log.reads).toBe(0);
    expect(log.residentBytes).toBeGreaterThanOrEqual(log.bytes);
    log.close();
  });

  it('When it outgrows its budget (at once or part-way), then it moves to an unlinked file and every read is unchanged', () => {
    for (const budget of [0, 1_500_000]) {
      const log = exercise(budget);
      expect(log.spilled).toBe(true);
      expect(log.reads).toBeGreaterThan(0);
      // Only the 1 MiB write buffer stays in memory; the file is unlinked at creation.
      expect(log.residentBytes).toBe(1 << 20);
      expect(readdirSync(dir)).toEqual([]);
      log.close();
      log.close();
      expect(() => log.read(0, 1, Buffer.alloc(1))).toThrow(/closed/);
      expect(() => log.append(Buffer.alloc(1))).toThrow(/closed/);
    }
  });
});
