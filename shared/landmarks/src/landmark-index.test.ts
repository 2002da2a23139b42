import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mulberry32 } from '@polyphony/vectors';
import type { Landmarks } from './extract';
import { LandmarkIndex, SHARD_ROWS } from './landmark-index';

/** Every posting of `hash` as "row@frame", read back through the shards. */
function postingsOf(index: LandmarkIndex, hash: number): string[] {
  const out: string[] = [];
  const [lo, hi] = index.hashRange(hash);
  const postings = new Uint32Array(hi - lo);
  index.readPostings(lo, hi, postings, 0);
  index.shards.forEach(({ base, offsets }, s) => {
    for (let k = offsets[hash]!; k < index.shardEnd(s, hash); k++) out.push(`${base + (postings[k - lo]! >>> 16)}@${postings[k - lo]! & 0xffff}`);
  });
  return out.sort();
}

function randomSongs(seed: number, rows: readonly number[], perSong: number, hashes: number): Array<readonly [number, Landmarks]> {
  const rnd = mulberry32(seed);
  return rows.map((row) => {
    // Skewed hash use: low hash numbers are common, as short narrow peak pairs are in music.
    const h = Uint32Array.from({ length: perSong }, () => Math.floor(hashes * rnd() * rnd()));
    const t = Uint16Array.from({ length: perSong }, () => Math.floor(rnd() * 0xffff)).sort();
    return [row, { hashes: h, times: t }] as const;
  });
}

describe(LandmarkIndex.name, () => {
  it('When rows lie in several 65,536-row shards, then every posting reads back with its row and frame, 4 bytes each', () => {
    const rows = [0, 1, SHARD_ROWS - 1, SHARD_ROWS, SHARD_ROWS + 7, 3 * SHARD_ROWS + 2];
    const songs = randomSongs(1, rows, 300, 500);
    const index = LandmarkIndex.build(() => songs, { stopFraction: 0 });
    expect(index.size).toBe(rows.length * 300);
    expect(index.rowCount).toBe(3 * SHARD_ROWS + 3);
    expect(index.shards.map((s) => s.base)).toEqual([0, SHARD_ROWS, 3 * SHARD_ROWS]);
    expect(index.bytes).toBe(index.size * 4 + 3 * index.shards[0]!.offsets.byteLength);
    for (const hash of [0, 1, 17, 250, 499]) {
      const expected: string[] = [];
      for (const [row, lm] of songs) for (let i = 0; i < lm.hashes.length; i++) if (lm.hashes[i] === hash) expected.push(`${row}@${lm.times[i]}`);
      expect(postingsOf(index, hash)).toEqual(expected.sort());
    }
  });

  it('When a stop fraction is set, then the most common hashes holding at most that share of postings are left out and the rest are whole', () => {
    const songs = randomSongs(2, Array.from({ length: 50 }, (_, i) => i), 400, 2000);
    const whole = LandmarkIndex.build(() => songs, { stopFraction: 0 });
    const index = LandmarkIndex.build(() => songs, { stopFraction: 0.2 });
    expect(index.stopped.postings).toBeLessThanOrEqual(0.2 * whole.size);
    expect(index.stopped.postings).toBeGreaterThan(0.15 * whole.size);
    expect(index.size).toBe(whole.size - index.stopped.postings);
    const lengths = (ix: LandmarkIndex) => Array.from({ length: 2000 }, (_, h) => postingsOf(ix, h).length);
    const before = lengths(whole);
    const after = lengths(index);
    const stoppedHashes = before.map((n, h) => (after[h] === 0 && n > 0 ? h : -1)).filter((h) => h >= 0);
    expect(stoppedHashes.length).toBe(index.stopped.hashes);
    // Every stopped hash is at least as common as every kept one, and kept hashes keep all their postings.
    const minStopped = Math.min(...stoppedHashes.map((h) => before[h]!));
    for (let h = 0; h < 2000; h++) if (after[h]! > 0) {
      expect(after[h]).toBe(before[h]);
      expect(before[h]!).toBeLessThanOrEqual(minStopped);
    }
  });

  it('When the source yields other landmarks on the second pass, then the build fails instead of answering from a mixed index', () => {
    const first = randomSongs(3, [0, 1, 2], 100, 300);
    const other = randomSongs(4, [0, 1, 2], 100, 300);
    let pass = 0;
    expect(() => LandmarkIndex.build(() => (pass++ === 0 ? first : other), { stopFraction: 0 })).toThrow(/second pass/);
  });

  describe('built straight to a file', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'landmark-index-test-'));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('When the postings exceed the threshold, then the file holds exactly the postings of an in-memory build, in its order, and the process only the offsets', () => {
      const rows = [0, 3, 9, SHARD_ROWS + 1, SHARD_ROWS + 5, 2 * SHARD_ROWS];
      const songs = randomSongs(5, rows, 2000, 3000);
      const memory = LandmarkIndex.build(() => songs, { stopFraction: 0.1 });
      // 4 KiB buckets: ~11,000 postings in 11 buckets, each staged in several chunks.
      const file = LandmarkIndex.build(() => songs, { stopFraction: 0.1, file: { dir, aboveBytes: 1024, bufferBytes: 4096 } });
      expect(file.resident).toBe(false);
      expect(file.size).toBe(memory.size);
      expect(file.fileBytes).toBe(memory.size * 4);
      expect(file.bytes).toBe(memory.bytes - memory.size * 4);
      expect(file.stopped).toEqual(memory.stopped);
      const bytesOf = (a: Uint32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
      expect(file.shards.map((s) => s.base)).toEqual(memory.shards.map((s) => s.base));
      file.shards.forEach((s, i) => expect(bytesOf(s.offsets).equals(bytesOf(memory.shards[i]!.offsets))).toBe(true));
      const all = new Uint32Array(file.size);
      file.readPostings(0, file.size, all, 0);
      expect(bytesOf(all).equals(bytesOf(memory.packed))).toBe(true);
      expect(readdirSync(dir)).toEqual([]); // both files are unlinked on creation
      file.close();
    });

    it('When the postings stay under the threshold, then they are built in memory as without the option', () => {
      const songs = randomSongs(6, [0, 1, 2], 100, 300);
      const index = LandmarkIndex.build(() => songs, { stopFraction: 0, file: { dir, aboveBytes: 300 * 4 + 1 } });
      expect(index.resident).toBe(true);
      expect(index.size).toBe(300);
    });

    it('When the source yields other landmarks on the second pass, then the build fails as in memory', () => {
      const first = randomSongs(3, [0, 1, 2], 100, 300);
      const other = randomSongs(4, [0, 1, 2], 100, 300);
      let pass = 0;
      expect(() => LandmarkIndex.build(() => (pass++ === 0 ? first : other), { stopFraction: 0, file: { dir, aboveBytes: 0, bufferBytes: 4096 } })).toThrow(/second pass/);
    });
  });
});
